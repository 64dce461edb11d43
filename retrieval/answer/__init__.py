"""Extractive answers: candidates of the top hits -> scores -> what is said and cited.

`candidates` (sentences and table value cells of the hits, and the chunks around them),
`scores` (by terms, then by a learned model), `cite` (each chosen candidate boxed to its lines),
`said` (what the answer says for it), `extractive` (the stages in order); `options` holds what a
caller sets.
"""

from retrieval.answer.candidates import (
    FOLLOW_AHEAD,
    TABLE_REACH,
    PageRange,
    answer_texts,
    around_ids,
    following_ids,
    table_pieces,
    table_unit,
)
from retrieval.answer.cite import cite
from retrieval.answer.extractive import extractive_answer
from retrieval.answer.options import HEADING_LEAD, RANK_PRIOR, Answer, AnswerOptions, Lookups, Scope
from retrieval.answer.scores import MIN_SUPPORT, min_support_for
from retrieval.schema import DENSE_POOL
from retrieval.text_terms import sentence_spans, terms

__all__ = [
    "DENSE_POOL",
    "FOLLOW_AHEAD",
    "HEADING_LEAD",
    "MIN_SUPPORT",
    "RANK_PRIOR",
    "TABLE_REACH",
    "Answer",
    "AnswerOptions",
    "Lookups",
    "PageRange",
    "Scope",
    "answer_texts",
    "around_ids",
    "cite",
    "extractive_answer",
    "following_ids",
    "min_support_for",
    "sentence_spans",
    "table_pieces",
    "table_unit",
    "terms",
]
