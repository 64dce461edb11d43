"""Exports are named after the document in full (RFC 6266 / 5987 `filename*`), with an ASCII
`filename` fallback for old clients."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import unquote

import pytest

from tests.apiapp import ApiApp, api_app
from tests.pdfgen import FACTS, fact_pdf

NAMES = {
    "chinese": ("年度报告 2023.pdf", "年度报告 2023"),
    "accented": ("naïve café Müller.pdf", "naïve café Müller"),
    "newline": ("line1\nline2 Zoë.pdf", "line1_line2 Zoë"),
}
EXPORTS = {
    "json": ".json",
    "markdown": ".md",
    "text": ".txt",
    "searchable.pdf": ".searchable.pdf",
    "docling": ".docling.json",
}


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiApp, dict[str, str]]]:
    root = tmp_path_factory.mktemp("export-names")
    with api_app(root) as app:
        ids = {}
        title, sections = FACTS["bakery.pdf"]
        for key, (name, _) in NAMES.items():
            path = root / name
            path.write_bytes(fact_pdf(f"{title} {key}", sections))
            [result] = app.services.sync.ingest_paths([path])
            assert result.doc_id is not None and result.status.value == "ok", result
            ids[key] = result.doc_id
        yield app, ids


def _parts(header: str) -> tuple[str, str]:
    """The `filename` and the decoded `filename*` of a Content-Disposition header."""
    assert header.startswith("inline;"), header
    fallback = re.search(r'filename="([^"]*)"', header)
    extended = re.search(r"filename\*=UTF-8''([^;\s]+)", header, re.I)
    assert fallback and extended, header
    assert fallback.group(1).isascii() and extended.group(1).isascii(), header
    return fallback.group(1), unquote(extended.group(1), encoding="utf-8", errors="strict")


@pytest.mark.parametrize("export", EXPORTS)
@pytest.mark.parametrize("key", NAMES)
def test_export_carries_the_real_name(
    named: tuple[ApiApp, dict[str, str]], key: str, export: str
) -> None:
    app, ids = named
    response = app.client.get(f"/documents/{ids[key]}/{export}")
    assert response.status_code == 200, response.text
    fallback, real = _parts(response.headers["content-disposition"])
    suffix = EXPORTS[export]
    assert real == NAMES[key][1] + suffix
    assert fallback.endswith(suffix)


def test_ascii_fallbacks_keep_what_ascii_can_say(named: tuple[ApiApp, dict[str, str]]) -> None:
    app, ids = named
    fallbacks = {}
    for key in NAMES:
        response = app.client.get(f"/documents/{ids[key]}/json")
        fallbacks[key] = _parts(response.headers["content-disposition"])[0]
    assert fallbacks["accented"] == "naive cafe Muller.json"  # accents dropped, letters kept
    assert fallbacks["chinese"] == "____ 2023.json"
    assert fallbacks["newline"] == "line1_line2 Zoe.json"
    plain = app.client.get(f"/documents/{app.doc_id}/json").headers["content-disposition"]
    assert _parts(plain) == ("volcano.json", "volcano.json")
