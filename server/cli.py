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


def _settings(**overrides: Any) -> Any:
    from server.settings import Settings

    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def _open_services(settings: Any) -> Any:
    """The services, or a clean exit when the index cannot be opened (`folio serve` holds it)."""
    from retrieval.store import StoreError
    from server.services import build_services

    try:
        return build_services(settings)
    except StoreError as exc:
        typer.echo(
            f"error: {exc}\nOnly one folio process can open an index: stop `folio serve` on "
            f"{settings.data_dir}, or use its HTTP API / watched folder instead.",
            err=True,
        )
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
) -> None:
    """Write the structured document JSON of FILE (stdout unless --out)."""
    from ocr_engine.errors import BadInputError
    from ocr_engine.extract import extract_document

    try:
        document = extract_document(file.read_bytes(), source=file.name, password=password)
    except BadInputError as exc:
        typer.echo(f"{file.name}: {exc}", err=True)
        raise typer.Exit(1) from None
    text = document.model_dump_json(indent=1)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"{file.name}: {document.page_count} pages -> {out}", err=True)


def _count_pages(paths: list[Path]) -> int:
    import pymupdf

    total = 0
    for path in paths:
        try:
            with pymupdf.open(path) as doc:
                total += doc.page_count
        except Exception:  # unreadable files are reported by the ingest itself
            continue
    return total


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="PDF files or folders (walked for *.pdf)")],
    data_dir: DataDir = None,
    force: Annotated[bool, typer.Option(help="re-ingest files already in the index")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Ingest PDFs; exits non-zero with one line per failed file."""
    from tqdm import tqdm

    from ingest.pipeline import FileStatus, find_pdfs

    _setup_logging(verbose)
    missing = [p for p in paths if not p.exists()]
    for path in missing:
        typer.echo(f"{path}: no such file or directory", err=True)
    files = find_pdfs([p for p in paths if p.exists()])
    if not files and not missing:
        typer.echo("no PDF files found", err=True)
        raise typer.Exit(1)
    services = _open_services(_settings(data_dir=data_dir))
    started = time.perf_counter()
    with tqdm(total=_count_pages(files), unit="page", desc="ingest", file=sys.stderr) as bar:

        def finished(result: Any) -> None:
            if result.status in (FileStatus.unchanged, FileStatus.failed):
                bar.update(result.pages)
            bar.set_postfix_str(result.source[:40])

        try:
            results = services.ingestor.ingest_paths(
                files, force=force, on_result=finished, on_pages=bar.update
            )
        finally:
            services.close()
    failed = [r for r in results if r.status is FileStatus.failed]
    pages = sum(r.pages for r in results if r.status is not FileStatus.unchanged)
    seconds = time.perf_counter() - started
    typer.echo(
        f"{len(results) - len(failed)} of {len(results)} files ingested "
        f"({sum(r.status is FileStatus.unchanged for r in results)} unchanged), "
        f"{pages} pages in {seconds:.1f}s",
        err=True,
    )
    for result in results:
        if result.status is FileStatus.partial:
            typer.echo(f"PARTIAL {result.path}: {result.error}", err=True)
    for result in failed:
        typer.echo(f"FAILED {result.path}: {result.error}", err=True)
    if failed or missing:
        raise typer.Exit(1)


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
) -> None:
    """Run the API (and the folder watcher with --watch)."""
    import uvicorn

    from server.app import create_app

    _setup_logging(True)
    settings = _settings(data_dir=data_dir, watch_dir=watch, host=host, port=port)
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
