"""Cards of OCR'd pages: a field read by OCR needs the evidence a text-layer field has (written
twice, or on the title page's title line), a kind needs more than one page; otherwise the field
is empty. A slide deck's organisation is not read off the aeroplane's livery in its photo, and a
one-page scan is no slide deck. Synthetic documents built here."""

from __future__ import annotations

from ingest.cards.card_reading import _TEXT_LAYER
from ingest.cards.cards import document_card
from ocr_engine.engines.pymupdf_engine import ENGINE_NAME
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page
from retrieval.doc_card import DocKind

TEXT = EngineInfo(name=ENGINE_NAME)
OCR = EngineInfo(name="rapidocr")
Spec = tuple[BlockType, float, float, str]  # type, top, line height, text


def _block(page: int, i: int, spec: Spec, engine: EngineInfo | None = None) -> Block:
    kind, top, size, text = spec
    box = (60.0, top, 60.0 + 0.5 * size * len(text), top + size)
    return Block(
        id=f"p{page}-b{i}",
        type=kind,
        bbox=box,
        text=text,
        lines=[Line(text=text, bbox=box)],
        engine=engine,
    )


def _page(number: int, engine: EngineInfo, specs: list[Spec], *, wide: bool = False) -> Page:
    width, height = (792.0, 612.0) if wide else (612.0, 792.0)
    blocks = [_block(number, i, spec) for i, spec in enumerate(specs)]
    return Page(number=number, width=width, height=height, engine=engine, blocks=blocks)


def _doc(pages: list[Page]) -> Document:
    return Document(doc_id="d" * 64, source="doc_0001.pdf", page_count=len(pages), pages=pages)


def _with_figure(page: Page, text: str, size: float = 40.0) -> Page:
    """`page` with a photo whose text figure OCR read (`Block.engine` set): a livery."""
    figure = _block(page.number, len(page.blocks), (BlockType.figure, 300, size, text), OCR)
    return page.model_copy(update={"blocks": [*page.blocks, figure]})


SLIDE: list[Spec] = [
    (BlockType.title, 60, 30, "Network Strategy 2024"),
    (BlockType.text, 140, 14, "Fleet renewal across the long-haul routes"),
    (BlockType.text, 170, 14, "Hubs at two airports carry most transfer traffic"),
]


def test_the_text_layer_engine_is_named_alike() -> None:
    assert _TEXT_LAYER == ENGINE_NAME


def test_a_name_read_once_off_a_photo_is_no_organisation() -> None:
    pages = [_with_figure(_page(1, TEXT, SLIDE, wide=True), "Lurfthanga Group")]
    pages += [_page(n, TEXT, SLIDE[1:], wide=True) for n in (2, 3)]
    card = document_card(_doc(pages))
    assert card.organisation is None, card
    assert card.title == "Network Strategy 2024"  # the photo's big letters are no title
    assert card.kind is DocKind.slide_deck  # three landscape pages of few words


def test_a_name_the_ocr_reads_twice_or_in_the_title_is_kept() -> None:
    again = [(BlockType.text, 200, 14, "Presented by Lufthansa Group to its investors")]
    pages = [_with_figure(_page(1, TEXT, SLIDE, wide=True), "Lufthansa Group")]
    pages += [_page(2, OCR, SLIDE[1:] + again, wide=True)]
    assert document_card(_doc(pages)).organisation == "Lufthansa Group"  # written twice
    titled: list[Spec] = [(BlockType.title, 60, 30, "Lufthansa Group Investor Day")]
    scan = [_page(1, OCR, titled + SLIDE[1:]), _page(2, OCR, SLIDE[1:])]
    assert document_card(_doc(scan)).organisation == "Lufthansa Group"  # on the title line


def test_a_name_the_text_layer_writes_once_is_kept() -> None:
    """The same cover in a text layer: once is enough, as it always was."""
    cover: list[Spec] = [
        (BlockType.title, 60, 30, "Network Strategy 2024"),
        (BlockType.text, 140, 20, "Lufthansa Group"),
    ]
    assert document_card(_doc([_page(1, TEXT, cover)])).organisation == "Lufthansa Group"
    scanned = document_card(_doc([_page(1, OCR, cover), _page(2, OCR, SLIDE[1:])]))
    assert scanned.organisation is None  # read once by OCR, not in the title


def test_a_one_page_scan_has_no_kind() -> None:
    page = _page(1, OCR, SLIDE, wide=True)
    assert document_card(_doc([page])).kind is DocKind.other  # not a slide deck
    report: list[Spec] = [(BlockType.title, 60, 30, "Annual Report 2023"), *SLIDE[1:]]
    assert document_card(_doc([_page(1, OCR, report)])).kind is DocKind.other
    two = document_card(_doc([_page(1, OCR, report), _page(2, OCR, SLIDE[1:])]))
    assert two.kind is DocKind.annual_report  # a document of two pages read: kept
    one_wide = document_card(_doc([_page(1, TEXT, SLIDE, wide=True)]))
    assert one_wide.kind is DocKind.other  # one landscape page is no deck, even in a text layer
