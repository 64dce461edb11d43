"""A paragraph that a scan's layout regions cut line by line is joined again (`join_run_ons`)."""

from __future__ import annotations

from ocr_engine.layout.layout import LayoutBlock
from ocr_engine.layout.ocr_layout import join_run_ons
from ocr_engine.layout.textlayer import TextLine
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
