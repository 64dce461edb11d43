"""Generated answers: how well the citation check tells planted faulty citations from faithful ones.

    python -m eval generated_answers [--data ../shared/data] [--work .bench/retrieval] [--rounds 3]

FinanceBench's dev questions are searched in folio's cached FinanceBench index (built by
`python -m eval retrieval --dataset financebench`; the newest `financebench-*` directory under
--work that holds a finished ingest is opened, so a change to the index key's sources does not
force a new ingest), and the top 5 hits are answered by the LLM stub of the tests
(`doubles.llm_stub`, behaviour `mixed`) on loopback, through `retrieval.answer.generate` as `/query`
does. The stub writes 3-5 sentences copied (or lightly reworded) from the numbered sources, and
plants faults with known labels: a sentence cited to another source, a number no source holds, a
number of the same source in place of the right one, a marker past the last source. Reported: the
share of citations judged supported, the checker's precision and recall for "unsupported" against
the planted labels (with and without the swapped numbers, which a check of numbers against the
source cannot see), verdicts per planted kind, the time per answer, and the fallback (mode, error
code, seconds) for each failure the stub can play.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)

TOP_K = 5
_DONE = "bench-ingest.json"
_FAULTY = {"miscite", "fabricate", "swap_number"}
_FAITHFUL = {"faithful", "paraphrase"}


def _financebench_index(work: Path) -> Any:
    """Services over the newest finished FinanceBench index under `work` (None when none)."""
    from eval.retrieval_cache import CachedEmbedder
    from eval.retrieval_index import default_embedder_indexes
    from retrieval.index.embedder import SentenceTransformerEmbedder
    from server.services import build_services
    from server.settings import Settings

    built = [p.parent for p in work.glob(f"financebench-*/{_DONE}")]
    done = sorted(default_embedder_indexes(built), key=lambda p: p.stat().st_mtime)
    if not done:
        return None
    directory = done[-1]
    log.info("opening %s", directory)
    embedder = CachedEmbedder(SentenceTransformerEmbedder(), work / "embeddings.sqlite3")
    settings = Settings(data_dir=directory, ocr="never", max_tokens=256)  # type: ignore[arg-type]
    return build_services(settings, embedder=embedder)


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f} ({a}/{b})" if b else "—"


async def _run(services: Any, questions: list[str], rounds: int) -> dict[str, Any]:
    from doubles.llm_stub import Behaviour, LlmStub
    from doubles.llm_stub_answers import EXPECTED
    from retrieval.answer.generate import answer_response
    from retrieval.answer.llm import LlmOptions
    from retrieval.index.embedder import SentenceTransformerEmbedder

    pairs: list[tuple[str, str]] = []  # (planted kind, verdict)
    misaligned = answers = 0
    check_seconds: list[float] = []
    fallbacks: list[tuple[str, str, str, float]] = []
    hits_of = [services.retriever.search(q, TOP_K) for q in questions]
    # the check embeds with the model itself, not the benchmark's embedding cache, so its time
    # is what /query pays; loaded before the clock starts
    checker = SentenceTransformerEmbedder()
    checker.embed_query("warm up")
    with LlmStub(Behaviour.mixed) as stub:
        options = LlmOptions(url=stub.url, model="stub/instruct", timeout_s=30)
        for round_ in range(rounds):
            stub.seed = 1000 * round_
            for question, hits in zip(questions, hits_of, strict=True):
                started = time.perf_counter()
                result = await answer_response(question, hits, embedder=checker, llm=options)
                check_seconds.append(time.perf_counter() - started)
                answers += 1
                planted = stub.answers[-1].planted
                if result.mode != "generated" or len(result.checks) != len(planted):
                    misaligned += 1
                    continue
                for plant, check in zip(planted, result.checks, strict=True):
                    assert plant.marker == check.n
                    pairs.append((plant.kind.value, check.verdict))
        for behaviour in (Behaviour.error_500, Behaviour.hang, Behaviour.garbage):
            stub.behaviour = behaviour
            failing = options.model_copy(update={"timeout_s": 2.0})
            fallbacks.append(
                await _fallback(services, questions[0], hits_of[0], failing, behaviour.value)
            )
    unreachable = LlmOptions(url="http://127.0.0.1:9/v1", timeout_s=2.0)
    fallbacks.append(
        await _fallback(services, questions[0], hits_of[0], unreachable, "unreachable")
    )
    expected = {kind.value: verdict for kind, verdict in EXPECTED.items()}
    return {
        "pairs": pairs,
        "expected": expected,
        "answers": answers,
        "misaligned": misaligned,
        "check_seconds": check_seconds,
        "fallbacks": fallbacks,
    }


async def _fallback(
    services: Any, question: str, hits: Any, options: Any, name: str
) -> tuple[str, str, str, float]:
    from retrieval.answer.generate import answer_response

    started = time.perf_counter()
    result = await answer_response(question, hits, embedder=services.embedder, llm=options)
    code = result.llm_error.code if result.llm_error else "—"
    return name, result.mode, code, time.perf_counter() - started


def _report(found: dict[str, Any], questions: int, rounds: int) -> None:
    pairs: list[tuple[str, str]] = found["pairs"]
    total = len(pairs)
    supported = sum(v == "supported" for _, v in pairs)
    kept = sum(v in ("supported", "weak") for _, v in pairs)
    print(f"questions: {questions} FinanceBench dev, {rounds} rounds, top {TOP_K} hits as sources")
    print(f"answers: {found['answers']} ({found['misaligned']} not aligned with the stub's labels)")
    print(f"citations checked: {total}")
    print(f"judged supported: {_ratio(supported, total)}; kept: {_ratio(kept, total)}")
    for faulty in (_FAULTY, _FAULTY - {"swap_number"}):
        scored = [(k, v) for k, v in pairs if k in faulty or k in _FAITHFUL]
        actual = [k in faulty for k, _ in scored]
        flagged = [v == "unsupported" for _, v in scored]
        tp = sum(a and f for a, f in zip(actual, flagged, strict=True))
        print(
            f"'unsupported' vs planted {'+'.join(sorted(faulty))}: "
            f"precision {_ratio(tp, sum(flagged))}, recall {_ratio(tp, sum(actual))}"
        )
    print()
    print("| planted | n | expected | supported | weak | unsupported | invalid |")
    print("|---|---|---|---|---|---|---|")
    by_kind: dict[str, Counter[str]] = {}
    for kind, verdict in pairs:
        by_kind.setdefault(kind, Counter())[verdict] += 1
    for kind, counts in sorted(by_kind.items()):
        n = sum(counts.values())
        cells = " | ".join(str(counts[v]) for v in ("supported", "weak", "unsupported", "invalid"))
        print(f"| {kind} | {n} | {found['expected'][kind]} | {cells} |")
    seconds = sorted(found["check_seconds"])
    if seconds:
        p50, p90 = (1e3 * seconds[int(q * (len(seconds) - 1))] for q in (0.5, 0.9))
        print(
            f"\ngenerate + check per answer: p50 {p50:.0f} ms, p90 {p90:.0f} ms "
            "(the stub answers at once; the check embeds the sentences on the CPU)"
        )
    print("\n| endpoint | mode | llm_error | seconds to the answer |")
    print("|---|---|---|---|")
    for name, mode, code, took in found["fallbacks"]:
        print(f"| {name} | {mode} | {code} | {took:.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--rounds", type=int, default=3, help="answers per question (seeds)")
    parser.add_argument("--limit", type=int, default=0, help="first N questions only")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    from eval.retrieval_data import load_corpus

    try:
        corpus = load_corpus("financebench", args.data)
    except FileNotFoundError as exc:
        print(f"skipped: {exc.filename} not found (the benchmark reads ../shared/data in place)")
        return 0
    services = _financebench_index(args.work)
    if services is None:
        print(
            f"skipped: no finished FinanceBench index under {args.work}; build it with "
            "`python -m eval retrieval --dataset financebench`"
        )
        return 0
    questions = [c.question for c in corpus.cases][: args.limit or None]
    try:
        found = asyncio.run(_run(services, questions, args.rounds))
    finally:
        services.close()
    _report(found, len(questions), args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
