"""The new-user questions (`eval/user_questions.jsonl`): on `check` documents only, each answerable
one's evidence on the page it names."""

from __future__ import annotations

import json
import re

import pymupdf
import pytest

from eval.splits import split_of
from tests.conftest import REPO_ROOT, shared_path

ROWS = [
    json.loads(line)
    for line in (REPO_ROOT / "eval" / "user_questions.jsonl").read_text().splitlines()
    if line.strip()
]
FOLDERS = {
    "financebench": ("financebench", "pdfs"),
    "mmlongbench": ("mmlongbench_doc", "documents"),
    "docugami": ("docugami_sec10q", "docs"),
}
_WORD = re.compile(r"\w+")
_SAME = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-"})


def _words(text: str) -> list[str]:
    return _WORD.findall(text.translate(_SAME).lower())


def test_every_question_is_asked_of_a_check_document_and_says_what_it_asks() -> None:
    assert len(ROWS) >= 40
    for row in ROWS:
        assert split_of(row["dataset"], row["doc"]) == "check", row["question"]
        assert row["answer_format"] in ("Int", "Float", "Str", "List", "None"), row["question"]
        unanswerable = row["answer_format"] == "None"
        assert (row["page"] == 0) == unanswerable == (row["answer"] == "Not answerable")
    asked = [r for r in ROWS if "asked" in r]
    assert all("written before asking" in r["asked"] for r in asked)


@pytest.mark.parametrize("dataset", sorted(FOLDERS))
def test_the_evidence_is_on_the_page_each_question_names(dataset: str) -> None:
    folder = shared_path(*FOLDERS[dataset])
    checked = 0
    for row in ROWS:
        if row["dataset"] != dataset or not row["page"]:
            continue
        with pymupdf.open(folder / f"{row['doc']}.pdf") as pdf:
            text = pdf[row["page"] - 1].get_text()
        if not text.strip():  # an image-only slide, read by eye
            continue
        page = set(_words(text.replace("-\n", "")))
        missing = [w for w in _words(row["evidence"]) if w not in page]
        assert not missing, f"{row['question']}: {missing} not on page {row['page']}"
        checked += 1
    assert checked > 0
