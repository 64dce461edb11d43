"""Spreadsheet cells written as their number format shows them, so that a sheet's source table
matches its rendered page (a date column LibreOffice prints as "2024-01-07 0:00:00")."""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil

import pytest

from ocr_engine.inputs.cell_format import shown_value
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import BlockType


@pytest.mark.parametrize(
    ("value", "number_format", "shown"),
    [
        (dt.datetime(2024, 1, 7), "yyyy\\-mm\\-dd\\ h:mm:ss", "2024-01-07 0:00:00"),
        (dt.datetime(2024, 3, 5, 14, 7, 9), "d/m/yy h:mm AM/PM", "5/3/24 2:07 PM"),
        (dt.date(2024, 3, 5), "mmm d, yyyy", "Mar 5, 2024"),
        (dt.datetime(2024, 3, 5), "[$-409]dddd, mmmm dd, yyyy", "Tuesday, March 05, 2024"),
        (dt.time(9, 5, 30), "hh:mm:ss", "09:05:30"),
        (dt.datetime(2024, 12, 1), 'mm"/"yyyy', "12/2024"),
        (dt.datetime(2024, 1, 7), "General", "2024-01-07 00:00:00"),
        (5000.0, "#,##0", "5000"),
        (2.5, "General", "2.5"),
        (None, "General", ""),
        ("Widget C", "@", "Widget C"),
    ],
)
def test_a_cell_is_written_as_its_format_shows_it(
    value: object, number_format: str, shown: str
) -> None:
    assert shown_value(value, number_format) == shown


@pytest.mark.skipif(
    shutil.which("soffice") is None and os.environ.get("FOLIO_SKIP_OFFICE") == "1",
    reason="LibreOffice is skipped (FOLIO_SKIP_OFFICE=1)",
)
def test_a_sheet_with_a_date_column_is_one_table_whose_cells_keep_their_headers() -> None:
    import openpyxl

    from ocr_engine.engines.extract import extract_document

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Sales"
    sheet.column_dimensions["B"].width = 22  # wide enough to show the date, not "###"
    sheet.append(["Product", "Date", "Quantity", "Revenue"])
    for day, (product, quantity, revenue) in enumerate(
        [("Widget A", 5, 5000), ("Widget B", 10, 12000), ("Widget C", 12, 15000)], start=5
    ):
        sheet.append([product, dt.datetime(2024, 1, day), quantity, revenue])
        sheet.cell(row=day - 3, column=2).number_format = "yyyy\\-mm\\-dd\\ h:mm:ss"
    out = io.BytesIO()
    book.save(out)
    document = extract_document(
        out.getvalue(), source="sales.xlsx", options=ExtractOptions(ocr=OcrMode.never)
    )
    tables = [b for p in document.pages for b in p.blocks if b.type is BlockType.table]
    assert len(tables) == 1, [t.text for t in tables]
    cells = tables[0].cells
    header = {c.col: c.text for c in cells if c.row == 0}
    assert header == {0: "Product", 1: "Date", 2: "Quantity", 3: "Revenue"}
    row = {c.col: c.text for c in cells if c.row == 3}
    assert row == {0: "Widget C", 1: "2024-01-07 0:00:00", 2: "12", 3: "15000"}
