"""Terms and sentences of passage text, as the extractive answer and evidence localisation see
them: lower-cased words with light plural stemming, numbers without separators, CJK runs as
character pairs; sentences cut at end punctuation (not after common abbreviations) and newlines.
For matching a question to sentences and lines, `stems` reduces the words further to their
Snowball stems (`cyclicality` and `cyclical` both `cyclic`)."""

from __future__ import annotations

import re
import threading
from typing import Any

__all__ = ["CJK_CHARS", "CJK_SPACING", "STOPWORDS", "said", "sentence_spans", "stems", "terms"]

CJK_CHARS = (
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff"
)
"""The Unicode ranges of CJK characters, which are written without spaces between words."""
# blanks between two CJK characters: PDFs that space every character ("关 于 红 军") read as one run
CJK_SPACING = re.compile(rf"(?<=[{CJK_CHARS}])[ \t\u3000]+(?=[{CJK_CHARS}])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# a form's check box after its short word ends the question it answers ("… shell company. Yes ☐
# No ☒ 15,634,232,000 shares …"), unless another word and box follow; a box before its label
# ("☒ QUARTERLY REPORT") starts a sentence; a stop's reference marks end its sentence with it
# ("… lasts one year.[26] Larger …")
_BOUNDARY = re.compile(
    r"(?P<end>[.!?][\"'”’)\]]*(?:\[\d{1,3}(?:[,–-] ?\d{1,3})*\])*)"
    r"\s+(?=[\"'“‘(\[]?[A-Z0-9]|[☐☑☒])|(?P<cjk>[。！？])|\n+"
    r"|(?P<box>(?<!\S)[^\W\d_]{1,4}[ \t]+[☐☑☒])[ \t]+(?![^\W\d_]{1,4}[ \t]+[☐☑☒])"
    r"(?=[\"'“‘(\[]?[A-Z0-9])"
)
_ABBREVIATION_WORDS = """e.g i.e etc al fig figs no nos vs dr mr mrs ms prof eq eqs ref refs sec tab
vol pp ca approx inc ltd corp co jan feb mar apr jun jul aug sep sept oct nov dec u.s"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_WORDS.split())
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_STOPWORD_LIST = """a about above after again all also am an and any are as at be because been
before being between both but by can could did do does doing down during each few for from further
had has have having he her here hers him his how i if in into is it its itself just me more most my
no nor not now of off on once only or other our ours out over own same she should so some such than
that the their theirs them then there these they this those through to too under until up very was
we were what when where which while who whom why will with would you your yours tell show give
list describe explain many much per"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())


def _stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Normalised search terms: lower-cased, light plural stemming, numbers without separators,
    CJK runs as character bigrams."""
    out: list[str] = []
    for token in _TOKEN.findall(CJK_SPACING.sub("", text.lower())):
        if token[0].isdigit():
            out.append(token.replace(",", ""))
        elif _CJK.search(token):
            out.extend(token[i : i + 2] for i in range(max(1, len(token) - 1)))
        elif keep_stopwords or token not in STOPWORDS:
            out.append(_stem(token))
    return out


_local = threading.local()  # a PyStemmer stemmer is not safe to share between threads


def _stemmer() -> Any:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def stems(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """`terms` with the words cut to their English Snowball stems (numbers and CJK pairs kept)."""
    found = terms(text, keep_stopwords=keep_stopwords)
    words = [i for i, t in enumerate(found) if t.isalpha() and t.isascii()]
    for i, stem in zip(words, _stemmer().stemWords([found[i] for i in words]), strict=True):
        found[i] = stem
    return found


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences (and lines) of `text`, trimmed of whitespace."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group("end"):
            if _is_abbreviation(text[start : match.start("end")]):
                continue
            end = match.end("end")
        elif match.group("box"):
            end = match.end("box")
        else:
            end = match.end("cjk") if match.group("cjk") else match.start()
        _add_span(spans, text, start, end)
        start = match.end()
    _add_span(spans, text, start, len(text))
    return spans


def _is_abbreviation(before: str) -> bool:
    word = before.rsplit(None, 1)[-1].lstrip("([\"'").lower() if before.strip() else ""
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def _add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if any(ch.isalnum() for ch in stripped):
        lead = len(piece) - len(piece.lstrip())
        spans.append((start + lead, start + lead + len(stripped)))


def said(text: str) -> str:
    """The text as an answer says and quotes it: its words one space apart, without control
    characters (a glyph its PDF font maps to none: "Touch the pad \x99 The main menu")."""
    return " ".join(_CONTROL.sub(" ", text).split())
