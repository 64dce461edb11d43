"""Reading order of laid-out blocks (shared by the text layer, the OCR heuristics and the scan
layout): columns staggered around a picture set between them are read one after the other."""

from __future__ import annotations

import numpy as np
import pymupdf

from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.geometry import Box
from ocr_engine.layout.layout import LayoutBlock
from ocr_engine.layout.reading_order import reading_order
from ocr_engine.layout.textlayer import TextLine
from ocr_engine.options import CpuOcrOptions
from ocr_engine.schema import BlockType

TEXT = (
    "harbour pilots board ships at seven in the morning when the tide turns and the river runs "
    "quiet under the old stone bridge where traders once met to weigh grain and wool"
)
WORDS = TEXT.split()


def block(name: str, box: Box, kind: BlockType = BlockType.text) -> LayoutBlock:
    line = TextLine(text=name, bbox=box, size=10.0, bold=False, mono=False)
    return LayoutBlock(kind, [line], box=box)


def names(blocks: list[LayoutBlock]) -> list[str]:
    return [b.text for b in blocks]


def magazine_page() -> list[LayoutBlock]:
    """A 600 x 800 page: two columns (x 60-290 and 310-540) whose paragraphs start at staggered
    heights, narrowing around a picture and its caption set across the gutter (x 200-400)."""
    return [
        block("header", (270.0, 90.0, 330.0, 100.0), BlockType.page_header),
        block("L1", (60.0, 140.0, 290.0, 180.0)),
        block("R1", (310.0, 143.0, 540.0, 168.0)),
        block("R2", (310.0, 166.0, 540.0, 238.0)),
        block("L2", (60.0, 178.0, 290.0, 236.0)),
        block("L3", (60.0, 234.0, 190.0, 340.0)),
        block("R3", (410.0, 236.0, 540.0, 341.0)),
        block("picture", (200.0, 244.0, 400.0, 548.0), BlockType.figure),
        block("L4", (60.0, 338.0, 190.0, 570.0)),
        block("R4", (410.0, 339.0, 540.0, 560.0)),
        block("R5", (370.0, 558.0, 540.0, 652.0)),
        block("caption", (260.0, 570.0, 345.0, 630.0), BlockType.caption),
        block("L5", (60.0, 568.0, 240.0, 650.0)),
        block("L6", (60.0, 648.0, 290.0, 755.0)),
        block("R6", (310.0, 650.0, 540.0, 756.0)),
        block("footer", (60.0, 765.0, 250.0, 776.0), BlockType.page_footer),
    ]


def test_columns_staggered_around_a_central_picture_are_read_one_after_the_other() -> None:
    ordered = reading_order(magazine_page()[::-1])
    assert names(ordered) == [
        "header",
        *("L1", "L2", "L3", "L4", "L5", "L6"),
        *("R1", "R2", "R3", "R4", "R5", "R6"),
        "picture",
        "caption",
        "footer",
    ]


def test_a_heading_straddling_the_columns_is_read_after_them_when_it_starts_below() -> None:
    # a picture holding the article's opening on the left, two columns on the right, the title
    # set across the picture's foot and under the columns, touching both, and a byline below
    page = [
        block("opening", (0.0, 36.0, 360.0, 482.0), BlockType.figure),
        block("A1", (420.0, 36.0, 570.0, 118.0)),
        block("B1", (582.0, 38.0, 733.0, 174.0)),
        block("A2", (420.0, 114.0, 570.0, 250.0)),
        block("B2", (581.0, 169.0, 732.0, 283.0)),
        block("A3", (419.0, 245.0, 569.0, 436.0)),
        block("B3", (580.0, 279.0, 730.0, 437.0)),
        block("title", (222.0, 435.0, 681.0, 485.0), BlockType.section_header),
        block("byline", (219.0, 487.0, 332.0, 495.0)),
    ]
    assert names(reading_order(page)) == [
        *("opening", "A1", "A2", "A3", "B1", "B2", "B3", "title", "byline")
    ]


def test_a_heading_straddling_the_columns_comes_first_when_it_starts_above_them() -> None:
    page = [
        block("title", (100.0, 40.0, 500.0, 90.0), BlockType.section_header),
        block("A1", (60.0, 80.0, 290.0, 200.0)),
        block("B1", (310.0, 85.0, 540.0, 150.0)),
        block("B2", (310.0, 148.0, 540.0, 260.0)),
        block("A2", (60.0, 198.0, 290.0, 300.0)),
    ]
    assert names(reading_order(page)) == ["title", "A1", "A2", "B1", "B2"]


def test_blocks_with_neither_gutter_nor_gap_are_read_from_the_top() -> None:
    page = [
        block("wide", (60.0, 100.0, 540.0, 160.0)),
        block("left", (60.0, 150.0, 300.0, 220.0)),
        block("right", (280.0, 140.0, 540.0, 210.0)),
    ]
    assert names(reading_order(page)) == ["wide", "right", "left"]


def paragraph(page: pymupdf.Page, x0: float, x1: float, y: float, lines: int, seed: int) -> float:
    """`lines` lines of 10 pt text from `y` between `x0` and `x1`, the last ending its sentence;
    the next paragraph's top."""
    rng = np.random.default_rng(seed)
    for i in range(lines):
        words: list[str] = []
        while len(" ".join(words)) < (x1 - x0) / 5.2:
            words.append(WORDS[int(rng.integers(len(WORDS)))])
        text = " ".join(words) + ("." if i == lines - 1 else "")
        page.insert_text((x0, y + 12 * i), text, fontsize=10, fontname="helv")
    return y + 12 * lines + 3


def picture() -> pymupdf.Pixmap:
    """A noisy colour gradient the layout model takes for a photograph."""
    h, w = 300, 280
    yy, xx = np.mgrid[0:h, 0:w]
    waves = 128 + 100 * np.sin(xx / 17.0) * np.cos(yy / 23.0)
    img = np.stack([xx * 255 / w, yy * 255 / h, waves], -1)
    img = img + np.random.default_rng(0).normal(0, 30, img.shape)
    data = np.clip(img, 0, 255).astype(np.uint8).tobytes()
    return pymupdf.Pixmap(pymupdf.csRGB, w, h, data, False)


def test_a_scanned_page_with_columns_around_a_picture_is_read_column_by_column() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((200, 60), "Harbour Notes", fontsize=24, fontname="hebo")
    y = paragraph(page, 54, 290, 100, 6, 1)  # left column: wide, narrow beside the picture, wide
    y = paragraph(page, 54, 290, y, 6, 2)
    y = paragraph(page, 54, 186, y, 9, 3)
    y = paragraph(page, 54, 186, y, 10, 4)
    y = paragraph(page, 54, 290, y, 7, 5)
    paragraph(page, 54, 290, y, 6, 6)
    y = paragraph(page, 322, 558, 100, 9, 7)  # right column, paragraphs at other heights
    y = paragraph(page, 426, 558, y, 6, 8)
    y = paragraph(page, 426, 558, y, 10, 9)
    y = paragraph(page, 426, 558, y, 8, 10)
    y = paragraph(page, 322, 558, y, 5, 11)
    paragraph(page, 322, 558, y, 8, 12)
    page.insert_image(pymupdf.Rect(196, 200, 416, 470), pixmap=picture())
    scan = pymupdf.open()
    scanned = scan.new_page(width=612, height=792)
    scanned.insert_image(scanned.rect, pixmap=page.get_pixmap(dpi=150))

    blocks = RapidOCREngine(CpuOcrOptions(dpi=150)).extract_page(scan[0]).blocks
    assert any(b.type == BlockType.figure for b in blocks)
    sides = [
        "left" if (b.bbox[0] + b.bbox[2]) / 2 < 306 else "right"
        for b in blocks
        if b.type == BlockType.text
    ]
    assert sides.count("left") >= 2 and sides.count("right") >= 2
    assert sides == sorted(sides)  # every left-column block before every right-column one
