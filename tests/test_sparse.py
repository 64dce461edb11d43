"""Lexical terms: the cases where Qdrant's own BM25 tokenizers fall short, and folio's terms."""

from __future__ import annotations

import pytest
import qdrant_edge as qe

from retrieval.index.sparse import LexicalEncoder, lexical_terms

# (query as a person types it, passage that holds it)
NUMBER_CASES = [
    ("1,577", "Purchases of property, plant and equipment (1577)"),
    ("$1577.00", "capital expenditures of $1,577 million"),
    ("12.5%", "gross margin rose to 12.50 percent"),
]
CJK_CASES = [
    ("资本支出", "公司资本支出增长了百分之十二"),  # Chinese, no spaces
    ("売上高", "東京都の売上高は増加した"),  # Japanese
    ("매출액", "매출액이 증가했습니다"),  # Korean: a particle glued to the noun
]


def _shares_all(bm25: qe.Bm25 | LexicalEncoder, query: str, passage: str) -> bool:
    """Every query dimension is present in the passage's vector."""
    wanted = set(bm25.embed_query(query).indices)
    return bool(wanted) and wanted <= set(bm25.embed_document(passage).indices)


@pytest.mark.parametrize(("query", "passage"), NUMBER_CASES)
def test_qdrant_bm25_tokenizers_miss_numbers_as_typed(query: str, passage: str) -> None:
    word = qe.Bm25(qe.Bm25Config(tokenizer=qe.TokenizerType.Word))
    multilingual = qe.Bm25(qe.Bm25Config(tokenizer=qe.TokenizerType.Multilingual))
    assert not _shares_all(word, query, passage)
    assert multilingual.embed_query(query).indices == []  # numbers are dropped altogether


@pytest.mark.parametrize(("query", "passage"), CJK_CASES)
def test_qdrant_bm25_tokenizers_miss_cjk_words_inside_runs(query: str, passage: str) -> None:
    word = qe.Bm25(qe.Bm25Config(tokenizer=qe.TokenizerType.Word))
    assert not _shares_all(word, query, passage)


def test_qdrant_multilingual_tokenizer_segments_japanese_and_korean_by_context() -> None:
    multilingual = qe.Bm25(qe.Bm25Config(tokenizer=qe.TokenizerType.Multilingual))
    assert _shares_all(multilingual, *CJK_CASES[0])  # Chinese works
    assert not _shares_all(multilingual, *CJK_CASES[1])
    assert not _shares_all(multilingual, *CJK_CASES[2])


@pytest.mark.parametrize(("query", "passage"), NUMBER_CASES + CJK_CASES)
def test_folio_terms_match_where_qdrant_tokenizers_miss(query: str, passage: str) -> None:
    assert _shares_all(LexicalEncoder(), query, passage)


def test_numbers_take_one_form() -> None:
    assert lexical_terms("$1,577.00 (1577) 1577.0") == ["1577", "1577", "1577"]
    assert lexical_terms("12.50% 0.5 3.") == ["12.5", "0.5", "3"]
    assert lexical_terms("FY2022 10-K") == ["fy", "2022", "10", "k"]


def test_fullwidth_text_is_normalised() -> None:
    assert lexical_terms("１，５７７ ＡＢＣ") == ["1577", "abc"]


def test_cjk_runs_become_character_pairs_and_single_characters_stay() -> None:
    assert lexical_terms("资本支出") == ["资本", "本支", "支出"]
    assert lexical_terms("税 rate") == ["税", "rate"]


def test_stemming_and_stopwords_come_from_qdrant_bm25() -> None:
    encoder = LexicalEncoder()
    assert encoder.embed_query("expenditures") == encoder.embed_query("expenditure")
    assert encoder.embed_query("the of and").indices == []


def test_document_weights_grow_with_term_frequency() -> None:
    encoder = LexicalEncoder()
    once = encoder.embed_document("revenue grew")
    twice = encoder.embed_document("revenue revenue grew")
    rev = encoder.embed_query("revenue").indices[0]
    assert twice.values[twice.indices.index(rev)] > once.values[once.indices.index(rev)]


def test_spaced_cjk_characters_read_as_one_run() -> None:
    """Some PDFs space every CJK character: the terms are the pairs of the unspaced text."""
    assert lexical_terms("关 于 红 军 作 战") == lexical_terms("关于红军作战")
    assert lexical_terms("关 于　红军") == ["关于", "于红", "红军"]
    assert lexical_terms("Tokyo 東京 Osaka") == ["tokyo", "東京", "osaka"]
