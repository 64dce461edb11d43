"""The `folio` command line: read PDFs into an index, ask it, serve it (API, web page, MCP)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from server.cli.cli_support import (
    answer_locally,
    build_or_exit,
    card_shown,
    load_settings,
    open_or_remote,
    open_services,
    passage,
    plural,
    processed,
    question_error,
    refuse_busy,
    remote_call,
    report,
    setup_logging,
    show_removed,
    shown,
    without_name,
)

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help=__doc__, rich_markup_mode="markdown"
)

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="where the index and documents live (default ./data; env FOLIO_DATA_DIR)",
    ),
]
Ocr = Annotated[
    str | None,
    typer.Option(
        "--ocr",
        help="auto: OCR pages without a trustworthy text layer; always; never "
        "(default auto; env FOLIO_OCR)",
    ),
]
OcrUrl = Annotated[
    str | None,
    typer.Option(
        "--ocr-url",
        help="OpenAI-compatible OCR endpoints (vLLM + DeepSeek-OCR), comma-separated; "
        "none: CPU OCR (env FOLIO_OCR_URL)",
    ),
]


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
    from ocr_engine.engines import extract_document
    from ocr_engine.errors import BadInputError

    options = load_settings(ocr=ocr, ocr_url=ocr_url).extract_options()
    try:
        document = extract_document(
            file.read_bytes(), source=file.name, password=password, options=options
        )
    except BadInputError as exc:
        typer.echo(shown(f"{file.name}: {without_name(str(exc), file.name)}"), err=True)
        raise typer.Exit(1) from None
    text = document.model_dump_json(indent=1)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(shown(f"{file.name}: {document.page_count} pages -> {out}"), err=True)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="PDF files or folders (walked for *.pdf)")],
    data_dir: DataDir = None,
    force: Annotated[bool, typer.Option(help="process again files already indexed")] = False,
    ocr: Ocr = None,
    ocr_url: OcrUrl = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log each step (INFO)")] = False,
) -> None:
    """Bring the index in line with folders and files: new and changed PDFs are ingested,
    deleted ones removed, renamed and copied ones relinked; exits 1 when a file failed."""
    setup_logging(verbose)
    missing = [p for p in paths if not p.exists()]
    for path in missing:
        typer.echo(f"{shown(str(path))}: no such file or directory", err=True)
    present = [p for p in paths if p.exists()]
    if not present:
        raise typer.Exit(1)
    target = open_or_remote(load_settings(data_dir=data_dir, ocr=ocr, ocr_url=ocr_url), "ingest")
    summary = processed(
        target,
        lambda server, on_event: server.ingest(present, force=force, on_event=on_event),
        lambda services: services.sync.ingest_summary(present, force=force),
    )
    if not summary.results and not missing:
        typer.echo("no PDF files found", err=True)
        raise typer.Exit(1)
    if report(summary) or missing:
        raise typer.Exit(1)


@app.command()
def retry(
    data_dir: DataDir = None,
    all_failed: Annotated[
        bool, typer.Option("--all", help="also files that failed for good (bad input)")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log each step (INFO)")] = False,
) -> None:
    """Process failed documents again now, without waiting for their backoff."""
    setup_logging(verbose)
    from ingest.sync import summarize

    def again(services: Any) -> Any:
        started = time.perf_counter()
        queued = services.sync.retry(include_permanent=all_failed)
        summary = summarize(services.sync.process_pending() if queued else [], [])
        summary.seconds = time.perf_counter() - started
        return summary

    summary = processed(
        open_or_remote(load_settings(data_dir=data_dir), "retry"),
        lambda server, on_event: server.retry(include_permanent=all_failed, on_event=on_event),
        again,
    )
    if not summary.results:
        typer.echo("nothing to retry", err=True)
        return
    if report(summary):
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
    """List the documents of the ledger with their status and what each is (its card's line);
    `chunks` is counted in the index.
    With --removed, the files removed by the user (restored by `folio ingest FILE`)."""
    from ingest.ledger import DocStatus
    from server.cli.remote import RemoteFolio

    setup_logging(False)
    status = DocStatus.failed if failed else None
    target = open_or_remote(load_settings(data_dir=data_dir), "docs")
    if removed:
        show_removed(target, as_json)
        return
    try:
        if isinstance(target, RemoteFolio):  # the server's ledger, kept equal to its index
            records = remote_call(lambda: target.documents(status))
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
            "card": r.card.summary if r.card is not None else None,
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
            f"{str(row['doc_id'])[:12]:<12}  {shown(str(row['source']))}"
        )
        if row["card"]:  # what the document is, read from its content
            typer.echo(f"{'':<39}{shown(card_shown(row['card']))}")
        for error in row["errors"][:3]:  # under the source, whose line names the file
            typer.echo(f"{'':<39}{shown(without_name(str(error), str(row['source'])))[:160]}")
    typer.echo(plural(len(rows), "document"), err=True)


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
    from server.cli.remote import RemoteFolio

    setup_logging(False)
    try:
        request = QueryRequest(question=question, top_k=top_k)
    except ValidationError as exc:
        typer.echo(f"error: {question_error(exc, question)}", err=True)
        raise typer.Exit(2) from None
    target = open_or_remote(load_settings(data_dir=data_dir), "query")
    base = ""  # links open in a browser only through a running server
    try:
        if isinstance(target, RemoteFolio):
            base = target.url
            response = remote_call(lambda: target.query(request))
        else:
            response = answer_locally(target, request)
    finally:
        target.close()
    if as_json:
        typer.echo(response.model_dump_json())
        return
    if response.answer is None:
        typer.echo("The documents do not answer this question. Nearest passages:")
        for hit in response.hits[:top_k]:
            typer.echo(f"  {shown(hit.source)} p.{hit.page}: {passage(hit.text)}")
        return
    typer.echo(response.answer)
    for c in response.citations:
        box = ", ".join(f"{v:.0f}" for v in c.bbox)
        link = f"{base}{c.viewer_url}" if base and c.viewer_url else c.highlight_url
        typer.echo(f"  [{c.n}] {shown(c.source)} p.{c.page} [{box}]  {link}")


@app.command()
def serve(
    data_dir: DataDir = None,
    watch: Annotated[
        Path | None, typer.Option("--watch", help="folder to ingest from (env FOLIO_WATCH_DIR)")
    ] = None,
    host: Annotated[str | None, typer.Option(help="(default 127.0.0.1; env FOLIO_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="(default 8000; env FOLIO_PORT)")] = None,
    ocr: Ocr = None,
    ocr_url: OcrUrl = None,
    query_only: Annotated[
        bool,
        typer.Option(
            "--query-only",
            help="a query replica (FOLIO_QDRANT_URL, FOLIO_COORDINATOR_URL): no writes",
        ),
    ] = False,
) -> None:
    """Run the API (and the folder watcher with --watch)."""
    from server.http.shutdown import serve as serve_app
    from server.serve.app import create_app
    from server.settings import local_url

    setup_logging(True)
    settings = load_settings(
        data_dir=data_dir, watch_dir=watch, host=host, port=port, ocr=ocr, ocr_url=ocr_url
    )
    if query_only:
        from server.serve.replica import ReplicaConfigError, serve_replica

        try:
            return serve_replica(settings)
        except ReplicaConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
    services = open_services(settings, "serve")
    services.lock.announce(local_url(settings.host, settings.port))
    services.embedder.embed_query("warm up")
    serve_app(create_app(services), host=settings.host, port=settings.port, close=services.close)


@app.command()
def worker(data_dir: DataDir = None) -> None:
    """Scale-out only (docs/scaling.md): read page windows for a coordinator (`folio serve` or
    `ingest` with FOLIO_BROKER_URL set) from the broker at FOLIO_BROKER_URL. Documents come from
    DATA_DIR/documents where the coordinator's data directory is mounted (read only), else from
    the address each window carries (the coordinator's API, or its object store with this
    worker's AWS_* credentials), cached by hash in FOLIO_WORKER_CACHE_DIR up to
    FOLIO_WORKER_CACHE_MB. The OCR endpoint comes with each window, its API key from this
    worker's FOLIO_OCR_API_KEY."""
    import signal
    import threading

    from ingest.queue import BrokerUnavailableError, run_worker

    setup_logging(True)
    settings = load_settings(data_dir=data_dir)
    if settings.broker_url is None:
        typer.echo("error: FOLIO_BROKER_URL is not set: a worker needs the broker", err=True)
        raise typer.Exit(2)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        key = settings.ocr_api_key
        run_worker(
            settings.broker_url,
            settings.data_dir,
            stop,
            heartbeat_s=settings.broker_heartbeat_s,
            ocr_api_key=key.get_secret_value() if key is not None else None,
            cache_dir=settings.worker_cache_dir,
            cache_bytes=settings.worker_cache_mb << 20,
        )
    except BrokerUnavailableError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def mcp(data_dir: DataDir = None) -> None:
    """Serve folio's tools (search, ask, list_documents, read_page) to an MCP client over stdio;
    while `folio serve` holds the data directory, its /mcp endpoint serves them instead."""
    from server.datadir import DataDirBusyError, lock_holder
    from server.serve.mcp_server import MCP_PATH, build_mcp

    setup_logging(False)
    settings = load_settings(data_dir=data_dir)
    holder = lock_holder(settings.data_dir)
    try:
        if holder is not None and holder.url is not None:
            raise DataDirBusyError(settings.data_dir, holder)
        services = build_or_exit(settings, "mcp")
    except DataDirBusyError as exc:
        if exc.holder is not None and exc.holder.url is not None:
            typer.echo(
                f"error: {settings.data_dir} is served by pid {exc.holder.pid}: connect your MCP "
                f"client to {exc.holder.url}{MCP_PATH} (streamable HTTP) instead",
                err=True,
            )
            raise typer.Exit(2) from None
        refuse_busy(exc)
    from server.http.deps import page_renderer

    try:
        services.sync.recover()
        build_mcp(services, page_renderer(settings), settings.link_signer()).run("stdio")
    finally:
        services.close()


@app.command(hidden=True)
def schema() -> None:
    """Print the document JSON Schema."""
    from ocr_engine.schema import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


def main() -> None:
    app()
