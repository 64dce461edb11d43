"""The web page at `/`: one HTML shell and its static files, served without a key (no data)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from server.http.deps import ApiError

__all__ = ["STATIC_DIR", "router"]

STATIC_DIR = Path(__file__).parent / "static"
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}

router = APIRouter(include_in_schema=False)


def _static_file(name: str) -> FileResponse:
    """A file directly in `server/web/static/` with a known type; anything else is not found."""
    path = STATIC_DIR / name
    media_type = _TYPES.get(path.suffix)
    if "/" in name or "\\" in name or name.startswith(".") or media_type is None:
        raise ApiError(404, "not_found", f"no static file {name!r}")
    if not path.is_file():
        raise ApiError(404, "not_found", f"no static file {name!r}")
    return FileResponse(path, media_type=media_type, headers=_HEADERS)


@router.get("/")
def index() -> FileResponse:
    return _static_file("index.html")


@router.get("/static/{name}")
def static(name: str) -> FileResponse:
    return _static_file(name)
