"""Exports through the real app: the structured JSON as ingestion stored it, and Markdown."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from ocr_engine.exports.markdown import block_markdown, page_markdown
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Page, PageError, PageStatus
from tests.apiapp import ApiApp, api_app


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    with api_app(tmp_path_factory.mktemp("exports")) as built:
        yield built


def test_json_export_is_the_stored_document(app: ApiApp) -> None:
    response = app.client.get(f"/documents/{app.doc_id}/json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert 'filename="volcano.json"' in response.headers["content-disposition"]
    document = Document.model_validate_json(response.content)
    assert document.doc_id == app.doc_id and document.source == "volcano.pdf"
    assert document.page_count == 3 and [p.number for p in document.pages] == [1, 2, 3]
    blocks = document.pages[0].blocks
    assert blocks[0].type in (BlockType.title, BlockType.section_header)
    assert all(line.bbox[2] <= document.pages[0].width for b in blocks for line in b.lines)
    kelud = [b for b in blocks if "Kelud" in b.text]
    assert kelud and kelud[0].lines and kelud[0].bbox[1] > blocks[0].bbox[1]


def test_markdown_export_has_headings_paragraphs_and_page_separators(app: ApiApp) -> None:
    response = app.client.get(f"/documents/{app.doc_id}/markdown")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    text = response.text
    assert text.startswith("<!-- page 1 -->\n\n# Volcanic Activity Report")
    assert "\n\n## Eruption history\n\nThe Kelud volcano erupted in February 2014" in text
    assert text.count("\n\n---\n\n") == 2 and "<!-- page 3 -->" in text
    assert text.index("<!-- page 2 -->") < text.index("Appendix 1") < text.index("<!-- page 3 -->")


def test_documents_without_structured_json_answer_409(app: ApiApp) -> None:
    ledger = app.services.ledger
    queued = hashlib.sha256(b"queued").hexdigest()
    ledger.add(queued, "later.pdf", 10, uploaded=True)
    try:
        for kind in ("json", "markdown"):
            response = app.client.get(f"/documents/{queued}/{kind}")
            assert response.status_code == 409, response.text
            assert response.json()["error"]["code"] == "not_ready"
    finally:
        ledger.delete(queued)
    missing = app.client.get(f"/documents/{'f' * 64}/markdown")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_document"


def _block(kind: BlockType, text: str, **extra: object) -> Block:
    return Block(id="p1-b0", type=kind, bbox=(0, 0, 10, 10), text=text, **extra)  # type: ignore[arg-type]


def test_blocks_render_as_markdown() -> None:
    table = "| Year | Eruptions |\n| --- | --- |\n| 2014 | 1 |"
    assert block_markdown(_block(BlockType.title, "Annual\nReport")) == "# Annual Report"
    assert block_markdown(_block(BlockType.section_header, "Risks", level=3)) == "### Risks"
    assert block_markdown(_block(BlockType.section_header, "Risks")) == "## Risks"
    assert block_markdown(_block(BlockType.list_item, "• ash fell\non the city")) == (
        "- ash fell on the city"
    )
    assert block_markdown(_block(BlockType.list_item, "2. second")) == "2. second"
    assert block_markdown(_block(BlockType.table, table)) == table
    assert block_markdown(_block(BlockType.table, "", html="<table></table>")) == "<table></table>"
    assert block_markdown(_block(BlockType.caption, "Figure 1. Ash")) == "*Figure 1. Ash*"
    assert block_markdown(_block(BlockType.formula, "E = mc^2")) == "$$\nE = mc^2\n$$"
    assert block_markdown(_block(BlockType.code, "x = 1")) == "```\nx = 1\n```"
    assert block_markdown(_block(BlockType.figure, "")) == "*[figure]*"
    page = Page(
        number=4,
        width=100,
        height=100,
        engine=EngineInfo(name="x"),
        blocks=[_block(BlockType.page_header, "ACME 10-K"), _block(BlockType.text, "Body.")],
    )
    assert page_markdown(page) == "<!-- page 4 -->\n\nBody."
    failed = page.model_copy(
        update={
            "status": PageStatus.failed,
            "blocks": [],
            "errors": [PageError(code="x", message="timeout")],
        }
    )
    assert "could not be read: timeout" in page_markdown(failed)
