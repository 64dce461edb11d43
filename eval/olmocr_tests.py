"""olmOCR-bench's unit tests (allenai/olmocr `bench/tests.py`) run on a page's markdown.

Each test is a dict from the bench's JSONL; `run_test(test, content)` says whether the page's text
passes it. The semantics follow the bench; where this differs it is said here:

- text is normalised as the bench does (`<br>` to a space, `**`/`__`/`*`/`_` emphasis and `<b>`,
  `<i>` dropped, whitespace collapsed, NFC, curly quotes and dashes to ASCII, micro sign to mu);
- present / absent: the bench takes rapidfuzz's `partial_ratio` >= 1 - max_diffs / len(text); here
  the text matches when some substring of the content is within `max_diffs` edits of it
  (Levenshtein, semi-global). With max_diffs = 0, the common case, both mean an exact substring. A
  content shorter than len(text) - max_diffs fails present and passes absent, as the bench says;
- order: a match of `before` (within max_diffs edits, as the bench's fuzzysearch) must start before
  a match of `after`; match starts are the ends of the reversed strings' matches;
- table: tables are the markdown tables of the content (the first row is the header row); a cell
  matches at rapidfuzz `ratio` (2 * LCS / total length) >= max(0.5, 1 - max_diffs / len); its up,
  down, left, right neighbours and its top and left headings (the first header cell met walking
  up or left, else the cell at the edge) as the bench defines them. HTML tables are not parsed;
- math: the bench renders both equations with KaTeX and compares the images; here an equation of
  the content ($$..$$, $..$, \\(..\\), \\[..\\]) must equal the test's once spaces are removed;
- baseline: a blank-page test passes with at most `max_length` alphanumeric characters; otherwise
  the content must hold some and none of CJK or emoji (the bench's repeat check is left out).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "MarkdownTable",
    "fuzzy_ends",
    "markdown_tables",
    "normalize_text",
    "ratio",
    "run_test",
]

_REPLACE = {
    "‘": "'",
    "’": "'",
    "‚": "'",
    "“": '"',
    "”": '"',
    "„": '"',
    "＿": "_",
    "–": "-",
    "—": "-",
    "‑": "-",
    "‒": "-",
    "−": "-",
    "\u00b5": "\u03bc",
}
_DISALLOWED = re.compile(
    "[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\U0001f600-\U0001f64f\U0001f300-\U0001f5ff"
    "\U0001f680-\U0001f6ff\U0001f1e0-\U0001f1ff]"
)
_SEPARATOR = re.compile(r"^:?-+:?$")
_EQUATIONS = (r"\\\((.+?)\\\)", r"\\\[(.+?)\\\]", r"\$\$(.+?)\$\$", r"\$(.+?)\$")


def normalize_text(text: str) -> str:
    """The bench's normalisation of both the content and the test's strings."""
    text = re.sub(r"<br/?>", " ", text)
    text = re.sub(r"\*\*(.*?)\*\*", r"\1", text)
    text = re.sub(r"__(.*?)__", r"\1", text)
    text = re.sub(r"</?[bi]>", "", text)
    text = re.sub(r"(\*|_)(.*?)\1", r"\2", text)
    text = unicodedata.normalize("NFC", re.sub(r"\s+", " ", text))
    for fancy, plain in _REPLACE.items():
        text = text.replace(fancy, plain)
    return text


def fuzzy_ends(query: str, text: str, max_diffs: int) -> list[int]:
    """End offsets in `text` of substrings within `max_diffs` edits of `query` (semi-global
    Levenshtein: one numpy row over `text` per character of `query`)."""
    if not query:
        return list(range(len(text) + 1))
    if not text:
        return [0] if len(query) <= max_diffs else []
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    steps = np.arange(len(text) + 1)
    row = np.zeros(len(text) + 1, dtype=np.int64)  # a match may start anywhere
    for i, char in enumerate(query, start=1):
        cost = (codes != ord(char)).astype(np.int64)
        new = np.empty_like(row)
        new[0] = i
        new[1:] = np.minimum(row[1:] + 1, row[:-1] + cost)
        row = np.minimum.accumulate(new - steps) + steps
    return [int(j) for j in np.flatnonzero(row <= max_diffs)]


def _starts(query: str, text: str, max_diffs: int) -> list[int]:
    """Start offsets of the fuzzy matches (the ends of the reversed strings' matches)."""
    return sorted(len(text) - end for end in fuzzy_ends(query[::-1], text[::-1], max_diffs))


def ratio(a: str, b: str) -> float:
    """rapidfuzz's `fuzz.ratio` / 100: 2 * longest common subsequence / (len a + len b)."""
    if not a and not b:
        return 1.0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if ca == cb else max(prev[j], cur[j - 1]))
        prev = cur
    return 2 * prev[-1] / (len(a) + len(b))


Cell = tuple[int, int]


class MarkdownTable:
    """A markdown table as the bench sees one: cells by (row, col), the header row's cells."""

    def __init__(self, rows: list[list[str]]) -> None:
        self.text = {(r, c): cell for r, row in enumerate(rows) for c, cell in enumerate(row)}
        self.headings = {(0, c) for c in range(len(rows[0]))} if rows else set()

    def neighbours(self, cell: Cell, dr: int, dc: int) -> set[Cell]:
        """The cell one step away in direction (dr, dc), if there is one."""
        there = (cell[0] + dr, cell[1] + dc)
        return {there} if there in self.text else set()

    def heading(self, cell: Cell, dr: int, dc: int) -> set[Cell]:
        """Header cells met walking from `cell` in direction (dr, dc), else the edge cell."""
        found, edge, here = set(), set(), cell
        while True:
            if here in self.headings and here != cell:
                found.add(here)
            nxt = self.neighbours(here, dr, dc)
            if not nxt:
                if here != cell:
                    edge.add(here)
                break
            here = next(iter(nxt))
        return found or edge


def markdown_tables(content: str) -> list[MarkdownTable]:
    """The markdown tables of `content` (runs of lines that start and end with '|')."""
    tables, rows = [], []
    for line in [*content.splitlines(), ""]:
        line = line.strip()
        if line.startswith("|") and line.endswith("|") and len(line) > 1:
            cells = [c.strip() for c in line[1:-1].split("|")]
            if not all(_SEPARATOR.match(c) for c in cells if c) or not any(cells):
                rows.append(cells)
            continue
        if rows:
            tables.append(MarkdownTable(rows))
            rows = []
    return tables


def _text_test(test: dict[str, Any], content: str) -> bool:
    query, text = normalize_text(test["text"]), normalize_text(content)
    if not test.get("case_sensitive", True):
        query, text = query.lower(), text.lower()
    first, last = test.get("first_n"), test.get("last_n")
    if first and last:
        text = text[:first] + text[-last:]
    elif first:
        text = text[:first]
    elif last:
        text = text[-last:]
    diffs = int(test.get("max_diffs", 0))
    present = len(text) >= len(query) - diffs and bool(fuzzy_ends(query, text, diffs))
    return present if test["type"] == "present" else not present


def _order_test(test: dict[str, Any], content: str) -> bool:
    text, diffs = normalize_text(content), int(test.get("max_diffs", 0))
    before = _starts(normalize_text(test["before"]), text, diffs)
    after = _starts(normalize_text(test["after"]), text, diffs)
    return bool(before and after and before[0] < after[-1])


def _table_test(test: dict[str, Any], content: str) -> bool:
    diffs = int(test.get("max_diffs", 0))

    def same(want: str, got: str) -> bool:
        return ratio(want, normalize_text(got)) >= max(0.5, 1 - diffs / max(len(want), 1))

    target = normalize_text(test["cell"])
    relations: dict[str, Callable[[MarkdownTable, Cell], set[Cell]]] = {
        "up": lambda t, c: t.neighbours(c, -1, 0),
        "down": lambda t, c: t.neighbours(c, 1, 0),
        "left": lambda t, c: t.neighbours(c, 0, -1),
        "right": lambda t, c: t.neighbours(c, 0, 1),
        "top_heading": lambda t, c: t.heading(c, -1, 0),
        "left_heading": lambda t, c: t.heading(c, 0, -1),
    }
    wanted = {k: normalize_text(test[k]) for k in relations if test.get(k)}
    for table in markdown_tables(content):
        for cell, text in table.text.items():
            if not same(target, text):
                continue
            if all(
                any(same(want, table.text[o]) for o in relations[k](table, cell))
                for k, want in wanted.items()
            ):
                return True
    return False


def _math_test(test: dict[str, Any], content: str) -> bool:
    want = "".join(test["math"].split())
    rest, found = content, []
    for pattern in _EQUATIONS:
        found += re.findall(pattern, rest, re.DOTALL)
        rest = re.sub(pattern, "", rest, flags=re.DOTALL)
    return any("".join(eq.split()) == want for eq in found)


def _baseline_test(test: dict[str, Any], content: str) -> bool:
    letters = sum(ch.isalnum() for ch in content)
    if test.get("max_length") is not None:
        return letters <= int(test["max_length"])
    return letters > 0 and not _DISALLOWED.search(content)


_RUNS: dict[str, Callable[[dict[str, Any], str], bool]] = {
    "present": _text_test,
    "absent": _text_test,
    "order": _order_test,
    "table": _table_test,
    "math": _math_test,
    "baseline": _baseline_test,
}


def run_test(test: dict[str, Any], content: str) -> bool:
    """Whether `content` (a page's markdown) passes the bench test `test`."""
    return _RUNS[test["type"]](test, content)
