"""folio as a Model Context Protocol server: search, ask, list documents, read a page.

One `MCPServer` (the official `mcp` SDK) over a running folio's services, served two ways:
`folio mcp --data-dir DIR` over stdio, and streamable HTTP at `/mcp` inside `folio serve`
(stateless, JSON responses; behind the API's middleware, so the API key applies). `ask` is
`POST /query`'s answer (`retrieval.answer.generate.answer_query`), its citation links signed when an
API key is set; over HTTP they are made absolute on the server's own address, so a client opens them
as they come. `read_page` gives the page's text, its blocks and the rendered page image.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from anyio import to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import ValidationError
from starlette.routing import Route

from ingest.ledger import (
    AmbiguousDocIdError,
    DocIdError,
    DocumentRecord,
    UnknownDocumentError,
    resolve_doc_id,
)
from ingest.pipeline import folio_version
from ocr_engine.exports import page_text
from retrieval.answer import answer_query
from retrieval.links import LinkSigner, sign_response
from retrieval.schema import Hit, QueryRequest, QueryResponse
from retrieval.search import InvalidQueryError, search_filter, to_hit
from server.http.deps import validation_message
from server.pages import PageRenderer
from server.services import Services

__all__ = ["MCP_PATH", "McpEndpoint", "build_mcp", "mcp_endpoint"]

MCP_PATH = "/mcp"
READ_PAGE_DPI = 110
INSTRUCTIONS = (
    "folio answers questions from a folder of PDFs with citations to the page and region they "
    "came from. `ask` answers with citations (open their highlight_url to see the evidence), "
    "`search` lists the best passages, `list_documents` the documents, `read_page` one page's "
    "text, blocks and image."
)


def _request(question: str, top_k: int) -> QueryRequest:
    try:
        return QueryRequest(question=question, top_k=top_k)
    except ValidationError as exc:
        raise ToolError(validation_message(exc.errors()[0])) from None


def _base_url(ctx: Context | None) -> str | None:
    """The HTTP server's own address when the call came over HTTP, else None (stdio)."""
    if ctx is None:
        return None
    try:
        request = ctx.request_context.request
    except ValueError:
        return None
    base = getattr(request, "base_url", None)
    return str(base).rstrip("/") if base is not None else None


def _absolute(response: QueryResponse, base: str | None) -> QueryResponse:
    """The response with every citation link prefixed by `base` (unchanged without one)."""
    if base is None:
        return response
    citations = []
    for c in response.citations:
        pages = [
            p.model_copy(update={"highlight_url": base + p.highlight_url})
            for p in c.page_highlights
        ]
        citations.append(
            c.model_copy(
                update={
                    "page_image_url": base + c.page_image_url,
                    "highlight_url": base + c.highlight_url,
                    "viewer_url": base + c.viewer_url,
                    "crop_url": base + c.crop_url,
                    "page_url_template": base + c.page_url_template,
                    "page_highlights": pages,
                }
            )
        )
    return response.model_copy(update={"citations": citations})


def _record(svc: Services, doc_id: str, page: int) -> DocumentRecord:
    """The record of the document `doc_id` names (its id or a unique prefix of 8 or more)."""
    try:
        record = svc.ledger.get(resolve_doc_id(svc.ledger, doc_id))
    except (DocIdError, AmbiguousDocIdError) as exc:
        raise ToolError(f"{exc} (see list_documents)") from None
    except UnknownDocumentError:
        raise ToolError(f"no document with id {doc_id} (see list_documents)") from None
    if not 1 <= page <= record.pages:
        raise ToolError(f"page {page} is out of range: {record.source} has {record.pages} pages")
    return record


def _read_page(svc: Services, renderer: PageRenderer, doc_id: str, page: int) -> CallToolResult:
    record = _record(svc, doc_id, page)
    doc_id = record.doc_id
    try:
        document = svc.files.load_document(doc_id)
    except UnknownDocumentError:
        raise ToolError(f"{record.source} is {record.status.value}: not read yet") from None
    found = [p for p in document.pages if p.number == page]
    if not found:
        raise ToolError(f"page {page} of {record.source} was not read")
    (read,) = found
    data: dict[str, Any] = {
        "doc_id": doc_id,
        "source": record.source,
        "page": page,
        "width": read.width,
        "height": read.height,
        "engine": read.engine.model_dump(mode="json"),
        "route": read.route,
        "status": read.status.value,
        "errors": [e.model_dump(mode="json") for e in read.errors],
        "text": page_text(read),
        "blocks": [
            b.model_dump(mode="json", include={"id", "type", "bbox", "text", "level"})
            for b in read.blocks
        ],
    }
    render = renderer.render(svc.files.pdf_path(doc_id), page, READ_PAGE_DPI)
    image = ImageContent(type="image", data=_b64(render.png([])), mime_type="image/png")
    text = TextContent(type="text", text=json.dumps(data, ensure_ascii=False))
    return CallToolResult(content=[text, image], structured_content=data)


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


F = TypeVar("F", bound=Callable[..., Any])


def description(doc: str | None) -> str:
    """A docstring as one paragraph: its line breaks and indentation runs made single spaces."""
    return " ".join((doc or "").split())


def build_mcp(
    services: Services, renderer: PageRenderer, links: LinkSigner | None = None
) -> MCPServer:
    """The MCP server over `services`: tools search, ask, list_documents, read_page."""
    mcp = MCPServer(
        name="folio", instructions=INSTRUCTIONS, version=folio_version(), log_level="WARNING"
    )

    def tool(fn: F) -> F:
        """`fn` as a tool, described by its docstring said as one paragraph."""
        return mcp.tool(description=description(fn.__doc__))(fn)

    @tool
    async def search(query: str, top_k: int = 5) -> list[Hit]:
        """The passages that best match `query`, best first: document, page, regions (PDF points,
        top-left origin) and text."""
        req = _request(query, top_k)
        try:
            flt = search_filter(req)
        except InvalidQueryError as exc:
            raise ToolError(str(exc)) from None
        found = await to_thread.run_sync(services.retriever.search, req.question, req.top_k, flt)
        return [to_hit(hit) for hit in found]

    @tool
    async def ask(question: str, top_k: int = 5, ctx: Context | None = None) -> QueryResponse:
        """Answer `question` from the documents, as POST /query does: the answer, citations
        (page, box, quote and links to the page image with the evidence highlighted) and hits;
        `answer` is null when nothing supports one."""
        req = _request(question, top_k)
        try:
            response = await answer_query(services.retriever, req, services.settings.llm_options())
        except InvalidQueryError as exc:
            raise ToolError(str(exc)) from None
        return _absolute(sign_response(response, links), _base_url(ctx))

    @tool
    async def list_documents() -> list[DocumentRecord]:
        """Every document folio knows: id, file name, status, pages, chunks, errors."""
        return await to_thread.run_sync(services.ledger.documents)

    @tool
    async def read_page(doc_id: str, page: int) -> CallToolResult:
        """Page `page` (1-based) of document `doc_id` (its id from list_documents, or a unique
        prefix of 8 or more of its characters): its text, its blocks (type, box in PDF points,
        text) and the page image."""
        return await to_thread.run_sync(_read_page, services, renderer, doc_id, page)

    return mcp


class McpEndpoint:
    """The MCP server's streamable-HTTP route and the session manager the app's lifespan runs."""

    def __init__(self, mcp: MCPServer, host: str) -> None:
        starlette = mcp.streamable_http_app(
            streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, host=host
        )
        self.routes = [r for r in starlette.routes if isinstance(r, Route)]
        self.session_manager = mcp.session_manager


def mcp_endpoint(services: Services, renderer: PageRenderer) -> McpEndpoint:
    """The `/mcp` endpoint of `folio serve`, its links signed as the API's are."""
    settings = services.settings
    return McpEndpoint(build_mcp(services, renderer, settings.link_signer()), settings.host)
