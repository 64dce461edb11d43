"""The yardstick's matchers on made-up strings: each rule says yes where it should and no where
it should not (no dev-set question or document is used)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from eval.answer_figures import financebench_figures, right, right_in_first, said_right
from eval.answer_match import (
    Quantity,
    anls,
    clean_string,
    float_in,
    format_in,
    gold_numbers,
    int_in,
    list_in,
    numbers_in,
    quantities,
    same_number,
    str_in,
)
from eval.answer_sets import Asked
from eval.answers import table


def test_numbers_are_read_with_their_scale_and_unit() -> None:
    found = quantities("Sales were $4,321.50 million, up 12.5% from 7 bn and 3 percent; 2mn")
    assert found == [
        Quantity(Decimal("4321.50"), 2, 6, "$"),
        Quantity(Decimal("12.5"), 1, 0, "%"),
        Quantity(Decimal("7"), 0, 9, ""),
        Quantity(Decimal("3"), 0, 0, "%"),
        Quantity(Decimal("2"), 0, 6, ""),
    ]


def test_a_number_inside_a_word_or_a_code_is_not_read_in_pieces() -> None:
    assert quantities("item A12 and 3.4.5") == []


@pytest.mark.parametrize("text", ["1,234", "1234.0", "$1,234", "1234 dollars", "(1,234)"])
def test_the_same_number_written_differently_matches(text: str) -> None:
    assert numbers_in(gold_numbers("$1234.00"), text)


@pytest.mark.parametrize("text", ["1,243", "12,340", "1234.5", "$123.4", "a total of 4"])
def test_another_number_does_not_match(text: str) -> None:
    assert not numbers_in(gold_numbers("$1234.00"), text)


def test_the_same_amount_at_another_scale_matches() -> None:
    assert numbers_in(gold_numbers("$4.321 billion"), "revenue of 4,321 million")
    assert numbers_in(gold_numbers("$4,321 million"), "revenue of $4.321 billion")
    assert numbers_in(gold_numbers("4,321 million"), "a table in millions: 4,321")
    assert not numbers_in(gold_numbers("$4.321 billion"), "revenue of 4,321 thousand dollars")


def test_rounding_goes_to_the_precision_the_gold_states() -> None:
    assert numbers_in(gold_numbers("$4.3 billion"), "4,321 million")
    assert numbers_in(gold_numbers("17.25%"), "a margin of 17.2468%")
    assert not numbers_in(gold_numbers("17.25%"), "a margin of 17.3%")  # less precise than gold
    assert not numbers_in(gold_numbers("3%"), "a margin of 2.6%")  # one digit does not round


def test_units_must_agree_where_both_state_one() -> None:
    gold = Quantity(Decimal("45"), 0, 0, "%")
    assert same_number(gold, Quantity(Decimal("45")))
    assert not same_number(gold, Quantity(Decimal("45"), 0, 0, "$"))
    assert not numbers_in(gold_numbers("45%"), "$45 million")


def test_years_and_single_digits_are_not_gold_numbers() -> None:
    assert gold_numbers("In 2021 the 3 plants made 9.5% more") == [
        Quantity(Decimal("9.5"), 1, 0, "%")
    ]
    assert not numbers_in(gold_numbers("Yes, in 2021"), "Yes, in 2021")


def test_every_gold_number_when_asked_for() -> None:
    golds = gold_numbers("from 0.67 to 0.69")
    assert numbers_in(golds, "it rose to 0.69")
    assert not numbers_in(golds, "it rose to 0.69", every=True)
    assert numbers_in(golds, "it rose from 0.67 to 0.69", every=True)


def test_no_text_says_nothing() -> None:
    assert not numbers_in(gold_numbers("$12.00"), None)
    assert not str_in("a red apple", None)
    assert not format_in("5", "Int", None)


def test_clean_string_follows_the_benchmark() -> None:
    assert clean_string(' "$12.5%" ') == "12.5"
    assert clean_string("Paris (France)") == "paris"


def test_anls_is_zero_at_or_below_half() -> None:
    assert anls("kitten", "kitten") == 1.0
    assert anls("kitten", "sitten") == pytest.approx(5 / 6)
    assert anls("abcd", "abxy") == 0.0


def test_int_is_a_whole_number_of_the_text() -> None:
    assert int_in("17", "there were 17 stations")
    assert int_in("12", "twelve stations")
    assert not int_in("17", "there were 71 stations")
    assert not int_in("17", "17.5 stations")
    assert not int_in("2", "the stations [2]")  # a citation marker is not a number said


def test_float_is_within_one_percent_or_a_share_or_percentage() -> None:
    assert float_in("0.37", "a ratio of 0.371")
    assert float_in("37%", "a share of 0.37")
    assert float_in("0.37", "37% of them")
    assert not float_in("0.37", "a ratio of 0.39")


def test_str_is_the_gold_words_in_a_row_or_a_near_window() -> None:
    assert str_in("Blue Harbour Bridge", "They crossed the blue harbour bridge at dawn.")
    assert str_in("Blue Harbor Bridge", "They crossed the blue harbour bridge at dawn.")  # ANLS
    assert not str_in("Blue Harbour Bridge", "They crossed the red canal tunnel at dawn.")
    assert not str_in("Ocean", "the oceanic trench")  # a word, not a part of one
    assert not str_in("Ocean", "the Ocaen")  # a one-word gold by its words alone


def test_exact_kinds_are_contained_exactly() -> None:
    assert str_in("https://example.org/a", "see https://example.org/a for more")
    assert not str_in("https://example.org/a", "see https://example.org/b for more")
    assert str_in("2019-05", "released 2019-05")
    assert not str_in("2019-05", "released 2019-06")


def test_list_needs_every_element() -> None:
    assert list_in("['Kettle', 'Toaster oven']", "a kettle and a toaster oven")
    assert not list_in("['Kettle', 'Toaster oven']", "a kettle and a microwave")
    assert list_in("[120, 45.5]", "120 units at 45.5 each")
    assert not list_in("[120, 45.5]", "120 units at 47 each")


def test_format_in_dispatches_and_not_answerable_is_not_said() -> None:
    assert format_in("8", "Int", "8 lanes")
    assert format_in("2.5", "Float", "2.50 km")
    assert format_in("Green", "Str", "the green line")
    assert format_in("$1.5 million", "Float", "cost 1,500 thousand")  # words: as numbers
    assert not format_in("Not answerable", "None", "Not answerable")


def test_right_judges_not_answerable_by_not_found() -> None:
    def asked(fmt: str, mode: str, answer: str | None) -> Asked:
        return Asked("x", "tune", "q", "d", "7" if fmt != "None" else "Not answerable", fmt,
                     mode=mode, answer=answer)  # fmt: skip

    assert right(asked("None", "not_found", None))
    assert not right(asked("None", "extractive", "Not answerable"))
    assert right(asked("Int", "extractive", "7 days"))
    assert not right(asked("Int", "not_found", None))


def test_right_in_first_judges_the_first_citations_quote_alone() -> None:
    """An answer whose right figure is its second sentence is right, but not in its first
    citation; a question no document answers is judged by not_found either way."""

    def asked(fmt: str, gold: str, mode: str, answer: str | None, quote: str) -> Asked:
        return Asked("mmlongbench", "tune", "q", "d", gold, fmt, mode=mode, answer=answer,
                     first={"quote": quote} if answer else None)  # fmt: skip

    second = asked("Int", "7", "extractive", "Sales rose. [1] It has 7 stores. [2]", "Sales rose.")
    assert right(second) and not right_in_first(second)
    first = asked(
        "Int", "7", "extractive", "It has 7 stores. [1] Sales rose. [2]", "It has 7 stores."
    )
    assert right(first) and right_in_first(first)
    assert right_in_first(asked("None", "Not answerable", "not_found", None, ""))
    assert not right_in_first(asked("None", "Not answerable", "extractive", "x [1]", "x"))
    assert not right_in_first(asked("Int", "7", "not_found", None, ""))


def test_financebench_figures_count_answer_quote_and_chance() -> None:
    def asked(gold: str, evidence: str, answer: str | None, quote: str, mode: str) -> Asked:
        first = {"quote": quote, "boxed": ""}
        return Asked("financebench", "tune", "q", "d", gold, pages=[3], evidence=evidence,
                     mode=mode, answer=answer, first=first, hits=[("d", 3)])  # fmt: skip

    rows = [
        asked("$120.0", "total 120", "it was $120", "it was $120", "extractive"),
        asked("$55", "total 55", "it was 56", "total 55", "extractive"),
        asked("$77", "nothing here", "77 it was", "x", "extractive"),  # evidence lacks it
        asked("Yes", "yes", None, "", "not_found"),
    ]
    wrong = [Asked("wrong", "tune", "q", "e", "x", mode="not_found")]
    got = financebench_figures(rows, wrong, lambda wanted: [0.25 for _ in wanted])
    assert got["fb.stated.answer"] == (1, 2)
    assert got["fb.stated.quote"] == (2, 2)
    assert got["fb.all.answer"] == (2, 4)
    assert got["fb.stated.chance"] == 0.25
    assert got["fb.not_found"] == (1, 4)
    assert got["wrong.not_found"] == (1, 1)
    assert got["fb.page5"] == (4, 4)
    printed = table({"tune": got, "check": {}})
    assert "| FinanceBench | questions | 4 | — |" in printed
    assert "0.500 (1/2)" in printed


def test_a_text_is_judged_as_the_answer_by_its_questions_format() -> None:
    """The judge behind the chance baseline: a sentence counts as the answer by the question's
    own rule, and no sentence answers a question no document answers."""
    asked = Asked("mmlongbench", "tune", "How many stores?", "doc", "1,012", "Int")
    judge = said_right(asked)
    assert judge is not None
    assert judge("The company operated 1012 stores at year end.")
    assert not judge("The company operated 1,013 stores at year end.")
    assert said_right(Asked("mmlongbench", "tune", "Who?", "doc", "Not answerable", "None")) is None
