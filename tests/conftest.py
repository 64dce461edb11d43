"""Shared fixtures: the shared data folder (skipped when absent) and offline settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("FOLIO_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data, skipping the calling test with a clear message when absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} (tests read ../shared/data in place)")
    return path


@pytest.fixture
def docling_pdfs() -> Path:
    return shared_path("docling", "pdf")
