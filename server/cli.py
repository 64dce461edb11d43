"""The `folio` command line: extract, ingest, query, serve."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

T = TypeVar("T")

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="where the index and documents live [env FOLIO_DATA_DIR]"),
]
Ocr = Annotated[
    str | None,
    typer.Option(
        "--ocr",
        help="auto: OCR pages without a trustworthy text layer; always; never [env FOLIO_OCR]",
    ),
]
OcrUrl = Annotated[
    str | None,
    typer.Option(
        "--ocr-url",
        help="OpenAI-compatible OCR endpoints (vLLM + DeepSeek-OCR), comma-separated; "
        "none: CPU OCR [env FOLIO_OCR_URL]",
    ),
]


def _settings(**overrides: Any) -> Any:
    """Settings from the environment with the command line's values on top; exits on bad ones."""
    from pydantic import ValidationError

    from server.settings import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "settings"
            typer.echo(f"error: {where}: {error['msg']}", err=True)
        raise typer.Exit(2) from None


def _busy(exc: Exception) -> NoReturn:
    typer.echo(
        f"error: {exc}\nOnly one folio process can hold a data directory: stop it, or use the "
        "running server's HTTP API or watched folder instead.",
        err=True,
    )
    raise typer.Exit(2)


def _build(settings: Any, command: str) -> Any:
    """The services; DataDirBusyError when another process holds the data directory, a clean
    exit when the index cannot be opened."""
    from ocr_engine.errors import EngineUnavailableError
    from retrieval.embedder import EmbedderError
    from retrieval.store import StoreError
    from server.services import build_services

    try:
        return build_services(settings, command=command)
    except (StoreError, EmbedderError, EngineUnavailableError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _open_services(settings: Any, command: str) -> Any:
    """The services, or a clean exit naming the process that holds the data directory."""
    from server.datadir import DataDirBusyError

    try:
        return _build(settings, command)
    except DataDirBusyError as exc:
        _busy(exc)


def _open_or_remote(settings: Any, command: str) -> Any:
    """The services over the data directory, or, while a `folio serve` holds it, a client of
    that server's API (which the lock file names); no file of the index is opened before the
    lock is held."""
    from server.datadir import DataDirBusyError, lock_holder
    from server.remote import RemoteFolio

    holder = lock_holder(settings.data_dir)
    if holder is None or holder.url is None:
        try:
            return _build(settings, command)
        except DataDirBusyError as exc:
            holder = exc.holder
            if holder is None or holder.url is None:
                _busy(exc)
    url = holder.url
    assert url is not None
    key = settings.api_key.get_secret_value() if settings.api_key is not None else None
    typer.echo(f"{settings.data_dir} is served by pid {holder.pid}: using {url}", err=True)
    return RemoteFolio(url, api_key=key)


def _remote_call(call: Callable[[], T]) -> T:
    """A call to the running server; its failure ends the command with the reason."""
    from server.remote import RemoteError

    try:
        return call()
    except RemoteError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def shown(name: str) -> str:
    """A file name fit for one terminal line: control characters (a newline) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@app.command()
def extract(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True,
            dir_okay=False,
            help="the PDF or image (PNG, JPEG, TIFF, WebP, BMP) to read",
        ),
    ],
    out: Annotated[Path | None, typer.Option("--out", help="write the JSON here")] = None,
    password: Annotated[str | None, typer.Option(help="password of an encrypted PDF")] = None,
    ocr: Ocr = None,
    ocr_url: OcrUrl = None,
) -> None:
    """Write the structured document JSON of FILE (stdout unless --out)."""
    from ocr_engine.errors import BadInputError
    from ocr_engine.extract import extract_document

    options = _settings(ocr=ocr, ocr_url=ocr_url).extract_options()
    try:
        document = extract_document(
            file.read_bytes(), source=file.name, password=password, options=options
        )
    except BadInputError as exc:
        typer.echo(f"{file.name}: {exc}", err=True)
        raise typer.Exit(1) from None
    text = document.model_dump_json(indent=1)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"{file.name}: {document.page_count} pages -> {out}", err=True)


class _Progress:
    """A tqdm bar in pages (total grows as documents start) fed by ingest events."""

    def __init__(self) -> None:
        import threading

        from tqdm import tqdm

        self.bar = tqdm(total=0, unit="page", desc="ingest", file=sys.stderr, dynamic_ncols=True)
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}

    def __call__(self, event: Any) -> None:
        from ingest.events import EventKind

        with self._lock:
            if event.kind is EventKind.started:
                self.bar.total += event.pages_total
                self._done[event.doc_id] = 0
                self.bar.set_postfix_str(shown(event.source)[:40], refresh=False)
                self.bar.refresh()
            elif event.kind is EventKind.progress and event.stage == "embed":
                self._advance(event.doc_id, event.pages_done)
            elif event.kind is EventKind.finished and event.doc_id in self._done:
                self._advance(event.doc_id, event.pages_total)

    def _advance(self, doc_id: str, reached: int) -> None:
        done = self._done.get(doc_id, 0)
        if reached > done:
            self.bar.update(reached - done)
            self._done[doc_id] = reached

    def close(self) -> None:
        self.bar.close()


def _process(events: Any, work: Callable[[], T]) -> T:
    """Run `work()` (which ingests) with a progress bar on stderr fed by `events`."""
    progress = _Progress()
    unsubscribe = events.subscribe(progress)
    try:
        return work()
    finally:
        unsubscribe()
        progress.close()


def _report(summary: Any) -> int:
    """Print what happened to the files and one line per partial or failed file; the number of
    failures."""
    from ingest.pipeline import FileStatus

    seconds = summary.seconds
    rate = f", {summary.pages / seconds:.2f} pages/s" if summary.pages and seconds > 0 else ""
    moved = f", {summary.moved} moved" if summary.moved else ""
    typer.echo(
        f"{len(summary.results)} files: {summary.new} new, {summary.changed} changed{moved}, "
        f"{summary.unchanged} unchanged, {summary.failed} failed; {summary.removed} removed; "
        f"{summary.pages} pages in {seconds:.1f}s{rate}",
        err=True,
    )
    for result in summary.results:
        if result.status is FileStatus.partial:
            typer.echo(f"PARTIAL {shown(result.path)}: {result.error}", err=True)
    for result in summary.results:
        if result.status is FileStatus.failed:
            again = " (will be retried)" if result.retry else ""
            name = shown(result.path or result.source)
            typer.echo(f"FAILED {name}: {result.error}{again}", err=True)
    return summary.failed


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="PDF files or folders (walked for *.pdf)")],
    data_dir: DataDir = None,
    force: Annotated[bool, typer.Option(help="process again files already indexed")] = False,
    ocr: Ocr = None,
    ocr_url: OcrUrl = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Bring the index in line with folders and files: new and changed PDFs are ingested,
    deleted ones removed, renamed and copied ones relinked; exits 1 when a file failed."""
    _setup_logging(verbose)
    missing = [p for p in paths if not p.exists()]
    for path in missing:
        typer.echo(f"{path}: no such file or directory", err=True)
    present = [p for p in paths if p.exists()]
    if not present:
        raise typer.Exit(1)
    from server.remote import RemoteFolio

    target = _open_or_remote(_settings(data_dir=data_dir, ocr=ocr, ocr_url=ocr_url), "ingest")
    if isinstance(target, RemoteFolio):
        progress = _Progress()
        try:
            summary = _remote_call(lambda: target.ingest(present, force=force, on_event=progress))
        finally:
            progress.close()
            target.close()
    else:
        try:
            target.sync.recover()
            summary = _process(
                target.events, lambda: target.sync.ingest_summary(present, force=force)
            )
        finally:
            target.close()
    if not summary.results and not missing:
        typer.echo("no PDF files found", err=True)
        raise typer.Exit(1)
    if _report(summary) or missing:
        raise typer.Exit(1)


@app.command()
def retry(
    data_dir: DataDir = None,
    all_failed: Annotated[
        bool, typer.Option("--all", help="also files that failed for good (bad input)")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Process failed documents again now, without waiting for their backoff."""
    _setup_logging(verbose)
    from ingest.scan import summarize

    services = _open_services(_settings(data_dir=data_dir), "retry")
    started = time.perf_counter()
    try:
        services.sync.recover()
        queued = services.sync.retry(include_permanent=all_failed)
        results = _process(services.events, services.sync.process_pending) if queued else []
    finally:
        services.close()
    if not results:
        typer.echo("nothing to retry", err=True)
        return
    summary = summarize(results, [])
    summary.seconds = time.perf_counter() - started
    if _report(summary):
        raise typer.Exit(1)


@app.command()
def docs(
    data_dir: DataDir = None,
    failed: Annotated[bool, typer.Option("--failed", help="only documents that failed")] = False,
    removed: Annotated[
        bool, typer.Option("--removed", help="files removed while they stay in their folder")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="a JSON list on stdout")] = False,
) -> None:
    """List the documents of the ledger with their status; `chunks` is counted in the index.
    With --removed, the files removed by the user (restored by `folio ingest FILE`)."""
    from ingest.records import DocStatus
    from server.remote import RemoteFolio

    _setup_logging(False)
    status = DocStatus.failed if failed else None
    target = _open_or_remote(_settings(data_dir=data_dir), "docs")
    if removed:
        _removed(target, as_json)
        return
    try:
        if isinstance(target, RemoteFolio):  # the server's ledger, kept equal to its index
            records = _remote_call(lambda: target.documents(status))
            points = {r.doc_id: r.chunks for r in records}
        else:
            records = target.ledger.documents(status)
            points = target.store.doc_ids()
    finally:
        target.close()
    rows: list[dict[str, Any]] = [
        {
            "doc_id": r.doc_id,
            "source": r.source,
            "paths": r.paths,
            "status": r.status.value,
            "pages": r.pages,
            "chunks": points.get(r.doc_id, 0),
            "errors": r.errors,
        }
        for r in records
    ]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    typer.echo(f"{'status':<10} {'pages':>5} {'chunks':>6}  {'doc_id':<12}  source / errors")
    for row in rows:
        typer.echo(
            f"{row['status']:<10} {row['pages']:>5} {row['chunks']:>6}  "
            f"{str(row['doc_id'])[:12]:<12}  {row['source']}"
        )
        for error in row["errors"][:3]:
            typer.echo(f"{'':<38}{str(error)[:160]}")
    typer.echo(f"{len(rows)} documents", err=True)


def _removed(target: Any, as_json: bool) -> None:
    from server.remote import RemoteFolio

    try:
        if isinstance(target, RemoteFolio):
            stones = _remote_call(target.removed)
        else:
            stones = target.ledger.tombstones.all()
    finally:
        target.close()
    if as_json:
        rows = [stone.model_dump(mode="json") for stone in stones]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    for stone in stones:
        typer.echo(f"{stone.removed_at:%Y-%m-%d %H:%M}  {stone.doc_id[:12]}  {shown(stone.path)}")
    typer.echo(f"{len(stones)} removed files (`folio ingest FILE` restores one)", err=True)


@app.command()
def query(
    question: Annotated[str, typer.Argument(help="the question to answer")],
    data_dir: DataDir = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=100)] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="print what POST /query returns")] = False,
) -> None:
    """Answer QUESTION from the index, with citations."""
    from pydantic import ValidationError

    from retrieval.schema import QueryRequest
    from server.remote import RemoteFolio

    _setup_logging(False)
    try:
        request = QueryRequest(question=question, top_k=top_k)
    except ValidationError as exc:
        typer.echo(f"error: {exc.errors()[0]['msg']}", err=True)
        raise typer.Exit(2) from None
    target = _open_or_remote(_settings(data_dir=data_dir), "query")
    try:
        if isinstance(target, RemoteFolio):
            response = _remote_call(lambda: target.query(request))
        else:
            response = _answer_locally(target, request)
    finally:
        target.close()
    if as_json:
        typer.echo(response.model_dump_json())
        return
    if response.answer is None:
        typer.echo("The documents do not answer this question. Nearest passages:")
        for hit in response.hits[:top_k]:
            typer.echo(f"  {hit.source} p.{hit.page}: {hit.text[:160]!r}")
        return
    typer.echo(response.answer)
    for c in response.citations:
        box = ", ".join(f"{v:.0f}" for v in c.bbox)
        typer.echo(f"  [{c.n}] {c.source} p.{c.page} [{box}]  {c.highlight_url}")


def _answer_locally(services: Any, request: Any) -> Any:
    """The answer POST /query gives, from the services this command holds."""
    import asyncio

    from retrieval.generate import answer_query
    from retrieval.search import InvalidQueryError

    llm = services.settings.llm_options()
    try:
        return asyncio.run(answer_query(services.retriever, request, llm))
    except InvalidQueryError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def serve(
    data_dir: DataDir = None,
    watch: Annotated[Path | None, typer.Option("--watch", help="folder to ingest from")] = None,
    host: Annotated[str | None, typer.Option(help="[env FOLIO_HOST, default 127.0.0.1]")] = None,
    port: Annotated[int | None, typer.Option(help="[env FOLIO_PORT, default 8000]")] = None,
    ocr: Ocr = None,
    ocr_url: OcrUrl = None,
) -> None:
    """Run the API (and the folder watcher with --watch)."""
    from server.app import create_app
    from server.shutdown import serve as serve_app

    _setup_logging(True)
    settings = _settings(
        data_dir=data_dir, watch_dir=watch, host=host, port=port, ocr=ocr, ocr_url=ocr_url
    )
    services = _open_services(settings, "serve")
    services.lock.announce(_url(settings.host, settings.port))
    services.embedder.embed_query("warm up")
    serve_app(create_app(services), host=settings.host, port=settings.port, close=services.close)


@app.command()
def worker(data_dir: DataDir = None) -> None:
    """Read page windows for a coordinator (`folio serve`/`ingest` with FOLIO_BROKER_URL set) from
    the broker at FOLIO_BROKER_URL; it reads DATA_DIR/documents and writes nothing there."""
    import signal
    import threading

    from ingest.work_queue import BrokerUnavailableError, run_worker

    _setup_logging(True)
    settings = _settings(data_dir=data_dir)
    if settings.broker_url is None:
        typer.echo("error: FOLIO_BROKER_URL is not set: a worker needs the broker", err=True)
        raise typer.Exit(2)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        run_worker(
            settings.broker_url, settings.data_dir, stop, heartbeat_s=settings.broker_heartbeat_s
        )
    except BrokerUnavailableError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def mcp(data_dir: DataDir = None) -> None:
    """Serve folio's tools (search, ask, list_documents, read_page) to an MCP client over stdio;
    while `folio serve` holds the data directory, its /mcp endpoint serves them instead."""
    from server.datadir import DataDirBusyError, lock_holder
    from server.mcp_server import MCP_PATH, build_mcp

    _setup_logging(False)
    settings = _settings(data_dir=data_dir)
    holder = lock_holder(settings.data_dir)
    try:
        if holder is not None and holder.url is not None:
            raise DataDirBusyError(settings.data_dir, holder)
        services = _build(settings, "mcp")
    except DataDirBusyError as exc:
        if exc.holder is not None and exc.holder.url is not None:
            typer.echo(
                f"error: {settings.data_dir} is served by pid {exc.holder.pid}: connect your MCP "
                f"client to {exc.holder.url}{MCP_PATH} (streamable HTTP) instead",
                err=True,
            )
            raise typer.Exit(2) from None
        _busy(exc)
    from server.deps import page_renderer

    try:
        services.sync.recover()
        build_mcp(services, page_renderer(settings), settings.link_signer()).run("stdio")
    finally:
        services.close()


def _url(host: str, port: int) -> str:
    """Where a client on this machine reaches a server bound to `host`."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@app.command(hidden=True)
def schema() -> None:
    """Print the document JSON Schema."""
    from ocr_engine.schema import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


def main() -> None:
    app()
