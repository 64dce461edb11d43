"""The vLLM engine against the OCR simulator on loopback (no patched client)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pymupdf
import pytest

from doubles.loopback import closed_port_url
from doubles.ocr_simulator import Fault, OcrSimulator
from ocr_engine.engines.deepseek import DEEPSEEK_OCR, GROUNDING_PROMPT
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.render import render_page
from ocr_engine.engines.vllm_engine import VLLMEngine
from ocr_engine.errors import BadInputError
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import BlockType, Page, PageStatus
from tests.conftest import SHARED_DATA, shared_path
from tests.pdfgen import FACTS, encrypted_pdf, fact_pdf, random_bytes

FAST = {"backoff_s": 0.01, "retries": 2, "connect_timeout_s": 2.0, "read_timeout_s": 30.0}


def options(*urls: str, **overrides: object) -> VLLMOptions:
    return VLLMOptions.model_validate({"urls": list(urls), **FAST, **overrides})


def make_engine(*urls: str, processes: bool = False, **overrides: object) -> VLLMEngine:
    """Render workers are threads unless the test is about rendering (processes start slower)."""
    return VLLMEngine(options(*urls, **overrides), render_processes=processes)


def many_pages(count: int) -> bytes:
    doc = pymupdf.open()
    for i in range(count):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 72), f"Section {i + 1}", fontsize=16, fontname="hebo")
        page.insert_textbox(
            pymupdf.Rect(72, 100, 540, 300),
            f"Page {i + 1} says the inspection of boiler {i} found nothing unusual. " * 4,
            fontsize=11,
        )
    data = doc.tobytes()
    doc.close()
    return data


@pytest.fixture
def sim() -> Iterator[OcrSimulator]:
    with OcrSimulator() as simulator:
        yield simulator


@pytest.fixture
def volcano() -> bytes:
    return fact_pdf(*FACTS["volcano.pdf"], filler_pages=2)


def errors(page: Page) -> list[str]:
    return [e.code for e in page.errors]


def test_request_fields_follow_the_recipe(sim: OcrSimulator, volcano: bytes) -> None:
    sim.register_pdf(volcano)
    engine = make_engine(sim.url, processes=True)
    pages = engine.read_pages_sync(volcano, [1])
    assert pages[0].status is PageStatus.ok
    (body,) = sim.requests
    assert body["model"] == "deepseek-ai/DeepSeek-OCR"
    assert body["temperature"] == 0
    assert body["skip_special_tokens"] is False
    assert body["vllm_xargs"] == {
        "ngram_size": 30,
        "window_size": 90,
        "whitelist_token_ids": [128821, 128822],
    }
    image, text = body["messages"][0]["content"]
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert text == {"type": "text", "text": GROUNDING_PROMPT}
    with pymupdf.open(stream=volcano) as doc:
        rendered = render_page(doc[0], dpi=144, max_pixels=6_000_000)
    prompt = DEEPSEEK_OCR.prompt_tokens(rendered.width_px, rendered.height_px)
    assert body["max_tokens"] == 8192 - prompt
    assert sim.stats.prompt_tokens <= prompt  # the estimate is an upper bound
    assert engine.info.name == "vllm" and engine.info.model == "deepseek-ai/DeepSeek-OCR"
    assert engine.info.version == DEEPSEEK_OCR.prompt_version


def test_pages_come_back_in_the_order_asked_with_boxes_of_the_text_layer(
    sim: OcrSimulator, volcano: bytes
) -> None:
    sim.register_pdf(volcano)
    seen: list[int] = []
    pages = make_engine(sim.url, processes=True).read_pages_sync(
        volcano, [3, 1, 2], on_page=lambda p: seen.append(p.number)
    )
    assert [p.number for p in pages] == [3, 1, 2]
    assert sorted(seen) == [1, 2, 3]
    with pymupdf.open(stream=volcano) as doc:
        truth = PyMuPDFEngine().extract_page(doc[0])
    page = pages[1]
    assert (page.status, page.width, page.height) == (PageStatus.ok, 612, 792)
    assert [b.type for b in page.blocks] == [b.type for b in truth.blocks]
    assert [b.text for b in page.blocks] == [b.text for b in truth.blocks]
    for got, want in zip(page.blocks, truth.blocks, strict=True):
        assert got.bbox == pytest.approx(want.bbox, abs=1.0)  # the 0-999 grid: 0.6 pt steps
    assert page.blocks[0].level == 1 and page.blocks[0].type == BlockType.title


def test_in_flight_requests_are_bounded() -> None:
    pdf = many_pages(12)
    with OcrSimulator(seconds_per_token=0.002, capacity=64) as sim:
        sim.register_pdf(pdf)
        pages = make_engine(sim.url, max_in_flight=3, processes=True).read_pages_sync(
            pdf, list(range(1, 13))
        )
        stats = sim.stats
    assert all(p.status is PageStatus.ok for p in pages)
    assert stats.completed == 12
    assert 2 <= stats.max_concurrent <= 3


def test_a_server_error_is_retried(sim: OcrSimulator, volcano: bytes) -> None:
    keys = sim.register_pdf(volcano)
    sim.add_fault(Fault.server_error, key=keys[0], times=2)
    engine = make_engine(sim.url, retries=2)
    (page,) = engine.read_pages_sync(volcano, [1])
    assert page.status is PageStatus.ok and page.blocks
    assert sim.stats.status_counts == {500: 2, 200: 1}
    assert engine.last_run.retries == 2


def test_server_errors_beyond_the_retries_fail_the_page(sim: OcrSimulator, volcano: bytes) -> None:
    keys = sim.register_pdf(volcano)
    sim.add_fault(Fault.server_error, key=keys[0], times=None)
    pages = make_engine(sim.url, retries=1).read_pages_sync(volcano, [1, 2])
    assert pages[0].status is PageStatus.failed and errors(pages[0]) == ["http_error"]
    assert "HTTP 500" in pages[0].errors[0].message
    assert pages[1].status is PageStatus.ok


def test_a_client_error_is_not_retried(sim: OcrSimulator, volcano: bytes) -> None:
    sim.register_pdf(volcano)
    engine = make_engine(sim.url, model="deepseek-ai/DeepSeek-OCR-2", retries=3)
    (page,) = engine.read_pages_sync(volcano, [1])
    assert page.status is PageStatus.failed and errors(page) == ["http_error"]
    assert "HTTP 404" in page.errors[0].message and "does not exist" in page.errors[0].message
    assert sim.stats.requests == 1


def test_a_hanging_request_times_out_and_the_other_pages_succeed(
    sim: OcrSimulator, volcano: bytes
) -> None:
    keys = sim.register_pdf(volcano)
    sim.add_fault(Fault.hang, key=keys[1], times=None)
    engine = make_engine(sim.url, read_timeout_s=0.5, retries=1)
    pages = engine.read_pages_sync(volcano, [1, 2, 3])
    assert [p.status for p in pages] == [PageStatus.ok, PageStatus.failed, PageStatus.ok]
    assert errors(pages[1]) == ["timeout"]
    assert sim.stats.faults_fired["hang"] == 2  # the first try and one retry


def test_a_dead_endpoint_fails_the_pages_as_unavailable(volcano: bytes) -> None:
    engine = make_engine(closed_port_url(), retries=2)
    pages = engine.read_pages_sync(volcano, [1, 2, 3])
    assert [p.status for p in pages] == [PageStatus.failed] * 3
    assert all(errors(p) == ["endpoint_unavailable"] for p in pages)
    assert [(p.width, p.height) for p in pages] == [(612, 792)] * 3
    assert "ConnectError" in pages[0].errors[0].message


def test_once_the_endpoint_is_found_dead_later_pages_are_not_sent(volcano: bytes) -> None:
    engine = make_engine(closed_port_url(), retries=1, max_in_flight=1)
    pages = engine.read_pages_sync(volcano, [1, 2, 3])
    assert all(errors(p) == ["endpoint_unavailable"] for p in pages)
    messages = [p.errors[0].message for p in pages]
    # one page spends its retries (the others try once while it waits), then the rest give up
    assert sum("after 2 attempts" in m for m in messages) == 1
    assert sum(m.startswith("not sent: ") for m in messages) == 2
    assert engine.last_run.requests <= 4


def test_the_next_endpoint_is_used_when_one_is_dead(sim: OcrSimulator, volcano: bytes) -> None:
    sim.register_pdf(volcano)
    engine = make_engine(closed_port_url(), sim.url, retries=0)
    pages = engine.read_pages_sync(volcano, [1, 2, 3])
    assert all(p.status is PageStatus.ok for p in pages)
    assert sim.stats.completed == 3


def test_endpoints_are_used_in_turn(volcano: bytes) -> None:
    with OcrSimulator() as first, OcrSimulator() as second:
        for sim in (first, second):
            sim.register_pdf(volcano)
        pages = make_engine(first.url, second.url).read_pages_sync(volcano, [1, 2, 3, 1])
        assert all(p.status is PageStatus.ok for p in pages)
        assert (first.stats.completed, second.stats.completed) == (2, 2)


@pytest.mark.parametrize("fault", [Fault.length, Fault.loop])
def test_a_cut_or_looping_output_is_asked_again_with_the_strict_guard(
    sim: OcrSimulator, volcano: bytes, fault: Fault
) -> None:
    keys = sim.register_pdf(volcano)
    sim.add_fault(fault, key=keys[0], times=None if fault is Fault.loop else 1)
    engine = make_engine(sim.url)
    (page,) = engine.read_pages_sync(volcano, [1])
    assert page.status is PageStatus.ok and len(page.blocks) == 5
    first, second = sim.requests
    assert first["vllm_xargs"]["ngram_size"] == 30
    assert second["vllm_xargs"] == {
        "ngram_size": 20,
        "window_size": 50,
        "whitelist_token_ids": [128821, 128822],
    }
    assert engine.last_run.strict_retries == 1


def test_a_page_that_always_loops_fails(sim: OcrSimulator, volcano: bytes) -> None:
    keys = sim.register_pdf(volcano)
    sim.add_fault(Fault.loop_always, key=keys[0], times=None)
    pages = make_engine(sim.url).read_pages_sync(volcano, [1, 2])
    assert pages[0].status is PageStatus.failed and errors(pages[0]) == ["repetition_loop"]
    assert pages[1].status is PageStatus.ok
    assert sim.stats.finish_reasons["length"] == 2


def test_a_page_cut_twice_fails_as_truncated(sim: OcrSimulator, volcano: bytes) -> None:
    keys = sim.register_pdf(volcano)
    sim.add_fault(Fault.length, key=keys[0], times=None)
    (page,) = make_engine(sim.url).read_pages_sync(volcano, [1])
    assert page.status is PageStatus.failed and errors(page) == ["truncated"]


def test_stripped_special_tokens_are_still_parsed(sim: OcrSimulator, volcano: bytes) -> None:
    keys = sim.register_pdf(volcano)
    engine = make_engine(sim.url)
    (tagged,) = engine.read_pages_sync(volcano, [1])
    sim.add_fault(Fault.stripped, key=keys[0])
    (stripped,) = engine.read_pages_sync(volcano, [1])
    assert stripped.status is PageStatus.ok
    assert stripped.model_dump() == tagged.model_dump()


def test_garbage_output_fails_the_page_without_a_retry(sim: OcrSimulator, volcano: bytes) -> None:
    keys = sim.register_pdf(volcano)
    sim.add_fault(Fault.garbage, key=keys[0])
    (page,) = make_engine(sim.url).read_pages_sync(volcano, [1])
    assert page.status is PageStatus.failed and errors(page) == ["bad_output"]
    assert "no grounding tags" in page.errors[0].message
    assert sim.stats.requests == 1


def test_a_blank_page_is_an_empty_page(sim: OcrSimulator) -> None:
    doc = pymupdf.open()
    doc.new_page()
    pdf = doc.tobytes()
    sim.register_pdf(pdf)
    (page,) = make_engine(sim.url).read_pages_sync(pdf, [1])
    assert page.status is PageStatus.ok and page.blocks == []


def test_a_huge_page_is_rendered_under_the_pixel_cap(sim: OcrSimulator) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=20000, height=20000)
    page.insert_text((2000, 3000), "A very large drawing sheet", fontsize=400, fontname="hebo")
    pdf = doc.tobytes()
    sim.register_pdf(pdf, max_pixels=2_000_000)
    (read,) = make_engine(sim.url, max_pixels=2_000_000, processes=True).read_pages_sync(pdf, [1])
    assert read.status is PageStatus.ok and (read.width, read.height) == (20000, 20000)
    (block,) = read.blocks
    assert block.text == "A very large drawing sheet"
    with pymupdf.open(stream=pdf) as reopened:
        truth = PyMuPDFEngine().extract_page(reopened[0]).blocks[0].bbox
        rendered = render_page(reopened[0], dpi=144, max_pixels=2_000_000)
    # 20000 pt at 144 dpi would be 40000 px square; render_page rounds its sides up (1415 px)
    assert rendered.width_px * rendered.height_px <= 2_000_000 * 1.01
    assert block.bbox == pytest.approx(truth, abs=20000 / 999)
    assert sim.requests[0]["max_tokens"] == 8192 - DEEPSEEK_OCR.prompt_tokens(
        rendered.width_px, rendered.height_px
    )


def test_a_rotated_page_has_boxes_on_the_page_as_displayed(sim: OcrSimulator) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 100), "Landscape heading", fontsize=18, fontname="hebo")
    page.set_rotation(90)
    pdf = doc.tobytes()
    sim.register_pdf(pdf)
    (read,) = make_engine(sim.url).read_pages_sync(pdf, [1])
    assert (read.rotation, read.width, read.height) == (90, 792, 612)
    with pymupdf.open(stream=pdf) as reopened:
        truth = PyMuPDFEngine().extract_page(reopened[0]).blocks[0].bbox
    assert read.blocks[0].bbox == pytest.approx(truth, abs=1.0)


def test_the_recorded_page_is_parsed(sim: OcrSimulator) -> None:
    pdf = shared_path("docling", "pdf", "2305.03393v1-pg9.pdf").read_bytes()
    sim.register_recorded(SHARED_DATA)
    (page,) = make_engine(sim.url).read_pages_sync(pdf, [1])
    assert page.status is PageStatus.ok
    types = [b.type for b in page.blocks]
    assert types.count(BlockType.table) == 1 and types.count(BlockType.section_header) == 2
    table = page.blocks[types.index(BlockType.table)]
    assert len(table.lines) == 10 and table.cells[0].row_span == 2


def test_an_encrypted_pdf_is_read_with_its_password(sim: OcrSimulator) -> None:
    pdf = encrypted_pdf("s3cret")
    with pymupdf.open(stream=pdf) as doc:
        doc.authenticate("s3cret")
        rendered = render_page(doc[0], dpi=144, max_pixels=6_000_000)
    output = "<|ref|>text<|/ref|><|det|>[[100, 100, 900, 150]]<|/det|>\nSecret text.\n"
    sim.register_image(rendered.png, output)
    engine = make_engine(sim.url, processes=True)
    (page,) = engine.read_pages_sync(pdf, [1], password="s3cret")
    assert page.status is PageStatus.ok and page.blocks[0].text == "Secret text."
    with pytest.raises(BadInputError):
        engine.read_pages_sync(pdf, [1], password="wrong")


def test_an_unreadable_pdf_or_a_missing_page_is_bad_input(volcano: bytes) -> None:
    engine = make_engine(closed_port_url())
    with pytest.raises(BadInputError):
        engine.read_pages_sync(random_bytes(), [1])
    with pytest.raises(BadInputError, match="page 9"):
        engine.read_pages_sync(volcano, [1, 9])
    assert engine.read_pages_sync(volcano, []) == []


def test_sync_reading_from_a_worker_thread_and_async_reading(
    sim: OcrSimulator, volcano: bytes
) -> None:
    sim.register_pdf(volcano)
    engine = make_engine(sim.url, processes=True)
    with ThreadPoolExecutor(1) as pool:
        pages = pool.submit(engine.read_pages_sync, volcano, [1, 2]).result()
    assert [p.status for p in pages] == [PageStatus.ok] * 2
    pages = asyncio.run(engine.read_pages(volcano, [2]))
    assert pages[0].status is PageStatus.ok
    engine.close()


@pytest.mark.parametrize("processes", [True, False])
def test_one_engine_reads_document_after_document(sim: OcrSimulator, processes: bool) -> None:
    """The render workers outlive a call and keep documents apart."""
    docs = [fact_pdf(*facts, filler_pages=0) for facts in FACTS.values()]
    for pdf in docs:
        sim.register_pdf(pdf)
    with make_engine(sim.url, processes=processes) as engine:
        titles = [engine.read_pages_sync(pdf, [1])[0].blocks[0].text for pdf in docs * 2]
    assert titles == [title for title, _ in FACTS.values()] * 2
