"""The OOXML sibling of an OpenDocument, legacy Office or RTF file, made by LibreOffice to be read.

An .odt, .doc or .rtf is also converted to .docx, an .ods or .xls to .xlsx, an .odp or .ppt to
.pptx (`soffice --convert-to`, a second run in the same converter pool, bounded in time and memory
like the rendering), and that file is what `ocr_engine.inputs.office_structure` reads for headings,
list items, tables, speaker notes and links. It is never shown, only read; the rendering still comes
from the original. A sibling that LibreOffice cannot make, or that is killed, leaves the file with
its rendering's outline headings only: the rendering is what counts.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel

from ocr_engine.inputs.convert_pool import ConversionError, ConvertPool

__all__ = ["SIBLINGS", "Sibling", "make_sibling"]

log = logging.getLogger(__name__)

SIBLINGS: dict[str, str] = {
    "odt": "docx",
    "doc": "docx",
    "rtf": "docx",
    "ods": "xlsx",
    "xls": "xlsx",
    "odp": "pptx",
    "ppt": "pptx",
}
_FILTERS = {
    "docx": "docx:MS Word 2007 XML",  # one argument: no shell to strip quotes
    "xlsx": "xlsx:Calc MS Excel 2007 XML",
    "pptx": "pptx:Impress MS PowerPoint 2007 XML",
}


class Sibling(BaseModel):
    """A source's OOXML sibling: its kind (`docx`, `xlsx`, `pptx`) and bytes."""

    kind: str
    data: bytes


def make_sibling(
    head: list[str], source: Path, kind: str, pool: ConvertPool, name: str
) -> Sibling | None:
    """`source` (of `kind`) converted to its OOXML sibling by the soffice command `head` (binary,
    options, profile) in `pool`; None when `kind` has none or LibreOffice made none."""
    target_kind = SIBLINGS.get(kind)
    if target_kind is None:
        return None
    out = source.parent / "sibling"
    out.mkdir(exist_ok=True)
    argv = [*head, "--convert-to", _FILTERS[target_kind], "--outdir", str(out), str(source)]
    try:
        done = pool.run(argv, cwd=source.parent, what=name, env={"HOME": str(source.parent)})
    except ConversionError as exc:
        log.warning("%s: no %s made to read its structure: %s", name, target_kind, exc)
        return None
    target = out / f"{source.stem}.{target_kind}"
    if not target.exists() or target.stat().st_size == 0:
        said = " ".join(done.output.split())[-200:] or "no output"
        log.warning("%s: no %s made to read its structure (%s)", name, target_kind, said)
        return None
    return Sibling(kind=target_kind, data=target.read_bytes())
