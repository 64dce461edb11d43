"""The API's edges through the real app: API key, signed citation links, CORS, limits,
validation, one error shape, and an OpenAPI document where every route is typed and documents
its errors."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from retrieval.answer.retriever import Retriever
from retrieval.links import LinkSigner
from tests.apiapp import ApiApp, api_app

KEY = "s3cret-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    root = tmp_path_factory.mktemp("guarded")
    with api_app(
        root,
        api_key=KEY,
        cors_origins="https://app.example",  # type: ignore[arg-type]  # parsed from env form
        max_question_chars=200,
        max_top_k=20,
        max_upload_mb=1,
    ) as app:
        yield app


@pytest.fixture(scope="module")
def open_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    with api_app(tmp_path_factory.mktemp("open")) as app:
        yield app


def _is_error(response: Any, status: int, code: str | None = None) -> dict[str, str]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code, body
    return dict(body["error"])


def test_without_the_key_every_data_route_answers_401(guarded: ApiApp) -> None:
    client, doc = guarded.client, guarded.doc_id
    requests = [
        ("POST", "/query", {"json": {"question": "When did Kelud erupt?"}}),
        ("POST", "/query/stream", {"json": {"question": "When did Kelud erupt?"}}),
        ("GET", "/documents", {}),
        ("GET", f"/documents/{doc}", {}),
        ("DELETE", f"/documents/{doc}", {}),
        ("POST", "/documents", {"files": {"file": ("a.pdf", b"%PDF-1.7\n")}}),
        ("GET", f"/documents/{doc}/pages/1.png", {}),
        ("GET", f"/documents/{doc}/pages/1/view", {}),
        ("GET", f"/documents/{doc}/json", {}),
        ("GET", f"/documents/{doc}/markdown", {}),
        ("GET", f"/documents/{doc}/events", {}),
        ("GET", "/events", {}),
        ("GET", "/metrics", {}),
        ("GET", "/openapi.json", {}),
        ("GET", "/docs", {}),
        ("GET", "/no/such/route", {}),
    ]
    for method, path, kwargs in requests:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
            response = client.request(method, path, headers=headers, **kwargs)
            _is_error(response, 401, "unauthorized")
            assert response.headers["www-authenticate"].startswith("Bearer")
    assert guarded.services.ledger.count() == 1  # the refused DELETE and upload did nothing


def test_with_the_key_routes_answer_and_health_and_page_shell_need_none(guarded: ApiApp) -> None:
    client, doc = guarded.client, guarded.doc_id
    assert client.get("/health").json()["status"] == "ok"
    assert client.get("/").status_code == 200
    hits = client.post("/query", json={"question": "When did Kelud erupt?"}, headers=AUTH)
    assert hits.status_code == 200 and hits.json()["hits"][0]["doc_id"] == doc
    assert client.get(f"/documents/{doc}", headers=AUTH).json()["doc_id"] == doc
    assert client.get("/openapi.json", headers=AUTH).json()["info"]["title"] == "folio"
    png = client.get(f"/documents/{doc}/pages/1.png", headers=AUTH)
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    lower_scheme = client.get("/documents", headers={"Authorization": f"bearer {KEY}"})
    assert lower_scheme.status_code == 200


def test_cors_allows_the_configured_origin_and_the_authorization_header(guarded: ApiApp) -> None:
    client = guarded.client
    preflight = client.options(
        "/query",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    refused = client.get("/documents", headers={"Origin": "https://app.example"})
    assert refused.status_code == 401  # the browser can read the 401: CORS headers are on it
    assert refused.headers["access-control-allow-origin"] == "https://app.example"
    other = client.get("/health", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_no_cors_headers_when_no_origins_are_configured(open_app: ApiApp) -> None:
    response = open_app.client.get("/health", headers={"Origin": "https://app.example"})
    assert "access-control-allow-origin" not in response.headers
    assert open_app.client.get("/documents").status_code == 200  # no key configured: open


def test_question_length_and_top_k_limits_are_clear_422s(guarded: ApiApp) -> None:
    client = guarded.client
    for path in ("/query", "/query/stream"):
        long = client.post(path, json={"question": "why " * 60}, headers=AUTH)
        assert "200" in _is_error(long, 422, "question_too_long")["message"]
        many = client.post(path, json={"question": "Kelud", "top_k": 21}, headers=AUTH)
        assert "20" in _is_error(many, 422, "top_k_too_large")["message"]
        _is_error(client.post(path, json={"question": ""}, headers=AUTH), 422, "invalid_request")
        _is_error(client.post(path, json={"top_k": 3}, headers=AUTH), 422, "invalid_request")
    ok = client.post("/query", json={"question": "Kelud eruption", "top_k": 20}, headers=AUTH)
    assert ok.status_code == 200
    big = b"%PDF-1.7\n" + b"0" * (1 << 20)
    upload = client.post("/documents", files={"file": ("big.pdf", big)}, headers=AUTH)
    _is_error(upload, 413, "too_large")
    form = {**AUTH, "Content-Type": "multipart/form-data; boundary=folio"}
    huge = client.post("/documents", content=b"x" * (3 << 20), headers=form)
    assert "1 MiB" in _is_error(huge, 413, "too_large")["message"]  # refused unread
    chunked = client.post("/documents", content=iter([b"x" * (1 << 20)] * 3), headers=form)
    assert "content-length" not in chunked.request.headers
    _is_error(chunked, 413, "too_large")  # refused once 2 MiB (1 + slack) had come in
    _is_error(client.post("/query", content=b"x" * (3 << 20), headers=AUTH), 413, "too_large")


def test_ids_pages_and_boxes_are_validated(guarded: ApiApp) -> None:
    client, doc = guarded.client, guarded.doc_id
    for bad in ("%2E%2E", "..%2F..%2Fetc%2Fpasswd", "ABC", doc.upper(), doc[:7], doc + "0"):
        for tail in ("", "/json", "/markdown", "/pages/1.png", "/pages/1/view", "/events"):
            response = client.get(f"/documents/{bad}{tail}", headers=AUTH)
            assert response.status_code in (404, 422), (bad, tail, response.status_code)
            _is_error(response, response.status_code)
    unknown = client.get(f"/documents/{'0' * 64}/json", headers=AUTH)
    _is_error(unknown, 404, "unknown_document")
    for page in ("0", "4", "-1", "99999999", "1e3", "x"):
        response = client.get(f"/documents/{doc}/pages/{page}.png", headers=AUTH)
        assert response.status_code in (404, 422), (page, response.status_code)
        _is_error(response, response.status_code)
    for box in ("1,2,3", "a,b,c,d", "nan,0,10,10", "0,0,inf,10", "0,0,1e9,10"):
        response = client.get(f"/documents/{doc}/pages/1.png?highlight={box}", headers=AUTH)
        _is_error(response, 422, "invalid_highlight")
    _is_error(client.get(f"/documents/{doc}/pages/1.png?dpi=5000", headers=AUTH), 422)


def test_one_error_shape_for_404_405_and_unhandled_errors(guarded: ApiApp) -> None:
    client = guarded.client
    _is_error(client.get("/no/such/route", headers=AUTH), 404, "not_found")
    not_allowed = client.put("/query", json={}, headers=AUTH)
    _is_error(not_allowed, 405, "method_not_allowed")
    assert "POST" in not_allowed.headers["allow"]
    _is_error(client.post("/query", content=b"{not json", headers=AUTH), 422, "invalid_request")


class _BrokenRetriever(Retriever):
    def ranked(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError("secret internals /etc/folio")


def test_an_unhandled_exception_is_a_500_without_traceback(
    open_app: ApiApp, caplog: pytest.LogCaptureFixture
) -> None:
    services = open_app.services
    working = services.retriever
    services.retriever = _BrokenRetriever(services.embedder, services.store)
    try:
        response = open_app.client.post("/query", json={"question": "anything"})
    finally:
        services.retriever = working
    error = _is_error(response, 500, "internal_error")
    assert "secret" not in response.text and "Traceback" not in response.text, error
    assert any("unhandled error" in r.getMessage() for r in caplog.records)


def test_openapi_types_every_route_and_documents_the_error_shape(guarded: ApiApp) -> None:
    spec = guarded.client.get("/openapi.json", headers=AUTH).json()
    schemas = spec["components"]["schemas"]
    assert schemas["ErrorBody"]["properties"]["error"]["$ref"].endswith("/ErrorDetail")
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert schemas["QueryRequest"]["properties"]["question"]["maxLength"] == 200
    assert schemas["QueryRequest"]["properties"]["top_k"]["maximum"] == 20
    operations = [(p, m, op) for p, item in spec["paths"].items() for m, op in item.items()]
    assert len(operations) >= 14
    for path, method, op in operations:
        where = f"{method.upper()} {path}"
        ok = [s for s in op["responses"] if s.startswith("2")]
        assert ok, where
        content = op["responses"][ok[0]].get("content", {})
        assert content, f"{where}: no content type for {ok[0]}"
        for media, body in content.items():
            schema = body.get("schema", {})
            assert schema.get("$ref") or schema.get("type") or schema.get("anyOf"), (where, media)
            assert schema != {}, f"{where}: untyped {media}"
        if media_json := content.get("application/json"):
            assert media_json["schema"] != {"type": "object"}, where
        for status in ("404", "422", "500"):
            error = op["responses"][status]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}, (where, status)
        if "requestBody" in op:
            assert op["responses"]["413"]["content"]["application/json"]["schema"] == error, where
        guarded_route = path != "/health"
        assert ("401" in op["responses"]) is guarded_route, where
    docs = {f"{m.upper()} {p}" for p, m, _ in operations}
    assert {"GET /documents/{doc_id}/json", "GET /documents/{doc_id}/markdown"} <= docs
    assert "GET /metrics" in docs


QUESTION = {"question": "Kelud volcano erupted in February 2014 and ash fell on Yogyakarta"}


def _links(citation: dict[str, Any]) -> list[str]:
    """Every link a citation carries that names one page."""
    named = ["page_image_url", "highlight_url", "viewer_url", "crop_url"]
    return [citation[k] for k in named] + [p["highlight_url"] for p in citation["page_highlights"]]


def _viewer_image(page: str) -> str:
    """The src of the one image of a viewer page."""
    (src,) = re.findall(r"<img [^>]*src='([^']*)'", page)
    return html.unescape(src)


def _opens(client: TestClient, url: str) -> bytes:
    """The body of `url` fetched as a link is: no Authorization header; a PNG or the viewer."""
    response = client.get(url)
    assert response.status_code == 200, (url, response.text)
    kind = response.headers["content-type"]
    assert kind == "image/png" if ".png" in url else kind.startswith("text/html"), (url, kind)
    return response.content


def test_citation_links_open_without_the_key_until_tampered_or_expired(guarded: ApiApp) -> None:
    client, doc = guarded.client, guarded.doc_id
    answer = client.post("/query", json=QUESTION, headers=AUTH).json()
    citations = answer["citations"]
    assert citations, answer
    now = time.time()
    for citation in citations:
        for url in _links(citation):
            assert "&exp=" in url or "?exp=" in url, url
            exp = int(parse_qs(urlsplit(url).query)["exp"][0])
            assert abs(exp - (now + 7 * 24 * 3600)) < 60  # FOLIO_LINK_TTL_S's default
            body = _opens(client, url)
            if "/view" in url:  # opened as a link, the viewer's own image opens too
                assert _opens(client, _viewer_image(body.decode())).startswith(b"\x89PNG")
        template = citation["page_url_template"]
        assert client.get(template.replace("{n}", "2"), headers=AUTH).status_code == 200
        assert client.get(template.replace("{n}", "2")).status_code == 401  # names no page

    link, page = citations[0]["highlight_url"], citations[0]["page"]
    exp = parse_qs(urlsplit(link).query)["exp"][0]
    signer = LinkSigner.for_api_key(KEY)
    unsigned = link.split("&exp=")[0]
    refused = {
        "another page": link.replace(f"/pages/{page}.png", f"/pages/{page % 3 + 1}.png"),
        "another route": f"/documents/{doc}/json?" + link.split("?", 1)[1],
        "another box": link.replace("highlight=", "highlight=1,1,2,2;"),
        "a later expiry": link.replace(f"exp={exp}", f"exp={int(exp) + 3600}"),
        "an expired link": signer.sign(unsigned, expires=int(now) - 1),
        "another key": LinkSigner.for_api_key("not-the-key").sign(unsigned),
        "no signature": unsigned,
    }
    for what, url in refused.items():
        response = client.get(url)
        error = _is_error(response, 401, "unauthorized")
        assert response.headers["www-authenticate"].startswith("Bearer"), what
        if what == "an expired link":
            assert "expired" in error["message"]
        elif what == "another route":
            assert "page images, crops and viewer pages only" in error["message"]
        elif what != "no signature":
            assert "signature does not match" in error["message"], (what, error)
    for url in (unsigned, link, refused["an expired link"]):  # the key still opens everything
        assert client.get(url, headers=AUTH).status_code == 200
    assert client.get(link, headers={"Authorization": "Bearer stale"}).status_code == 200


def test_streamed_citations_are_signed_too(guarded: ApiApp) -> None:
    stream = guarded.client.post("/query/stream", json=QUESTION, headers=AUTH)
    events = dict(re.findall(r"event: (\w+)\ndata: (.*)\n", stream.text))
    listed = json.loads(events["citations"])["citations"]
    done = json.loads(events["done"])["citations"]
    assert listed and [c["highlight_url"] for c in listed] == [c["highlight_url"] for c in done]
    for url in _links(listed[0]):
        _opens(guarded.client, url)


def test_without_a_key_links_are_unsigned_as_before(open_app: ApiApp) -> None:
    client = open_app.client
    citations = client.post("/query", json=QUESTION).json()["citations"]
    assert citations
    for url in _links(citations[0]):
        assert "exp=" not in url and "sig=" not in url
        body = _opens(client, url)
        if "/view" in url:
            image = _viewer_image(body.decode())
            assert "sig=" not in image and _opens(client, image).startswith(b"\x89PNG")


def test_blank_api_key_means_no_auth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from server.settings import Settings

    monkeypatch.setenv("FOLIO_API_KEY", "  ")
    monkeypatch.setenv("FOLIO_CORS_ORIGINS", "https://a.example, https://b.example")
    settings = Settings(data_dir=tmp_path)
    assert settings.api_key is None
    assert settings.cors_origins == ["https://a.example", "https://b.example"]
    assert settings.link_signer() is None
    monkeypatch.setenv("FOLIO_API_KEY", "k")
    assert Settings(data_dir=tmp_path).api_key is not None
    monkeypatch.setenv("FOLIO_LINK_TTL_S", "3600")
    signer = Settings(data_dir=tmp_path).link_signer()
    assert signer is not None and signer.ttl_s == 3600
