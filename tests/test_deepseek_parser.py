"""The DeepSeek-OCR grounding parser on the recorded outputs in ../shared/data/ocr_samples."""

from __future__ import annotations

import re

import pymupdf
import pytest

from ocr_engine.engines.deepseek import (
    DEEPSEEK_OCR,
    DEEPSEEK_OCR_2,
    GROUNDING_PROMPT,
    detect_repetition,
    parse_grounding,
    profile_for,
)
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.errors import EngineOutputError
from ocr_engine.layout.html_table import parse_html_table
from ocr_engine.schema import Block, BlockType
from tests.conftest import shared_path

LETTER = {"width": 612.0, "height": 792.0}
Box = tuple[float, float, float, float]


def sample(name: str) -> str:
    return shared_path("ocr_samples", f"deepseek_ocr__docling__deepseek_{name}.md").read_text()


def parse(text: str, **kwargs: float) -> list[Block]:
    return parse_grounding(text, page_number=9, **{**LETTER, **kwargs})


def pt(box: tuple[int, int, int, int], width: float = 612.0, height: float = 792.0) -> Box:
    x0, y0, x1, y1 = box
    return (
        round(x0 / 999 * width, 2),
        round(y0 / 999 * height, 2),
        round(x1 / 999 * width, 2),
        round(y1 / 999 * height, 2),
    )


def iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def words(text: str) -> list[str]:
    return text.split()


def test_example_page_blocks_in_reading_order_with_boxes_in_points() -> None:
    blocks = parse(sample("example"))
    assert [b.type for b in blocks] == [
        BlockType.text,  # the untagged continuation at the top
        BlockType.section_header,
        BlockType.text,
        BlockType.caption,  # moved before its table: it lies above it
        BlockType.table,
        BlockType.section_header,
        BlockType.text,
        BlockType.text,
    ]
    assert [b.id for b in blocks] == [f"p9-b{i}" for i in range(8)]
    heading = blocks[1]
    assert heading.text == "5.1 Hyper Parameter Optimization"
    assert heading.level == 3
    assert heading.bbox == pt((217, 209, 520, 225))
    assert blocks[2].bbox == pt((217, 230, 785, 321))
    assert blocks[2].text.startswith("We have chosen the PubTabNet")
    assert blocks[3].bbox == pt((217, 342, 785, 413))
    assert blocks[3].text.startswith("Table 1. HPO performed")
    assert "<table" not in blocks[3].text
    assert blocks[4].bbox == pt((225, 421, 777, 595))
    assert blocks[5].text == "5.2 Quantitative Results"
    assert blocks[7].text.endswith("reduced sequence representation.")


def test_table_takes_the_html_written_after_its_caption() -> None:
    table = parse(sample("example"))[4]
    assert table.html is not None
    assert table.html.startswith('<table><tr><th rowspan="2"># enc-layers</th>')
    assert table.html.endswith("</table>")
    cells = {(c.row, c.col): c for c in table.cells}
    assert max(c.row + c.row_span for c in table.cells) == 10
    assert max(c.col + c.col_span for c in table.cells) == 8
    assert (cells[0, 0].text, cells[0, 0].row_span, cells[0, 0].header) == ("# enc-layers", 2, True)
    assert (cells[0, 3].text, cells[0, 3].col_span) == ("TEDs", 3)
    assert (cells[0, 6].text, cells[0, 7].text) == ("mAP (0.75)", "Inference time (secs)")
    assert [cells[1, c].text for c in (3, 4, 5)] == ["simple", "complex", "all"]
    assert (1, 0) not in cells  # covered by the rowspan above
    assert (cells[2, 0].text, cells[2, 0].row_span, cells[2, 0].header) == ("6", 2, False)
    assert [cells[3, c].text for c in range(2, 8)] == [
        "HTML", "0.969", "0.927", "0.955", "0.857", "5.39",
    ]  # fmt: skip
    assert [cells[9, c].text for c in range(2, 8)] == [
        "HTML",
        "0.944",
        "0.903",
        "0.931",
        "0.824",
        "2",
    ]
    # markdown: a header row, the separator, then one row per grid row
    md = table.text.splitlines()
    assert md[0].startswith("| # enc-layers | # dec-layers | Language | TEDs |")
    assert md[1] == "|" + " --- |" * 8
    assert md[3] == "| 6 | 6 | OTSL | 0.965 | 0.934 | 0.955 | 0.88 | 2.73 |"
    # one line per row, stacked inside the table's box
    assert len(table.lines) == 10
    assert table.lines[2].text == md[3]
    x0, y0, x1, y1 = table.bbox
    tops = [line.bbox[1] for line in table.lines]
    assert tops == sorted(tops)
    assert tops[0] == pytest.approx(y0) and table.lines[-1].bbox[3] == pytest.approx(y1)
    assert all(line.bbox[0] == x0 and line.bbox[2] == x1 for line in table.lines)
    for cell in table.cells:
        assert cell.bbox is not None
        assert x0 - 0.01 <= cell.bbox[0] < cell.bbox[2] <= x1 + 0.01
        assert y0 - 0.01 <= cell.bbox[1] < cell.bbox[3] <= y1 + 0.01


def test_html_table_grid_with_spans_in_both_directions() -> None:
    html = (
        "<table><tr><td rowspan='2' colspan='2'>a</td><td>b</td></tr><tr><td>c<br>d</td></tr>"
        "<tr><td>e</td><td>f &amp; g</td><td><b>h</b></td></tr></table>"
    )
    table = parse_html_table(html)
    assert [(c.row, c.col, c.row_span, c.col_span, c.text) for c in table.cells] == [
        (0, 0, 2, 2, "a"),
        (0, 2, 1, 1, "b"),
        (1, 2, 1, 1, "c d"),
        (2, 0, 1, 1, "e"),
        (2, 1, 1, 1, "f & g"),
        (2, 2, 1, 1, "h"),
    ]
    assert (table.n_rows, table.n_cols) == (3, 3)
    assert table.rows == ["| a |   | b |", "|   |   | c d |", "| e | f & g | h |"]
    sloppy = parse_html_table('<TABLE><TR><TH COLSPAN="2">x<TD>y</TABLE>')
    assert [(c.col, c.col_span, c.text, c.header) for c in sloppy.cells] == [
        (0, 2, "x", True),
        (2, 1, "y", False),
    ]


def test_untagged_lead_text_gets_an_estimated_box_above_the_first_block() -> None:
    lead = parse(sample("example"))[0]
    assert lead.text.startswith("order to compute the TED score.")
    assert lead.text.endswith("@2.45 GHz.")
    # the text layer has it at (134.8, 116.5, 480.6, 152.9) in three lines
    assert iou(lead.bbox, (134.8, 116.5, 480.6, 152.9)) > 0.8
    assert len(lead.lines) == 3


def test_untagged_text_alone_on_a_page_spans_the_page() -> None:
    blocks = parse("<|ref|>text<|/ref|><|det|>[[0, 0, 0, 0]]<|/det|>\n", width=100, height=200)
    assert blocks[0].text == ""
    lone = parse_grounding(
        "lead words\n\n<|ref|>image<|/ref|><|det|>[[100, 500, 900, 900]]<|/det|>\n",
        width=100,
        height=200,
        page_number=1,
    )
    assert [b.type for b in lone] == [BlockType.text, BlockType.figure]
    assert lone[0].bbox[1] < lone[1].bbox[1]


def test_title_page_sample_headings_figure_and_caption() -> None:
    blocks = parse(sample("title"))
    title = blocks[0]
    assert (title.type, title.level) == (BlockType.title, 1)
    assert title.text == ("DocLayNet: A Large Human-Annotated Dataset for Document-Layout Analysis")
    abstract = next(b for b in blocks if b.text == "ABSTRACT")
    assert (abstract.type, abstract.level) == (BlockType.section_header, 2)
    figure = next(b for b in blocks if b.type == BlockType.figure)
    assert figure.text == "" and figure.lines == []
    assert figure.bbox == pt((530, 310, 905, 666))
    caption = blocks[blocks.index(figure) + 1]
    assert caption.type == BlockType.caption
    assert caption.text == (
        "Figure 1: Four examples of complex page layouts across different document categories"
    )
    assert sum(1 for b in blocks if b.type == BlockType.text) == 9
    assert not any("#" in b.text or "<center>" in b.text for b in blocks)


def test_simple_sample_has_no_table() -> None:
    blocks = parse(sample("simple"))
    assert BlockType.table not in [b.type for b in blocks]
    assert len(blocks) == 6


def test_stripped_special_tokens_parse_like_the_tagged_form() -> None:
    tagged = sample("example")
    stripped = re.sub(r"<\|/?(?:ref|det)\|>", "", tagged)
    assert "<|" not in stripped and "sub_title[[217, 209, 520, 225]]" in stripped
    assert [(b.type, b.bbox, b.text) for b in parse(stripped)] == [
        (b.type, b.bbox, b.text) for b in parse(tagged)
    ]


def test_end_of_sentence_token_is_dropped() -> None:
    text = "<|ref|>text<|/ref|><|det|>[[100, 100, 900, 200]]<|/det|>\nHello.<｜end▁of▁sentence｜>"
    (block,) = parse(text)
    assert block.text == "Hello."


def test_several_boxes_on_one_tag_split_the_text_by_area() -> None:
    body = " ".join(f"w{i}" for i in range(100))
    text = (
        f"<|ref|>text<|/ref|><|det|>[[50, 100, 480, 900], [520, 100, 950, 300]]<|/det|>\n{body}\n"
    )
    first, second = parse(text)
    assert first.bbox == pt((50, 100, 480, 900)) and second.bbox == pt((520, 100, 950, 300))
    assert words(first.text) + words(second.text) == words(body)
    assert 75 <= len(words(first.text)) <= 85  # 80% of the area
    figures = parse("<|ref|>image<|/ref|><|det|>[[0, 0, 10, 10], [20, 20, 30, 30]]<|/det|>\n")
    assert [b.type for b in figures] == [BlockType.figure, BlockType.figure]
    (table,) = parse(
        "<|ref|>table<|/ref|><|det|>[[100, 100, 500, 200],[100, 250, 500, 400]]<|/det|>\n"
        "<table><tr><td>a</td><td>b</td></tr></table>"
    )
    assert table.bbox == pt((100, 100, 500, 400))
    assert [c.text for c in table.cells] == ["a", "b"]


def test_labels_map_to_block_types() -> None:
    text = "\n\n".join(
        f"<|ref|>{label}<|/ref|><|det|>[[100, {i * 100}, 900, {i * 100 + 50}]]<|/det|>\n{content}"
        for i, (label, content) in enumerate(
            [
                ("header", "Running head"),
                ("equation", "\\[ E = mc^2 \\]"),
                ("footer", "Footer text"),
                ("page_number", "12"),
                ("mystery_label", "Some words"),
                ("figure_caption", "<center>Fig. 2</center>"),
            ]
        )
    )
    blocks = parse(text)
    assert [b.type for b in blocks] == [
        BlockType.page_header,
        BlockType.formula,
        BlockType.page_footer,
        BlockType.page_footer,
        BlockType.text,
        BlockType.caption,
    ]
    assert blocks[1].text == "\\[ E = mc^2 \\]"
    assert [line.bbox for line in blocks[1].lines] == [blocks[1].bbox]
    assert blocks[5].text == "Fig. 2"


def test_a_text_tag_holding_only_a_table_is_a_table() -> None:
    (block,) = parse(
        "<|ref|>text<|/ref|><|det|>[[100, 100, 500, 200]]<|/det|>\n"
        "<table><tr><td>x</td></tr></table>\n"
    )
    assert block.type == BlockType.table and block.cells[0].text == "x"


def test_coordinates_are_clamped_to_the_page_and_offset_by_its_origin() -> None:
    (block,) = parse_grounding(
        "<|ref|>text<|/ref|><|det|>[[-5, 999, 1200, 0]]<|/det|>\nx",
        width=200,
        height=100,
        page_number=1,
        x0=10,
        y0=20,
    )
    assert block.bbox == (10.0, 20.0, 210.0, 120.0)


def test_output_without_tags_is_refused_and_empty_output_is_an_empty_page() -> None:
    with pytest.raises(EngineOutputError, match="no grounding tags"):
        parse("The image shows a page from a document with some text on it.")
    assert parse("") == []
    assert parse("  \n<｜end▁of▁sentence｜>") == []


def test_multi_line_blocks_get_line_boxes_inside_the_block() -> None:
    blocks = parse(sample("example"))
    paragraph = blocks[2]
    assert len(paragraph.lines) == 6  # as in the text layer
    assert words(" ".join(line.text for line in paragraph.lines)) == words(paragraph.text)
    x0, y0, x1, y1 = paragraph.bbox
    for line in paragraph.lines:
        assert x0 <= line.bbox[0] < line.bbox[2] <= x1 and y0 <= line.bbox[1] < line.bbox[3] <= y1
    assert paragraph.lines[-1].bbox[2] < x1  # the last line is ragged
    heading = blocks[1]
    assert [line.bbox for line in heading.lines] == [heading.bbox]


def test_estimated_lines_match_the_text_layer_lines() -> None:
    """Each text-layer line of the page's paragraphs overlaps an estimated line (IoU > 0.5)."""
    pdf = shared_path("docling", "pdf", "2305.03393v1-pg9.pdf")
    with pymupdf.open(pdf) as doc:
        truth = PyMuPDFEngine().extract_page(doc[0])
    parsed = parse(sample("example"))
    estimated = [line.bbox for b in parsed if b.type == BlockType.text for line in b.lines]
    true_lines = [
        line.bbox
        for b in truth.blocks
        if b.type == BlockType.text and len(b.lines) > 1
        for line in b.lines
    ]
    assert len(true_lines) >= 20
    scores = [max(iou(t, e) for e in estimated) for t in true_lines]
    assert sum(s > 0.5 for s in scores) / len(scores) >= 0.9


def test_repetition_loops_are_detected_at_the_end_only() -> None:
    page = sample("example")
    assert not detect_repetition(page)
    assert detect_repetition(page + ". " * 300)
    assert detect_repetition(page + ". " * 300 + ".")  # cut mid-unit by max_tokens
    assert detect_repetition(page + "the same phrase again, " * 30)
    assert detect_repetition(page + "\n" * 400)
    leaders = "".join(f"{i}. Chapter {i} " + ". " * 60 + f"{i * 7}\n" for i in range(1, 20))
    assert not detect_repetition(leaders)
    empty_rows = "<table>" + "<tr>" + "<td></td>" * 8 + "</tr>" * 1
    assert not detect_repetition(empty_rows * 40 + "</table>\n\nThe end.")


def test_profiles_by_model_name() -> None:
    assert profile_for("deepseek-ai/DeepSeek-OCR") is DEEPSEEK_OCR
    assert profile_for("deepseek-ai/DeepSeek-OCR-2") is DEEPSEEK_OCR_2
    assert profile_for("my-ocr-alias") is DEEPSEEK_OCR
    assert (
        DEEPSEEK_OCR.prompt == GROUNDING_PROMPT == "<|grounding|>Convert the document to markdown."
    )
    assert DEEPSEEK_OCR.prompt_version != DEEPSEEK_OCR_2.prompt_version
    small = DEEPSEEK_OCR.prompt_tokens(600, 600)
    letter = DEEPSEEK_OCR.prompt_tokens(1224, 1584)  # 144 dpi: 2 x 3 tiles
    assert small < 300 < 800 < letter < 1000
    assert DEEPSEEK_OCR.prompt_tokens(20000, 300) < 1000  # at most 6 tiles whatever the shape
