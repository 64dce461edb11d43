"""The document JSON while it is written: the pages added so far are read back from the writer's
temporary file (as they will be in the finished JSON), and nothing once it is committed or
dropped."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ingest.ledger.files import DocumentFiles
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Page

DOC_ID = hashlib.sha256(b"rounds").hexdigest()


def _page(number: int) -> Page:
    text = f"Round {number} checked ünïcode valves"
    block = Block(id=f"p{number}-b0", type=BlockType.text, bbox=(72, 80, 300, 100), text=text)
    engine = EngineInfo(name="pymupdf")
    return Page(number=number, width=612, height=792, engine=engine, blocks=[block])


def _head() -> Document:
    return Document(doc_id=DOC_ID, source="rounds.pdf", page_count=5, pages=[], metadata={})


def test_pages_written_are_read_back_until_the_json_is_committed(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    assert files.pages_written(DOC_ID, 1, 5) == []
    writer = files.writer(_head())
    assert files.pages_written(DOC_ID, 1, 5) == []
    writer.add([_page(1), _page(2)])
    assert files.pages_written(DOC_ID, 1, 5) == [_page(1), _page(2)]
    writer.add([_page(3)])
    assert files.pages_written(DOC_ID, 2, 3) == [_page(2), _page(3)]
    assert files.pages_written(DOC_ID, 4, 5) == []
    writer.add([_page(4), _page(5)])
    writer.commit()
    assert files.pages_written(DOC_ID, 1, 5) == []
    assert files.load_document(DOC_ID).pages == [_page(n) for n in range(1, 6)]


def test_a_dropped_writer_serves_nothing_and_a_new_one_starts_empty(tmp_path: Path) -> None:
    files = DocumentFiles(tmp_path)
    old = files.writer(_head())
    old.add([_page(1)])
    new = files.writer(_head())  # the document read again
    old.abort()
    assert files.pages_written(DOC_ID, 1, 5) == []
    new.add([_page(1)])
    assert files.pages_written(DOC_ID, 1, 1) == [_page(1)]
    new.abort()
    assert files.pages_written(DOC_ID, 1, 5) == []
    assert list(files.root.iterdir()) == []
