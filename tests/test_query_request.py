"""A query's filters are checked like the routes' own parameters: a document id that cannot be
one is refused with 422, not answered with "not found"."""

from __future__ import annotations

from pathlib import Path

from tests.apiapp import api_app


def test_document_ids_that_cannot_be_ids_are_refused(tmp_path: Path) -> None:
    with api_app(tmp_path) as app:
        bad = app.client.post("/query", json={"question": "volcano", "doc_ids": ["abc"]})
        assert bad.status_code == 422, bad.text
        assert bad.json()["error"]["code"] == "invalid_request"
        unknown = "0" * 64  # well formed, indexed nowhere: nothing to answer from
        none = app.client.post("/query", json={"question": "volcano", "doc_ids": [unknown]})
        assert none.status_code == 200 and none.json()["hits"] == []
        ok = app.client.post("/query", json={"question": "volcano", "doc_ids": [app.doc_id]})
        assert ok.status_code == 200 and ok.json()["hits"], ok.text
