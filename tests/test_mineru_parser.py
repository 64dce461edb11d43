"""The MinerU2.5 layout and region parsers on the recorded layout and on synthetic answers."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pymupdf
import pytest
from PIL import Image

from ocr_engine.engines.mineru import (
    FORMULA_PROMPT,
    LAYOUT_PROMPT,
    LAYOUT_SIZE,
    MINERU25,
    SYSTEM_PROMPT,
    TABLE_PROMPT,
    TEXT_PROMPT,
    LayoutRegion,
    content_prompt,
    layout_png,
    mineru_blocks,
    otsl_to_html,
    parse_layout,
    region_box,
    render_crop,
)
from ocr_engine.engines.render import render_page
from ocr_engine.engines.vllm_request import build_request, model_profile, strict_body
from ocr_engine.errors import EngineOutputError
from ocr_engine.options import OcrFamily, VLLMOptions, ocr_family
from ocr_engine.schema import BlockType
from tests.conftest import shared_path

LETTER = {"width": 612.0, "height": 792.0}


def line(box: str, label: str, tail: str = "<|rotate_up|>") -> str:
    return f"<|box_start|>{box}<|box_end|><|ref_start|>{label}<|ref_end|>{tail}"


def recorded() -> str:
    return shared_path(
        "ocr_samples", "mineru25__myhloli_mineru-vl-utils__baige_page8_layout.txt"
    ).read_text()


def test_recorded_layout_is_deduplicated_as_mineru_vl_utils_does() -> None:
    """The numbers mineru-vl-utils' own test asserts on this fixture (test_layout_deduplication)."""
    text = recorded()
    assert text.count("<|box_start|>") == 24
    regions = parse_layout(text)
    assert len(regions) == 22
    assert [r.label for r in regions[18:]] == ["text", "text", "list", "footer"]
    assert [r.grid for r in regions[18:20]] == [(512, 625, 887, 715), (511, 719, 887, 945)]
    assert all(r.angle == 0 and not r.continues for r in regions)


def test_recorded_layout_becomes_blocks_with_list_items_and_no_figure_requests() -> None:
    regions = parse_layout(recorded())
    prompts = [content_prompt(r) for r in regions]
    asked = [r.label for r, p in zip(regions, prompts, strict=True) if p is not None]
    assert "image" not in asked and "list" not in asked
    assert len(asked) == 22 - 3 - 1  # three images, one list container
    contents = [f"region {i}" if p else None for i, p in enumerate(prompts)]
    blocks = mineru_blocks(regions, contents, page_number=8, **LETTER)
    kinds = [b.type for b in blocks]
    assert kinds[:3] == [BlockType.page_header, BlockType.page_header, BlockType.page_footer]
    assert kinds.count(BlockType.figure) == 3 and kinds.count(BlockType.caption) == 6
    assert kinds[-3:] == [BlockType.list_item, BlockType.list_item, BlockType.page_footer]
    (header,) = [b for b in blocks if b.type is BlockType.section_header]
    assert header.bbox == (round(0.106 * 612, 2), round(0.733 * 792, 2), 160.34, 594.79)
    assert all(b.text == "" for b in blocks if b.type is BlockType.figure)
    assert [b.id for b in blocks[:2]] == ["p8-b0", "p8-b1"]


def test_layout_lines_are_checked_like_the_reference_client() -> None:
    text = "\n".join(
        [
            line("900 100 100 200", "title"),  # inverted corners: swapped
            line("100 100 1200 200", "text"),  # beyond the grid: dropped
            line("100 300 100 400", "text"),  # no area: dropped
            line("100 500 400 900", "table"),
            line("120 520 380 880", "text"),  # inside the table: dropped
            line("500 500 900 900", "text", "<|rotate_right|>txt_contd_tgt"),
            line("501 500 900 900", "text", "<|rotate_right|>"),  # a duplicate: dropped
            line("500 500 900 900", "text"),  # same box, another angle: kept
            "some words the model added",
        ]
    )
    regions = parse_layout(text)
    assert regions == [
        LayoutRegion("title", (100, 100, 900, 200)),
        LayoutRegion("table", (100, 500, 400, 900)),
        LayoutRegion("text", (500, 500, 900, 900), angle=90, continues=True),
        LayoutRegion("text", (500, 500, 900, 900)),
    ]
    assert [content_prompt(r) for r in regions] == [
        TEXT_PROMPT,
        TABLE_PROMPT,
        TEXT_PROMPT,
        TEXT_PROMPT,
    ]
    assert content_prompt(LayoutRegion("equation", (0, 0, 1, 1))) == FORMULA_PROMPT
    assert region_box(regions[1], 612.0, 792.0, 10.0, 0.0) == (71.2, 396.0, 254.8, 712.8)
    assert parse_layout("") == []
    with pytest.raises(EngineOutputError, match="no layout regions"):
        parse_layout("title[[100, 100, 900, 200]]")  # special tokens stripped


def test_region_answers_become_tables_with_cells_formulas_and_headings() -> None:
    otsl = (
        "<fcel>Part<fcel>State<lcel><nl><fcel>Valve<fcel>new<fcel>ok<nl><ucel><fcel>old<ecel><nl>"
    )
    html = otsl_to_html(otsl)
    assert html == (
        '<table><tr><td>Part</td><td colspan="2">State</td></tr>'
        '<tr><td rowspan="2">Valve</td><td>new</td><td>ok</td></tr>'
        "<tr><td>old</td><td></td></tr></table>"
    )
    assert (
        otsl_to_html("<table><tr><td>a</td></tr></table>") == "<table><tr><td>a</td></tr></table>"
    )
    regions = [
        LayoutRegion("doc_title", (100, 50, 900, 90)),
        LayoutRegion("paragraph_title", (100, 100, 500, 120)),
        LayoutRegion("table", (100, 150, 900, 400)),
        LayoutRegion("equation", (100, 420, 900, 460)),
        LayoutRegion("text", (100, 480, 900, 520)),
        LayoutRegion("image", (100, 540, 900, 800)),
    ]
    contents = ["Boiler Report", "## 2 Findings", otsl, "\\[E = mc^2\\]", "  ", None]
    title, section, table, formula, figure = mineru_blocks(
        regions, contents, page_number=1, **LETTER
    )
    assert (title.type, title.level, title.text) == (BlockType.title, 1, "Boiler Report")
    assert (section.type, section.level, section.text) == (
        BlockType.section_header,
        2,
        "2 Findings",
    )
    assert [(c.row, c.col, c.row_span, c.col_span, c.text) for c in table.cells][:4] == [
        (0, 0, 1, 1, "Part"),
        (0, 1, 1, 2, "State"),
        (1, 0, 2, 1, "Valve"),
        (1, 1, 1, 1, "new"),
    ]
    assert formula.type is BlockType.formula and formula.text == "E = mc^2"
    assert figure.type is BlockType.figure  # the empty text region is left out


def test_images_sent_are_the_stretched_page_and_upright_crops() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 100), "Boiler", fontsize=30)
    shown = render_page(page, dpi=72)
    stretched = pymupdf.Pixmap(layout_png(shown.png))
    assert (stretched.width, stretched.height, stretched.n) == (LAYOUT_SIZE, LAYOUT_SIZE, 3)
    box = (72.0, 70.0, 172.0, 110.0)
    upright = render_crop(page, box, dpi=144, max_pixels=6_000_000)
    assert (upright.width_px, upright.height_px) == (200, 80)
    turned = render_crop(page, box, dpi=144, max_pixels=6_000_000, angle=90)
    assert (turned.width_px, turned.height_px) == (80, 200)
    tiny = render_crop(page, (72.0, 70.0, 172.0, 75.0), dpi=144, max_pixels=6_000_000)
    assert tiny.height_px >= 28  # short side scaled up as mineru-vl-utils does
    bar = doc.new_page(width=200, height=100)
    bar.draw_rect(pymupdf.Rect(0, 0, 20, 100), color=(0, 0, 0), fill=(0, 0, 0))
    flat = render_crop(bar, (0.0, 0.0, 200.0, 100.0), dpi=72, max_pixels=10**7)
    with Image.open(io.BytesIO(flat.png)) as image:
        expected = np.asarray(image.rotate(90, expand=True).convert("L"))  # as mineru turns it
    turned_bar = render_crop(bar, (0.0, 0.0, 200.0, 100.0), dpi=72, max_pixels=10**7, angle=90)
    with Image.open(io.BytesIO(turned_bar.png)) as image:
        got = np.asarray(image.convert("L"))
    assert got.shape == expected.shape == (200, 100)
    assert np.abs(got.astype(int) - expected).mean() < 2  # the left edge went to the bottom
    assert (got[-1] < 128).all() and (got[0] > 128).all()
    doc.close()


def test_the_model_name_picks_the_two_step_profile_and_its_requests() -> None:
    for name in ("opendatalab/MinerU2.5-2509-1.2B", "mineru2.5", "MinerU-VL"):
        assert ocr_family(name) is OcrFamily.mineru and model_profile(name) is MINERU25
    assert MINERU25.two_step
    options = VLLMOptions(urls=["http://ocr:8000/v1"], model="opendatalab/MinerU2.5-2509-1.2B")
    assert options.context_tokens == 16384
    doc = pymupdf.open()
    shown = render_page(doc.new_page(width=612, height=792), dpi=144)
    doc.close()
    url = "data:image/png;base64," + base64.b64encode(shown.png).decode()
    body = build_request(MINERU25, options, url, shown.width_px, shown.height_px)
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    image, prompt = user["content"]
    assert prompt == {"type": "text", "text": LAYOUT_PROMPT}
    sent = pymupdf.Pixmap(base64.b64decode(image["image_url"]["url"].split(",", 1)[1]))
    assert (sent.width, sent.height) == (LAYOUT_SIZE, LAYOUT_SIZE)
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.0, 0.01, 1)
    assert body["skip_special_tokens"] is False
    assert body["vllm_xargs"] == {"no_repeat_ngram_size": 100, "debug": False}
    strict = json.loads(strict_body(json.dumps(body).encode(), options))
    assert strict["vllm_xargs"]["no_repeat_ngram_size"] < 100
