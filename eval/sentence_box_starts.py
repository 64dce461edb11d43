"""How often a sentence's box starts in the gap before its first character (issue 36 item 5).

For every line of a few pages of tune documents whose text layer gives glyph boxes, each word
that follows `. `, `; `, `: ` or `, ` is taken as a cited sentence's start; a start counts when
it lies between the right edge of the character before the punctuation and 1 pt past the left
edge of the word's first character. Compared: the old share-of-characters estimate, the font
width estimate (`ocr_engine.char_widths.char_starts`) and that with the edge mid-space (what
`retrieval.search.evidence` uses). `python -m eval.sentence_box_starts`
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf

from ocr_engine.char_widths import char_starts

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DOCS = [
    "financebench/pdfs/AMD_2015_10K.pdf",
    "financebench/pdfs/BOEING_2022_10K.pdf",
    "financebench/pdfs/MICROSOFT_2023_10K.pdf",
    "mmlongbench_doc/documents/2303.05039v2.pdf",
    "mmlongbench_doc/documents/PG_2020.05.21_International-Cooperation-COVID_FINAL.pdf",
    "mmlongbench_doc/documents/nova_y70.pdf",
    "mmlongbench_doc/documents/User_Manual_1500S_Classic_EN.pdf",
    "mmlongbench_doc/documents/COSTCO_2021_10K.pdf",
]
_STARTS = re.compile(r"(?<=[.;:,] )[A-Z0-9]")


def main() -> None:
    splits = json.loads((Path(__file__).parent / "splits.json").read_text())
    tune = {name for part in splits.values() for name, side in part.items() if side == "tune"}
    counts = {"share of characters": 0, "font widths": 0, "font widths, mid-space": 0}
    total = 0
    for rel in DOCS:
        assert Path(rel).stem in tune, rel
        pdf = pymupdf.open(SHARED / rel)
        pages = [5, 20, 35, 60] if pdf.page_count > 60 else range(min(pdf.page_count, 6))
        for number in pages:
            for block in pdf[number].get_text("rawdict")["blocks"]:
                for line in block.get("lines", []):
                    chars = [c for span in line["spans"] for c in span["chars"]]
                    text = "".join(c["c"] for c in chars)
                    if len(text) < 40 or line["dir"] != (1.0, 0.0) or text != text.strip():
                        continue
                    x0, x1 = chars[0]["bbox"][0], chars[-1]["bbox"][2]
                    starts = char_starts(text, (x0, line["bbox"][1], x1, line["bbox"][3]))
                    for match in _STARTS.finditer(text):
                        k = match.start()
                        low, high = chars[k - 2]["bbox"][2], chars[k]["bbox"][0] + 1.0
                        guesses = {
                            "share of characters": x0 + (x1 - x0) * k / len(text),
                            "font widths": starts[k],
                            "font widths, mid-space": (starts[k - 1] + starts[k]) / 2,
                        }
                        for name, x in guesses.items():
                            counts[name] += low <= x <= high
                        total += 1
    for name, hit in counts.items():
        print(f"{name}: {hit}/{total} = {hit / total:.3f}")


if __name__ == "__main__":
    pymupdf.TOOLS.mupdf_display_errors(False)
    main()
