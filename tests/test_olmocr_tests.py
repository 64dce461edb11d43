"""eval.olmocr_tests: the olmOCR-bench checks on synthetic page texts."""

from __future__ import annotations

from eval.olmocr_tests import fuzzy_ends, markdown_tables, normalize_text, ratio, run_test

PAGE = """# Results

The quick brown fox jumps over the lazy dog.

| Model | Score | Cost |
| --- | --- | --- |
| Alpha | 0.87 | 12 |
| Beta | 0.66 | 7 |

Some closing words, with $$a^{2} + b^{2} = c^{2}$$ inline."""


def t(kind: str, **fields: object) -> dict[str, object]:
    return {"pdf": "x.pdf", "page": 1, "id": "x", "type": kind, **fields}


def test_normalize_drops_emphasis_and_fancy_punctuation() -> None:
    assert normalize_text("**bold**  and\n_it_ “q” – x<br>y") == 'bold and it "q" - x y'


def test_fuzzy_ends_finds_substrings_within_the_edit_budget() -> None:
    assert fuzzy_ends("brown", "the brown fox", 0) == [9]
    assert fuzzy_ends("browm", "the brown fox", 0) == []
    assert 9 in fuzzy_ends("browm", "the brown fox", 1)


def test_ratio_is_twice_the_common_subsequence_over_the_lengths() -> None:
    assert ratio("abcd", "abcd") == 1.0
    assert ratio("abcd", "abxd") == 0.75
    assert ratio("", "") == 1.0


def test_present_absent_and_the_length_guard() -> None:
    assert run_test(t("present", text="quick brown fox"), PAGE)
    assert not run_test(t("present", text="quick brown cat"), PAGE)
    assert run_test(t("present", text="quick brown cat", max_diffs=3), PAGE)
    assert not run_test(t("present", text="QUICK brown fox"), PAGE)
    assert run_test(t("present", text="QUICK brown fox", case_sensitive=False), PAGE)
    assert run_test(t("absent", text="page 7 of 9"), PAGE)
    assert not run_test(t("absent", text="lazy dog"), PAGE)
    assert run_test(t("absent", text="lazy dog"), "")  # an empty page passes absent tests
    assert not run_test(t("present", text="a b"), " ")


def test_order_needs_a_match_of_before_starting_first() -> None:
    assert run_test(t("order", before="quick brown", after="closing words"), PAGE)
    assert not run_test(t("order", before="closing words", after="quick brown"), PAGE)
    assert not run_test(t("order", before="missing text", after="quick brown"), PAGE)


def test_markdown_tables_skip_the_separator_row() -> None:
    (table,) = markdown_tables(PAGE)
    assert table.text[(0, 1)] == "Score" and table.text[(2, 0)] == "Beta"
    assert (1, 0) not in table.headings and (0, 2) in table.headings


def test_table_relations_and_headings() -> None:
    assert run_test(t("table", cell="0.87", left="Alpha", right="12", down="0.66"), PAGE)
    assert run_test(t("table", cell="0.66", up="0.87", top_heading="Score"), PAGE)
    assert run_test(t("table", cell="7", left_heading="Beta"), PAGE)  # no header: the edge cell
    assert not run_test(t("table", cell="0.87", right="7"), PAGE)
    assert not run_test(t("table", cell="0.87"), "0.87 outside any table")


def test_math_and_blank_page_checks() -> None:
    assert run_test(t("math", math="a^{2}+b^{2}=c^{2}"), PAGE)
    assert not run_test(t("math", math="e^{i \\pi}+1=0"), PAGE)
    assert run_test(t("baseline", max_length=10), "  ")
    assert not run_test(t("baseline", max_length=10), PAGE)
