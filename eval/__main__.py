"""Benchmarks: ``python -m eval NAME [options]``; each also runs as ``python -m eval.NAME``."""

from __future__ import annotations

import importlib
import sys

# subcommand -> module with a ``main(argv) -> int``
COMMANDS: dict[str, str] = {
    "answers": "eval.answers",
    "answer_judge": "eval.answer_judge",
    "answer_signals": "eval.answer_signals",
    "answer_support": "eval.answer_support",
    "generated_answers": "eval.generated_answers",
    "cards": "eval.cards",
    "cli_latency": "eval.cli_latency",
    "conservation": "eval.conservation",
    "cpu_ocr": "eval.cpu_ocr",
    "extraction": "eval.extraction",
    "figure_tables": "eval.figure_tables",
    "financebench": "eval.financebench",
    "ingest_speed": "eval.ingest_speed",
    "ocr_routing": "eval.ocr_routing",
    "office": "eval.office",
    "ocr_parser": "eval.ocr_parser",
    "ocr_throughput": "eval.ocr_throughput",
    "olmocr_bench": "eval.olmocr_bench",
    "first_card": "eval.first_card",
    "ingest_ledger": "eval.ingest_ledger",
    "late_interaction": "eval.late_interaction",
    "load": "eval.load",
    "mmlongbench_ocr": "eval.mmlongbench_ocr",
    "query_latency": "eval.query_latency",
    "answer_latency": "eval.answer_latency",
    "rerank_quality": "eval.rerank_quality",
    "scan_cost": "eval.scan_cost",
    "scan_structure": "eval.scan_structure",
    "scan_orientation": "eval.scan_orientation",
    "retrieval": "eval.retrieval",
    "report": "eval.report",
    "queue_scaling": "eval.queue_scaling",
    "replica_cpu": "eval.replica_cpu",
    "sentence_vectors": "eval.sentence_vectors",
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch to one benchmark, or with ``all`` run the report's benchmarks and write it."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or (args[0] not in COMMANDS and args[0] != "all"):
        print(f"usage: python -m eval {{{','.join([*COMMANDS, 'all'])}}} [options]")
        return 0 if args and args[0] in ("-h", "--help") else 2
    if args[0] != "all":
        return int(importlib.import_module(COMMANDS[args[0]]).main(args[1:]))
    from eval.report import BENCH

    status = 0
    for name, *options in BENCH:  # each records its run in docs/bench-results.json
        print(f"== python -m eval {name} {' '.join(options)}", flush=True)
        status = max(status, int(importlib.import_module(COMMANDS[name]).main(options)))
    return max(status, int(importlib.import_module(COMMANDS["report"]).main([])))


if __name__ == "__main__":
    raise SystemExit(main())
