"""What the `folio` commands share: settings from the environment and the command line, the data
directory opened (or the running server's API, while `folio serve` holds it), progress and the
ingest report on the terminal."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer

__all__ = [
    "Progress",
    "answer_locally",
    "build_or_exit",
    "card_shown",
    "load_settings",
    "open_or_remote",
    "open_services",
    "passage",
    "plural",
    "question_error",
    "refuse_busy",
    "remote_call",
    "report",
    "setup_logging",
    "show_removed",
    "shown",
    "with_progress",
]

T = TypeVar("T")


def load_settings(**overrides: Any) -> Any:
    """Settings from the environment with the command line's values on top; exits on bad ones."""
    from pydantic import ValidationError

    from server.settings import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        from server.http.deps import validation_message

        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "settings"
            typer.echo(f"error: {where}: {validation_message(error)}", err=True)
        raise typer.Exit(2) from None


def refuse_busy(exc: Exception) -> NoReturn:
    typer.echo(
        f"error: {exc}\nOnly one folio process can hold a data directory: stop it, or use the "
        "running server's HTTP API or watched folder instead.",
        err=True,
    )
    raise typer.Exit(2)


def build_or_exit(settings: Any, command: str) -> Any:
    """The services; DataDirBusyError when another process holds the data directory, a clean
    exit when the index cannot be opened."""
    from ocr_engine.errors import EngineUnavailableError
    from retrieval.index import EmbedderError, StoreError
    from server.services import build_services

    try:
        return build_services(settings, command=command)
    except (StoreError, EmbedderError, EngineUnavailableError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def open_services(settings: Any, command: str) -> Any:
    """The services, or a clean exit naming the process that holds the data directory."""
    from server.datadir import DataDirBusyError

    try:
        return build_or_exit(settings, command)
    except DataDirBusyError as exc:
        refuse_busy(exc)


_READERS = ("docs", "query", "retry")  # commands that only read or redo what is indexed


def open_or_remote(settings: Any, command: str) -> Any:
    """The services over the data directory, or, while a `folio serve` holds it, a client of
    that server's API (which the lock file names); no file of the index is opened before the
    lock is held. A command that reads the index ends with the reason when the directory holds
    none (it would have created an empty one and found nothing)."""
    from ingest.ledger import LEDGER_FILE
    from server.cli.remote import RemoteFolio
    from server.datadir import DataDirBusyError, lock_holder

    holder = lock_holder(settings.data_dir)
    if holder is None and command in _READERS and not (settings.data_dir / LEDGER_FILE).exists():
        typer.echo(
            f"error: {settings.data_dir} holds no folio index (no {LEDGER_FILE}): add documents "
            "with `folio ingest PATH` or `folio serve`, or name the index with --data-dir "
            "(env FOLIO_DATA_DIR)",
            err=True,
        )
        raise typer.Exit(1)
    if holder is None or holder.url is None:
        try:
            return build_or_exit(settings, command)
        except DataDirBusyError as exc:
            holder = exc.holder
            if holder is None or holder.url is None:
                refuse_busy(exc)
    url = holder.url
    assert url is not None
    key = settings.api_key.get_secret_value() if settings.api_key is not None else None
    typer.echo(f"{settings.data_dir} is served by pid {holder.pid}: using {url}", err=True)
    return RemoteFolio(url, api_key=key)


def remote_call(call: Callable[[], T]) -> T:
    """A call to the running server; its failure ends the command with the reason."""
    from server.cli.remote import RemoteError

    try:
        return call()
    except RemoteError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def plural(n: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def shown(name: str) -> str:
    """A file name fit for one terminal line: control characters (a newline) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


class OneLine(logging.Filter):
    """Each record on one line: control characters of its message (a file name's newline)
    escaped as `shown` does; a traceback after it is left as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        escaped = shown(message)
        if escaped != message:
            record.msg, record.args = escaped, None
        return True


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, OneLine) for f in handler.filters):
            handler.addFilter(OneLine())


class Progress:
    """A tqdm bar in pages (total grows as documents start) fed by ingest events; shown from the
    first document that starts, so a run that reads nothing prints no empty bar."""

    def __init__(self) -> None:
        import threading

        self.bar: Any = None
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}

    def __call__(self, event: Any) -> None:
        from ingest.pipeline import EventKind

        with self._lock:
            if event.kind is EventKind.started:
                if self.bar is None:
                    from tqdm import tqdm

                    self.bar = tqdm(
                        total=0, unit="page", desc="ingest", file=sys.stderr, dynamic_ncols=True
                    )
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
        if reached > done and self.bar is not None:
            self.bar.update(reached - done)
            self._done[doc_id] = reached

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def with_progress(events: Any, work: Callable[[], T]) -> T:
    """Run `work()` (which ingests) with a progress bar on stderr fed by `events`."""
    progress = Progress()
    unsubscribe = events.subscribe(progress)
    try:
        return work()
    finally:
        unsubscribe()
        progress.close()


def processed(
    target: Any,
    remote: Callable[[Any, Callable[[Any], None]], T],
    local: Callable[[Any], T],
) -> T:
    """What a command that processes documents did, with its progress shown: through a running
    server (`remote(client, on_event)`), or with the services it holds, recovered first
    (`local(services)`); `target` is closed after."""
    from server.cli.remote import RemoteFolio

    if isinstance(target, RemoteFolio):
        progress = Progress()
        try:
            return remote_call(lambda: remote(target, progress))
        finally:
            progress.close()
            target.close()
    try:
        target.sync.recover()
        return with_progress(target.events, lambda: local(target))
    finally:
        target.close()


def without_name(reason: str, source: str) -> str:
    """A failure's reason without the file name it may begin with, for a line that names it."""
    return reason.removeprefix(f"{source}: ")


def report(summary: Any) -> int:
    """Print what happened to the files and one line per partial or failed file; the number of
    failures."""
    from ingest.pipeline import FileStatus

    seconds = summary.seconds
    rate = f", {summary.pages / seconds:.2f} pages/s" if summary.pages and seconds > 0 else ""
    others = f", {summary.moved} moved" if summary.moved else ""
    others += f", {summary.again} read again" if summary.again else ""
    typer.echo(
        f"{plural(len(summary.results), 'file')}: {summary.new} new, "
        f"{summary.changed} changed{others}, "
        f"{summary.unchanged} unchanged, {summary.failed} failed; {summary.removed} removed; "
        f"{summary.pages} pages in {seconds:.1f}s{rate}",
        err=True,
    )
    for result in summary.results:
        if result.status is FileStatus.partial:
            typer.echo(f"PARTIAL {shown(result.path)}: {shown(result.error or '')}", err=True)
    for result in summary.results:
        if result.status is FileStatus.failed:
            again = " (will be retried)" if result.retry else ""
            name = shown(result.path or result.source)
            reason = shown(without_name(result.error or "", result.source))
            typer.echo(f"FAILED {name}: {reason}{again}", err=True)
    return summary.failed


def card_shown(line: str, width: int = 120) -> str:
    """A card's line within `width`: a long title shortened, its organisation and period kept."""
    first, *rest = line.split(" · ")
    tail = "".join(f" · {part}" for part in rest)
    if len(line) <= width:
        return line
    return textwrap.shorten(first, max(24, width - len(tail)), placeholder=" …") + tail


def passage(text: str, length: int = 160) -> str:
    """A chunk's text on one line, a table's rows without their Markdown, cut at `length`."""
    from ingest.pipeline import compact_table

    return textwrap.shorten(" ".join(compact_table(text).split()), length, placeholder=" …")


def question_error(exc: Any, question: str) -> str:
    """What is wrong with the question, in the words `POST /query` uses."""
    from server.http.deps import validation_message
    from server.http.limits import too_long

    error = exc.errors()[0]
    if error["type"] == "string_too_long":
        return too_long(len(question), error["ctx"]["max_length"])
    if error["type"] == "string_too_short":
        return "the question is empty"
    return validation_message(error)


def answer_locally(services: Any, request: Any) -> Any:
    """The answer POST /query gives, from the services this command holds."""
    import asyncio

    from retrieval.answer import answer_query
    from retrieval.search import InvalidQueryError

    llm = services.settings.llm_options()
    try:
        return asyncio.run(answer_query(services.retriever, request, llm))
    except InvalidQueryError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def show_removed(target: Any, as_json: bool) -> None:
    """The removed files' tombstones, from the data directory or the running server."""
    from server.cli.remote import RemoteFolio

    try:
        if isinstance(target, RemoteFolio):
            stones = remote_call(target.removed)
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
    typer.echo(
        f"{plural(len(stones), 'removed file')} (`folio ingest FILE` restores one)", err=True
    )
