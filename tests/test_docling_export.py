"""DoclingDocument export: valid by Docling's model, every item where folio found it, chunkable."""

from __future__ import annotations

from pathlib import Path

import pytest
from docling_core.transforms.chunker import HierarchicalChunker
from docling_core.types.doc import (
    ContentLayer,
    DocItem,
    DocItemLabel,
    DoclingDocument,
    ListItem,
    PictureItem,
    SectionHeaderItem,
    TableItem,
)

from ocr_engine.engines.extract import extract_document
from ocr_engine.exports.docling_export import to_docling
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Page, TableCell
from tests.apiapp import api_app
from tests.pdfgen import FACTS, fact_pdf

_ALL_LAYERS = {ContentLayer.BODY, ContentLayer.FURNITURE}


def _block(n: int, kind: BlockType, text: str, y: float, **extra: object) -> Block:
    return Block(id=f"p1-b{n}", type=kind, bbox=(50, y, 400, y + 14), text=text, **extra)  # type: ignore[arg-type]


def _every_kind() -> Document:
    cells = [
        TableCell(row=0, col=0, text="Year", header=True, bbox=(60, 300, 150, 314)),
        TableCell(row=0, col=1, col_span=2, text="Output", header=True, bbox=(150, 300, 390, 314)),
        TableCell(row=1, col=0, row_span=2, text="2023", bbox=(60, 314, 150, 342)),
        TableCell(row=1, col=1, text="12", bbox=(150, 314, 270, 328)),
        TableCell(row=1, col=2, text="14", bbox=(270, 314, 390, 328)),
        TableCell(row=2, col=1, text="13", bbox=(150, 328, 270, 342)),
        TableCell(row=2, col=2, text="15", bbox=(270, 328, 390, 342)),
    ]
    blocks = [
        _block(0, BlockType.page_header, "Annual report 2023", 20),
        _block(1, BlockType.title, "Mill output", 60),
        _block(2, BlockType.section_header, "## Flour", 90, level=2),
        _block(3, BlockType.text, "The mill ground\nrye and wheat.", 120),
        _block(4, BlockType.list_item, "• rye from the north", 150),
        _block(5, BlockType.list_item, "• wheat from the south", 170),
        _block(6, BlockType.caption, "Table 1. Output in tonnes", 280),
        Block(id="p1-b7", type=BlockType.table, bbox=(60, 300, 390, 342), text="", cells=cells),
        Block(id="p1-b8", type=BlockType.figure, bbox=(60, 400, 390, 600), text=""),
        _block(9, BlockType.caption, "Figure 1. The mill", 610),
        _block(10, BlockType.formula, "E = m c^2", 640),
        _block(11, BlockType.footnote, "1 Tonnes are metric.", 700),
        _block(12, BlockType.page_footer, "Page 1", 760),
    ]
    page = Page(number=1, width=612, height=792, engine=EngineInfo(name="vllm"), blocks=blocks)
    return Document(doc_id="a" * 64, source="mill.pdf", page_count=1, pages=[page])


def _items(doc: DoclingDocument) -> list[DocItem]:
    found = doc.iterate_items(included_content_layers=_ALL_LAYERS, traverse_pictures=True)
    return [item for item, _ in found if isinstance(item, DocItem)]


def _folio_boxes(document: Document) -> list[tuple[int, tuple[float, ...]]]:
    return sorted((p.number, tuple(b.bbox)) for p in document.pages for b in p.blocks)


def _docling_boxes(doc: DoclingDocument, document: Document) -> list[tuple[int, tuple[float, ...]]]:
    heights = {p.number: p.height for p in document.pages}
    boxes = []
    for item in _items(doc):
        (prov,) = item.prov
        box = prov.bbox.to_top_left_origin(heights[prov.page_no]).as_tuple()
        boxes.append((prov.page_no, tuple(round(v, 6) for v in box)))
    return sorted(boxes)


def test_every_kind_of_block_becomes_its_docling_item() -> None:
    document = _every_kind()
    doc = DoclingDocument.model_validate(to_docling(document).export_to_dict())
    labels = [item.label for item in _items(doc)]
    assert labels == [
        DocItemLabel.PAGE_HEADER, DocItemLabel.TITLE, DocItemLabel.SECTION_HEADER,
        DocItemLabel.TEXT, DocItemLabel.LIST_ITEM, DocItemLabel.LIST_ITEM, DocItemLabel.TABLE,
        DocItemLabel.CAPTION, DocItemLabel.PICTURE, DocItemLabel.CAPTION, DocItemLabel.FORMULA,
        DocItemLabel.FOOTNOTE, DocItemLabel.PAGE_FOOTER,
    ]  # fmt: skip
    layer = {ContentLayer.FURNITURE}
    furniture = [i.label for i, _ in doc.iterate_items(included_content_layers=layer)]
    assert furniture == [DocItemLabel.PAGE_HEADER, DocItemLabel.PAGE_FOOTER]
    (heading,) = [i for i in _items(doc) if isinstance(i, SectionHeaderItem)]
    assert (heading.text, heading.level) == ("Flour", 2)
    items = [i for i in _items(doc) if isinstance(i, ListItem)]
    assert [i.text for i in items] == ["rye from the north", "wheat from the south"]
    assert items[0].parent is not None and items[0].parent.cref == items[1].parent.cref  # type: ignore[union-attr]
    assert doc.groups[0].label == "list"
    (table,) = [i for i in _items(doc) if isinstance(i, TableItem)]
    assert (table.data.num_rows, table.data.num_cols) == (3, 3)
    grid = [[cell.text for cell in row] for row in table.data.grid]
    assert grid == [["Year", "Output", "Output"], ["2023", "12", "14"], ["2023", "13", "15"]]
    assert table.caption_text(doc) == "Table 1. Output in tonnes"
    (picture,) = [i for i in _items(doc) if isinstance(i, PictureItem)]
    assert picture.caption_text(doc) == "Figure 1. The mill"
    text = next(i for i in _items(doc) if i.label is DocItemLabel.TEXT)
    assert text.prov[0].charspan == (0, len("The mill ground rye and wheat."))


def test_provenance_boxes_are_folios_after_the_origin_change() -> None:
    document = _every_kind()
    doc = to_docling(document)
    assert _docling_boxes(doc, document) == _folio_boxes(document)
    header = _items(doc)[0]
    assert header.prov[0].bbox.coord_origin.value == "BOTTOMLEFT"
    assert header.prov[0].bbox.t == pytest.approx(792 - 20)


def test_an_extracted_pdf_exports_and_chunks_with_its_headings() -> None:
    title, sections = FACTS["bakery.pdf"]
    pdf = fact_pdf(title, sections, filler_pages=1)
    document = extract_document(pdf, source="bakery.pdf", options=ExtractOptions(ocr=OcrMode.never))
    doc = DoclingDocument.model_validate_json(to_docling(document).model_dump_json())
    assert _docling_boxes(doc, document) == _folio_boxes(document)
    assert [p.page_no for p in doc.pages.values()] == [1, 2]
    chunks = list(HierarchicalChunker().chunk(doc))
    assert len(chunks) >= len(sections)
    heading, body = sections[0]
    first_words = " ".join(body.split()[:4])
    chunk = next(c for c in chunks if first_words in " ".join(c.text.split()))
    assert chunk.meta.headings and heading in chunk.meta.headings[-1]  # type: ignore[attr-defined]
    assert chunk.meta.doc_items[0].prov[0].page_no == 1  # type: ignore[attr-defined]


def test_the_api_serves_a_valid_docling_document(tmp_path: Path) -> None:
    with api_app(tmp_path) as app:
        response = app.client.get(f"/documents/{app.doc_id}/docling")
        document = app.services.files.load_document(app.doc_id)
    assert response.status_code == 200, response.text
    assert 'filename="volcano.docling.json"' in response.headers["content-disposition"]
    doc = DoclingDocument.model_validate_json(response.content)
    assert _docling_boxes(doc, document) == _folio_boxes(document)
    assert any(isinstance(i, SectionHeaderItem) for i in _items(doc))
