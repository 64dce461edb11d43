"""Generated answers over HTTP: checked citations, dropped markers, fallback, the SSE stream.

The real app on loopback, with documents ingested for real and an OpenAI-compatible stub (also on
loopback) as the LLM; nothing is patched.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx
import pytest

from doubles.fakes import HashEmbedder
from doubles.llm_stub import Behaviour, LlmStub
from doubles.llm_stub_answers import EXPECTED, Kind
from doubles.loopback import sse_events
from ocr_engine.options import OcrMode
from retrieval.answer.generate import (
    AnswerEvent,
    CitationsEvent,
    DoneEvent,
    TokenEvent,
    answer_events,
)
from retrieval.answer.llm import LlmOptions
from retrieval.answer.support import check_answer, marked_sentences
from retrieval.schema import QueryResponse, ScoredChunk
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf
from tests.test_e2e import LiveServer

QUESTION = "When did the Kelud volcano erupt?"
KELUD = "The Kelud volcano erupted in February 2014 and ash fell on Yogyakarta"


@pytest.fixture(scope="module")
def stub() -> Iterator[LlmStub]:
    with LlmStub() as running:
        yield running


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, stub: LlmStub) -> Iterator[tuple[Services, str]]:
    root = tmp_path_factory.mktemp("answers")
    (root / "in").mkdir()
    paths = []
    for name, (title, sections) in FACTS.items():
        path = root / "in" / name
        path.write_bytes(fact_pdf(title, sections))
        paths.append(path)
    settings = Settings(
        data_dir=root / "data",
        ocr=OcrMode.never,
        extract_processes=0,
        llm_url=stub.url,
        llm_timeout_s=1.5,
    )
    services = build_services(settings, embedder=HashEmbedder())
    services.sync.ingest_paths(paths)
    try:
        with LiveServer(services) as server:
            yield services, server.base_url
    finally:
        services.close()


def _ask(base: str, stub: LlmStub, behaviour: Behaviour) -> QueryResponse:
    stub.behaviour = behaviour
    response = httpx.post(f"{base}/query", json={"question": QUESTION}, timeout=30)
    assert response.status_code == 200, response.text
    return QueryResponse.model_validate(response.json())


def _events(base: str, body: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    with httpx.stream("POST", f"{base}/query/stream", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return sse_events(response)


def _stream(base: str, stub: LlmStub, behaviour: Behaviour) -> list[tuple[str, dict[str, object]]]:
    stub.behaviour = behaviour
    return _events(base, {"question": QUESTION})


def _markers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


def test_faithful_answer_keeps_every_marker_with_supported_localised_citations(
    live: tuple[Services, str], stub: LlmStub
) -> None:
    _, base = live
    result = _ask(base, stub, Behaviour.faithful)
    assert result.mode == "generated" and result.llm_error is None
    assert result.answer == stub.answers[-1].text  # nothing dropped
    assert result.checks and all(c.verdict == "supported" and c.kept for c in result.checks)
    assert sorted(c.n for c in result.citations) == sorted(set(_markers(result.answer)))
    first = next(c for c in result.citations if c.n == 1)
    assert KELUD in first.quote and first.support is not None
    assert first.support.verdict == "supported" and first.support.embedding is not None
    assert first.source == "volcano.pdf" and first.page == 1
    x0, y0, x1, y1 = first.bbox
    assert 72 <= x0 < x1 <= 540 and 100 < y0 < y1 < 250  # the paragraph's lines, not the page
    assert first.highlight_url.startswith(f"/documents/{first.doc_id}/pages/1.png?highlight=")
    assert httpx.get(base + first.highlight_url, timeout=30).status_code == 200
    sent = stub.requests[-1]
    assert sent["stream"] is True and sent["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert f"[1] {KELUD}" in sent["messages"][1]["content"]


@pytest.mark.parametrize(
    ("behaviour", "verdict"),
    [
        (Behaviour.miscite, "unsupported"),
        (Behaviour.fabricate, "unsupported"),
        (Behaviour.out_of_range, "invalid"),
    ],
)
def test_a_faulty_citation_is_judged_and_its_marker_dropped(
    live: tuple[Services, str], stub: LlmStub, behaviour: Behaviour, verdict: str
) -> None:
    _, base = live
    result = _ask(base, stub, behaviour)
    planted = stub.answers[-1].planted
    assert [p.kind for p in planted] == [Kind.faithful, Kind(behaviour.value)]
    good, bad = result.checks
    assert (good.verdict, good.kept) == ("supported", True)
    assert (bad.verdict, bad.kept, bad.n) == (verdict, False, planted[1].marker)
    assert EXPECTED[planted[1].kind] == verdict
    sentences = result.answer.split(". ")
    assert _markers(sentences[0]) == [planted[0].marker] and _markers(sentences[1]) == []
    assert [c.n for c in result.citations] == [planted[0].marker]
    if behaviour is Behaviour.fabricate:
        assert len(bad.numbers_missing) == 1 and bad.numbers_missing[0] in bad.claim
        assert bad.lexical > 0.5  # the words are all there: the number alone gives it away


@pytest.mark.parametrize(
    ("behaviour", "code"),
    [
        (Behaviour.error_500, "llm_http_error"),
        (Behaviour.hang, "llm_timeout"),
        (Behaviour.garbage, "llm_bad_output"),
    ],
)
def test_a_failing_endpoint_falls_back_to_the_extractive_answer(
    live: tuple[Services, str], stub: LlmStub, behaviour: Behaviour, code: str
) -> None:
    _, base = live
    result = _ask(base, stub, behaviour)
    assert result.mode == "extractive" and result.checks == []
    assert result.llm_error is not None and result.llm_error.code == code
    assert KELUD in result.answer and result.citations[0].source == "volcano.pdf"
    assert result.citations[0].support is None


def test_an_unreachable_endpoint_falls_back(live: tuple[Services, str]) -> None:
    services, _ = live
    hits = services.retriever.search(QUESTION, 5)
    options = LlmOptions(url="http://127.0.0.1:9/v1", timeout_s=2)
    events = asyncio.run(_collect(services, hits, options))
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.response.llm_error is not None
    assert done.response.llm_error.code == "llm_unreachable"


async def _collect(
    services: Services, hits: list[ScoredChunk], options: LlmOptions | None
) -> list[AnswerEvent]:
    events = answer_events(QUESTION, hits, embedder=services.embedder, llm=options)
    return [event async for event in events]


def test_the_stream_sends_tokens_then_citations_then_the_response(
    live: tuple[Services, str], stub: LlmStub
) -> None:
    _, base = live
    events = _stream(base, stub, Behaviour.miscite)
    kinds = [k for k, _ in events]
    assert kinds[-2:] == ["citations", "done"] and set(kinds[:-2]) == {"token"}
    assert len(kinds) > 5  # tokens as they came, not the answer at once
    streamed = "".join(str(d["text"]) for k, d in events if k == "token")
    assert streamed == stub.answers[-1].text
    done = QueryResponse.model_validate(events[-1][1])
    assert done.mode == "generated" and len(_markers(done.answer)) == 1  # the miscite dropped
    assert events[-2][1]["citations"] == [c.model_dump(mode="json") for c in done.citations]


def test_the_stream_falls_back_in_one_token_and_refuses_bad_requests_as_json(
    live: tuple[Services, str], stub: LlmStub
) -> None:
    _, base = live
    events = _stream(base, stub, Behaviour.error_500)
    assert [k for k, _ in events] == ["token", "citations", "done"]
    done = QueryResponse.model_validate(events[-1][1])
    assert events[0][1]["text"] == done.answer and done.mode == "extractive"
    assert done.llm_error is not None and done.llm_error.code == "llm_http_error"
    bad = httpx.post(
        f"{base}/query/stream", json={"question": QUESTION, "page_from": 3, "page_to": 1}
    )
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


def test_a_stream_broken_midway_goes_on_with_the_extractive_answer(
    live: tuple[Services, str], stub: LlmStub
) -> None:
    _, base = live
    events = _stream(base, stub, Behaviour.break_midway)
    kinds = [k for k, _ in events]
    assert kinds[-3:] == ["token", "citations", "done"] and len(kinds) > 5
    done = QueryResponse.model_validate(events[-1][1])
    assert done.mode == "extractive" and done.llm_error is not None
    assert done.llm_error.code == "llm_bad_output"
    streamed = "".join(str(d["text"]) for k, d in events[:-3])
    assert stub.answers[-1].text.startswith(streamed) and streamed  # half the answer came first
    assert events[-3][1]["text"] == done.answer and KELUD in done.answer


def test_without_an_llm_the_answer_is_extractive(live: tuple[Services, str]) -> None:
    services, _ = live
    hits = services.retriever.search(QUESTION, 5)
    events = asyncio.run(_collect(services, hits, None))
    assert [type(e) for e in events] == [TokenEvent, CitationsEvent, DoneEvent]
    assert isinstance(events[-1], DoneEvent)
    done = events[-1].response
    assert done.mode == "extractive" and done.llm_error is None and KELUD in done.answer


def test_the_api_key_is_sent_as_a_bearer_token(live: tuple[Services, str]) -> None:
    services, _ = live
    hits = services.retriever.search(QUESTION, 5)
    with LlmStub(api_key="sesame") as guarded:
        good = Settings(llm_url=guarded.url, llm_api_key="sesame").llm_options()
        bad = Settings(llm_url=guarded.url, llm_api_key="wrong").llm_options()
        passed = asyncio.run(_collect(services, hits, good))[-1]
        failed = asyncio.run(_collect(services, hits, bad))[-1]
    assert isinstance(passed, DoneEvent) and passed.response.mode == "generated"
    assert isinstance(failed, DoneEvent) and failed.response.llm_error is not None
    assert "401" in failed.response.llm_error.message


def test_markers_belong_to_their_sentence_and_unkept_ones_leave_the_text() -> None:
    answer = "Kelud erupted in 2014.[1] Ash fell [2, 3]. Bread is baked. [1][9]"
    sentences = marked_sentences(answer)
    assert [s.markers for s in sentences] == [(1,), (2, 3), (1, 9)]
    assert [s.claim for s in sentences] == [
        "Kelud erupted in 2014.",
        "Ash fell.",
        "Bread is baked.",
    ]
    assert marked_sentences("No marker here.")[0].markers == ()
    # a marker at end punctuation ends the sentence even before a lower-case fragment
    fragments = marked_sentences("reported on the NYSE [3]. as of May [4]. it rose [1].")
    assert [s.markers for s in fragments] == [(3,), (4,), (1,)]


def test_numbers_match_whatever_their_separators(live: tuple[Services, str]) -> None:
    services, _ = live
    hits = services.retriever.search("How hot is the deck oven?", 5)
    oven = next(i for i, h in enumerate(hits, 1) if "250 degrees" in h.chunk.text)
    ok = check_answer(
        f"Each deck oven is preheated to 250.00 degrees Celsius [{oven}].", hits, services.embedder
    )
    assert ok.checks[0].verdict == "supported" and ok.checks[0].numbers_missing == []
    wrong = check_answer(
        f"Each deck oven is preheated to 2,500 degrees Celsius [{oven}].", hits, services.embedder
    )
    assert wrong.checks[0].verdict == "unsupported" and wrong.checks[0].numbers_missing == ["2500"]
    assert (
        wrong.text == "Each deck oven is preheated to 2,500 degrees Celsius."
        and wrong.citations == []
    )


def test_the_stub_answers_without_streaming_too(stub: LlmStub) -> None:
    stub.behaviour = Behaviour.faithful
    response = stub.ask(QUESTION, [KELUD + ".", "Bread is baked at dawn in the deck oven."])
    message = response.json()["choices"][0]["message"]["content"]
    assert response.status_code == 200 and message == stub.answers[-1].text
    assert _markers(message) == [1, 2, 1]  # three sentences, sources taken in turn


def test_llm_settings_are_checked_at_startup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLIO_LLM_URL", " ")
    assert Settings().llm_options() is None
    monkeypatch.setenv("FOLIO_LLM_URL", "http://llm:8000/v1/")
    monkeypatch.setenv("FOLIO_LLM_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    monkeypatch.setenv("FOLIO_LLM_API_KEY", "k")
    monkeypatch.setenv("FOLIO_LLM_TIMEOUT_S", "20")
    monkeypatch.setenv("FOLIO_LLM_MAX_TOKENS", "300")
    options = Settings().llm_options()
    assert options is not None and options.url == "http://llm:8000/v1"
    assert options.api_key is not None and options.api_key.get_secret_value() == "k"
    assert (options.timeout_s, options.max_tokens) == (20.0, 300)
    for name, value in [
        ("FOLIO_LLM_URL", "llm:8000"),
        ("FOLIO_LLM_URL", "http://llm:port/v1"),
        ("FOLIO_LLM_TIMEOUT_S", "0"),
        ("FOLIO_LLM_MAX_TOKENS", "1"),
    ]:
        with monkeypatch.context() as m:
            m.setenv(name, value)
            with pytest.raises(ValueError, match=name.removeprefix("FOLIO_").lower()):
                Settings()


def test_a_partly_backed_sentence_is_weak_and_kept(live: tuple[Services, str]) -> None:
    services, _ = live
    hits = services.retriever.search(QUESTION, 5)
    kelud = next(i for i, h in enumerate(hits, 1) if KELUD in h.chunk.text)
    checked = check_answer(
        f"Kelud ash covered the whole of Java [{kelud}].", hits, services.embedder
    )
    (check,) = checked.checks
    assert check.verdict == "weak" and check.kept and 0.35 <= check.lexical < 0.6
    assert checked.citations[0].support is not None
    assert checked.citations[0].support.verdict == "weak"
    assert _markers(checked.text) == [kelud]
