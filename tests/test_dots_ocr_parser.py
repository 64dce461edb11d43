"""The dots.ocr parser on the recorded outputs in ../shared/data/ocr_samples and a synthetic one."""

from __future__ import annotations

import json

import pymupdf
import pytest

from ocr_engine.engines.dots_ocr import (
    DOTS_OCR,
    IMAGE_PREFIX,
    LAYOUT_ALL_PROMPT,
    parse_dots,
    repair_json,
)
from ocr_engine.engines.render import render_page
from ocr_engine.engines.vllm_request import build_request, model_profile, strict_body
from ocr_engine.errors import EngineOutputError
from ocr_engine.geometry import iou
from ocr_engine.layout.vlm_blocks import smart_resize
from ocr_engine.options import OcrFamily, VLLMOptions, ocr_family
from ocr_engine.schema import Block, BlockType
from tests.conftest import shared_path

# a Letter page at 144 dpi (1224 x 1584), which dots' processor resizes to 1232 x 1596
IMAGE = {"width_px": 1224, "height_px": 1584}
SX, SY = 612 / 1232, 792 / 1596

# the shape of the recorded samples (no closing "]"), with each category the prompt names
SYNTHETIC = (
    '[{"bbox": [100, 80, 1100, 140], "category": "Title", "text": "# Annual Boiler Report"}, '
    '{"bbox": [100, 160, 600, 190], "category": "Section-header", "text": "### 2.1 Findings"}, '
    '{"bbox": [100, 200, 1100, 400], "category": "Text", "text": "The boiler was **inspected** '
    'in May.\\nNo leaks were found."}, '
    '{"bbox": [100, 420, 1100, 460], "category": "List-item", "text": "- valves replaced"}, '
    '{"bbox": [100, 480, 1100, 700], "category": "Table", "text": "<table><tr><th>Part</th>'
    '<th>State</th></tr><tr><td rowspan=\\"2\\">Valve</td><td>new</td></tr><tr><td>ok</td>'
    '</tr></table>"}, '
    '{"bbox": [100, 720, 1100, 740], "category": "Caption", "text": "Table 1: Parts."}, '
    '{"bbox": [600, 760, 1100, 1100], "category": "Picture"}, '
    '{"bbox": [100, 1120, 1100, 1180], "category": "Formula", "text": "$$E = mc^2$$"}, '
    '{"bbox": [100, 20, 500, 50], "category": "Page-header", "text": "Boiler Co."}, '
    '{"bbox": [560, 1540, 660, 1570], "category": "Page-footer", "text": "3"}, '
    '{"bbox": [100, 1480, 1100, 1520], "category": "Footnote", "text": "1 Measured cold."}, '
    '{"bbox": [1300, 10, 1100, 60], "category": "Stamp", "text": "APPROVED"}\n'
)


def parse(text: str, **image: int) -> list[Block]:
    return parse_dots(text, width=612.0, height=792.0, page_number=3, **(image or IMAGE))


def sample(name: str) -> str:
    return shared_path("ocr_samples", f"dots_ocr__docling__dots_{name}.json").read_text()


def test_every_category_becomes_its_block_type_with_boxes_in_points() -> None:
    blocks = parse(SYNTHETIC)
    assert [b.type for b in blocks] == [
        BlockType.title,
        BlockType.section_header,
        BlockType.text,
        BlockType.list_item,
        BlockType.table,
        BlockType.caption,
        BlockType.figure,
        BlockType.formula,
        BlockType.page_header,
        BlockType.page_footer,
        BlockType.footnote,
        BlockType.text,  # an unknown category with text is kept as text
    ]
    title, section, text, _, table, _, figure, formula, *_, stamp = blocks
    assert [b.id for b in blocks[:2]] == ["p3-b0", "p3-b1"]
    assert title.bbox == pytest.approx((100 * SX, 80 * SY, 1100 * SX, 140 * SY), abs=0.01)
    assert (title.text, title.level) == ("Annual Boiler Report", 1)
    assert (section.text, section.level) == ("2.1 Findings", 3)
    assert text.text == "The boiler was **inspected** in May.\nNo leaks were found."
    assert len(text.lines) >= 2
    assert [(c.row, c.col, c.row_span, c.text) for c in table.cells] == [
        (0, 0, 1, "Part"),
        (0, 1, 1, "State"),
        (1, 0, 2, "Valve"),
        (1, 1, 1, "new"),
        (2, 1, 1, "ok"),
    ]
    assert table.html is not None and table.text.startswith("| Part | State |")
    assert figure.text == "" and figure.lines == []
    assert formula.text == "E = mc^2"
    # corners put in order and clamped to the page
    assert stamp.bbox == pytest.approx((1100 * SX, 10 * SY, 612.0, 60 * SY), abs=0.01)


def test_boxes_follow_the_smart_resized_input_and_the_page_origin() -> None:
    assert smart_resize(1584, 1224) == (1596, 1232)
    assert smart_resize(20000, 20000) == (3360, 3360)  # capped at 11,289,600 pixels
    assert smart_resize(10, 10) == (56, 56)  # at least 3136 pixels
    item = '[{"bbox": [616, 798, 1232, 1596], "category": "Text", "text": "x"}]'
    (block,) = parse_dots(
        item, width=300.0, height=400.0, page_number=1, width_px=1224, height_px=1584, x0=50.0
    )
    assert block.bbox == (200.0, 200.0, 350.0, 400.0)


def test_broken_json_is_repaired_or_salvaged_and_garbage_is_an_error() -> None:
    assert len(repair_json(SYNTHETIC)) == 12  # the closing "]" added
    fenced = '```json\n[{"bbox": [1, 2, 30, 40], "category": "Text", "text": "a"}]\n```'
    assert repair_json(fenced) == [{"bbox": [1, 2, 30, 40], "category": "Text", "text": "a"}]
    cut = '[{"bbox": [1, 2, 30, 40], "category": "Text", "text": "a"}, {"bbox": [1, 2, 3'
    assert [o["text"] for o in repair_json(cut)] == ["a"]
    broken = '[{"bbox": [1, 2, 30, 40], "category": "Text", "text": "a"} {"bbox": [5, 6, 70, 80]}]'
    assert [o["bbox"] for o in repair_json(broken)] == [[1, 2, 30, 40], [5, 6, 70, 80]]
    assert repair_json("") == [] and repair_json("[]") == [] and parse("[]") == []
    with pytest.raises(EngineOutputError, match="no layout objects"):
        parse("The image shows a page of a boiler report.")


def test_recorded_outputs_parse_with_their_missing_bracket() -> None:
    simple, listed = sample("simple"), sample("list")
    for text in (simple, listed):
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)  # the recorded truncation is real
    blocks = parse(simple)
    assert len(blocks) == 17
    title = blocks[1]
    assert title.type is BlockType.title and title.level == 1
    assert title.text.startswith("DocLayNet: A Large Human-Annotated Dataset")
    assert [b.text for b in blocks if b.type is BlockType.section_header][:2] == [
        "ABSTRACT",
        "CCS CONCEPTS",
    ]
    (figure,) = [b for b in blocks if b.type is BlockType.figure]
    assert figure.text == "" and figure.bbox[0] > 306  # the right column's picture
    side = blocks[0]  # arXiv's vertical stamp in the left margin: tall and narrow
    assert side.bbox[3] - side.bbox[1] > 10 * (side.bbox[2] - side.bbox[0])
    assert all(
        0 <= b.bbox[0] < b.bbox[2] <= 612 and 0 <= b.bbox[1] < b.bbox[3] <= 792 for b in blocks
    )
    listed_blocks = parse(listed)
    assert len(listed_blocks) == 12
    assert sum(b.type is BlockType.list_item for b in listed_blocks) == 2


def test_recorded_boxes_land_on_the_text_of_the_page_they_were_read_from() -> None:
    """dots_list was recorded on docling's multi_page.pdf page 1 (A4, rendered at 144 dpi)."""
    text = sample("list")
    pdf = pymupdf.open(shared_path("docling", "pdf", "multi_page.pdf"))
    page = pdf[0]
    image = render_page(page, dpi=144)
    blocks = parse_dots(
        text,
        width=image.width_pt,
        height=image.height_pt,
        page_number=1,
        width_px=image.width_px,
        height_px=image.height_px,
    )
    headers = [b for b in blocks if b.type is BlockType.section_header]
    assert len(headers) == 4
    for block in headers:
        (hit,) = page.search_for(block.text)[:1]
        assert iou(block.bbox, tuple(hit)) > 0.6, (block.text, block.bbox, tuple(hit))
    pdf.close()


def test_the_model_name_picks_the_profile_and_the_request() -> None:
    for name in ("rednote-hilab/dots.ocr", "dots_ocr", "DotsOCR", "my-org/dots.ocr-awq"):
        assert ocr_family(name) is OcrFamily.dots and model_profile(name) is DOTS_OCR
    options = VLLMOptions(urls=["http://ocr:8000/v1"], model="rednote-hilab/dots.ocr")
    assert options.context_tokens == 32768
    assert (
        VLLMOptions(urls=["http://o/v1"], model="dots.ocr", context_tokens=9000).context_tokens
        == 9000
    )
    body = build_request(DOTS_OCR, options, "data:image/png;base64,AAAA", 1224, 1584)
    (message,) = body["messages"]
    image, prompt = message["content"]
    assert image == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert prompt == {"type": "text", "text": IMAGE_PREFIX + LAYOUT_ALL_PROMPT}
    assert LAYOUT_ALL_PROMPT.endswith("The entire output must be a single JSON object.\n")
    assert body["temperature"] == 0 and body["skip_special_tokens"] is False
    image_tokens = 1232 * 1596 // 28**2
    assert body["max_tokens"] == 24000 < 32768 - image_tokens
    assert "vllm_xargs" not in body
    strict = json.loads(strict_body(json.dumps(body).encode(), options))
    assert strict["repetition_penalty"] > 1.0
