"""folio over MCP, with the SDK's own client: `folio mcp` over stdio, and `/mcp` of a real
`folio serve` on loopback over streamable HTTP, its API key honoured and its citation links
opening as they come."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from doubles.loopback import free_port
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf

KEY = "mcp-test-key"
TOOLS = {"search", "ask", "list_documents", "read_page"}
QUESTION = "When did the Kelud volcano erupt?"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    env.update(HF_HUB_OFFLINE="1", FOLIO_OCR="never", **extra)
    return env


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with volcano.pdf ingested (the default embedder, as `folio` uses)."""
    root = tmp_path_factory.mktemp("mcp")
    pdf = root / "volcano.pdf"
    title, sections = FACTS["volcano.pdf"]
    pdf.write_bytes(fact_pdf(title, sections, filler_pages=1))
    services = build_services(Settings(data_dir=root / "data", ocr="never", extract_processes=0))
    try:
        [result] = services.sync.ingest_paths([pdf])
        assert result.status.value == "ok", result
    finally:
        services.close()
    return root / "data"


async def _session_checks(session: ClientSession) -> dict[str, Any]:
    """Lists the tools and calls each; returns what `ask` and `read_page` gave."""
    await session.initialize()
    tools = await session.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    docs = await session.call_tool("list_documents", {})
    assert not docs.is_error
    (doc,) = docs.structured_content["result"]  # type: ignore[index]
    assert doc["source"] == "volcano.pdf" and doc["status"] == "ok"
    hits = await session.call_tool("search", {"query": "Kelud eruption", "top_k": 3})
    assert hits.structured_content["result"][0]["page"] == 1  # type: ignore[index]
    asked = await session.call_tool("ask", {"question": QUESTION, "top_k": 3})
    assert not asked.is_error, asked.content
    answer = asked.structured_content
    assert answer is not None and "2014" in answer["answer"] and answer["citations"]
    page = await session.call_tool("read_page", {"doc_id": doc["doc_id"], "page": 1})
    assert not page.is_error, page.content
    text, image = page.content
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG")
    read = json.loads(text.text)  # type: ignore[union-attr]
    assert "Kelud" in read["text"] and read["blocks"][0]["bbox"]
    bad = await session.call_tool("read_page", {"doc_id": doc["doc_id"], "page": 99})
    assert bad.is_error and "out of range" in bad.content[0].text  # type: ignore[union-attr]
    return {"answer": answer, "doc_id": doc["doc_id"]}


def test_stdio_server_lists_tools_answers_and_reads_pages(data_dir: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server", "mcp", "--data-dir", str(data_dir)],
        env=_env(),
    )

    async def main() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await _session_checks(session)

    got = anyio.run(main)
    citation = got["answer"]["citations"][0]
    assert citation["page"] == 1 and citation["highlight_url"].startswith("/documents/")


@pytest.fixture(scope="module")
def served(data_dir: Path) -> Iterator[str]:
    """`folio serve` over the data directory with an API key; its URL."""
    port = free_port()
    log = data_dir.parent / "serve.log"
    with log.open("wb") as out:
        cmd = [sys.executable, "-m", "server", "serve", "--data-dir", str(data_dir)]
        proc = subprocess.Popen(
            [*cmd, "--port", str(port)], env=_env(FOLIO_API_KEY=KEY), stdout=out, stderr=out
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
            yield base
        finally:
            proc.terminate()
            proc.wait(30)


def test_http_endpoint_needs_the_key_and_its_citations_render(served: str) -> None:
    refused = httpx.post(f"{served}/mcp", json={}, timeout=10)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"

    async def main() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {KEY}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{served}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            return await _session_checks(session)

    got = anyio.run(main)
    citations = got["answer"]["citations"]
    for citation in citations:
        url = citation["highlight_url"]
        assert url.startswith(f"{served}/documents/{got['doc_id']}/pages/") and "sig=" in url
        image = httpx.get(url, timeout=30)  # no key: the signed link opens by itself
        assert image.status_code == 200, image.text
        assert image.headers["content-type"] == "image/png"
        assert image.content.startswith(b"\x89PNG")


def test_folio_mcp_points_to_the_running_servers_endpoint(served: str, data_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "server", "mcp", "--data-dir", str(data_dir)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert f"{served}/mcp" in done.stderr and "served by pid" in done.stderr
