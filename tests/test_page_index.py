"""One page of a stored document is read alone: through the page index written beside the
document's JSON, or, for a JSON written without one (or rewritten since), by one scan of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.ledger.files import DocumentFiles, scan_spans
from ingest.ledger.records import UnknownDocumentError
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page

DOC_ID = "d" * 64


def _page(number: int, text: str) -> Page:
    block = Block(
        id=f"p{number}-b0",
        type=BlockType.text,
        bbox=(72, 72, 300, 90),
        text=text,
        lines=[Line(text=text, bbox=(72, 72, 300, 90))],
    )
    return Page(number=number, width=612, height=792, engine=EngineInfo(name="t"), blocks=[block])


PAGES = [_page(1, "first page"), _page(2, "zweite Seite: Größe, «ü» 日本語"), _page(3, "third")]


def _written(files: DocumentFiles, pages: list[Page] = PAGES) -> Path:
    head = Document(doc_id=DOC_ID, source="d.pdf", page_count=len(pages), pages=[])
    writer = files.writer(head)
    writer.add(pages[:2])
    writer.add(pages[2:])
    writer.commit()
    return files.root / f"{DOC_ID}.json"


def test_a_page_is_read_through_the_index_written_with_the_document(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    _written(files)
    assert (files.root / f"{DOC_ID}.pages.json").is_file()
    assert files.page(DOC_ID, 2) == PAGES[1]
    assert files.load_document(DOC_ID).pages == PAGES  # the JSON itself is unchanged


def test_the_scan_finds_the_offsets_the_writer_kept(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    path = _written(files)
    kept = json.loads((files.root / f"{DOC_ID}.pages.json").read_text())["spans"]
    assert {int(n): tuple(span) for n, span in kept.items()} == scan_spans(path.read_bytes())


def test_a_document_without_an_index_is_scanned_once(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    path = files.root / f"{DOC_ID}.json"
    whole = Document(doc_id=DOC_ID, source="d.pdf", page_count=3, pages=PAGES)
    path.write_text(whole.model_dump_json(indent=2))  # another writer's spacing, no index
    assert files.page(DOC_ID, 3) == PAGES[2]
    assert files.page(DOC_ID, 2) == PAGES[1]
    assert (files.root / f"{DOC_ID}.pages.json").is_file()


def test_a_rewritten_document_is_not_read_through_its_old_index(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    path = _written(files)
    index = files.root / f"{DOC_ID}.pages.json"
    stale = index.read_bytes()
    longer = [_page(1, "a much longer first page than before"), *PAGES[1:]]
    whole = Document(doc_id=DOC_ID, source="d.pdf", page_count=3, pages=longer)
    path.write_text(whole.model_dump_json())
    index.write_bytes(stale)
    assert files.page(DOC_ID, 1) == longer[0]
    assert files.page(DOC_ID, 3) == PAGES[2]


def test_missing_documents_and_pages_are_named(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    with pytest.raises(UnknownDocumentError):
        files.page(DOC_ID, 1)
    _written(files)
    with pytest.raises(KeyError):
        files.page(DOC_ID, 9)
    files.remove(DOC_ID)
    assert not list(files.root.iterdir())


def test_an_index_that_cannot_be_read_or_written_still_reads_pages(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    path = files.root / f"{DOC_ID}.json"
    whole = Document(doc_id=DOC_ID, source="d.pdf", page_count=3, pages=PAGES)
    path.write_text(whole.model_dump_json())
    (files.root / f"{DOC_ID}.pages.json").mkdir()  # in the index's place: neither read nor replaced
    assert files.page(DOC_ID, 2) == PAGES[1]
    assert files.page(DOC_ID, 1) == PAGES[0]
    assert not list(files.root.glob(".*.tmp"))
