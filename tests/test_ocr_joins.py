"""What a scan's layout regions cut apart is joined again: a paragraph cut line by line
(`join_run_ons`), a figure printed big over its label (`join_figure_labels`)."""

from __future__ import annotations

import pymupdf

from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.layout.layout import LayoutBlock
from ocr_engine.layout.ocr_joins import join_blocks, join_figure_labels, join_run_ons
from ocr_engine.layout.ocr_layout import OcrLine, group_paragraphs
from ocr_engine.layout.textlayer import TextLine
from ocr_engine.options import CpuOcrOptions
from ocr_engine.schema import BlockType

H = 12.0  # line height in points


def _line(text: str, row: int, x: float = 50.0, height: float = H) -> TextLine:
    top = 100.0 + row * (H + 2)
    return TextLine(
        text=text,
        bbox=(x, top, x + 6 * len(text), top + height),
        size=height,
        bold=False,
        mono=False,
    )


def _block(kind: BlockType, *lines: TextLine) -> LayoutBlock:
    return LayoutBlock(kind, list(lines), level=2 if kind == BlockType.section_header else None)


def _texts(blocks: list[LayoutBlock]) -> list[tuple[BlockType, str]]:
    return [(b.type, b.text.replace("\n", " / ")) for b in blocks]


def test_a_bold_first_line_and_the_lines_under_it_are_one_paragraph() -> None:
    blocks = [
        _block(BlockType.section_header, _line("Tablets, the newest devices, had a big", 0)),
        _block(BlockType.text, _line("share of sales. The line accounts for", 1)),
        _block(BlockType.figure),
        _block(BlockType.text, _line("40% of all units sold.", 2)),
        _block(BlockType.text, _line("Phones sold fewer units.", 3)),
    ]
    assert _texts(join_run_ons(blocks)) == [
        (
            BlockType.text,
            "Tablets, the newest devices, had a big / share of sales. The line accounts for"
            " / 40% of all units sold.",
        ),
        (BlockType.figure, ""),
        (BlockType.text, "Phones sold fewer units."),
    ]


def test_a_heading_keeps_its_title_when_its_last_line_runs_on() -> None:
    heading = _block(
        BlockType.section_header,
        _line("Network Control", 0),
        _line("Gives every branch the means to", 1),
    )
    body = _block(BlockType.text, _line("shape traffic by application.", 2))
    joined = join_run_ons([heading, body])
    assert _texts(joined) == [
        (BlockType.section_header, "Network Control"),
        (BlockType.text, "Gives every branch the means to / shape traffic by application."),
    ]


def test_headings_lists_figures_and_ended_sentences_stay_apart() -> None:
    cases = [
        [
            _block(BlockType.section_header, _line("Quarterly results", 0)),
            _block(BlockType.text, _line("Revenue grew in every region.", 1)),
        ],
        [
            _block(BlockType.text, _line("Sales rose in the quarter.", 0)),
            _block(BlockType.text, _line("then fell again in the next one.", 1)),
        ],
        [
            _block(BlockType.list_item, _line("12. Bogor", 0)),
            _block(BlockType.list_item, _line("13. Batam", 1)),
        ],
        [
            _block(BlockType.text, _line("Cities served by", 0)),
            _block(BlockType.text, _line("a. the northern line", 1)),
        ],
        [_block(BlockType.text, _line("3918", 0)), _block(BlockType.text, _line("2904", 1))],
        [
            _block(BlockType.text, _line("Units shipped by", 0)),
            _block(BlockType.text, _line("resellers in the year", 4)),
        ],  # three rows down
        [
            _block(BlockType.text, _line("Units shipped by", 0)),
            _block(BlockType.text, _line("resellers in the year", 1, x=200.0)),
        ],  # another column
        [
            _block(BlockType.text, _line("Units shipped by", 0)),
            _block(BlockType.text, _line("resellers in the year", 1, height=2.5 * H)),
        ],
    ]
    for blocks in cases:
        before = _texts(blocks)
        assert _texts(join_run_ons(blocks)) == before


def test_a_list_item_runs_on_into_the_line_under_it() -> None:
    blocks = [
        _block(BlockType.list_item, _line("• To refit the doors, start at the lower hinge", 0)),
        _block(BlockType.text, _line("and work up.", 1)),
    ]
    assert _texts(join_run_ons(blocks)) == [
        (BlockType.list_item, "• To refit the doors, start at the lower hinge / and work up.")
    ]


def _at(text: str, x: float, top: float, height: float) -> TextLine:
    return TextLine(
        text=text,
        bbox=(x, top, x + 0.5 * height * len(text), top + height),
        size=height,
        bold=False,
        mono=False,
    )


def test_figures_printed_big_over_their_labels_are_read_with_them() -> None:
    big, small = 36.0, 14.0
    blocks = [
        _block(BlockType.section_header, _at("Visitors by device", 40, 40, 18)),
        _block(BlockType.text, _at("71%", 60, 100, big)),  # over its label
        _block(BlockType.text, _at("Visits from phones", 50, 138, small)),
        _block(BlockType.text, _at("29%", 260, 100, big)),  # its label too far below
        _block(BlockType.text, _at("Visits from desktops", 250, 100 + 2.2 * big, small)),
        _block(BlockType.text, _at("2,410", 460, 100, small * 1.1)),  # not printed big
        _block(BlockType.text, _at("Visits a day", 450, 118, small)),
        _block(BlockType.text, _at("2019", 660, 100, big)),  # a figure under it is no label
        _block(BlockType.text, _at("2020", 660, 140, big)),
    ]
    assert _texts(join_figure_labels(blocks)) == [
        (BlockType.section_header, "Visitors by device"),
        (BlockType.text, "71% / Visits from phones"),
        (BlockType.text, "29%"),
        (BlockType.text, "Visits from desktops"),
        (BlockType.text, "2,410"),
        (BlockType.text, "Visits a day"),
        (BlockType.text, "2019"),
        (BlockType.text, "2020"),
    ]


def test_two_big_figures_one_over_the_other_keep_each_its_own_label() -> None:
    big, small = 40.0, 12.0
    lines = [
        OcrLine("64%", (500.0, 100.0, 560.0, 100.0 + big)),
        OcrLine("Sales in stores", (495.0, 142.0, 600.0, 142.0 + small)),
        OcrLine("36%", (500.0, 160.0, 560.0, 160.0 + big)),
        OcrLine("Sales online", (495.0, 202.0, 585.0, 202.0 + small)),
    ]
    assert [[ln.text for ln in p] for p in group_paragraphs(lines)] == [
        ["64%"],
        ["Sales in stores"],
        ["36%"],
        ["Sales online"],
    ]
    blocks = [
        LayoutBlock(
            BlockType.text,
            [TextLine(text=ln.text, bbox=ln.box, size=ln.height, bold=False, mono=False)],
        )
        for ln in lines
    ]
    assert _texts(join_blocks(blocks)) == [
        (BlockType.text, "64% / Sales in stores"),
        (BlockType.text, "36% / Sales online"),
    ]


def test_a_scanned_slide_reads_its_big_figures_with_their_labels_and_its_sentence_whole() -> None:
    page_doc = pymupdf.open()
    page = page_doc.new_page(width=768, height=432)
    page.insert_text((40, 50), "VISITS BY DEVICE", fontsize=20, fontname="helv")
    for top, figure, label in (
        (160, "71%", "Visits from phones"),
        (260, "29%", "Visits from desktops"),
    ):
        page.insert_text((60, top), figure, fontsize=48, fontname="helv")
        page.insert_text((50, top + 25), label, fontsize=14, fontname="helv")
    lines = [
        ("Tablets, the newest devices, had a big", "hebo"),
        ("share of sales. The line accounts for", "helv"),
        ("40% of all units sold.", "helv"),
    ]
    for row, (text, font) in enumerate(lines):
        page.insert_text((400, 160 + 20 * row), text, fontsize=16, fontname=font)
    scan = pymupdf.open()
    scanned = scan.new_page(width=768, height=432)
    scanned.insert_image(scanned.rect, pixmap=page.get_pixmap(dpi=150))
    for layout in (True, False):
        engine = RapidOCREngine(CpuOcrOptions(dpi=150), layout=layout)
        texts = [b.text for b in engine.extract_page(scan[0]).blocks]
        assert "71%\nVisits from phones" in texts, (layout, texts)
        assert "29%\nVisits from desktops" in texts, (layout, texts)
        assert any("accounts for\n40% of all units sold." in t for t in texts), (layout, texts)
