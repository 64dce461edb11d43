"""The DeepSeek-OCR simulator itself, spoken to with plain httpx on loopback."""

from __future__ import annotations

import base64
import io
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pymupdf
import pytest
from PIL import Image

from doubles.grounding_synth import (
    EOS,
    count_tokens,
    gundam_image_tokens,
    prompt_tokens,
    strip_special_tokens,
    tokenize,
)
from doubles.ocr_simulator import RECORDED, Fault, OcrSimulator, SimulatorError
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.render import render_page
from tests.conftest import shared_path
from tests.pdfgen import FACTS, fact_pdf

MODEL = "deepseek-ai/DeepSeek-OCR"
PROMPT = "<|grounding|>Convert the document to markdown."
TAGGED = re.compile(
    r"<\|ref\|>(\w+)<\|/ref\|><\|det\|>\[\[(\d+), (\d+), (\d+), (\d+)\]\]<\|/det\|>"
)
STRIPPED = re.compile(r"^(\w+)\[\[(\d+), (\d+), (\d+), (\d+)\]\]$", re.M)


def layout_pdf() -> bytes:
    """A page with a title, a heading, prose, a ruled table under its caption, a figure."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 80), "Quarterly Report", fontsize=22, fontname="hebo")
    page.insert_text((72, 120), "Revenue by region", fontsize=15, fontname="hebo")
    page.insert_textbox(
        pymupdf.Rect(72, 130, 540, 190),
        "Revenue grew in every region during the quarter, led by demand in the north. " * 2,
        fontsize=11,
        fontname="helv",
    )
    page.insert_text((72, 215), "Table 1. Revenue in millions of euros by region.", fontsize=9)
    rows = [["Region", "Q1", "Q2"], ["North", "12.5", "14.1"], ["South", "9.8", "10.2"]]
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(72 + c * 150, 225 + r * 20, 222 + c * 150, 245 + r * 20)
            page.draw_rect(rect, color=(0, 0, 0), width=0.8)
            page.insert_text((rect.x0 + 4, rect.y1 - 6), cell, fontsize=10)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 120, 80), False)
    pix.set_rect(pix.irect, (90, 140, 200))
    page.insert_image(pymupdf.Rect(72, 340, 312, 500), pixmap=pix)
    page.insert_text((72, 518), "Figure 1: Map of the sales regions.", fontsize=9)
    data = doc.tobytes()
    doc.close()
    return data


def png(width: int = 64, height: int = 48, shade: int = 200) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (shade, shade, shade)).save(buffer, format="PNG")
    return buffer.getvalue()


def page_png(pdf: bytes, number: int = 0, dpi: int = 144) -> bytes:
    doc = pymupdf.open(stream=pdf, filetype="pdf")
    try:
        return render_page(doc[number], dpi=dpi).png
    finally:
        doc.close()


def body(image: bytes, **extra: Any) -> dict[str, Any]:
    url = "data:image/png;base64," + base64.b64encode(image).decode()
    content = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": PROMPT}]
    request: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": content}],
        "temperature": 0.0,
        "max_tokens": 4096,
    }
    request.update(extra)
    return request


def post(sim: OcrSimulator, request: dict[str, Any], timeout: float = 30) -> httpx.Response:
    return httpx.post(f"{sim.url}/chat/completions", json=request, timeout=timeout)


def content(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


def finish(response: httpx.Response) -> str:
    return str(response.json()["choices"][0]["finish_reason"])


@pytest.fixture(scope="module")
def sim() -> Iterator[OcrSimulator]:
    with OcrSimulator() as simulator:
        yield simulator


@pytest.fixture(autouse=True)
def _no_leftover_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "sim" in request.fixturenames:
        request.getfixturevalue("sim").clear_faults()


@pytest.fixture(scope="module")
def layout(sim: OcrSimulator) -> tuple[bytes, str]:
    """The layout page's PNG, registered."""
    pdf = layout_pdf()
    (key,) = sim.register_pdf(pdf)
    return page_png(pdf), key


@pytest.fixture(scope="module")
def tiny(sim: OcrSimulator) -> tuple[bytes, str]:
    """A small image answered with a known two-block output."""
    text = (
        "<|ref|>title<|/ref|><|det|>[[100, 50, 900, 90]]<|/det|>\n# Tiny page  \n\n"
        "<|ref|>text<|/ref|><|det|>[[100, 120, 900, 300]]<|/det|>\n"
        + "Some words on a tiny page that the simulator replays for every request. "
        * 4
    ).rstrip()
    image = png()
    return image, sim.register_image(image, text)


def test_recorded_page_is_replayed_verbatim(sim: OcrSimulator) -> None:
    data = shared_path()
    (key,) = sim.register_recorded(data)
    pdf, number = next(iter(RECORDED))
    image = page_png((data / pdf).read_bytes(), number - 1)
    recorded = (data / RECORDED[(pdf, number)]).read_text(encoding="utf-8")

    response = post(sim, body(image, skip_special_tokens=False, max_tokens=6000))

    assert content(response) == recorded
    payload = response.json()
    assert payload["object"] == "chat.completion" and payload["model"] == MODEL
    assert payload["id"].startswith("chatcmpl-") and isinstance(payload["created"], int)
    assert finish(response) == "stop"
    usage = payload["usage"]
    assert usage["completion_tokens"] == count_tokens(recorded) + 1  # EOS is generated
    assert (
        usage["prompt_tokens"]
        == prompt_tokens(1224, 1584, PROMPT)
        == 1 + 256 + 600 + 1 + count_tokens(PROMPT)
    )
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert sim.requests[-1]["messages"][0]["content"][0]["image_url"]["url"].endswith(
        f"<elided sha256={key} bytes={len(image)}>"
    )


def test_synthesised_page_has_labels_and_boxes_of_the_text_layer(
    sim: OcrSimulator, layout: tuple[bytes, str]
) -> None:
    image, _key = layout
    text = content(post(sim, body(image, skip_special_tokens=False)))

    found = [(m[1], tuple(int(v) for v in m.groups()[1:])) for m in TAGGED.finditer(text)]
    labels = [label for label, _ in found]
    assert labels == [
        "title",
        "sub_title",
        "text",
        "table",
        "table_caption",
        "image",
        "image_caption",
    ]
    doc = pymupdf.open(stream=layout_pdf(), filetype="pdf")
    page = PyMuPDFEngine().extract_page(doc[0])
    doc.close()
    wanted = {
        "title": "title",
        "section_header": "sub_title",
        "text": "text",
        "table": "table",
        "figure": "image",
    }
    for block in page.blocks:
        label = wanted.get(block.type.value) or (
            "table_caption" if block.text.startswith("Table") else "image_caption"
        )
        expected = (
            round(block.bbox[0] / page.width * 999),
            round(block.bbox[1] / page.height * 999),
            round(block.bbox[2] / page.width * 999),
            round(block.bbox[3] / page.height * 999),
        )
        assert (label, expected) in found
    assert "\n# Quarterly Report  \n\n" in text and "\n## Revenue by region  \n\n" in text
    # The recorded ordering quirk: table det line, caption block, then the table's HTML.
    table_at = text.index("<|ref|>table<|/ref|>")
    caption_at = text.index("<|ref|>table_caption<|/ref|>")
    html_at = text.index("<table><tr>")
    assert table_at < caption_at < text.index("Table 1. Revenue") < html_at
    assert "<td>North</td><td>12.5</td><td>14.1</td>" in text
    assert re.search(r"<\|/det\|>\n<\|ref\|>image_caption", text)
    assert "<center>Figure 1: Map of the sales regions.</center>" in text
    assert EOS not in text and not text.endswith("\n")


def test_every_page_of_a_pdf_gets_its_own_key(sim: OcrSimulator) -> None:
    title, sections = FACTS["volcano.pdf"]
    pdf = fact_pdf(title, sections, filler_pages=1)
    keys = sim.register_pdf(pdf)
    assert len(keys) == 2 and keys[0] != keys[1]
    second = content(post(sim, body(page_png(pdf, 1), skip_special_tokens=False)))
    assert "Appendix 1" in second and title not in second


def test_text_source_supplies_the_text_of_an_image_only_twin(sim: OcrSimulator) -> None:
    title, sections = FACTS["bakery.pdf"]
    born_digital = fact_pdf(title, sections, filler_pages=0)
    scan = pymupdf.open()
    source = pymupdf.open(stream=born_digital, filetype="pdf")
    picture = source[0].get_pixmap(dpi=72)
    scan.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792), pixmap=picture)
    scanned = scan.tobytes()
    (key,) = sim.register_pdf(scanned, text_source=born_digital)

    text = content(post(sim, body(page_png(scanned), skip_special_tokens=False)))

    assert "# Bakery Operations Manual" in text and "rye flour" in text
    with pytest.raises(SimulatorError, match="text source has 2 pages"):
        sim.register_pdf(scanned, text_source=fact_pdf(title, sections, filler_pages=1))
    assert key


def test_special_tokens_are_stripped_unless_the_request_keeps_them(
    sim: OcrSimulator, layout: tuple[bytes, str]
) -> None:
    image, _key = layout
    default = content(post(sim, body(image)))
    kept = content(post(sim, body(image, skip_special_tokens=False)))
    with_eos = content(
        post(sim, body(image, skip_special_tokens=False, include_stop_str_in_output=True))
    )

    assert "<|ref|>" not in default and "<|det|>" not in default
    assert STRIPPED.findall(default)[0][0] == "title"
    assert default == strip_special_tokens(kept)
    assert "<|ref|>title<|/ref|>" in kept and EOS not in kept
    assert with_eos == kept + EOS


def test_wrong_model_is_404_like_vllm(sim: OcrSimulator, tiny: tuple[bytes, str]) -> None:
    response = post(sim, body(tiny[0], model="deepseek-ai/DeepSeek-OCR-2"))
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["message"] == "The model `deepseek-ai/DeepSeek-OCR-2` does not exist."
    assert error["type"] == "NotFoundError" and error["code"] == 404


def test_models_lists_the_served_model(sim: OcrSimulator) -> None:
    listing = httpx.get(f"{sim.url}/models").json()
    assert [card["id"] for card in listing["data"]] == [MODEL]
    assert listing["data"][0]["max_model_len"] == 8192


def test_unknown_image_and_malformed_messages_are_400(
    sim: OcrSimulator, tiny: tuple[bytes, str]
) -> None:
    unknown = post(sim, body(png(shade=17)))
    assert unknown.status_code == 400
    assert "unknown image sha256=" in unknown.json()["error"]["message"]

    two_images = body(tiny[0])
    two_images["messages"][0]["content"].insert(0, two_images["messages"][0]["content"][0])
    no_text = body(tiny[0])
    no_text["messages"][0]["content"].pop()
    remote = body(tiny[0])
    remote["messages"][0]["content"][0]["image_url"]["url"] = "https://example.com/page.png"
    for request, message in [
        (two_images, "exactly one image_url part, got 2"),
        (no_text, "a text part"),
        (remote, "data:image/png or data:image/jpeg"),
    ]:
        response = post(sim, request)
        assert response.status_code == 400 and message in response.json()["error"]["message"]


def test_prompt_plus_max_tokens_over_the_context_is_400(
    sim: OcrSimulator, layout: tuple[bytes, str]
) -> None:
    image, _key = layout
    prompt = prompt_tokens(1224, 1584, PROMPT)
    over = post(sim, body(image, max_tokens=8192 - prompt + 1))
    fits = post(sim, body(image, max_tokens=8192 - prompt))
    unset = post(sim, body(image, max_tokens=None))

    assert over.status_code == 400
    assert over.json()["error"]["message"].startswith(
        "This model's maximum context length is 8192 tokens. However, you requested 8193 tokens "
        f"({prompt} in the messages, {8192 - prompt + 1} in the completion)."
    )
    assert fits.status_code == 200 and unset.status_code == 200


def test_max_tokens_cuts_the_output_with_finish_length(
    sim: OcrSimulator, layout: tuple[bytes, str]
) -> None:
    image, _key = layout
    full = content(post(sim, body(image, skip_special_tokens=False)))
    response = post(sim, body(image, skip_special_tokens=False, max_tokens=40))

    assert finish(response) == "length"
    assert response.json()["usage"]["completion_tokens"] == 40
    assert content(response) == "".join(tokenize(full)[:40])
    exact = post(sim, body(image, max_tokens=count_tokens(full)))
    assert finish(exact) == "length"  # no room left for the EOS token


def test_server_error_fires_the_given_number_of_times(
    sim: OcrSimulator, tiny: tuple[bytes, str]
) -> None:
    image, key = tiny
    sim.add_fault(Fault.server_error, key=key, times=2)
    statuses = [post(sim, body(image)).status_code for _ in range(3)]
    assert statuses == [500, 500, 200]


def test_a_fault_for_one_page_spares_the_others(
    sim: OcrSimulator, tiny: tuple[bytes, str], layout: tuple[bytes, str]
) -> None:
    sim.add_fault(Fault.server_error, key=tiny[1], times=None)
    assert post(sim, body(layout[0])).status_code == 200
    assert [post(sim, body(tiny[0])).status_code for _ in range(3)] == [500, 500, 500]
    sim.clear_faults()
    assert post(sim, body(tiny[0])).status_code == 200


def test_hang_holds_until_the_client_gives_up(sim: OcrSimulator, tiny: tuple[bytes, str]) -> None:
    sim.add_fault(Fault.hang)
    with pytest.raises(httpx.ReadTimeout):
        post(sim, body(tiny[0]), timeout=0.5)
    deadline = time.monotonic() + 5
    while sim.stats.hanging and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sim.stats.hanging == 0
    assert post(sim, body(tiny[0])).status_code == 200


def test_length_fault_cuts_mid_block(sim: OcrSimulator, layout: tuple[bytes, str]) -> None:
    image, _key = layout
    full = content(post(sim, body(image, skip_special_tokens=False)))
    sim.add_fault(Fault.length)
    response = post(sim, body(image, skip_special_tokens=False))
    assert finish(response) == "length"
    text = content(response)
    assert full.startswith(text) and 0 < len(text) < len(full)
    assert not text.endswith("\n\n")


GUARD = {"ngram_size": 30, "window_size": 90, "whitelist_token_ids": [128821, 128822]}
STRICT = {"ngram_size": 20, "window_size": 50, "whitelist_token_ids": [128821, 128822]}


def test_loop_runs_to_max_tokens_unless_the_guard_is_strict(
    sim: OcrSimulator, layout: tuple[bytes, str]
) -> None:
    image, _key = layout
    sim.add_fault(Fault.loop, times=None)
    looped = post(sim, body(image, max_tokens=2000, vllm_xargs=GUARD))
    unguarded = post(sim, body(image, max_tokens=2000))
    strict = post(sim, body(image, max_tokens=2000, vllm_xargs=STRICT))

    assert finish(looped) == "length" and finish(unguarded) == "length"
    assert looped.json()["usage"]["completion_tokens"] == 2000
    assert ". " * 200 in content(looped)[-500:]
    assert finish(strict) == "stop" and ". . . ." not in content(strict)


def test_loop_always_ignores_the_guard_and_takes_a_phrase(
    sim: OcrSimulator, tiny: tuple[bytes, str]
) -> None:
    sim.add_fault(Fault.loop_always, loop_unit="the the table ")
    response = post(sim, body(tiny[0], max_tokens=300, vllm_xargs=STRICT))
    assert finish(response) == "length"
    assert content(response).count("the the table ") > 20


def test_stripped_fault_drops_tags_even_when_asked_to_keep_them(
    sim: OcrSimulator, tiny: tuple[bytes, str]
) -> None:
    sim.add_fault(Fault.stripped)
    text = content(post(sim, body(tiny[0], skip_special_tokens=False)))
    assert "<|ref|>" not in text
    assert STRIPPED.findall(text) == [
        ("title", "100", "50", "900", "90"),
        ("text", "100", "120", "900", "300"),
    ]


def test_garbage_fault_is_prose_without_grounding(
    sim: OcrSimulator, tiny: tuple[bytes, str]
) -> None:
    sim.add_fault(Fault.garbage)
    response = post(sim, body(tiny[0], skip_special_tokens=False))
    assert finish(response) == "stop"
    assert content(response).startswith("The image shows") and "[[" not in content(response)


def test_capacity_queues_the_rest() -> None:
    image = png(shade=90)
    output = "<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\nA short answer."
    tokens = count_tokens(output) + 1
    statuses: list[int] = []
    with OcrSimulator(capacity=2, seconds_per_token=0.25 / tokens) as slow:
        slow.register_image(image, output)

        def one() -> None:
            statuses.append(post(slow, body(image)).status_code)

        threads = [threading.Thread(target=one) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stats = slow.stats
    assert statuses == [200] * 6
    assert stats.max_concurrent == 2 and stats.queued_max >= 1 and stats.queued == 0
    assert stats.completed == 6 and stats.output_tokens == 6 * tokens and stats.in_flight == 0


def test_stop_releases_hung_requests() -> None:
    image = png(shade=33)
    results: list[int | str] = []
    with OcrSimulator() as simulator:
        simulator.register_image(image, "x")
        simulator.add_fault(Fault.hang, times=None)

        def hang() -> None:
            try:
                results.append(post(simulator, body(image)).status_code)
            except httpx.HTTPError as exc:
                results.append(type(exc).__name__)

        thread = threading.Thread(target=hang)
        thread.start()
        deadline = time.monotonic() + 5
        while simulator.stats.hanging == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        started = time.monotonic()
    stopped_in = time.monotonic() - started
    thread.join(5)
    assert results == [503]
    assert stopped_in < 4, f"shutdown waited {stopped_in:.1f}s on a hung request"


def test_process_mode_serves_and_stops(tmp_path: Any) -> None:
    pdf_path = tmp_path / "volcano.pdf"
    pdf_path.write_bytes(fact_pdf(*FACTS["volcano.pdf"], filler_pages=0))
    with OcrSimulator(process=True) as simulator:
        process = simulator._proc
        assert process is not None and process.poll() is None
        (key,) = simulator.register_pdf(pdf_path)
        simulator.add_fault(Fault.server_error, key=key)
        image = page_png(pdf_path.read_bytes())
        assert post(simulator, body(image)).status_code == 500
        text = content(post(simulator, body(image, skip_special_tokens=False)))
        assert "<|ref|>title<|/ref|>" in text and "Kelud" in text
        assert simulator.stats.status_counts == {500: 1, 200: 1}
        assert simulator.requests[-1]["skip_special_tokens"] is False
        url = simulator.url
        simulator.add_fault(Fault.hang)
        hung: list[int] = []
        thread = threading.Thread(
            target=lambda: hung.append(post(simulator, body(image)).status_code)
        )
        thread.start()
        deadline = time.monotonic() + 10
        while simulator.stats.hanging == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    thread.join(10)
    assert hung == [503]  # SIGTERM released the hung request
    assert process.poll() is not None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models", timeout=2)


def test_token_estimates() -> None:
    text = "<|ref|>text<|/ref|> Tokenization of 12345 words, <td>a</td>\n\n中文"
    pieces = tokenize(text)
    assert "".join(pieces) == text
    assert pieces[:3] == ["<|ref|>", "text", "<|/ref|>"] and "<td>" in pieces and "中" in pieces
    assert gundam_image_tokens(640, 480) == 256
    assert gundam_image_tokens(1224, 1584) == 256 + 6 * 100  # 2x3 tiles for a portrait page
    assert gundam_image_tokens(1584, 1224) == 256 + 6 * 100
    assert gundam_image_tokens(2000, 700) == 256 + 3 * 100  # 3x1 for a wide strip


def test_jpeg_pages_and_an_api_key() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (800, 1000), (250, 250, 250)).save(buffer, format="JPEG")
    jpeg = buffer.getvalue()
    with OcrSimulator(api_key="s3cret", model="ocr") as keyed:
        keyed.register_image(jpeg, "<|ref|>text<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\nhello")
        request = body(jpeg, model="ocr")
        request["messages"][0]["content"][0]["image_url"]["url"] = (
            "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()
        )
        url = f"{keyed.url}/chat/completions"
        assert httpx.post(url, json=request).status_code == 401
        answer = httpx.post(url, json=request, headers={"Authorization": "Bearer s3cret"})
        assert content(answer) == "text[[1, 2, 3, 4]]\nhello"
        with pytest.raises(SimulatorError, match="times"):
            keyed.add_fault(Fault.hang, times=0)
