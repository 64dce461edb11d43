"""Words by which a question names its document lend no support to an answer sentence: every
page of that document carries them, and a signature block holding nothing else would win."""

from __future__ import annotations

from pathlib import Path

from ocr_engine.options import OcrMode
from retrieval.schema import QueryRequest
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import fact_pdf

QUESTION = "What was Foot Locker's record date for the annual meeting?"


def test_the_company_name_does_not_pick_the_signature_block(tmp_path: Path) -> None:
    filings = {
        "FOOTLOCKER_2022_8K.pdf": [
            ("Item 5.07", "As of March 21, 2022, the record date for the annual meeting was set."),
            ("Signatures", "FOOT LOCKER, INC. Date: May 20, 2022"),
        ],
        "BESTBUY_2023_10K.pdf": [("Meeting", "The annual meeting of Best Buy was held in June.")],
    }
    for name, sections in filings.items():
        (tmp_path / name).write_bytes(fact_pdf(name.split("_")[0], sections))
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never, extract_processes=0)
    services = build_services(settings)
    try:
        services.sync.ingest_paths([tmp_path])
        answer = services.retriever.query(QueryRequest(question=QUESTION))
    finally:
        services.close()
    assert answer.answer is not None, answer
    first = answer.answer.split("[1]")[0]
    assert "record date" in first and "Date: May 20" not in first, answer.answer
    assert answer.citations[0].source == "FOOTLOCKER_2022_8K.pdf"
