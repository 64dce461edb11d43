"""The document contract: JSON round trip, checked-in JSON Schema freshness, version refusal."""

from __future__ import annotations

import json

import pydantic
import pymupdf
import pytest

from ocr_engine.__main__ import SCHEMA_PATH, render_schema
from ocr_engine.engines.extract import extract_document
from ocr_engine.schema import (
    SCHEMA_VERSION,
    Block,
    BlockType,
    Document,
    EngineInfo,
    Line,
    Page,
    PageStatus,
    TableCell,
)


def _sample() -> Document:
    table = Block(
        id="p1-b1",
        type=BlockType.table,
        bbox=(10, 60, 200, 100),
        text="| a | b |\n| --- | --- |\n| 1 | 2 |",
        lines=[
            Line(text="| a | b |", bbox=(10, 60, 200, 80)),
            Line(text="| 1 | 2 |", bbox=(10, 80, 200, 100)),
        ],
        html="<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>",
        cells=[
            TableCell(row=0, col=0, text="a", header=True),
            TableCell(row=1, col=0, col_span=2, text="1"),
        ],
    )
    heading = Block(
        id="p1-b0",
        type=BlockType.section_header,
        level=2,
        bbox=(10, 10, 200, 30),
        text="1 Intro",
        lines=[Line(text="1 Intro", bbox=(10, 10, 200, 30))],
    )
    page = Page(
        number=1, width=612, height=792, engine=EngineInfo(name="pymupdf"), blocks=[heading, table]
    )
    failed = Page(
        number=2, width=612, height=792, engine=EngineInfo(name="pymupdf"), status=PageStatus.failed
    )
    return Document(
        doc_id="ab" * 32,
        source="x.pdf",
        page_count=2,
        pages=[page, failed],
        metadata={"title": "T"},
    )


def test_round_trip_sample() -> None:
    doc = _sample()
    assert Document.model_validate_json(doc.model_dump_json()) == doc


def test_round_trip_extracted_document() -> None:
    pdf = pymupdf.open()
    page = pdf.new_page()
    page.insert_text((72, 100), "Heading", fontsize=20)
    page.insert_text((72, 140), "Body text here.", fontsize=10)
    doc = extract_document(pdf.tobytes(), source="gen.pdf")
    again = Document.model_validate(json.loads(doc.model_dump_json()))
    assert again == doc
    assert again.pages[0].blocks


def test_schema_file_is_fresh() -> None:
    assert SCHEMA_PATH.read_text() == render_schema(), "stale: run `python -m ocr_engine`"


def test_incompatible_schema_version_refused() -> None:
    data = json.loads(_sample().model_dump_json())
    major = int(SCHEMA_VERSION.split(".")[0])
    data["schema_version"] = f"{major + 1}.0"
    with pytest.raises(pydantic.ValidationError, match="incompatible"):
        Document.model_validate(data)
    data["schema_version"] = f"{major}.9"
    assert Document.model_validate(data).schema_version == f"{major}.9"
