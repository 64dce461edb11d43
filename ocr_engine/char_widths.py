"""Where the characters of a line of text begin, from the widths of common fonts: a partly
cited line's box (`retrieval.search.evidence`) starts at its first cited character. Light: no model,
no PDF library."""

from __future__ import annotations

import re

from ocr_engine.geometry import Box

__all__ = ["WIDE", "char_starts"]

# East Asian wide and full-width characters (Hangul, CJK, kana, full-width forms)
WIDE = re.compile(
    "[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf"
    "\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
    "\U00020000-\U0003fffd]"
)

# Advance widths in em, the mean of Helvetica's and Times' (folio's text is mostly set in one of
# the two); a character not listed is 0.5 em, a wide (CJK) one 1 em.
_EM_WIDTHS = {
    0.19: "'",
    0.23: "|",
    0.25: "ijl",
    0.26: ",. ",
    0.28: "/:;\\t‘’",
    0.31: "!I[]f",
    0.33: "()-`r",
    0.35: "•",
    0.38: '"',
    0.39: "“”",
    0.4: "°",
    0.41: "{}",
    0.44: "*Js",
    0.47: "^cz",
    0.5: "?aekvxy",
    0.53: "#$0123456789_bdghnopqu£§–€",
    0.56: "~",
    0.57: "+<=>±×",
    0.58: "FL",
    0.61: "PSTZ",
    0.64: "E",
    0.67: "B",
    0.69: "ACKRVXY",
    0.72: "&DHNUw",
    0.75: "GOQ®©",
    0.81: "m",
    0.86: "%M",
    0.94: "W",
    0.97: "@",
    0.99: "™",
    1.0: "—",
}
_EM = {c: width for width, chars in _EM_WIDTHS.items() for c in chars}
_EM_PER_HEIGHT = 1 / 1.1  # font size / line box height (ascender to descender)


def _em(c: str) -> float:
    return _EM.get(c) or (1.0 if WIDE.match(c) else 0.5)


def char_starts(text: str, bbox: Box) -> list[float]:
    """Where each character of a line's `text` begins in its box (x, PDF points), and where the
    last ends (`len(text) + 1` values): advances from the widths of common fonts at the size the
    box's height gives; a line wider than that is justified (the slack goes to its spaces), one
    narrower is scaled to the box."""
    x0, y0, x1, y1 = bbox
    width = x1 - x0
    size = (y1 - y0) * _EM_PER_HEIGHT
    advances = [_em(c) * size for c in text]
    natural = sum(advances)
    spaces = text.count(" ")
    slack = (width - natural) / spaces if spaces and width > natural else 0.0
    scale = width / natural if natural > 0 and not slack else 1.0
    starts, x = [x0], x0
    for c, advance in zip(text, advances, strict=True):
        x += advance * scale + (slack if c == " " else 0.0)
        starts.append(x)
    return starts
