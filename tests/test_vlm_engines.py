"""dots.ocr and MinerU2.5 through the vLLM engine and the OCR simulator on loopback, and an ingest
of a scan through each (the simulator answers in the format of the model the request names)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

from doubles.ocr_simulator import Fault, OcrSimulator
from ocr_engine.engines.dots_ocr import IMAGE_PREFIX
from ocr_engine.engines.mineru import (
    LAYOUT_PROMPT,
    SYSTEM_PROMPT,
    TABLE_PROMPT,
    TEXT_PROMPT,
    layout_png,
    render_crop,
)
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.render import render_region
from ocr_engine.engines.vllm_engine import VLLMEngine
from ocr_engine.geometry import Box
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import Block, BlockType, Page, PageStatus
from retrieval.schema import QueryRequest
from server.services import build_services
from server.settings import Settings
from tests.conftest import SHARED_DATA, shared_path
from tests.pdfgen import FACTS, fact_pdf
from tests.test_ocr_pipeline import scanned

DOTS = "rednote-hilab/dots.ocr"
MINERU = "opendatalab/MinerU2.5-2509-1.2B"
FAST = {"backoff_s": 0.01, "retries": 1, "connect_timeout_s": 2.0, "read_timeout_s": 30.0}
TITLE, SECTIONS = FACTS["bakery.pdf"]


def engine(sim: OcrSimulator, model: str) -> VLLMEngine:
    options = VLLMOptions.model_validate({"urls": [sim.url], "model": model, **FAST})
    return VLLMEngine(options, render_processes=False)


@pytest.fixture(scope="module")
def table_pdf() -> bytes:
    return shared_path("docling", "pdf", "2305.03393v1-pg9.pdf").read_bytes()


@pytest.fixture(scope="module")
def truth(table_pdf: bytes) -> Page:
    with pymupdf.open(stream=table_pdf) as doc:
        return PyMuPDFEngine().extract_page(doc[0])


@pytest.fixture(params=[DOTS, MINERU], ids=["dots.ocr", "mineru2.5"])
def model(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sim(model: str) -> Iterator[OcrSimulator]:
    with OcrSimulator(model=model) as simulator:
        yield simulator


def _near(block: Block, truth: Block, tolerance: float = 3.0) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(block.bbox, truth.bbox, strict=True))


def test_a_page_reads_as_the_text_layer_says(
    sim: OcrSimulator, model: str, table_pdf: bytes, truth: Page
) -> None:
    """Types, text, table cells with spans, and boxes within 3 pt of the text layer's."""
    sim.register_pdf(table_pdf)
    reader = engine(sim, model)
    (page,) = reader.read_pages_sync(table_pdf, [1])
    assert page.status is PageStatus.ok, page.errors
    assert page.engine.model == model and page.engine.name == "vllm"
    assert [b.type for b in page.blocks] == [b.type for b in truth.blocks]
    for got, want in zip(page.blocks, truth.blocks, strict=True):
        assert _near(got, want), (got.type, got.bbox, want.bbox)
        if got.type is not BlockType.table:
            assert " ".join(got.text.split()) == " ".join(want.text.split())
    (table,) = [b for b in page.blocks if b.type is BlockType.table]
    (expected,) = [b for b in truth.blocks if b.type is BlockType.table]
    assert [(c.row, c.col, c.row_span, c.col_span, c.text) for c in table.cells] == [
        (c.row, c.col, c.row_span, c.col_span, c.text) for c in expected.cells
    ]
    regions = len(truth.blocks)  # no figures on this page: every region is asked for its text
    assert reader.last_run.requests == (1 if model == DOTS else 1 + regions)


def test_requests_follow_each_models_protocol(
    sim: OcrSimulator, model: str, table_pdf: bytes
) -> None:
    sim.register_pdf(table_pdf)
    engine(sim, model).read_pages_sync(table_pdf, [1])
    first, *rest = sim.requests
    assert first["model"] == model and first["skip_special_tokens"] is False
    if model == DOTS:
        assert rest == []
        ((image, text),) = [m["content"] for m in first["messages"]]
        assert image["type"] == "image_url" and text["text"].startswith(
            IMAGE_PREFIX + "Please output"
        )
        return
    system, user = first["messages"]
    assert system["content"] == SYSTEM_PROMPT and user["content"][1]["text"] == LAYOUT_PROMPT
    prompts = [r["messages"][1]["content"][1]["text"] for r in rest]
    assert prompts.count(TABLE_PROMPT) == 1 and set(prompts) == {TABLE_PROMPT, TEXT_PROMPT}
    assert all(r["vllm_xargs"]["no_repeat_ngram_size"] == 100 for r in sim.requests)


def test_an_answer_without_layout_fails_the_page(
    sim: OcrSimulator, model: str, table_pdf: bytes
) -> None:
    (key,) = sim.register_pdf(table_pdf)
    sim.add_fault(Fault.garbage, key, times=None)
    (page,) = engine(sim, model).read_pages_sync(table_pdf, [1])
    assert page.status is PageStatus.failed
    assert [e.code for e in page.errors] == ["bad_output"]


def test_a_failed_region_fails_the_mineru_page(table_pdf: bytes) -> None:
    with OcrSimulator(model=MINERU) as sim:
        (layout,) = sim.register_pdf(table_pdf)
        sim.add_fault(Fault.server_error, None, times=None)  # every request ...
        sim.add_fault(Fault.stripped, layout, times=None)  # ... but the layout, whose tags go
        (page,) = engine(sim, MINERU).read_pages_sync(table_pdf, [1])
    assert page.status is PageStatus.failed and page.errors[0].code == "bad_output"
    with OcrSimulator(model=MINERU) as sim:
        (layout,) = sim.register_pdf(table_pdf)
        sim.add_fault(Fault.server_error, None, times=None)
        sim.clear_faults()
        sim.add_fault(Fault.length, None, times=None)  # the layout and every region cut
        reader = engine(sim, MINERU)
        (page,) = reader.read_pages_sync(table_pdf, [1])
    assert page.status is PageStatus.failed and page.errors[0].code == "truncated"
    assert reader.last_run.strict_retries >= 1


def test_the_recorded_dots_output_is_replayed_and_parsed() -> None:
    pdf = shared_path("docling", "pdf", "multi_page.pdf").read_bytes()
    with OcrSimulator(model=DOTS) as sim:
        (_key,) = sim.register_recorded(SHARED_DATA)
        (page,) = engine(sim, DOTS).read_pages_sync(pdf, [1])
    assert page.status is PageStatus.ok
    types = [b.type for b in page.blocks]
    assert len(types) == 12 and types.count(BlockType.section_header) == 4
    assert page.blocks[0].text == "The Evolution of the Word Processor"
    assert page.blocks[0].bbox == pytest.approx((72.0, 72.6, 266.0, 85.9), abs=4.0)


def _title_region() -> tuple[bytes, Box]:
    pdf = fact_pdf(TITLE, SECTIONS, filler_pages=0)
    with pymupdf.open(stream=pdf) as doc:
        x0, y0, x1, y1 = PyMuPDFEngine().extract_page(doc[0]).blocks[0].bbox
    return pdf, (x0 - 5, y0 - 5, x1 + 5, y1 + 5)


def test_a_region_is_read_by_dots_ocr_alone() -> None:
    """A raster figure of a text-layer page read by the engine alone (`read_region`)."""
    pdf, clip = _title_region()
    with OcrSimulator(model=DOTS) as sim, pymupdf.open(stream=pdf) as doc:
        shown = render_region(doc[0], clip, dpi=144, max_pixels=6_000_000)
        corners = [10, 10, shown.width_px - 10, shown.height_px - 10]
        answer = json.dumps([{"bbox": corners, "category": "Title", "text": f"# {TITLE}"}])
        sim.register_image(shown.png, answer)
        lines = engine(sim, DOTS).read_region(doc[0], clip)
    assert [ln.text for ln in lines] == [TITLE]
    (line,) = lines
    assert clip[0] < line.bbox[0] < line.bbox[2] < clip[2]  # on the page, not on the crop


def test_a_region_is_read_by_mineru_in_two_steps() -> None:
    pdf, clip = _title_region()
    layout = "<|box_start|>000 000 1000 1000<|box_end|><|ref_start|>doc_title<|ref_end|>"
    with OcrSimulator(model=MINERU) as sim, pymupdf.open(stream=pdf) as doc:
        shown = render_region(doc[0], clip, dpi=144, max_pixels=6_000_000)
        sim.register_image(layout_png(shown.png), layout + "<|rotate_up|>")
        crop = render_crop(doc[0], clip, dpi=144, max_pixels=6_000_000)
        sim.register_image(crop.png, TITLE)
        lines = engine(sim, MINERU).read_region(doc[0], clip)
        prompts = [r["messages"][1]["content"][1]["text"] for r in sim.requests]
    assert prompts == [LAYOUT_PROMPT, TEXT_PROMPT]
    assert [ln.text for ln in lines] == [TITLE]


@pytest.mark.parametrize("ocr_model", [DOTS, MINERU], ids=["dots.ocr", "mineru2.5"])
def test_a_scan_is_ingested_and_answered_through_each_model(tmp_path: Path, ocr_model: str) -> None:
    text_pdf = fact_pdf(TITLE, SECTIONS, filler_pages=1)
    scan = scanned(text_pdf)
    path = tmp_path / "bakery scan.pdf"
    path.write_bytes(scan)
    with OcrSimulator(model=ocr_model, capacity=8) as sim:
        sim.register_pdf(scan, text_source=text_pdf)
        settings = Settings(
            data_dir=tmp_path / "data", extract_processes=0, ocr_url=[sim.url], ocr_model=ocr_model
        )
        services = build_services(settings)
        try:
            (result,) = services.sync.ingest_paths([path])
            assert result.status == "ok", result.error
            response = services.retriever.query(
                QueryRequest(question="What flour is the sourdough starter fed with?", top_k=3)
            )
            record = services.ledger.documents()[0]
            document = services.files.load_document(record.doc_id)
        finally:
            services.close()
        served = {r["model"] for r in sim.requests}
        prompts = {r["messages"][-1]["content"][-1]["text"] for r in sim.requests}
    hit = response.hits[0]
    assert (hit.source, hit.page) == ("bakery scan.pdf", 1) and "rye flour" in hit.text
    first = document.pages[0]
    assert first.engine.name == "vllm" and first.engine.model == ocr_model
    assert first.status is PageStatus.ok and first.route == "no text layer"
    assert served == {ocr_model}  # and each request in its protocol, built in render processes
    if ocr_model == DOTS:
        assert all(p.startswith(IMAGE_PREFIX) for p in prompts)
    else:
        assert LAYOUT_PROMPT in prompts and TEXT_PROMPT in prompts
    headers = [b for b in first.blocks if b.type in (BlockType.title, BlockType.section_header)]
    assert headers and headers[0].text == TITLE
