"""Regenerate the checked-in JSON Schema: ``python -m ocr_engine [--check]``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ocr_engine.schema import json_schema

SCHEMA_PATH = Path(__file__).with_name("document.schema.json")


def render_schema() -> str:
    """The JSON Schema of the document contract as it is checked in."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write ocr_engine/document.schema.json, or with --check fail when it is stale."""
    parser = argparse.ArgumentParser(prog="python -m ocr_engine", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the checked-in file is stale")
    args = parser.parse_args(argv)
    fresh = render_schema()
    if args.check:
        current = SCHEMA_PATH.read_text() if SCHEMA_PATH.exists() else ""
        if current != fresh:
            print(f"{SCHEMA_PATH} is stale: run python -m ocr_engine", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(fresh)
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
