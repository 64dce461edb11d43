"""Bad input dropped into a watched folder: each file fails alone with a reason a person can act
on (in the ledger, `GET /documents?status=failed` and `folio docs`), and the service goes on."""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pymupdf
import pytest
from typer.testing import CliRunner

from ingest.pipeline.guards import PdfLimits, check_pdf, inflated_size
from ingest.pipeline.pipeline import IngestOptions
from ocr_engine.errors import BadInputError
from ocr_engine.inputs.pdf import open_pdf
from ocr_engine.options import ExtractOptions, OcrMode
from server.cli.cli import app as cli_app
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import (
    FACTS,
    encrypted_pdf,
    fact_pdf,
    raw_pdf,
    truncated_pdf,
    zero_page_pdf,
)
from tests.test_e2e import LiveServer, _wait_for

MiB = 1 << 20


def _one_page(contents: bytes, *, page_extra: bytes = b"") -> bytes:
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >>" + page_extra + b" >>",
            contents,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def bomb_stream(inflated: int) -> bytes:
    """A zlib stream of a content stream padded with `inflated` bytes of spaces, built from one
    compressed MiB repeated (a full flush makes every block compress alike): ~1 kB per MiB."""
    text = b"BT /F1 12 Tf 72 720 Td (tiny file, huge stream) Tj ET\n"
    compressor = zlib.compressobj(9)
    head = compressor.compress(text) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(b" " * MiB) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()[:-4]  # the final empty block, without the checksum
    checksum = zlib.adler32(text)
    for _ in range(inflated // MiB):
        checksum = zlib.adler32(b" " * MiB, checksum)
    return head + block * (inflated // MiB) + end + struct.pack(">I", checksum)


def decompression_bomb(inflated: int = 2048 * MiB) -> bytes:
    stream = bomb_stream(inflated)
    header = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
    return _one_page(header + stream + b"\nendstream")


def deeply_nested(depth: int = 10_000) -> bytes:
    text = b"BT /F1 12 Tf 72 720 Td (nested) Tj ET\n"
    contents = b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream"
    return _one_page(contents, page_extra=b" /Annots " + b"[" * depth + b"]" * depth)


def huge_page() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=20_000, height=20_000)
    page.insert_text((2000, 9000), "Harbour Poster", fontsize=300)
    body = "The harbour opens at dawn and closes at dusk. " * 12
    page.insert_textbox(pymupdf.Rect(2000, 10000, 18000, 14000), body, fontsize=120)
    data = doc.tobytes()
    doc.close()
    return data


# name -> (bytes, what the reason says; None: the file is read)
CORPUS: dict[str, tuple[Callable[[], bytes], str | None]] = {
    "zero.pdf": (lambda: b"", "empty"),
    "truncated.pdf": (truncated_pdf, "truncated"),
    "random.pdf": (lambda: os.urandom(8192), "signature"),
    "page.pdf": (lambda: b"<!DOCTYPE html><html><body>404</body></html>", "HTML"),
    "locked.pdf": (encrypted_pdf, "needs a password"),
    "no pages.pdf": (zero_page_pdf, "no pages"),
    "bomb.pdf": (decompression_bomb, "decompression bomb"),
    "nested.pdf": (deeply_nested, "nested too deeply"),
    "poster 20000pt.pdf": (huge_page, None),
    "annual report..final.pdf": (lambda: fact_pdf(*FACTS["bakery.pdf"]), None),
    "résumé 東京 ü.pdf": (lambda: fact_pdf(*FACTS["volcano.pdf"]), None),
}


def test_the_bomb_is_a_tiny_file_that_is_never_inflated_in_full() -> None:
    data = decompression_bomb()
    assert len(data) < 4 * MiB
    stream = bomb_stream(64 * MiB)
    assert len(zlib.decompress(stream)) == 64 * MiB + 54  # the construction is a valid stream
    assert 64 * MiB < inflated_size(stream, 64 * MiB) <= 68 * MiB, "counting stops at the cap"
    with pymupdf.open(stream=data) as pdf, pytest.raises(BadInputError, match="bomb"):
        check_pdf(pdf, "bomb.pdf")
    with pymupdf.open(stream=fact_pdf(*FACTS["volcano.pdf"])) as pdf:
        check_pdf(pdf, "volcano.pdf", PdfLimits())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str, Path]]:
    root = tmp_path_factory.mktemp("bad")
    inbox = root / "inbox"
    (inbox / "a..b").mkdir(parents=True)
    settings = Settings(
        data_dir=root / "data", watch_dir=inbox, watch_settle_seconds=0.2, ocr=OcrMode.never
    )
    options = IngestOptions(extract=ExtractOptions(ocr=OcrMode.never), extract_processes=1)
    services = build_services(settings, options=options)  # the model `folio docs` opens it with
    try:
        with LiveServer(services) as live:
            for name, (make, _) in CORPUS.items():
                (inbox / "a..b" / name).write_bytes(make())
            yield services, live.base_url, inbox
    finally:
        services.close()


def _records(base: str, query: str = "") -> dict[str, dict[str, object]]:
    return {r["source"]: r for r in httpx.get(f"{base}/documents{query}", timeout=10).json()}


def test_each_bad_file_fails_alone_with_its_reason(served: tuple[Services, str, Path]) -> None:
    svc, base, inbox = served
    settled = ("ok", "partial", "failed")

    def all_settled() -> bool:  # every file found and done: the watcher may still be adding some
        records = _records(base)
        return len(records) == len(CORPUS) and all(r["status"] in settled for r in records.values())

    _wait_for(all_settled, 150)
    records = _records(base)
    failed = _records(base, "?status=failed")
    expected_failures = {name for name, (_, reason) in CORPUS.items() if reason}
    assert set(failed) == expected_failures
    for name, (_, reason) in CORPUS.items():
        record = records[name]
        if reason is None:
            assert record["status"] == "ok", (name, record["errors"])
            assert svc.store.count(str(record["doc_id"])) == record["chunks"] > 0
        else:
            errors = record["errors"]
            assert isinstance(errors, list) and reason in errors[0], (name, errors)
            assert name in errors[0], "the reason names the file"
            assert record["chunks"] == 0 and svc.store.count(str(record["doc_id"])) == 0
    bomb = httpx.get(f"{base}/documents/{records['bomb.pdf']['doc_id']}").json()
    assert bomb["failure"] == "bad_input" and not bomb["retryable"]
    assert records["locked.pdf"]["failure"] == "password"
    assert httpx.get(f"{base}/documents?status=nonsense").status_code == 422

    # the watcher is still going: a file dropped now is ingested
    (inbox / "later.pdf").write_bytes(fact_pdf("Lighthouse Log", [("Lamp", "Ada lit it.")]))
    _wait_for(lambda: _records(base).get("later.pdf", {}).get("status") == "ok", 60)


def test_folio_docs_lists_failures_with_index_counts(
    served: tuple[Services, str, Path], tmp_path: Path
) -> None:
    svc, base, _ = served
    _wait_for(lambda: _records(base).get("later.pdf", {}).get("status") == "ok", 120)
    ids = {name: str(r["doc_id"]) for name, r in _records(base).items()}
    counts = svc.store.doc_ids()
    svc.store.close()  # `folio docs` opens the index itself, as after `folio serve` stopped
    svc.lock.release()
    runner = CliRunner()
    data_dir = str(svc.settings.data_dir)
    listing = runner.invoke(cli_app, ["docs", "--data-dir", data_dir, "--failed", "--json"])
    assert listing.exit_code == 0, listing.output
    rows = json.loads(listing.stdout)
    assert {r["source"] for r in rows} == {n for n, (_, why) in CORPUS.items() if why}
    for row in rows:
        assert set(row) == {
            "doc_id",
            "source",
            "paths",
            "status",
            "pages",
            "chunks",
            "card",
            "errors",
        }
        assert row["status"] == "failed" and row["chunks"] == 0 and row["errors"]
    everything = runner.invoke(cli_app, ["docs", "--data-dir", data_dir, "--json"])
    by_name = {r["source"]: r for r in json.loads(everything.stdout)}
    assert by_name["later.pdf"]["chunks"] == counts[ids["later.pdf"]] > 0
    assert by_name["résumé 東京 ü.pdf"]["paths"][0].endswith("a..b/résumé 東京 ü.pdf")
    table = runner.invoke(cli_app, ["docs", "--data-dir", data_dir, "--failed"])
    assert table.exit_code == 0 and "decompression bomb" in table.stdout
    header, *lines = table.stdout.splitlines()
    where = header.index("source / errors")
    reasons = [line for line in lines if line[:where].strip() == ""]  # the lines under a source
    assert reasons and all(line[where] != " " for line in reasons), table.stdout  # aligned
    assert not any(line[where:].startswith(tuple(by_name)) for line in reasons)  # no name again

    nothing = runner.invoke(cli_app, ["retry", "--data-dir", data_dir])
    assert nothing.exit_code == 0 and "nothing to retry" in nothing.output, "bad input is final"
    again = runner.invoke(cli_app, ["retry", "--data-dir", data_dir, "--all"])
    assert again.exit_code == 1
    failed_lines = [line for line in again.output.splitlines() if line.startswith("FAILED ")]
    assert len(failed_lines) == len(rows) and any("needs a password" in x for x in failed_lines)
    after = runner.invoke(cli_app, ["docs", "--data-dir", data_dir, "--json"])
    assert {r["doc_id"]: r["chunks"] for r in json.loads(after.stdout)} == {
        r["doc_id"]: r["chunks"] for r in by_name.values()
    }, "retrying the failures touched no other document"


def test_binary_that_starts_with_a_bracket_is_not_called_markup(tmp_path: Path) -> None:
    """Random bytes begin with `<` one time in 256: the reason must still be the signature."""
    binary = tmp_path / "binary.pdf"
    binary.write_bytes(b"<\x8f\x00\x13" + bytes(range(256)) * 8)
    markup = tmp_path / "markup.pdf"
    markup.write_bytes(b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>')
    with pytest.raises(BadInputError, match="signature"):
        open_pdf(binary)
    with pytest.raises(BadInputError, match="XML/markup"):
        open_pdf(markup)
