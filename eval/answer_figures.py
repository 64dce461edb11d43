"""The figures of `eval answers`: each set's questions judged right or not, and counted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from eval.answer_match import FORMATS, format_in, gold_numbers, numbers_in, stated_numbers
from eval.answer_sets import Asked

__all__ = [
    "Figure",
    "financebench_figures",
    "mmlongbench_figures",
    "right",
    "right_in_first",
    "said_right",
    "user_figures",
]

Figure = tuple[int, int] | float | None
"""(right, asked), or a mean (chance), or None when nothing was asked."""


def _share(pairs: Sequence[bool]) -> tuple[int, int]:
    return sum(pairs), len(pairs)


def _mean(values: Sequence[float | None]) -> float | None:
    return sum(v or 0.0 for v in values) / len(values) if values else None


def financebench_figures(
    asked: Sequence[Asked],
    wrong: Sequence[Asked],
    chance: Callable[[list[Any]], list[Any]],
    own: Sequence[Asked] = (),
) -> dict[str, Figure]:
    """FinanceBench's figures; `chance([(numbers, stem), ...])` is `chance_of` on the index;
    `wrong` and `own` asked of the other documents and of the question's own alone."""
    stated = [(a, stated_numbers(a.gold, a.evidence)) for a in asked]
    told = [(a, s) for a, s in stated if s]
    quote = [(a.first or {}).get("quote") for a in asked]
    boxed = [(a.first or {}).get("boxed") for a in asked]
    quote_of = dict(zip(map(id, asked), quote, strict=True))
    boxed_of = dict(zip(map(id, asked), boxed, strict=True))
    everything = [(a, gold_numbers(a.gold)) for a in asked]
    return {
        "fb.n": (len(asked), len(asked)),
        "fb.page5": _share([a.page_in_hits for a in asked if a.pages]),
        "fb.stated.answer": _share([numbers_in(s, a.answer) for a, s in told]),
        "fb.stated.quote": _share([numbers_in(s, quote_of[id(a)]) for a, s in told]),
        "fb.stated.quote_or_box": _share(
            [numbers_in(s, quote_of[id(a)]) or numbers_in(s, boxed_of[id(a)]) for a, s in told]
        ),
        "fb.stated.chance": _mean(chance([(s, a.doc) for a, s in told])),
        "fb.all.answer": _share([numbers_in(g, a.answer) for a, g in everything]),
        "fb.all.quote": _share([numbers_in(g, quote_of[id(a)]) for a, g in everything]),
        "fb.all.chance": _mean(chance([(g, a.doc) for a, g in everything])),
        "fb.not_found": _share([a.not_found for a in asked]),
        "wrong.not_found": _share([a.not_found for a in wrong]),
        "own.not_found": _share([a.not_found for a in own]),
        "own.answer": _share([numbers_in(gold_numbers(a.gold), a.answer) for a in own]),
    }


def right(asked: Asked) -> bool:
    """An answer right by its format: "None" (not answerable) when `not_found`, else the
    format's rule on the answer text (rows without a format: FinanceBench's numbers)."""
    if asked.answer_format == "None":
        return asked.not_found
    if asked.answer_format in FORMATS:
        return format_in(asked.gold, asked.answer_format, asked.answer)
    return numbers_in(gold_numbers(asked.gold), asked.answer)


def right_in_first(asked: Asked) -> bool:
    """`right` judged on the first citation's quote alone, not the whole answer: whether the
    sentence the answer leads with, and boxes first, is itself the answer."""
    if asked.answer_format == "None" or asked.not_found:
        return right(asked)
    return right(replace(asked, answer=(asked.first or {}).get("quote") or ""))


def said_right(asked: Asked) -> Callable[[str], bool] | None:
    """The judge of a text as the answer to `asked` (None where no text is right: a question
    no document answers)."""
    if asked.answer_format == "None":
        return None
    return lambda text: right(replace(asked, answer=text))


def mmlongbench_figures(
    asked: Sequence[Asked],
    boxes: dict[str, Any],
    box_chance: dict[str, float | None] | None = None,
) -> dict[str, Figure]:
    """MMLongBench-Doc's figures; `boxes`: question -> its MMDocIR `BoxCase`; `box_chance`:
    question -> a random line of its gold document's chance of a gold box."""
    from eval.evidence_boxes import in_gold_box

    answerable = [a for a in asked if a.answer_format != "None"]
    figures: dict[str, Figure] = {
        "mm.n": (len(asked), len(asked)),
        "mm.page5": _share([a.page_in_hits for a in answerable if a.pages]),
        "mm.right": _share([right(a) for a in answerable]),
        "mm.right.first": _share([right_in_first(a) for a in answerable]),
        "mm.right.chance": _mean([a.chance for a in answerable]),
    }
    for fmt in ("Str", "Int", "Float", "List"):
        figures[f"mm.right.{fmt}"] = _share(
            [right(a) for a in answerable if a.answer_format == fmt]
        )
    figures["mm.na.not_found"] = _share([a.not_found for a in asked if a.answer_format == "None"])
    figures["mm.withheld"] = _share([a.not_found for a in answerable])
    boxed = [(a, boxes[a.question]) for a in answerable if a.question in boxes]
    first = [
        (case, (a.first["stem"], a.first["page"], tuple(a.first["bbox"])) if a.first else None)
        for a, case in boxed
    ]
    figures["mmdocir.first"] = _share([c is not None and in_gold_box(case, c) for case, c in first])
    figures["mmdocir.first.chance"] = _mean([(box_chance or {}).get(a.question) for a, _ in boxed])
    on_gold = [(case, c) for case, c in first if c and c[0] == case.doc and c[1] in case.boxes]
    figures["mmdocir.given_page"] = _share([in_gold_box(case, c) for case, c in on_gold])
    return figures


def user_figures(asked: Sequence[Asked]) -> dict[str, Figure]:
    return {
        "user.right": _share([right(a) for a in asked]),
        "user.right.first": _share([right_in_first(a) for a in asked]),
        "user.right.chance": _mean([a.chance for a in asked]),
        "user.page5": _share([a.page_in_hits for a in asked if a.pages]),
        "user.na.not_found": _share([a.not_found for a in asked if a.answer_format == "None"]),
        "user.withheld": _share([a.not_found for a in asked if a.answer_format != "None"]),
    }
