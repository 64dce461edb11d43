"""The CLI's extract command and settings read from FOLIO_ environment variables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ocr_engine.schema import Document
from server.cli.cli import app as cli_app
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf, html_named_pdf


def test_extract_writes_the_document_json(tmp_path: Path) -> None:
    pdf = tmp_path / "volcano.pdf"
    pdf.write_bytes(fact_pdf(*FACTS["volcano.pdf"]))
    out = tmp_path / "volcano.json"
    result = CliRunner().invoke(cli_app, ["extract", str(pdf), "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = Document.model_validate(json.loads(out.read_text()))
    assert doc.source == "volcano.pdf" and doc.page_count == 2
    first = doc.pages[0]
    assert first.blocks[0].type == "title" and first.blocks[0].text == "Volcanic Activity Report"
    assert any("Kelud" in b.text for b in first.blocks)


def test_extract_refuses_a_non_pdf_with_its_reason(tmp_path: Path) -> None:
    fake = tmp_path / "page.pdf"
    fake.write_bytes(html_named_pdf())
    result = CliRunner().invoke(cli_app, ["extract", str(fake)])
    assert result.exit_code == 1
    assert "HTML" in result.output


def test_settings_come_from_folio_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FOLIO_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("FOLIO_PORT", "9123")
    settings = Settings()
    assert settings.data_dir == tmp_path / "d" and settings.port == 9123
    monkeypatch.setenv("FOLIO_PORT", "70000")
    with pytest.raises(ValueError, match="port"):
        Settings()


def test_dense_sentence_ranking_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().answer_dense_sentences == 8
    monkeypatch.setenv("FOLIO_ANSWER_DENSE_SENTENCES", "0")
    assert Settings().answer_dense_sentences == 0
    monkeypatch.setenv("FOLIO_ANSWER_DENSE_SENTENCES", "-1")
    with pytest.raises(ValueError, match="answer_dense_sentences"):
        Settings()


def test_when_answer_sentences_are_embedded_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().answer_sentences == "idle"  # not at ingest: ingest speed first
    monkeypatch.setenv("FOLIO_ANSWER_SENTENCES", "ingest")
    assert Settings().answer_sentences == "ingest"
    monkeypatch.setenv("FOLIO_ANSWER_SENTENCES", "always")
    with pytest.raises(ValueError, match="answer_sentences"):
        Settings()


def test_help_says_each_options_default_and_environment_variable() -> None:
    """`--help` shows where an option falls back to (rich markup once ate "[env …]" whole); the
    defaults it names are the settings' own."""
    result = CliRunner().invoke(cli_app, ["serve", "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    shown = {"data_dir": "./data", "host": "127.0.0.1", "port": "8000", "ocr": "auto"}
    for name, text in shown.items():
        assert f"(default {text}; env FOLIO_{name.upper()})" in result.output, name
        default = Settings.model_fields[name].default
        assert Path(text) == default if name == "data_dir" else str(default) == text, name
    assert "(env FOLIO_OCR_URL)" in result.output


def test_help_lists_each_command_in_whole_sentences() -> None:
    """A command's description is reflowed, not cut where its docstring's lines end
    ("new and changed PDFs are ingested," then "deleted ones removed" on a line of its own)."""
    result = CliRunner().invoke(cli_app, ["--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "PDFs are ingested, deleted ones removed, renamed and copied ones relinked" in (
        result.output
    )


@pytest.mark.parametrize("command", [["query", "What is it?"], ["docs"], ["retry"]])
def test_reading_a_directory_without_an_index_says_so_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    """Run from the wrong directory, `folio query` used to create an empty ./data and answer
    that the documents do not answer."""
    data = tmp_path / "data"
    result = CliRunner().invoke(cli_app, [*command, "--data-dir", str(data)])
    assert result.exit_code == 1
    assert "holds no folio index" in result.output and "--data-dir" in result.output
    assert not data.exists()


def test_a_question_the_api_would_refuse_is_refused_in_its_words(tmp_path: Path) -> None:
    """Too long or empty, the CLI says what `POST /query` says, before opening any index."""
    long = CliRunner().invoke(cli_app, ["query", "x" * 2001, "--data-dir", str(tmp_path)])
    assert long.exit_code == 2
    assert "the question has 2001 characters; at most 2000 are accepted" in long.output
    empty = CliRunner().invoke(cli_app, ["query", "", "--data-dir", str(tmp_path)])
    assert empty.exit_code == 2
    assert "the question is empty" in empty.output
    assert not any(tmp_path.iterdir())


def test_a_nearest_passage_is_printed_on_one_line_without_markdown() -> None:
    """`folio query` with no answer lists the nearest passages, a table's rows as words."""
    from server.cli.cli_support import passage

    table = (
        "|   | Three Months Ended |   |\n|---|---|---|\n"
        "|   | July 29, 2023 | July 30, 2022 |\n| Revenue | $ 9,583 | $ 10,329 |"
    )
    assert (
        passage(table) == "Three Months Ended July 29, 2023 July 30, 2022 Revenue $ 9,583 $ 10,329"
    )
    assert passage("word " * 100).endswith(" …") and len(passage("word " * 100)) <= 160
