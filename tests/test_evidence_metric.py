"""The benchmark's yardsticks: cited boxes against gold boxes, the random-line chance, opaque
file names, and the gold answer's number in a citation."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from eval.evidence_boxes import (
    BoxCase,
    Cited,
    chance,
    inside_share,
    load_box_cases,
    page_lines,
    score_boxes,
)
from eval.retrieval_data import Case, Corpus, opaque_corpus, opaque_names
from eval.retrieval_metrics import amounts, answer_in, same_number, stated_amounts
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page, TableCell

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def test_inside_share_is_the_share_of_the_cited_box_inside_the_gold_union() -> None:
    gold = [(0.0, 0.0, 100.0, 50.0)]
    assert inside_share((10, 10, 20, 20), gold) == 1.0
    assert inside_share((90, 10, 110, 20), gold) == pytest.approx(0.5)
    assert inside_share((200, 200, 210, 210), gold) == 0.0
    # two gold boxes that overlap each other: their union is counted once
    halves = [(0.0, 0.0, 60.0, 10.0), (40.0, 0.0, 100.0, 10.0)]
    assert inside_share((0, 0, 100, 10), halves) == pytest.approx(1.0)
    assert inside_share((0, 0, 100, 20), halves) == pytest.approx(0.5)
    # a box without area counts by its centre
    assert inside_share((5, 5, 5, 5), gold) == 1.0
    assert inside_share((500, 5, 500, 5), gold) == 0.0


def test_chance_is_the_share_of_lines_that_would_hit() -> None:
    gold = [(0.0, 0.0, 100.0, 100.0)]
    lines = [(0, 10, 90, 20), (0, 95, 90, 105), (0, 98, 90, 110), (0, 300, 90, 310)]
    # inside (1.0), half inside (0.5: counts), 0.17 inside, outside
    assert chance(lines, gold) == pytest.approx(0.5)
    assert chance([], gold) is None


def _case(doc: str = "a") -> BoxCase:
    return BoxCase("q", doc, {3: [(0.0, 0.0, 100.0, 100.0)]})


def test_score_boxes_counts_wrong_pages_as_misses_and_conditions_on_the_gold_page() -> None:
    box_in, box_out = (10.0, 10.0, 20.0, 20.0), (10.0, 200.0, 20.0, 210.0)
    cases = [_case(), _case(), _case(), _case()]
    cited = [
        Cited([("a", 3, box_in)], [("a", 3)]),  # first citation hits
        Cited([("a", 4, box_in), ("a", 3, box_in)], [("a", 4), ("a", 3)]),  # wrong page first
        Cited([("b", 3, box_in)], [("b", 3)]),  # another document
        Cited([("a", 3, box_out), ("a", 3, box_in)], []),  # on the gold page, outside the box
    ]

    def lines(doc: str, page: int) -> list[tuple[float, float, float, float]]:
        return [box_in, box_out] if (doc, page) == ("a", 3) else []

    s = score_boxes(cases, cited, lines)
    assert (s.n, s.first, s.any3) == (4, 1, 3)
    assert (s.on_gold, s.first_given_gold, s.any3_given_gold) == (2, 1, 2)
    assert s.gold_in_hits5 == 2
    assert s.chance_all == pytest.approx(0.5)
    assert s.chance_given_gold == pytest.approx(0.5)


def test_page_lines_leave_out_furniture_and_use_cells_of_tables_without_lines() -> None:
    def block(i: int, kind: BlockType, **extra: object) -> Block:
        return Block(id=f"p1-b{i}", type=kind, bbox=(0, 0, 100, 100), text="x", **extra)  # type: ignore[arg-type]

    line = Line(text="body", bbox=(10, 10, 90, 20))
    header = Line(text="Annual report", bbox=(10, 0, 90, 5))
    cell = TableCell(row=0, col=0, text="1,577", bbox=(10, 30, 40, 40))
    page = Page(
        number=1,
        width=100,
        height=100,
        engine=EngineInfo(name="test"),
        blocks=[
            block(0, BlockType.page_header, lines=[header]),
            block(1, BlockType.text, lines=[line]),
            block(2, BlockType.table, cells=[cell]),
        ],
    )
    doc = Document(doc_id="d", source="a.pdf", page_count=1, pages=[page])
    assert page_lines(doc, 1) == [(10, 10, 90, 20), (10, 30, 40, 40)]
    assert page_lines(doc, 2) == []


def test_gold_boxes_are_scaled_to_the_pdf_page_and_past_the_end_skipped(tmp_path: Path) -> None:
    pdf = tmp_path / "docs" / "x.pdf"
    pdf.parent.mkdir()
    with pymupdf.open() as doc:
        doc.new_page(width=600, height=800)
        doc.save(pdf)
    layout = {
        "doc_name": "x.pdf",
        "questions": [
            {
                "Q": "where?",
                "type": "['Chart']",
                "page_id": [0],
                "layout_mapping": [
                    {"page": 0, "page_size": [300, 400], "bbox": [10, 20, 30, 40]},
                    {"page": 5, "page_size": [300, 400], "bbox": [10, 20, 30, 40]},
                ],
            }
        ],
    }
    (tmp_path / "mmdocir").mkdir()
    (tmp_path / "mmdocir" / "layouts_dev.jsonl").write_text(json.dumps(layout) + "\n")
    [case] = load_box_cases(tmp_path, [pdf])
    assert case.doc == "x"
    assert case.boxes == {1: [(20.0, 40.0, 60.0, 80.0)]}


def test_mmdocir_boxes_load_for_the_mmlongbench_documents() -> None:
    folder = DATA / "mmlongbench_doc" / "documents"
    if not (DATA / "mmdocir" / "layouts_dev.jsonl").is_file() or not folder.is_dir():
        pytest.skip(f"{DATA}/mmdocir or mmlongbench_doc absent (shared data not mounted)")
    cases = load_box_cases(DATA, sorted(folder.glob("*.pdf")))
    assert len(cases) == 297
    with pymupdf.open(folder / f"{cases[0].doc}.pdf") as doc:
        for page, boxes in cases[0].boxes.items():
            rect = doc[page - 1].rect
            assert all(0 <= b[0] < b[2] <= rect.width + 1 for b in boxes)
            assert all(0 <= b[1] < b[3] <= rect.height + 1 for b in boxes)


def _pdfs(folder: Path, named: dict[str, bytes]) -> list[Path]:
    folder.mkdir(parents=True)
    for name, data in named.items():
        (folder / name).write_bytes(data)
    return sorted(folder.glob("*.pdf"))


def test_opaque_names_follow_the_bytes_not_the_names(tmp_path: Path) -> None:
    files = {"Boeing 10K.pdf": b"%PDF boeing", "amcor.pdf": b"%PDF amcor", "z.pdf": b"%PDF z"}
    first = opaque_names(_pdfs(tmp_path / "one", files))
    renamed = {f"other-{i}.pdf": data for i, data in enumerate(reversed(list(files.values())))}
    second = opaque_names(_pdfs(tmp_path / "two", renamed))
    assert sorted(first.values()) == ["doc_0001", "doc_0002", "doc_0003"]
    by_bytes_one = {files[f"{stem}.pdf"]: name for stem, name in first.items()}
    by_bytes_two = {renamed[f"{stem}.pdf"]: name for stem, name in second.items()}
    assert by_bytes_one == by_bytes_two
    assert opaque_names(_pdfs(tmp_path / "three", files)) == first


def test_opaque_corpus_copies_files_under_their_new_names(tmp_path: Path) -> None:
    pdfs = _pdfs(tmp_path / "real", {"Boeing 10K.pdf": b"%PDF boeing", "amcor.pdf": b"%PDF a"})
    corpus = Corpus("fin", pdfs, [Case("Boeing revenue?", {"Boeing 10K"}, {3})])
    renamed, rename = opaque_corpus(corpus, tmp_path / "opaque")
    assert renamed.name == "fin-opaque"
    assert [p.name for p in renamed.pdfs] == ["doc_0001.pdf", "doc_0002.pdf"]
    [case] = renamed.cases
    assert case.docs == {rename["Boeing 10K"]} and case.pages == {3}
    copy = tmp_path / "opaque" / f"{rename['Boeing 10K']}.pdf"
    assert copy.read_bytes() == b"%PDF boeing"
    assert corpus.cases[0].docs == {"Boeing 10K"}


def test_amounts_read_currency_commas_signs_percentages_and_scale_words() -> None:
    found = amounts("$1,577.00, (0.02), 24.6%, $2,018mn and 1.8 bn in FY2023")
    assert [(str(a.value), a.scale) for a in found] == [
        ("1577.00", 0),
        ("0.02", 0),
        ("24.6", 0),
        ("2018", 6),
        ("1.8", 9),
    ]


def test_same_number_across_formats_rounding_and_units() -> None:
    [gold] = amounts("$1577.00")
    assert same_number(gold, amounts("1,577")[0])
    assert not same_number(gold, amounts("1,578")[0])
    assert same_number(amounts("$8.70")[0], amounts("8.7")[0])
    assert same_number(amounts("65.4%")[0], amounts("65.38 percent")[0])
    # a billion answer is stated by a table in millions, rounded as the answer is written
    assert same_number(amounts("$1.6 billion")[0], amounts("1,577")[0])
    assert not same_number(amounts("$1.6 billion")[0], amounts("1,677")[0])
    assert same_number(amounts("$2,018mn")[0], amounts("2,018")[0])
    # a one-digit answer is not matched by rounding
    assert not same_number(amounts("2")[0], amounts("1.6")[0])


def test_answer_in_citation_needs_a_number_the_evidence_states() -> None:
    evidence = "Adjusted EBITDA 2,018 1,946 ... Adjusted EBIT 1,624"
    stated = stated_amounts("AMCOR's Adj. EBITDA was $2,018mn in FY 2023", evidence)
    assert [str(a.value) for a in stated] == ["2018"]
    assert answer_in(stated, "Adjusted EBITDA | 2,018 | 1,946")
    assert not answer_in(stated, "Adjusted EBIT of $436 million")
    # years and bare single digits are not answers; a figure the evidence lacks is not stated
    assert stated_amounts("In FY 2023 there were 3 segments", "2023 3 segments") == []
    assert stated_amounts("$5,409", "Revenue 5,408") == []
