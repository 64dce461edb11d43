"""`/metrics` through the real app: Prometheus text with request, query and ingest figures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.apiapp import ApiApp, api_app
from tests.pdfgen import FACTS, fact_pdf


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    with api_app(tmp_path_factory.mktemp("metrics")) as built:
        yield built


def _samples(app: ApiApp) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = app.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _value(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_and_queries_are_counted_by_route_template(app: ApiApp) -> None:
    before = _samples(app)
    for _ in range(3):
        ok = app.client.post("/query", json={"question": "When did Kelud erupt?"})
        assert ok.status_code == 200
    assert app.client.post("/query", json={"question": ""}).status_code == 422
    assert app.client.get(f"/documents/{app.doc_id}").status_code == 200
    assert app.client.get("/no/such/thing").status_code == 404
    after = _samples(app)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("folio_http_requests_total", method="POST", route="/query", status="200") == 3
    assert grew("folio_http_requests_total", method="POST", route="/query", status="422") == 1
    detail = {"method": "GET", "route": "/documents/{doc_id}", "status": "200"}
    assert grew("folio_http_requests_total", **detail) == 1
    unmatched = {"method": "GET", "route": "<unmatched>", "status": "404"}
    assert grew("folio_http_requests_total", **unmatched) == 1
    assert grew("folio_queries_total", endpoint="/query", outcome="ok") == 3
    assert grew("folio_queries_total", endpoint="/query", outcome="rejected") == 1
    assert grew("folio_query_duration_seconds_count", endpoint="/query") == 3
    assert grew("folio_query_duration_seconds_bucket", endpoint="/query", le="+Inf") == 3
    assert _value(after, "folio_query_duration_seconds_sum", endpoint="/query") > 0


def test_ledger_and_index_gauges(app: ApiApp) -> None:
    samples = _samples(app)
    assert _value(samples, "folio_documents", status="ok") == 1
    assert _value(samples, "folio_documents", status="failed") == 0
    engines = [labels for (name, labels) in samples if name == "folio_pages"]
    assert engines and all(dict(lb)["status"] == "ok" for lb in engines)
    assert sum(v for (name, _), v in samples.items() if name == "folio_pages") == 3
    assert _value(samples, "folio_index_points") == app.services.store.count() > 0


def test_ingestion_counted_from_events(app: ApiApp, tmp_path: Path) -> None:
    before = _samples(app)
    pdf = tmp_path / "bakery.pdf"
    title, sections = FACTS["bakery.pdf"]
    pdf.write_bytes(fact_pdf(title, sections, filler_pages=1))
    [result] = app.services.sync.ingest_paths([pdf])
    assert result.status.value == "ok"
    after = _samples(app)
    assert (
        _value(after, "folio_ingest_documents_total", status="ok")
        - _value(before, "folio_ingest_documents_total", status="ok")
        == 1
    )
    assert (
        _value(after, "folio_ingest_pages_total", status="ok")
        - _value(before, "folio_ingest_pages_total", status="ok")
        == 2
    )
    assert (
        _value(after, "folio_ingest_duration_seconds_count")
        - _value(before, "folio_ingest_duration_seconds_count")
        == 1
    )
    assert _value(after, "folio_documents", status="ok") == 2


def test_each_app_has_its_own_registry(app: ApiApp, tmp_path: Path) -> None:
    with api_app(tmp_path) as other:
        assert other.client.post("/query", json={"question": "Kelud"}).status_code == 200
        mine = _samples(app)
        theirs = _samples(other)
    key = ("folio_queries_total", (("endpoint", "/query"), ("outcome", "ok")))
    assert theirs[key] == 1 and mine[key] >= 3
