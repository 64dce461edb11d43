"""A crop of one cell in a wide table row: its row label and its column's heading, the columns
between left out, its text drawn at least 12 px high (a whole-row crop, scaled into the page's
citation column, had labels about 7 px high)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from doubles.fakes import HashEmbedder
from ocr_engine.geometry import Box, union
from ocr_engine.options import OcrMode
from ocr_engine.schema import BlockType, TableCell
from retrieval.links import crop_url, format_boxes
from server.crop_columns import kept_columns
from server.serve.app import create_app
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import wide_table_pdf

RULE_GREY = (160, 160, 160)
HIGHLIGHT = (255, 241, 165)  # server.pages' translucent yellow over white paper


@dataclass
class Table:
    client: TestClient
    doc_id: str
    cells: dict[tuple[int, int], TableCell]


@pytest.fixture(scope="module", params=[8.0, 6.0], ids=["8pt", "6pt"])
def table(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Table]:
    root = tmp_path_factory.mktemp("wide-table")
    pdf = root / "wide.pdf"
    pdf.write_bytes(wide_table_pdf(fontsize=request.param))
    config = Settings(data_dir=root / "data", ocr=OcrMode.never, extract_processes=0)
    services = build_services(config, embedder=HashEmbedder())
    try:
        [result] = services.sync.ingest_paths([pdf])
        assert result.doc_id is not None and result.status.value == "ok", result
        page = services.files.page(result.doc_id, 1)
        [block] = [b for b in page.blocks if b.type == BlockType.table]
        cells = {(c.row, c.col): c for c in block.cells}
        with TestClient(create_app(services, watch=False)) as client:
            yield Table(client, result.doc_id, cells)
    finally:
        services.close()


def _box(table: Table, row: int, col: int) -> Box:
    box = table.cells[(row, col)].bbox
    assert box is not None
    return box


def _cell_crop(table: Table, row: int, col: int, **params: str) -> Image.Image:
    """The crop a citation of cell (row, col) links to: the heading row over the cell's row,
    the cell highlighted (as retrieval.answer builds it)."""
    heads = union([_box(table, 0, c) for c in range(1, 8)])
    line = union([_box(table, row, c) for c in range(8)])
    url = crop_url(table.doc_id, 1, [heads, line], [_box(table, row, col)])
    path, _, query = url.partition("?")
    response = table.client.get(path, params={**dict(parse_qsl(query)), **params})
    assert response.status_code == 200, response.text
    return Image.open(io.BytesIO(response.content)).convert("RGB")


def _rules(image: Image.Image) -> list[int]:
    """The first x of each grey rule from top to bottom (a rule is 3 pixels wide)."""
    xs = [
        x
        for x in range(image.width)
        if all(image.getpixel((x, y)) == RULE_GREY for y in range(0, image.height, 3))
    ]
    return [x for x in xs if x - 1 not in xs]


def _ink_runs(image: Image.Image) -> list[int]:
    """The heights of the runs of pixel rows holding dark ink: a run is a line of text."""
    grey = image.convert("L")
    runs, run = [], 0
    for y in range(grey.height):
        inked = any(grey.getpixel((x, y)) < 110 for x in range(grey.width))
        if inked:
            run += 1
        elif run:
            runs.append(run)
            run = 0
    return [*runs, run] if run else runs


def test_a_cell_of_a_wide_row_is_cropped_with_its_label_and_heading(table: Table) -> None:
    whole_width = (_box(table, 2, 7)[2] - _box(table, 2, 0)[0] + 32) * 2  # the row at 144 dpi
    image = _cell_crop(table, 2, 4)  # Total revenues, 2020
    [rule] = _rules(image)  # two columns: the label's and the cell's
    assert image.width < 0.6 * whole_width, (image.width, whole_width)
    label = image.crop((0, 0, rule, image.height))
    cell = image.crop((rule + 3, 0, image.width, image.height))
    [seam] = [y for y in range(image.height) if label.getpixel((2, y)) == RULE_GREY][:1]
    # the label column: nothing over the seam, the cited row's label (and the next) under it
    assert _ink_runs(label.crop((0, 0, label.width, seam))) == []
    assert len(_ink_runs(label.crop((0, seam, label.width, label.height)))) == 2
    # the cell's column: its heading over the seam, the cell highlighted under it
    assert len(_ink_runs(cell.crop((0, 0, cell.width, seam)))) == 1
    assert _highlighted(cell.crop((0, seam, cell.width, cell.height)))
    assert not _highlighted(label)


def _highlighted(image: Image.Image) -> bool:
    return any(
        image.getpixel((x, y)) == HIGHLIGHT for x in range(image.width) for y in range(image.height)
    )


def test_the_cells_text_is_at_least_12_px_high(table: Table) -> None:
    """Capitals and ascenders, the least of a line's ink ("Total revenues" has no descender),
    are 12 px high or more at the crop's own size, whatever the table's font size."""
    image = _cell_crop(table, 2, 4)
    [rule] = _rules(image)
    runs = _ink_runs(image.crop((0, 0, rule, image.height)))
    assert min(runs) >= 12, runs


def test_a_dpi_asked_for_is_kept_and_a_whole_row_is_not_cut(table: Table) -> None:
    image = _cell_crop(table, 2, 4, dpi="72", margin="0")
    assert len(_rules(image)) == 1
    row = format_boxes([union([_box(table, 2, c) for c in range(8)])])
    whole = table.client.get(
        f"/documents/{table.doc_id}/pages/1/crop.png",
        params={"bbox": row, "highlight": row, "dpi": "72", "margin": "0"},
    )
    assert whole.status_code == 200
    assert _rules(Image.open(io.BytesIO(whole.content)).convert("RGB")) == []


def test_prose_and_a_label_beside_its_cell_keep_the_whole_width() -> None:
    line = (72.0, 100.0, 540.0, 112.0)
    assert kept_columns([line], [(300.0, 100.0, 340.0, 112.0)], None, []) is None  # no words
    words = [
        (72.0, 100.0, 110.0, 112.0),
        (114.0, 100.0, 150.0, 112.0),
        (300.0, 100.0, 340.0, 112.0),
    ]
    # a label just left of its cell is kept with it, the columns after the cell left out
    near = [(72.0, 100.0, 292.0, 112.0), (300.0, 100.0, 340.0, 112.0)]
    assert kept_columns([line], [(300.0, 100.0, 340.0, 112.0)], None, near) == [(72.0, 340.0)]
    assert kept_columns([line], [line], None, words) is None  # the whole row highlighted
    spans = kept_columns([line], [(300.0, 100.0, 340.0, 112.0)], None, words)
    assert spans == [(72.0, 150.0), (300.0, 340.0)]
