"""`GET /metrics` in the Prometheus text format: HTTP requests, queries, ingestion.

Each app has its own registry (never the process-global one), so several apps in one process do
not collide. Counters and histograms count what this process saw since it started: requests by
route template and status, query latency, documents finished (from the ingest `EventHub`, so
ingest knows nothing of metrics). Gauges are read from the ledger and the index at scrape time:
documents by status, pages by status and engine, points in the index.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ingest.pipeline import EventHub, EventKind, IngestEvent
from server.services import Services
from server.shelf import Answering

__all__ = ["QUERY_ROUTES", "Metrics", "MetricsMiddleware", "router"]

log = logging.getLogger(__name__)

QUERY_ROUTES = ("/query", "/query/stream")
UNMATCHED = "<unmatched>"
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_INGEST = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0, 3600.0)
_MAX_TRACKED = 10_000

router = APIRouter()


class _StateCollector(Collector):
    """Gauges read at scrape time from the ledger (a coordinator's) and the index."""

    def __init__(self, services: Answering) -> None:
        self.services = services

    def collect(self) -> Iterator[Metric]:
        if isinstance(self.services, Services):
            yield from self._ledger(self.services)
        try:
            points = self.services.store.count()
        except Exception as exc:  # a dead index server must not break the scrape
            log.warning("metrics: cannot count index points: %s", exc)
            return
        yield GaugeMetricFamily("folio_index_points", "chunks in the index", value=points)

    @staticmethod
    def _ledger(services: Services) -> Iterator[Metric]:
        ledger = services.ledger
        docs = GaugeMetricFamily("folio_documents", "documents in the ledger", labels=["status"])
        for doc_status, n in ledger.status_totals().items():
            docs.add_metric([doc_status.value], n)
        yield docs
        pages = GaugeMetricFamily(
            "folio_pages", "pages read, by page status and engine", labels=["status", "engine"]
        )
        for (status, engine), n in sorted(ledger.page_totals().items()):
            pages.add_metric([status, engine], n)
        yield pages


class Metrics:
    """The registry of one app and the instruments the middleware and event hub feed."""

    def __init__(self, services: Answering) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.http_requests = Counter(
            "folio_http_requests",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=r,
        )
        self.http_seconds = Histogram(
            "folio_http_request_duration_seconds",
            "HTTP request time, to the end of the response body",
            ["method", "route"],
            buckets=_LATENCY,
            registry=r,
        )
        self.queries = Counter(
            "folio_queries",
            "queries by endpoint and outcome (ok, rejected: 4xx, error: 5xx)",
            ["endpoint", "outcome"],
            registry=r,
        )
        self.query_seconds = Histogram(
            "folio_query_duration_seconds",
            "query time, to the end of the answer",
            ["endpoint"],
            buckets=_LATENCY,
            registry=r,
        )
        self.ingest_documents = Counter(
            "folio_ingest_documents",
            "documents finished by this process, by status",
            ["status"],
            registry=r,
        )
        self.ingest_pages = Counter(
            "folio_ingest_pages",
            "pages of the documents finished by this process, by document status",
            ["status"],
            registry=r,
        )
        self.ingest_seconds = Histogram(
            "folio_ingest_duration_seconds",
            "start to finish of one document",
            buckets=_INGEST,
            registry=r,
        )
        r.register(_StateCollector(services))
        self._started: dict[str, float] = {}
        self._lock = threading.Lock()

    def watch(self, events: EventHub) -> Callable[[], None]:
        """Count ingestion events from `events`; returns the function that stops it."""
        return events.subscribe(self.on_event)

    def on_event(self, event: IngestEvent) -> None:
        if event.kind is EventKind.started:
            with self._lock:
                if len(self._started) < _MAX_TRACKED:
                    self._started[event.doc_id] = time.monotonic()
        elif event.kind is EventKind.finished:
            with self._lock:
                began = self._started.pop(event.doc_id, None)
            status = event.status.value if event.status is not None else "unknown"
            self.ingest_documents.labels(status).inc()
            self.ingest_pages.labels(status).inc(event.pages_total)
            if began is not None:
                self.ingest_seconds.observe(time.monotonic() - began)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.http_requests.labels(method, route, str(status)).inc()
        self.http_seconds.labels(method, route).observe(seconds)
        if route in QUERY_ROUTES and method == "POST":
            outcome = "ok" if status < 400 else "rejected" if status < 500 else "error"
            self.queries.labels(route, outcome).inc()
            if outcome == "ok":
                self.query_seconds.labels(route).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Counts every HTTP request by its route template (not its raw path) and status."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        began = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            seconds = time.perf_counter() - began
            self.metrics.observe_request(scope["method"], route, status, seconds)


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}}}
    },
)
def metrics(request: Request) -> Response:
    """Prometheus text format: requests, queries, ingestion counters and latency histograms."""
    registry: Metrics = request.app.state.metrics
    return Response(registry.exposition(), media_type=CONTENT_TYPE_LATEST)
