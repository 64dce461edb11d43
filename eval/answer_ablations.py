"""Answers without one rule of the answer path: what each hand rule is worth, question by question.

    python -m eval.answer_ablations --split check --without share [--without change ...]
        [--index DIR ...] [--baseline .bench/results/answers-check.json]

Runs `python -m eval answers` with the named rules of `retrieval/answer/meet.py` switched off
(in this process only), writes its records to `.bench/results/answers-<split>-without-<names>.json`
(never the recorded figures) and prints, against `--baseline` (the same command with every rule
on), the questions right in one run and not the other. Issue 35 §3: a rule stays only if
switching it off costs at least one question net on `check`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval.answer_match import gold_numbers, numbers_in
from eval.answer_sets import Asked


def _set(module: Any, name: str, value: Any) -> Callable[[], None]:
    old = getattr(module, name)
    setattr(module, name, value)
    return lambda: setattr(module, name, old)


def _with_options(group: str = "", **changes: Any) -> Callable[[], None]:
    """The retriever's answer options with `changes` (of its `group`: scope, lookups), for every
    question."""
    from dataclasses import replace

    from retrieval.answer.retriever import Retriever

    drawn = Retriever.answer_options

    def changed(self: Retriever, *args: Any, **kwargs: Any) -> Any:
        options = drawn(self, *args, **kwargs)
        if group:
            return replace(options, **{group: replace(getattr(options, group), **changes)})
        return replace(options, **changes)

    return _set(Retriever, "answer_options", changed)


def _rules() -> dict[str, tuple[str, Callable[[], Callable[[], None]]]]:
    from retrieval.answer import meet
    from retrieval.search.doc_names import NamedDocuments

    def keep_all(_q: str, found: Any, *_rest: Any) -> Any:
        return found

    return {
        "meet": ("the whole measure-and-period weight", lambda: _set(meet, "_MEET", 1.0)),
        "closest-label": (
            "of equally named rows, the label saying least else, the whole's",
            lambda: _set(meet, "_closest_labels", keep_all),
        ),
        "heading-lead": (
            "a section heading more like the question than any sentence leads the answer",
            lambda: _with_options(heading_lead=float("inf")),
        ),
        "table-rest": (
            "a hit's other row groups of its table on its page are candidates too",
            lambda: _with_options("lookups", table_rest=None),
        ),
        "lead-in": (
            "a lead-in whose table is not among the hits is cited with the chunks after it",
            lambda: _with_options("lookups", following=None),
        ),
        "unit": (
            "a cited cell says the unit its table's neighbours state",
            lambda: _with_options("lookups", unit_of=None),
        ),
        "owner": (
            "no answer when the question names an owner no document is named by",
            lambda: _with_options("scope", subjects=()),
        ),
        "named-outside": (
            "no answer from chosen documents when the question names only others",
            lambda: _set(NamedDocuments, "named_outside", lambda *_a: ()),
        ),
        "cells": (
            "table rows read as cells with their row label and column headers",
            lambda: _with_options(cells=False),
        ),
    }


def right_of(record: dict[str, Any]) -> bool:
    """Whether a record's answer is right, as `eval answers` judges it."""
    from eval.answer_figures import right

    asked = Asked(**record)
    if asked.dataset == "financebench":
        return numbers_in(gold_numbers(asked.gold), asked.answer)
    return right(asked)


def _key(record: dict[str, Any]) -> tuple[str, str, str]:
    return record["dataset"], record["doc"], record["question"]


def compare(base: Path, run: Path) -> list[str]:
    """Lines naming the questions right in one results file and not the other, by set."""
    before = {_key(r): r for r in json.loads(base.read_text())["questions"]}
    after = {_key(r): r for r in json.loads(run.read_text())["questions"]}
    lines, net = [], 0
    for key in sorted(before.keys() & after.keys()):
        was, now = right_of(before[key]), right_of(after[key])
        if was != now:
            net += 1 if now else -1
            lines.append(f"{'+' if now else '-'} {key[0]} {key[1]}: {key[2][:90]}")
    lines.append(f"net questions right without the rule(s): {net:+d}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "check"), default="check")
    rules = _rules()
    parser.add_argument("--without", action="append", choices=sorted(rules), default=[])
    parser.add_argument("--index", type=Path, action="append", default=[])
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args(argv)
    from eval import answers

    name = "-".join(args.without) or "none"
    out = Path(".bench/results") / f"answers-{args.split}-without-{name}.json"
    restore = [rules[r][1]() for r in args.without]
    for rule in args.without:
        print(f"without {rule}: {rules[rule][0]}")
    try:
        forwarded = ["--split", args.split, "--results", str(out)]
        forwarded += [a for p in args.index for a in ("--index", str(p))]
        forwarded += [a for d in args.dataset for a in ("--dataset", d)]
        answers.main(forwarded)
    finally:
        for undo in restore:
            undo()
    if args.baseline is not None:
        print("\n".join(compare(args.baseline, out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
