"""How a chunk's units join into its text, and how a document is named in what is embedded."""

from __future__ import annotations

from collections.abc import Sequence

from ingest.pipeline.chunk_tables import Unit, compact_table
from ocr_engine.geometry import union
from ocr_engine.schema import Block, BlockType
from retrieval.doc_card import DocumentCard, card_label
from retrieval.schema import TABLE_ROWS_KIND, Region

__all__ = [
    "continues",
    "document_label",
    "embed_text_of",
    "heading_text",
    "separator",
    "source_label",
    "unit_regions",
]

_FLOWING = {BlockType.text, BlockType.list_item}
_SENTENCE_END = (*".!?:;。！？", '."', ".”", ".)")


def continues(previous: Unit, unit: Unit) -> bool:
    """`unit` opens a page with the rest of the paragraph `previous` left unfinished."""
    if previous.block.type not in _FLOWING or unit.block.type not in _FLOWING:
        return False
    if unit.pieces[0].page != previous.pieces[-1].page + 1:
        return False
    before = previous.pieces[-1].text.rstrip()
    after = unit.pieces[0].text.lstrip()
    return bool(before and after) and not before.endswith(_SENTENCE_END) and after[0].islower()


def document_label(source: str, card: DocumentCard | None = None) -> str:
    """How a document is named in embedded text: its file name without extension or separators,
    and what its card says it is ("doc 0001 (3M · annual report (10-K) · FY2018)")."""
    said = card_label(card) if card is not None else None
    return f"{source_label(source)} ({said})" if said else source_label(source)


def source_label(source: str) -> str:
    """A file name as words: no extension, no separators."""
    stem = source.rsplit(".", 1)[0] if "." in source else source
    return " ".join(stem.replace("_", " ").replace("-", " ").split())


def embed_text_of(trail: str, text: str, kind: str) -> str:
    """What is embedded of a chunk: its trail, then its text (a table's without its Markdown)."""
    body = compact_table(text) if kind in ("table", TABLE_ROWS_KIND) else text
    return f"{trail}\n\n{body}" if trail else body


def separator(previous: Unit | None, unit: Unit) -> str:
    """What goes between two units: the block's joiner inside a block, else a paragraph break."""
    if previous is None:
        return ""
    if previous.block.id == unit.block.id:
        return unit.joiner
    if previous.block.type == unit.block.type == BlockType.table:
        return "\n"  # a table continued on the next page
    if continues(previous, unit):
        return " "  # a paragraph continued on the next page
    same_kind = previous.block.type == unit.block.type == BlockType.list_item
    into_table = previous.block.type == BlockType.caption and unit.block.type == BlockType.table
    return "\n" if same_kind or into_table else "\n\n"


def unit_regions(units: Sequence[Unit]) -> list[Region]:
    """One region per contributing block, or per contiguous group of its lines when split."""
    regions: list[Region] = []
    previous: Unit | None = None
    for unit in units:
        if previous is not None and previous.key == unit.key and not unit.whole:
            last = regions[-1]
            regions[-1] = Region(page=last.page, bbox=union([last.bbox, unit.region.bbox]))
        else:
            regions.append(unit.region)
        previous = unit
    return regions


def heading_text(block: Block) -> str:
    """A heading's words, without Markdown marks."""
    text = " ".join(ln.text.strip() for ln in block.lines) or block.text
    return " ".join(text.lstrip("#").replace("**", "").split())
