"""A question gets the same answer in every process: the answer's scores add up a set's terms,
whose order follows the process's hash seed, and a float sum in another order can round to
another last bit, which decides between two candidates scored alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the scores of every candidate of a table, and the answer drawn from them, in one line
SCRIPT = """
from doubles.builders import rows_chunk
from retrieval.answer import extractive_answer
from retrieval.answer.candidates import _candidates
from retrieval.answer.meet import _meet
from retrieval.answer.scores import _rank
from retrieval.schema import ScoredChunk
rows = [
    "| | 2031 | 2030 |",
    "| Total cash provided by investing activities | 412 | 380 |",
    "| Merchandise inventories | 5,409 | 5,209 |",
    "| Cash provided by operating activities, total | 7 | 8 |",
    "| Inventories of merchandise held for sale | 1 | 2 |",
]
hits = [ScoredChunk(chunk=rows_chunk(rows), score=0.9)]
question = (
    "What is the year end 2031 total amount of inventories? Answer in USD millions. Base your "
    "judgments on the information provided primarily in the balance sheet."
)
sentences = _candidates(hits)
print([repr(v) for v in _rank(question, hits, sentences)])
print([repr(v) for v in _meet(question, sentences, hits)])
print(extractive_answer(question, hits).text)
"""


def _run(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_answers_scores_are_the_same_whatever_the_hash_seed() -> None:
    outputs = {_run(str(seed)) for seed in range(10)}
    assert len(outputs) == 1, outputs
    assert next(iter(outputs)).splitlines()[-1].endswith("[2]")  # an answer of two cells
