"""A picture of a table inside a text-layer page read as a table: cells with the words OCR read
inside them and boxes where the picture draws them, chunked as a table and cited cell by cell;
through a vLLM endpoint (the OCR simulator), the table the model reads in the picture."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from doubles.ocr_simulator import OcrSimulator
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.engines.reader import PageReader
from ocr_engine.engines.render import render_region
from ocr_engine.geometry import Box, centre_inside
from ocr_engine.options import ExtractOptions, VLLMOptions
from ocr_engine.schema import Block, BlockType, Page
from retrieval.schema import QueryRequest
from server.services import build_services
from server.settings import Settings

ROWS = (
    ("Region", "2022", "2023"),
    ("North", "1,250", "1,410"),
    ("South", "980", "1,105"),
    ("Tundra", "2,340", "2,610"),
)
PICTURE = (72.0, 130.0, 522.0, 370.0)  # where the page shows the 1200 px wide picture
COLUMNS = (20, 440, 800, 1160)  # the ruled columns' edges in the picture's pixels
ROW_PX = 110
TITLE = "Units sold by region"


def _table_png(title: str) -> tuple[bytes, dict[str, Box]]:
    """A ruled table drawn as a 1200 x 640 px picture (a title above it when given), and where
    each cell's text is drawn, in page points once the page shows the picture at `PICTURE`."""
    image = Image.new("RGB", (1200, 640), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=36)
    top = 20
    if title:
        draw.text((40, 20), title, fill="black", font=font)
        top = 110
    drawn: dict[str, Box] = {}
    zoom = (PICTURE[2] - PICTURE[0]) / 1200
    for r, row in enumerate(ROWS):
        y = top + r * ROW_PX
        for c, text in enumerate(row):
            draw.rectangle((COLUMNS[c], y, COLUMNS[c + 1], y + ROW_PX), outline="black", width=3)
            draw.text((COLUMNS[c] + 30, y + 35), text, fill="black", font=font)
            x0, y0, x1, y1 = draw.textbbox((COLUMNS[c] + 30, y + 35), text, font=font)
            drawn[text] = (
                PICTURE[0] + x0 * zoom,
                PICTURE[1] + y0 * zoom,
                PICTURE[0] + x1 * zoom,
                PICTURE[1] + y1 * zoom,
            )
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue(), drawn


def _pdf(title: str = "") -> tuple[bytes, dict[str, Box]]:
    """A text-layer page: a heading, a sentence, the table's picture and its caption below."""
    picture, drawn = _table_png(title)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Widget sales", fontsize=16)
    page.insert_text((72, 100), "The table below gives the units sold by region.", fontsize=11)
    page.insert_image(pymupdf.Rect(*PICTURE), stream=picture)
    page.insert_text((72, 400), "Table 1: Units by region", fontsize=9)
    return doc.tobytes(), drawn


def _read(data: bytes, options: ExtractOptions | None = None, **kwargs: object) -> Page:
    with (
        pymupdf.open(stream=data, filetype="pdf") as pdf,
        PageReader(options or ExtractOptions(), **kwargs) as reader,  # type: ignore[arg-type]
    ):
        return reader.read(pdf, data, "doc", [1])[0]


def _only(page: Page, kind: BlockType) -> Block:
    (block,) = [b for b in page.blocks if b.type is kind]
    return block


@pytest.fixture(scope="module")
def plain() -> tuple[Page, dict[str, Box]]:
    data, drawn = _pdf()
    return _read(data), drawn


def test_the_picture_of_a_table_is_a_table_block_with_its_cells(
    plain: tuple[Page, dict[str, Box]],
) -> None:
    page, drawn = plain
    table = _only(page, BlockType.table)
    assert not [b for b in page.blocks if b.type is BlockType.figure]  # the table is the picture
    grid = {(cell.row, cell.col): cell.text for cell in table.cells}
    assert grid == {(r, c): text for r, row in enumerate(ROWS) for c, text in enumerate(row)}
    for cell in table.cells:
        assert cell.bbox is not None and centre_inside(drawn[cell.text], cell.bbox, 0)
        assert centre_inside(cell.bbox, PICTURE, 0)
    assert [c.header for c in table.cells if c.row == 0] == [True, True, True]
    assert "| Tundra | 2,340 | 2,610 |" in table.text
    assert table.engine is not None and table.engine.name == "rapidocr"
    assert page.route == "text layer" and page.status == "ok" and not page.errors
    assert [b.id for b in page.blocks] == [f"p1-b{i}" for i in range(len(page.blocks))]


def test_words_outside_the_table_stay_with_the_figure_before_it() -> None:
    data, drawn = _pdf(TITLE)
    page = _read(data)
    kinds = [b.type for b in page.blocks]
    figure, table = _only(page, BlockType.figure), _only(page, BlockType.table)
    assert kinds.index(BlockType.figure) + 1 == kinds.index(BlockType.table)
    assert figure.text == TITLE and figure.bbox == PICTURE
    assert TITLE not in table.text and len(table.cells) == 12
    two_thousand = next(c for c in table.cells if c.text == "2,610")
    assert two_thousand.bbox is not None and centre_inside(drawn["2,610"], two_thousand.bbox, 0)
    assert [b.id for b in page.blocks] == [f"p1-b{i}" for i in range(len(page.blocks))]


def test_without_the_layout_models_the_picture_keeps_its_lines() -> None:
    data, _ = _pdf()
    page = _read(data, engines=[RapidOCREngine(layout=False), PyMuPDFEngine()])
    figure = _only(page, BlockType.figure)
    assert not [b for b in page.blocks if b.type is BlockType.table]
    assert {"Tundra", "2,610"} <= {line.text for line in figure.lines}


def test_a_question_is_answered_from_the_cell_and_cites_it(tmp_path: Path) -> None:
    data, drawn = _pdf()
    path = tmp_path / "widgets.pdf"
    path.write_bytes(data)
    services = build_services(Settings(data_dir=tmp_path / "data", extract_processes=0))
    try:
        (result,) = services.sync.ingest_paths([path])
        response = services.retriever.query(
            QueryRequest(question="How many units did Tundra sell in 2023?")
        )
    finally:
        services.close()
    assert result.status == "ok"
    assert response.hits[0].page == 1 and "2,610" in response.hits[0].text
    assert response.answer is not None and "2,610" in response.answer
    cited = response.citations[0]
    assert cited.page == 1 and centre_inside(drawn["2,610"], cited.bbox, 0)


def test_a_table_the_vllm_engine_reads_in_the_picture_is_a_table_block() -> None:
    data, _ = _pdf(TITLE)
    served = VLLMOptions(urls=["http://127.0.0.1:1"])  # the defaults a picture is rendered at
    dpi, max_pixels = served.dpi, served.max_pixels
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        picture = render_region(pdf[0], PICTURE, dpi=dpi, max_pixels=max_pixels)
    rows = "".join("<tr>" + "".join(f"<td>{t}</td>" for t in row) + "</tr>" for row in ROWS)
    output = (  # DeepSeek-OCR's grounding answer: boxes on a 0..999 grid over the picture
        f"<|ref|>title<|/ref|><|det|>[[30, 30, 400, 90]]<|/det|>\n# {TITLE}\n"
        f"<|ref|>table<|/ref|><|det|>[[15, 170, 970, 870]]<|/det|>\n<table>{rows}</table>\n"
    )
    with OcrSimulator() as sim:
        sim.register_image(picture.png, output)
        options = ExtractOptions.model_validate(
            {"vllm": {"urls": [sim.url], "retries": 1}, "cpu": {"enabled": False}}
        )
        page = _read(data, options)
    figure, table = _only(page, BlockType.figure), _only(page, BlockType.table)
    assert [line.text for line in figure.lines] == [TITLE]
    assert {(c.row, c.col): c.text for c in table.cells} == {
        (r, c): text for r, row in enumerate(ROWS) for c, text in enumerate(row)
    }
    assert table.engine is not None and table.engine.name == "vllm" and not page.errors
    assert centre_inside(table.bbox, PICTURE, 0)
