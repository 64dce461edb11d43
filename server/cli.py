"""The `folio` command line: extract, ingest, query, serve."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

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


def _open_services(settings: Any) -> Any:
    """The services, or a clean exit when the index cannot be opened (`folio serve` holds it)."""
    from retrieval.store import StoreError
    from server.services import build_services

    try:
        return build_services(settings)
    except StoreError as exc:
        hint = ""
        if settings.qdrant_url is None:
            hint = (
                f"\nOnly one folio process can open an embedded index: stop `folio serve` on "
                f"{settings.data_dir}, or use its HTTP API / watched folder instead."
            )
        typer.echo(f"error: {exc}{hint}", err=True)
        raise typer.Exit(2) from None


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@app.command()
def extract(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="the PDF to read")],
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
                self.bar.set_postfix_str(event.source[:40], refresh=False)
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


def _process(services: Any, work: Any) -> list[Any]:
    """Run `work()` (which ingests) with a progress bar on stderr."""
    progress = _Progress()
    unsubscribe = services.events.subscribe(progress)
    try:
        return list(work())
    finally:
        unsubscribe()
        progress.close()


def _report(results: list[Any], seconds: float) -> int:
    """Print the summary and one line per partial or failed file; the number of failures."""
    from ingest.pipeline import FileStatus

    failed = [r for r in results if r.status is FileStatus.failed]
    unchanged = sum(r.status is FileStatus.unchanged for r in results)
    pages = sum(r.pages for r in results if r.status is not FileStatus.unchanged)
    rate = f", {pages / seconds:.2f} pages/s" if pages and seconds > 0 else ""
    typer.echo(
        f"{len(results) - len(failed)} of {len(results)} files ingested ({unchanged} unchanged), "
        f"{pages} pages in {seconds:.1f}s{rate}",
        err=True,
    )
    for result in results:
        if result.status is FileStatus.partial:
            typer.echo(f"PARTIAL {result.path}: {result.error}", err=True)
    for result in failed:
        again = " (will be retried)" if result.retry else ""
        typer.echo(f"FAILED {result.path or result.source}: {result.error}{again}", err=True)
    return len(failed)


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
    services = _open_services(_settings(data_dir=data_dir, ocr=ocr, ocr_url=ocr_url))
    started = time.perf_counter()
    try:
        services.sync.recover()
        results = _process(services, lambda: services.sync.ingest_paths(present, force=force))
    finally:
        services.close()
    if not results and not missing:
        typer.echo("no PDF files found", err=True)
        raise typer.Exit(1)
    if _report(results, time.perf_counter() - started) or missing:
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
    services = _open_services(_settings(data_dir=data_dir))
    started = time.perf_counter()
    try:
        services.sync.recover()
        queued = services.sync.retry(include_permanent=all_failed)
        results = _process(services, services.sync.process_pending) if queued else []
    finally:
        services.close()
    if not results:
        typer.echo("nothing to retry", err=True)
        return
    if _report(results, time.perf_counter() - started):
        raise typer.Exit(1)


@app.command()
def docs(
    data_dir: DataDir = None,
    failed: Annotated[bool, typer.Option("--failed", help="only documents that failed")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="a JSON list on stdout")] = False,
) -> None:
    """List the documents of the ledger with their status; `chunks` is counted in the index."""
    from ingest.records import DocStatus

    _setup_logging(False)
    services = _open_services(_settings(data_dir=data_dir))
    try:
        records = services.ledger.documents(DocStatus.failed if failed else None)
        points = services.store.doc_ids()
    finally:
        services.close()
    rows = [
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


@app.command()
def query(
    question: Annotated[str, typer.Argument(help="the question to answer")],
    data_dir: DataDir = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=100)] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="print what POST /query returns")] = False,
) -> None:
    """Answer QUESTION from the index, with citations."""
    from retrieval.schema import QueryRequest

    _setup_logging(False)
    services = _open_services(_settings(data_dir=data_dir))
    try:
        response = services.retriever.query(QueryRequest(question=question, top_k=top_k))
    finally:
        services.close()
    if as_json:
        typer.echo(response.model_dump_json())
        return
    typer.echo(response.answer)
    for c in response.citations:
        box = ", ".join(f"{v:.0f}" for v in c.bbox)
        typer.echo(f"  [{c.n}] {c.source} p.{c.page} [{box}]  {c.highlight_url}")


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
    import uvicorn

    from server.app import create_app

    _setup_logging(True)
    settings = _settings(
        data_dir=data_dir, watch_dir=watch, host=host, port=port, ocr=ocr, ocr_url=ocr_url
    )
    services = _open_services(settings)
    services.embedder.embed_query("warm up")
    try:
        uvicorn.run(create_app(services), host=settings.host, port=settings.port)
    finally:
        services.close()


@app.command(hidden=True)
def schema() -> None:
    """Print the document JSON Schema."""
    from ocr_engine.schema import json_schema

    typer.echo(json.dumps(json_schema(), indent=2))


def main() -> None:
    app()
