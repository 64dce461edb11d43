"""HTML and Markdown printed to PDF offline by headless Chromium.

Markdown becomes HTML with markdown-it-py (CommonMark plus tables, raw HTML kept as text's
markup is). Every page is printed with a Content-Security-Policy that allows no script, no
frame and no fetch of any kind (only inline styles and `data:` images), from a folder that
holds nothing but the page, with name resolution mapped to nothing: what is printed is the
file itself, never something it points to. Headings go into the PDF's outline, with levels.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

__all__ = ["CSP", "chromium_argv", "chromium_binary", "chromium_version", "page_html"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"
_META = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
_STYLE = (
    "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:11pt;margin:0}"
    "table{border-collapse:collapse}td,th{border:1px solid #444;padding:2pt 4pt}"
    "pre,code{white-space:pre-wrap}</style>"
)
_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "chromium", "chromium-browser")
_HEAD = re.compile(r"<head(\s[^>]*)?>", re.IGNORECASE)
_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w-]+)""", re.IGNORECASE)


def chromium_binary() -> str | None:
    """The Chromium to print with: `FOLIO_CHROMIUM`, else Debian's (the binary, not its wrapper)."""
    if configured := os.environ.get("FOLIO_CHROMIUM"):
        return configured
    for candidate in _CANDIDATES:
        if Path(candidate).is_absolute() and Path(candidate).exists():
            return candidate
        if not Path(candidate).is_absolute() and (found := shutil.which(candidate)):
            return found
    return None


def chromium_version(binary: str) -> str:
    """`Chromium 156.0...` as the binary says it (part of a rendering's cache key)."""
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip().split("\n")[0] or "unknown"


def _decode(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", "replace")
    found = _CHARSET.search(data[:4096])
    encoding = found.group(1).decode("ascii") if found else "utf-8"
    try:
        return data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def markdown_html(text: str) -> str:
    """Markdown as an HTML body (CommonMark with tables and strikethrough)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(text)


def page_html(data: bytes, kind: str) -> str:
    """The page to print: an HTML file's own markup, or Markdown's rendering, with the policy."""
    text = _decode(data)
    if kind == "md":
        return _wrapped(markdown_html(text))
    if _HEAD.search(text):  # the policy first in <head>, before anything that could load
        return _HEAD.sub(lambda m: m.group(0) + _META + "<meta charset='utf-8'>", text, count=1)
    return _wrapped(text)


def _wrapped(body: str) -> str:
    head = f"<head>{_META}<meta charset='utf-8'>{_STYLE}</head>"
    return f"<!DOCTYPE html><html>{head}<body>{body}</body></html>"


def chromium_argv(binary: str, page: Path, out: Path, profile: Path) -> list[str]:
    """Print `page` to `out` with a profile of its own, offline."""
    return [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-extensions",
        "--no-first-run",
        "--disable-background-networking",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--no-pdf-header-footer",
        "--generate-pdf-document-outline",
        f"--user-data-dir={profile}",
        f"--print-to-pdf={out}",
        page.as_uri(),
    ]
