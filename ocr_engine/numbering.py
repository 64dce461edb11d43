"""Numbers that are part of a name ("Rung 1", "Layer 2"): a heading's words, not figures."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["numbers_a_name"]


def numbers_a_name(words: Sequence[str], index: int) -> bool:
    """Whether `words[index]` is a number of one or two digits right after a word of letters."""
    word = words[index]
    return index > 0 and word.isdigit() and len(word) <= 2 and words[index - 1].isalpha()
