"""`/docs` and `/redoc` work offline: every script, style sheet and icon they load is local."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser

import pytest

from tests.apiapp import ApiApp, api_app

KEY = "docs-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


class _Assets(HTMLParser):
    """The URLs a page loads: `<script src>` and `<link href>`."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        url = named.get("src") if tag == "script" else named.get("href") if tag == "link" else None
        if url:
            self.urls.append(url)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    with api_app(tmp_path_factory.mktemp("docs"), api_key=KEY) as served:
        yield served


@pytest.mark.parametrize(("page", "kinds"), [("/docs", {"js", "css"}), ("/redoc", {"js"})])
def test_the_api_docs_load_nothing_from_elsewhere(app: ApiApp, page: str, kinds: set[str]) -> None:
    response = app.client.get(page, headers=AUTH)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "://" not in response.text  # no CDN, no web font: the machine may be offline
    parser = _Assets()
    parser.feed(response.text)
    assert {url.rsplit(".", 1)[-1] for url in parser.urls} >= kinds, parser.urls
    for url in parser.urls:
        assert url.startswith("/") and not url.startswith("//"), url
        asset = app.client.get(url)  # no key: a browser loads them as plain links
        assert asset.status_code == 200 and len(asset.content) > 1000, url


def test_the_docs_pages_still_need_the_key(app: ApiApp) -> None:
    for page in ("/docs", "/redoc", "/openapi.json"):
        assert app.client.get(page).status_code == 401
