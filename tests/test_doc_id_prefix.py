"""A document is named by its id or by any unique prefix of 8 or more hex characters (as
`folio docs` shows 12), in every API route and MCP tool; a shared prefix is a 409 naming the
documents, a short or malformed one a clear 422, an unknown one a 404. The MCP server says its
version and describes its tools in plain paragraphs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
from mcp import Client

from ingest.ledger.doc_ids import AmbiguousDocIdError, DocIdError, resolve_doc_id
from ingest.ledger.records import UnknownDocumentError
from ingest.pipeline.doc_run import folio_version
from server.http.deps import page_renderer
from server.serve.mcp_server import build_mcp
from tests.apiapp import ApiApp, api_app

TWIN_A = "abcdef01" + "0" * 56
TWIN_B = "abcdef01" + "1" * 56


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    with api_app(tmp_path_factory.mktemp("prefix")) as built:
        ledger = built.services.ledger
        ledger.add(TWIN_A, "twin a.pdf", 10, uploaded=True)
        ledger.add(TWIN_B, "twin b.pdf", 10, uploaded=True)
        try:
            yield built
        finally:
            ledger.delete(TWIN_A)
            ledger.delete(TWIN_B)


def _error(response: object, status: int, code: str) -> str:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    error = response.json()["error"]  # type: ignore[attr-defined]
    assert error["code"] == code, error
    return str(error["message"])


@pytest.mark.parametrize("length", [8, 12, 40, 64])
def test_a_unique_prefix_names_the_document_in_every_route(app: ApiApp, length: int) -> None:
    short = app.doc_id[:length]
    detail = app.client.get(f"/documents/{short}")
    assert detail.status_code == 200, detail.text
    assert detail.json()["doc_id"] == app.doc_id
    exported = app.client.get(f"/documents/{short}/json")
    assert exported.status_code == 200 and exported.json()["doc_id"] == app.doc_id
    page = app.client.get(f"/documents/{short}/pages/1.png")
    assert page.status_code == 200 and page.content.startswith(b"\x89PNG")


def test_a_query_filtered_by_a_prefix_searches_that_document(app: ApiApp) -> None:
    for path in ("/query", "/query/stream"):
        body = {"question": "What is in the document?", "doc_ids": [app.doc_id[:12]]}
        response = app.client.post(path, json=body)
        assert response.status_code == 200, response.text
        if path == "/query":
            hits = response.json()["hits"]
            assert hits and {h["doc_id"] for h in hits} == {app.doc_id}
    ambiguous = {"question": "What is in it?", "doc_ids": ["abcdef01"]}
    _error(app.client.post("/query", json=ambiguous), 409, "ambiguous_doc_id")
    unknown = {"question": "What is in it?", "doc_ids": ["99999999"]}
    _error(app.client.post("/query", json=unknown), 404, "unknown_document")
    short = {"question": "What is in it?", "doc_ids": ["abcdef0"]}
    assert app.client.post("/query", json=short).status_code == 422


def test_a_shared_prefix_is_409_naming_the_candidates(app: ApiApp) -> None:
    message = _error(app.client.get("/documents/abcdef01"), 409, "ambiguous_doc_id")
    assert TWIN_A in message and TWIN_B in message and "twin a.pdf" in message
    assert app.client.get("/documents/abcdef010").json()["doc_id"] == TWIN_A
    _error(app.client.get("/documents/abcdef01/markdown"), 409, "ambiguous_doc_id")


@pytest.mark.parametrize(
    "bad", ["abcdef0", "abc", "zzzzzzzzzzzz", "abcdef01-", "ABCDEF01", "a" * 65]
)
def test_short_or_malformed_ids_are_a_clear_422(app: ApiApp, bad: str) -> None:
    message = _error(app.client.get(f"/documents/{bad}"), 422, "invalid_doc_id")
    assert "at least 8" in message


def test_an_unknown_prefix_is_404(app: ApiApp) -> None:
    _error(app.client.get("/documents/99999999"), 404, "unknown_document")
    _error(app.client.get(f"/documents/{'9' * 64}"), 404, "unknown_document")


def test_resolver_says_what_is_wrong(app: ApiApp) -> None:
    ledger = app.services.ledger
    assert resolve_doc_id(ledger, app.doc_id[:8]) == app.doc_id
    with pytest.raises(AmbiguousDocIdError) as ambiguous:
        resolve_doc_id(ledger, "abcdef01")
    assert [doc_id for doc_id, _ in ambiguous.value.candidates] == [TWIN_A, TWIN_B]
    with pytest.raises(DocIdError):
        resolve_doc_id(ledger, "abcdef0")
    with pytest.raises(UnknownDocumentError):
        resolve_doc_id(ledger, "99999999")
    removed = [("99999999" + "e" * 56, "gone.pdf")]
    assert resolve_doc_id(ledger, "99999999", removed=removed) == removed[0][0]


def test_mcp_takes_a_prefix_says_its_version_and_describes_tools_plainly(app: ApiApp) -> None:
    services = app.services
    server = build_mcp(services, page_renderer(services.settings))

    async def session() -> None:
        async with Client(server) as client:
            info = client.server_info
            assert info is not None and info.version == folio_version() != ""
            tools = await client.list_tools()
            for tool in tools.tools:
                assert tool.description and "  " not in tool.description, tool.description
                assert "\n" not in tool.description, tool.description
            page = await client.call_tool("read_page", {"doc_id": app.doc_id[:12], "page": 1})
            assert not page.is_error, page.content
            read = json.loads(page.content[0].text)  # type: ignore[union-attr]
            assert read["doc_id"] == app.doc_id and "Kelud" in read["text"]
            twin = await client.call_tool("read_page", {"doc_id": "abcdef01", "page": 1})
            assert twin.is_error and TWIN_B in twin.content[0].text  # type: ignore[union-attr]
            short = await client.call_tool("read_page", {"doc_id": "abc", "page": 1})
            assert short.is_error and "at least 8" in short.content[0].text  # type: ignore[union-attr]

    anyio.run(session)
