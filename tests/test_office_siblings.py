"""OpenDocument, legacy Office and RTF files read through their OOXML sibling: a Word file made
here with python-docx (a heading, a bulleted list, a table with merged cells, a link), a workbook
and a deck with speaker notes, converted to .odt/.rtf/.doc, .ods and .odp by LibreOffice in the
test, then extracted: their list items, tables, notes and links are where the OOXML file has
them."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ocr_engine.engines.extract import extract_document
from ocr_engine.inputs.office import converter_version
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import Block, BlockType, Document

pytestmark = pytest.mark.skipif(
    shutil.which("soffice") is None and os.environ.get("FOLIO_SKIP_OFFICE") == "1",
    reason="LibreOffice is skipped (FOLIO_SKIP_OFFICE=1)",
)

_ITEMS = ["Check the north mooring", "Count the buoys at dawn", "Log the tide gauge"]
_LINK = "https://example.org/harbour-master"


def _docx() -> bytes:
    import docx
    from docx.oxml.ns import qn
    from docx.oxml.shared import OxmlElement

    document = docx.Document()
    document.add_heading("Harbour survey", level=1)
    for text in _ITEMS:
        document.add_paragraph(text, style="List Bullet")
    table = document.add_table(rows=3, cols=3)
    table.style = "Table Grid"
    for r, row in enumerate(
        [["Berth", "", ""], ["Quay A", "11.2 m", "Gantry 4"], ["", "9.8 m", "none"]]
    ):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    table.cell(0, 1).merge(table.cell(0, 2)).text = "Depth and crane"
    table.cell(1, 0).merge(table.cell(2, 0)).text = "Quay A"
    paragraph = document.add_paragraph("Berth bookings go through ")
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"
    r_id = document.part.relate_to(_LINK, rel, is_external=True)
    link, run, text = OxmlElement("w:hyperlink"), OxmlElement("w:r"), OxmlElement("w:t")
    link.set(qn("r:id"), r_id)
    text.text = "the harbour master's page"
    run.append(text)
    link.append(run)
    paragraph._p.append(link)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Lock lifts"
    for row in [["Lock", "Lift and gates", ""], ["Caen Hill", 72.3, 16], ["Tardebigge", 67.1, 30]]:
        sheet.append(row)
    sheet.merge_cells("B1:C1")
    sheet.column_dimensions["A"].width = 20
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _pptx() -> bytes:
    import pptx

    deck = pptx.Presentation()
    for title, notes in [
        ("Ferry timetable", "The 07:15 ferry skips Inchmore in winter."),
        ("Fares", ""),
    ]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = f"{title} in brief"
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _converted(tmp_path: Path, data: bytes, name: str, to: str) -> bytes:
    """`data` (named `name`) saved as `to` by LibreOffice, in a profile of the test's own."""
    source = tmp_path / name
    source.write_bytes(data)
    profile = f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}"
    soffice = shutil.which("soffice") or "soffice"
    argv = [
        soffice,
        "--headless",
        profile,
        "--convert-to",
        to,
        "--outdir",
        str(tmp_path),
        str(source),
    ]
    subprocess.run(argv, timeout=120, check=True, capture_output=True)
    return (tmp_path / f"{source.stem}.{to}").read_bytes()


def _extract(data: bytes, name: str) -> Document:
    return extract_document(data, source=name, options=ExtractOptions(ocr=OcrMode.never))


def _blocks(document: Document) -> list[Block]:
    return [b for p in document.pages for b in p.blocks]


@pytest.mark.parametrize("to", ["odt", "rtf", "doc"])
def test_lists_tables_and_links_of_odt_rtf_and_doc_come_from_their_docx_sibling(
    tmp_path: Path, to: str
) -> None:
    name = f"survey.{to}"
    blocks = _blocks(_extract(_converted(tmp_path, _docx(), "survey.docx", to), name))
    heading = next(b for b in blocks if b.text == "Harbour survey")
    assert (heading.type, heading.level) == (BlockType.section_header, 1)
    listed = [b for b in blocks if b.type is BlockType.list_item]
    assert [b.text.lstrip("\uf0b7•· ") for b in listed] == _ITEMS
    assert heading.bbox[1] < listed[0].bbox[1]
    table = next(b for b in blocks if b.type is BlockType.table)
    cells = {(c.row, c.col): c for c in table.cells}
    assert {k: c.text for k, c in cells.items()} == {
        (0, 0): "Berth",
        (0, 1): "Depth and crane",
        (1, 0): "Quay A",
        (1, 1): "11.2 m",
        (1, 2): "Gantry 4",
        (2, 1): "9.8 m",
        (2, 2): "none",
    }
    spans = {
        k: (c.row_span, c.col_span) for k, c in cells.items() if (c.row_span, c.col_span) != (1, 1)
    }
    assert spans == {(0, 1): (1, 2), (1, 0): (2, 1)}
    assert 'colspan="2"' in (table.html or "") and 'rowspan="2"' in (table.html or "")
    assert listed[-1].bbox[3] < table.bbox[1]
    assert cells[(0, 0)].header and not cells[(1, 1)].header
    link = next(k for b in blocks for k in b.links)
    assert link.url == _LINK and "harbour master" in link.text
    assert converter_version(to).endswith("-r3"), "renderings made before siblings are not reused"


def test_an_ods_sheet_is_a_titled_table_and_an_odp_keeps_its_speaker_notes(tmp_path: Path) -> None:
    sheet = _extract(_converted(tmp_path, _xlsx(), "lifts.xlsx", "ods"), "lifts.ods")
    assert sheet.page_count == 1
    blocks = _blocks(sheet)
    assert blocks[0].text == "Lock lifts" and blocks[0].type is BlockType.title
    table = next(b for b in blocks if b.type is BlockType.table)
    assert [[c.text for c in table.cells if c.row == r] for r in range(3)] == [
        ["Lock", "Lift and gates"],
        ["Caen Hill", "72.3", "16"],
        ["Tardebigge", "67.1", "30"],
    ]
    merged = [(c.row, c.col, c.col_span) for c in table.cells if c.col_span > 1]
    assert merged == [(0, 1, 2)]
    deck = _extract(_converted(tmp_path, _pptx(), "ferry.pptx", "odp"), "ferry.odp")
    assert deck.page_count == 2, "the notes pages are not pages of their own"
    first = _blocks(deck)[: len(deck.pages[0].blocks)]
    title = next(b for b in first if b.text == "Ferry timetable")
    heading = next(b for b in first if b.text == "Speaker notes")
    assert title.type is BlockType.title and heading.level == 2
    notes = next(b for b in first if "07:15 ferry skips Inchmore" in b.text)
    assert title.bbox[3] < heading.bbox[1] < notes.bbox[1]


def test_lines_of_a_matched_table_that_no_cell_took_are_kept() -> None:
    """In the cell they lie in where none was found, else as text after the table."""
    from ocr_engine.inputs.office_structure import SourceTable
    from ocr_engine.layout.office_match import _tabled
    from ocr_engine.schema import EngineInfo, Line, Page

    said = [("Berth", 70, 100), ("Depth", 200, 100), ("Quay A", 70, 120), ("11.2 m", 200, 120)]
    said += [("(dredged 2024)", 200, 132)]  # the source's cell reads "11.2 m after dredging"
    said += [("(renamed)", 70, 132)]  # under a cell that was found
    lines = [Line(text=t, bbox=(x, y, x + 60, y + 10)) for t, x, y in said]
    block = Block(id="p1-b0", type=BlockType.text, bbox=(70, 100, 260, 142), text="", lines=lines)
    page = Page(number=1, width=600, height=800, engine=EngineInfo(name="t"), blocks=[block])
    table = SourceTable(rows=[["Berth", "Depth"], ["Quay A", "11.2 m after dredging"]])
    made, rest = _tabled(page, [table]).blocks
    assert made.type is BlockType.table
    assert (rest.type, rest.text) == (BlockType.text, "(renamed)")
    assert {(c.row, c.col): c.text for c in made.cells} == {
        (0, 0): "Berth",
        (0, 1): "Depth",
        (1, 0): "Quay A",
        (1, 1): "11.2 m (dredged 2024)",
    }
