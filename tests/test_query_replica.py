"""`folio serve --query-only`: a query replica with no ledger answers as the coordinator does.

Real processes on loopback: the coordinator (`folio serve`) and a replica started in a fresh
temporary directory with only addresses (FOLIO_QDRANT_URL, FOLIO_COORDINATOR_URL, FOLIO_API_KEY),
sharing one index through the Qdrant REST server of doubles/qdrant_stub.py (points kept and
searched by qdrant-client's engine; no Qdrant server runs here). A document ingested by the
coordinator is answered by the replica with the same JSON, its citation links open page images on
the replica, writes are refused naming the coordinator, and a document added later is answered
after a poll; twenty questions (names, tables, a subject no document has) get the same JSON from
both. Where nginx is installed, the compose profile's deploy/nginx-scale.conf (its hosts
put on loopback) sends answers, page images and the web page to the replica and the rest to the
coordinator.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from doubles.loopback import free_port, sse_events
from doubles.qdrant_stub import QdrantStub
from tests.pdfgen import FACTS, fact_pdf, wide_table_pdf

NGINX_CONF = Path(__file__).parent.parent / "deploy" / "nginx-scale.conf"
KEY = "replica-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
_SIGNED = re.compile(r"[?&](?:exp|sig)=[^&\"]*")
QUESTIONS = {
    "volcano.pdf": ["When did the Kelud volcano erupt?", "How often do seismometers record?"],
    "bakery.pdf": ["What is the sourdough starter fed with?", "How hot is the deck oven?"],
}


@dataclass
class Folio:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path


def _start(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> Folio:
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    base.update(HF_HUB_OFFLINE="1", FOLIO_OCR="never", FOLIO_API_KEY=KEY, **env)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "serve", *args, "--port", str(port)],
            env=base,
            cwd=cwd,
            stdout=out,
            stderr=out,
        )
    return Folio(proc, f"http://127.0.0.1:{port}", log)


def _ready(folio: Folio, deadline: float) -> None:
    while True:
        try:
            if httpx.get(f"{folio.url}/health", timeout=10).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert folio.proc.poll() is None, folio.log.read_text()
        assert time.monotonic() < deadline, folio.log.read_text()
        time.sleep(0.3)


def _stop(folio: Folio) -> None:
    if folio.proc.poll() is None:
        folio.proc.kill()
        folio.proc.wait(30)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Folio, Folio]]:
    """A coordinator and a replica sharing one Qdrant index, both ready."""
    root = tmp_path_factory.mktemp("replica")
    (root / "coordinator").mkdir()
    (root / "replica").mkdir()
    with QdrantStub() as qdrant:
        coordinator = _start(
            ["--data-dir", str(root / "coordinator" / "data")],
            {"FOLIO_QDRANT_URL": qdrant.url},
            root / "coordinator",
            root / "coordinator.log",
        )
        replica = _start(
            ["--query-only"],
            {
                "FOLIO_QDRANT_URL": qdrant.url,
                "FOLIO_COORDINATOR_URL": coordinator.url,
                "FOLIO_REPLICA_POLL_S": "0.5",
            },
            root / "replica",
            root / "replica.log",
        )
        try:
            deadline = time.monotonic() + 240
            _ready(coordinator, deadline)
            _ready(replica, deadline)
            yield coordinator, replica
        finally:
            _stop(replica)
            _stop(coordinator)
    assert sorted(p.name for p in (root / "replica").iterdir()) == []  # it wrote nothing there


def _ingest(coordinator: Folio, name: str, data: bytes | None = None) -> str:
    if data is None:
        data = fact_pdf(*FACTS[name])
    files = {"file": (name, data, "application/pdf")}
    with httpx.Client(base_url=coordinator.url, headers=AUTH, timeout=30) as client:
        doc_id = str(client.post("/documents", files=files).json()["doc_id"])
        deadline = time.monotonic() + 120
        while client.get(f"/documents/{doc_id}").json()["status"] != "ok":
            assert time.monotonic() < deadline, coordinator.log.read_text()
            time.sleep(0.3)
    return doc_id


def _ask(folio: Folio, question: str) -> dict[str, Any]:
    response = httpx.post(
        f"{folio.url}/query", json={"question": question}, headers=AUTH, timeout=60
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _unsigned(body: dict[str, Any]) -> str:
    """The answer's JSON with its links' expiry and signature left out (they differ by the
    second each was signed in)."""
    return _SIGNED.sub("", httpx.Response(200, json=body).text)


def _documents(replica: Folio) -> int:
    return int(httpx.get(f"{replica.url}/health", timeout=10).json()["documents"])


def _until_documents(replica: Folio, n: int) -> None:
    deadline = time.monotonic() + 30
    while _documents(replica) != n:
        assert time.monotonic() < deadline, replica.log.read_text()
        time.sleep(0.2)


def test_the_replica_answers_as_the_coordinator(pair: tuple[Folio, Folio]) -> None:
    coordinator, replica = pair
    doc_id = _ingest(coordinator, "volcano.pdf")
    _until_documents(replica, 1)
    for question in QUESTIONS["volcano.pdf"]:
        theirs, ours = _ask(coordinator, question), _ask(replica, question)
        assert _unsigned(ours) == _unsigned(theirs)
        assert ours["answer"] and ours["citations"][0]["doc_id"] == doc_id
    question = QUESTIONS["volcano.pdf"][0]
    with httpx.stream(
        "POST", f"{replica.url}/query/stream", json={"question": question}, headers=AUTH
    ) as stream:
        events = sse_events(stream)
    assert [kind for kind, _ in events][-2:] == ["citations", "done"]
    assert _unsigned(events[-1][1]) == _unsigned(_ask(coordinator, question))
    cited = _ask(replica, question)["citations"][0]
    signed_elsewhere = _ask(coordinator, QUESTIONS["volcano.pdf"][0])["citations"][0]
    with httpx.Client(base_url=replica.url, timeout=60) as browser:  # no API key: a link
        for url in (cited["highlight_url"], signed_elsewhere["page_image_url"]):
            image = browser.get(url)
            assert image.status_code == 200, image.text
            assert image.headers["content-type"] == "image/png"
            assert image.content.startswith(b"\x89PNG")
        viewer = browser.get(cited["viewer_url"])
        assert viewer.status_code == 200 and "volcano.pdf" in viewer.text
        assert browser.get(f"/documents/{doc_id}/pages/1.png").status_code == 401


def test_writes_to_the_replica_are_refused_naming_the_coordinator(
    pair: tuple[Folio, Folio],
) -> None:
    coordinator, replica = pair
    files = {"file": ("x.pdf", fact_pdf(*FACTS["bakery.pdf"]), "application/pdf")}
    refused = httpx.post(f"{replica.url}/documents", files=files, headers=AUTH, timeout=30)
    assert refused.status_code == 405
    assert coordinator.url in refused.json()["error"]["message"]
    deleted = httpx.delete(f"{replica.url}/documents/{'a' * 64}", headers=AUTH, timeout=30)
    assert deleted.status_code == 405 and coordinator.url in deleted.text


def test_a_document_added_later_is_answered_after_the_poll(pair: tuple[Folio, Folio]) -> None:
    coordinator, replica = pair
    before = _documents(replica)
    doc_id = _ingest(coordinator, "bakery.pdf")
    _until_documents(replica, before + 1)
    for question in QUESTIONS["bakery.pdf"]:
        theirs, ours = _ask(coordinator, question), _ask(replica, question)
        assert _unsigned(ours) == _unsigned(theirs)
        assert ours["citations"][0]["doc_id"] == doc_id


def test_a_replica_without_a_qdrant_server_is_refused_naming_the_setting(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    done = subprocess.run(
        [sys.executable, "-m", "server", "serve", "--query-only"],
        env={**env, "FOLIO_COORDINATOR_URL": "http://127.0.0.1:9"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "FOLIO_QDRANT_URL" in done.stderr and "Qdrant Edge" in done.stderr


def test_a_table_cell_is_boxed_from_the_json_the_replica_fetched(
    pair: tuple[Folio, Folio],
) -> None:
    coordinator, replica = pair
    before = _documents(replica)
    doc_id = _ingest(coordinator, "selected.pdf", wide_table_pdf())
    _until_documents(replica, before + 1)
    question = "What were total revenues in 2021?"
    theirs, ours = _ask(coordinator, question), _ask(replica, question)
    assert _unsigned(ours) == _unsigned(theirs)
    assert "11,452" in ours["answer"] and ours["citations"][0]["doc_id"] == doc_id
    # the cell's box came from the document's JSON, fetched from the coordinator with a token
    assert f"/worker/documents/{doc_id}.json?token=" in replica.log.read_text()


def _served(folio: Folio, request: str) -> int:
    """How many times the process's access log shows `request` ("POST /query")."""
    return folio.log.read_text().count(f'"{request}')


@pytest.fixture(scope="module")
def proxy(pair: tuple[Folio, Folio], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """nginx with the compose profile's deploy/nginx-scale.conf, its hosts put on loopback."""
    if shutil.which("nginx") is None:
        pytest.skip("nginx is not installed (`make test` installs Debian's nginx-light)")
    coordinator, replica = pair
    root = tmp_path_factory.mktemp("nginx")
    port = free_port()
    site = (
        NGINX_CONF.read_text(encoding="utf-8")
        .replace("folio-query:8000", replica.url.removeprefix("http://"))
        .replace("folio-coordinator:8000", coordinator.url.removeprefix("http://"))
        .replace("listen 80;", f"listen 127.0.0.1:{port};")
    )
    (root / "site.conf").write_text(site, encoding="utf-8")
    temp = " ".join(
        f"{kind}_temp_path {root};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (root / "nginx.conf").write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\npid {root}/nginx.pid;\nerror_log {root}/error.log;\nevents {{}}\n"
        + f"http {{ access_log off; {temp} include {root}/site.conf; }}\n",
        encoding="utf-8",
    )
    proc = subprocess.Popen(["nginx", "-c", str(root / "nginx.conf"), "-p", str(root)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/proxy-health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, root / "error.log"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_proxy_sends_answers_and_pages_to_the_replica_and_the_rest_to_the_coordinator(
    pair: tuple[Folio, Folio], proxy: str
) -> None:
    coordinator, replica = pair
    before, uploads = _documents(replica), _served(coordinator, "POST /documents ")
    tides = fact_pdf("Tide Tables", [("Tides", "The tide at Saint-Malo rises twelve metres.")])
    doc_id = _ingest(Folio(coordinator.proc, proxy, coordinator.log), "tides.pdf", tides)
    assert _served(coordinator, "POST /documents ") == uploads + 1  # the upload went there
    _until_documents(replica, before + 1)
    asked = _served(replica, "POST /query ")
    answered = _served(coordinator, "POST /query ")
    body = _ask(
        Folio(replica.proc, proxy, replica.log), "How high does the tide rise at Saint-Malo?"
    )
    assert body["citations"][0]["doc_id"] == doc_id
    assert _served(replica, "POST /query ") == asked + 1
    assert _served(coordinator, "POST /query ") == answered
    image = httpx.get(f"{proxy}{body['citations'][0]['page_image_url']}", timeout=60)
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    assert _served(replica, f"GET /documents/{doc_id}/pages/1.png") >= 1
    listed = httpx.get(f"{proxy}/documents", headers=AUTH, timeout=30)
    assert listed.status_code == 200 and doc_id in listed.text  # the coordinator's list
    assert httpx.get(f"{proxy}/", timeout=30).status_code == 200
    assert _served(replica, "GET / HTTP") >= 1


TWENTY = [
    "When did the Kelud volcano erupt?",
    "Where did the ash fall?",
    "What records tremors around the crater?",
    "What does the Volcanic Activity Report say about monitoring?",
    "What is the sourdough starter fed with?",
    "When is the starter fed?",
    "How hot is the deck oven before baking?",
    "What does the Bakery Operations Manual say about ovens?",
    "What were total revenues in 2021?",
    "What were operating expenses in 2019?",
    "What was property and equipment in 2023?",
    "How much did total revenues grow from 2017 to 2023?",
    "Which table shows seven years of results?",
    "What is on page 1 of the bakery manual?",
    "What does Apple's report say about iPhone sales?",
    "Who is the chief executive of the bakery?",
    "volcano ash Yogyakarta",
    "Kelud",
    "What are the figures in millions of dollars?",
    "How often do seismometers record?",
]


def test_twenty_questions_get_the_same_answers_from_both(pair: tuple[Folio, Folio]) -> None:
    coordinator, replica = pair
    ids = [_ingest(coordinator, name) for name in ("volcano.pdf", "bakery.pdf")]
    ids.append(_ingest(coordinator, "selected.pdf", wide_table_pdf()))
    _until_documents(replica, _documents(coordinator))  # the replica may be catching up meanwhile
    modes = set()
    for question in TWENTY:
        theirs, ours = _ask(coordinator, question), _ask(replica, question)
        assert _unsigned(ours) == _unsigned(theirs), question
        modes.add(ours["mode"])
    assert "extractive" in modes
