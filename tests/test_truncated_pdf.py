"""A PDF cut anywhere is bad input (not retried, one line naming the file) or is read; never
internal."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ingest.ledger.records import FailureKind
from ingest.pipeline.extractor import WindowReader
from ingest.pipeline.failures import RetryPolicy, classify
from ingest.pipeline.guards import PdfLimits
from ocr_engine.engines.extract import extract_document
from ocr_engine.errors import BadInputError
from ocr_engine.options import ExtractOptions, OcrMode
from tests.conftest import shared_path

NAME = "cut.pdf"
REAL = [
    ("financebench", "pdfs", "NETFLIX_2015_10K.pdf"),
    ("financebench", "pdfs", "AMD_2015_10K.pdf"),
    ("financebench", "pdfs", "AMCOR_2022_8K_dated-2022-07-01.pdf"),
    ("docling", "pdf", "2305.03393v1-pg9.pdf"),
]
READ_PAGES = 6  # the first pages and the last are read of a cut that opens


def _objects_pdf(*objects: bytes) -> bytes:
    """A PDF written object by object with a correct xref, so only its objects are wrong."""
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer <</Root 1 0 R /Size %d>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def _text_pdf(pages: int = 6) -> bytes:
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page().insert_text((72, 72), f"page {i + 1} " + "text " * 50, fontsize=11)
    return doc.tobytes()


CATALOG = b"<</Type /Catalog /Pages 2 0 R>>"
PAGE = b"<</Type /Page /MediaBox [0 0 200 200] /Parent 2 0 R>>"
COUNT_LIE = _objects_pdf(CATALOG, b"<</Type /Pages /Kids [3 0 R] /Count 5>>", PAGE)
TREE_CYCLE = _objects_pdf(CATALOG, b"<</Type /Pages /Kids [2 0 R 3 0 R] /Count 2>>", PAGE)


@pytest.fixture(scope="module")
def reader() -> WindowReader:
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    return WindowReader(ExtractOptions(ocr=OcrMode.never), None, PdfLimits())


def _ingest_outcome(reader: WindowReader, path: Path) -> FailureKind | None:
    """What ingest makes of the file: None when its pages are read, else the failure's kind
    (checked: bad input is one line naming the file and is never tried again)."""
    try:
        info = reader.probe(str(path), NAME, None)
        numbers = sorted({*range(1, min(info.page_count, READ_PAGES) + 1), info.page_count})
        for number in numbers:
            pages = reader.read(str(path), NAME, None, "doc", number, number).pages
            assert [page.number for page in pages] == [number]
        return None
    except Exception as exc:
        kind, reason = classify(exc)
        assert kind is FailureKind.bad_input, reason
        assert "\n" not in reason and reason.startswith(NAME), reason
        assert RetryPolicy().retry_at(kind, 1, 0.0) is None
        return kind
    finally:
        reader.release()


def test_synthetic_pdf_cut_at_every_offset(reader: WindowReader, tmp_path: Path) -> None:
    data = _text_pdf()
    path = tmp_path / NAME
    outcomes = []
    for cut in range(1, len(data), 3):
        path.write_bytes(data[:cut])
        outcomes.append(_ingest_outcome(reader, path))
    assert FailureKind.bad_input in outcomes and set(outcomes) <= {FailureKind.bad_input, None}
    path.write_bytes(data)
    assert _ingest_outcome(reader, path) is None


@pytest.mark.parametrize("parts", REAL, ids=[p[-1] for p in REAL])
def test_real_pdf_cut_anywhere(
    reader: WindowReader, tmp_path: Path, parts: tuple[str, ...]
) -> None:
    data = shared_path(*parts).read_bytes()
    ends = [m.end() for m in re.finditer(rb"%%EOF", data) if m.end() < len(data)]
    path = tmp_path / NAME
    last = len(data) - 1
    offsets = st.integers(1, last)
    if ends:  # a cut just after an end-of-file marker (a linearised first part, an update)
        offsets |= st.sampled_from(ends).flatmap(lambda e: st.integers(e, min(e + 3000, last)))

    @settings(
        max_examples=12,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(cut=offsets)
    @example(cut=min(60_000, len(data) - 1))
    @example(cut=min(120_000, len(data) - 1))
    def cut_at(cut: int) -> None:
        path.write_bytes(data[:cut])
        _ingest_outcome(reader, path)

    cut_at()


def test_netflix_cut_at_60000_is_truncated(reader: WindowReader, tmp_path: Path) -> None:
    data = shared_path("financebench", "pdfs", "NETFLIX_2015_10K.pdf").read_bytes()
    path = tmp_path / NAME
    path.write_bytes(data[:60_000])
    with pytest.raises(BadInputError, match=r"^cut\.pdf: the PDF is truncated"):
        reader.probe(str(path), NAME, None)
    reader.release()


def test_page_count_mupdf_cannot_give_is_bad_input(reader: WindowReader, tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(COUNT_LIE)
    assert _ingest_outcome(reader, path) is FailureKind.bad_input
    with pytest.raises(BadInputError, match="damaged and cannot be read"):
        extract_document(COUNT_LIE, source=NAME, options=ExtractOptions(ocr=OcrMode.never))


def test_page_mupdf_cannot_load_is_bad_input(tmp_path: Path) -> None:
    options = ExtractOptions(ocr=OcrMode.never)
    with pytest.raises(BadInputError, match=r"^cut\.pdf: page 1 is damaged") as info:
        extract_document(TREE_CYCLE, source=NAME, options=options)
    assert classify(info.value)[0] is FailureKind.bad_input
