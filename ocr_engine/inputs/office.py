"""Office, OpenDocument, CSV, HTML and Markdown files rendered once to a PDF at the boundary.

Word, PowerPoint, Excel, OpenDocument, RTF and CSV files go through LibreOffice headless
(`soffice --convert-to pdf`, a profile folder of its own per conversion), HTML and Markdown
through headless Chromium (`ocr_engine.inputs.web_render`), each in the bounded converter pool
(`ocr_engine.inputs.convert_pool`). The rendering is a PDF like any other from then on: pages,
boxes, highlights and crops come from it. It carries the structure its source states (headings and
levels, list items, tables, `ocr_engine.inputs.office_structure`; an OpenDocument, legacy Office or
RTF file's read from its OOXML sibling, `ocr_engine.inputs.office_sibling`) as an embedded file, and
is kept in `cache_dir` (the data directory's `documents/`) as
`{sha256}.{kind}.{converter}.render.pdf`, beside the original, so it is made once per original and
converter version. The original stays the document: its sha256 is the document id and its bytes are
what is stored and downloaded. Bad files are refused with a clear reason before a converter runs:
empty, an extension that lies, a damaged ZIP; a password-protected file is decrypted with its
password first (`ocr_engine.inputs.office_crypt`); macros are never run (a note says they were
ignored).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import tempfile
import threading
import zipfile
from collections import OrderedDict
from pathlib import Path

from pydantic import BaseModel, Field

from ocr_engine.errors import BadInputError
from ocr_engine.inputs.convert_pool import ConversionError, ConvertPool, default_pool
from ocr_engine.inputs.deck_notes import EXPORT_WITH_NOTES, has_notes
from ocr_engine.inputs.office_crypt import decrypt, is_encrypted
from ocr_engine.inputs.office_pages import finish
from ocr_engine.inputs.office_sibling import SIBLINGS, Sibling, make_sibling

__all__ = [
    "OFFICE_SUFFIXES",
    "Checked",
    "check_office",
    "is_office_name",
    "max_rendered_pages",
    "office_kind",
    "render_pdf",
    "stored_rendering",
]

OFFICE_SUFFIXES: dict[str, str] = {
    ".docx": "docx",
    ".doc": "doc",
    ".odt": "odt",
    ".rtf": "rtf",
    ".pptx": "pptx",
    ".ppt": "ppt",
    ".odp": "odp",
    ".xlsx": "xlsx",
    ".xlsm": "xlsm",
    ".xls": "xls",
    ".ods": "ods",
    ".csv": "csv",
    ".html": "html",
    ".htm": "html",
    ".md": "md",
}
RECIPE = "r2"  # how folio asks for a rendering; a change makes every rendering again
_SIBLING_RECIPE = "r3"  # kinds whose structure is read from their OOXML sibling since r3
_SHEETS = {"xlsx", "xlsm", "xls", "ods", "csv"}
_WEB = {"html", "md"}
_TEXT = {"csv", "html", "md"}
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_KINDS = {
    "docx": "word/document.xml",
    "pptx": "ppt/presentation.xml",
    "xlsx": "xl/workbook.xml",
    "xlsm": "xl/workbook.xml",
}
_ODF = {
    "odt": "application/vnd.oasis.opendocument.text",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
}
_WORDS = {
    "docx": "a Word document",
    "pptx": "a PowerPoint deck",
    "xlsx": "an Excel workbook",
    "xlsm": "an Excel workbook",
    "odt": "an OpenDocument text",
    "odp": "an OpenDocument presentation",
    "ods": "an OpenDocument spreadsheet",
}
_EXPORT = {
    "sheet": 'pdf:calc_pdf_Export:{"SinglePageSheets":{"type":"boolean","value":"true"}}',
    "other": "pdf",
}
_CSV_FILTER = "CSV:44,34,76,1"  # comma-separated, double-quoted, UTF-8, from the first line


class Checked(BaseModel):
    """What a file is (its kind by name, confirmed by content) and notes about it."""

    kind: str
    notes: list[str] = Field(default_factory=list)
    encrypted: bool = Field(default=False, description="password-protected: decrypted first")


def office_kind(name: str) -> str | None:
    """The kind a file's name says (`docx`, `html`, ...), None when not one of these."""
    return OFFICE_SUFFIXES.get(Path(name).suffix.lower())


def is_office_name(name: str) -> bool:
    return office_kind(name) is not None


def max_rendered_pages() -> int:
    """The most pages a rendering may have (`FOLIO_MAX_RENDERED_PAGES`, 5,000 by default)."""
    return int(os.environ.get("FOLIO_MAX_RENDERED_PAGES", "5000"))


def _named_kind(data: bytes) -> str | None:
    """What a ZIP-based Office file is by its content, None when it is none of them."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "mimetype" in names:
                mimetype = archive.read("mimetype").decode("ascii", "replace").strip()
                return next((k for k, v in _ODF.items() if mimetype == v), None)
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    return next((k for k, member in _ZIP_KINDS.items() if member in names), None)


def _check_zip(data: bytes, name: str, kind: str) -> list[str]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            bad = archive.testzip()
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise BadInputError(
            f"{name}: a damaged ZIP container; the file cannot be read ({exc})"
        ) from None
    except Exception as exc:  # a member that zlib cannot inflate
        raise BadInputError(f"{name}: a damaged ZIP container ({exc})") from None
    if bad is not None:
        raise BadInputError(f"{name}: a damaged ZIP container (member {bad} fails its checksum)")
    actual = _named_kind(data)
    same = {kind, "xlsx" if kind == "xlsm" else kind, "xlsm" if kind == "xlsx" else kind}
    if actual is None:
        raise BadInputError(
            f"{name}: a ZIP archive that is not {_WORDS[kind]} (damaged, or another kind of file)"
        )
    if actual not in same:
        raise BadInputError(
            f"{name}: named {Path(name).suffix} but is {_WORDS[actual]}; rename it to what it is"
        )
    if any(n.lower().endswith("vbaproject.bin") for n in names) or kind == "xlsm":
        return ["macros in this file were ignored: folio never runs them"]
    return []


def _check_ole(data: bytes, name: str, kind: str) -> Checked:
    if is_encrypted(data):  # decrypted with its password before conversion (`office_crypt`)
        return Checked(kind=kind, encrypted=True)
    if kind in _ZIP_KINDS or kind in _ODF:
        raise BadInputError(
            f"{name}: named {Path(name).suffix} but is a legacy (OLE2) Office file; rename it "
            "to .doc, .xls or .ppt"
        )
    streams = data[: 1 << 20] + data[-(1 << 20) :]  # where the OLE2 file's stream names lie
    if "_VBA_PROJECT".encode("utf-16-le") in streams or b"_\x00V\x00B\x00A" in streams:
        return Checked(kind=kind, notes=["macros in this file were ignored: folio never runs them"])
    return Checked(kind=kind)


def check_office(data: bytes, name: str) -> Checked:
    """The file's kind, checked against its content (an encrypted file: its container only);
    `BadInputError` saying what is wrong."""
    from ocr_engine.inputs.images import sniff

    kind = office_kind(name)
    if kind is None:
        raise BadInputError(f"{name}: not a file kind folio renders")
    if not data:
        raise BadInputError(f"{name}: the file is empty (0 bytes)")
    sniffed = sniff(data)
    if sniffed is not None and not (kind in _TEXT and sniffed == "pdf" and data[:5] != b"%PDF-"):
        what = "a PDF" if sniffed == "pdf" else f"a {sniffed.upper()} image"
        raise BadInputError(
            f"{name}: named {Path(name).suffix} but is {what}; rename it to what it is"
        )
    if data.startswith(_OLE):
        return _check_ole(data, name, kind)
    if kind in _ZIP_KINDS or kind in _ODF:
        if not data.startswith(b"PK"):
            raise BadInputError(
                f"{name}: named {Path(name).suffix} but is not {_WORDS[kind]} (not a ZIP "
                "container: damaged, or another kind of file)"
            )
        return Checked(kind=kind, notes=_check_zip(data, name, kind))
    if kind == "rtf" and data.lstrip()[:5] != b"{\\rtf":
        raise BadInputError(f"{name}: named .rtf but has no RTF header ({{\\rtf)")
    if kind in _TEXT and b"\0" in data[:8192]:
        raise BadInputError(f"{name}: named {Path(name).suffix} but is binary, not text")
    return Checked(kind=kind)


# converters ------------------------------------------------------------------------------------

_versions: dict[str, str] = {}
_versions_lock = threading.Lock()


def _soffice() -> str:
    found = os.environ.get("FOLIO_SOFFICE") or shutil.which("soffice")
    if not found:
        raise ConversionError(
            "LibreOffice (soffice) is not installed: apt-get install libreoffice-writer-nogui "
            "libreoffice-calc-nogui libreoffice-impress-nogui"
        )
    return found


def _chromium() -> str:
    from ocr_engine.inputs.web_render import chromium_binary

    found = chromium_binary()
    if not found:
        raise ConversionError("Chromium is not installed: apt-get install chromium")
    return found


def converter_version(kind: str) -> str:
    """`soffice` or `chromium` and its version, as it says it (cached for the process)."""
    from ocr_engine.inputs.web_render import chromium_version

    binary = _chromium() if kind in _WEB else _soffice()
    with _versions_lock:
        if binary not in _versions:
            _versions[binary] = chromium_version(binary)  # both answer `--version`
        said = _versions[binary]
    recipe = _SIBLING_RECIPE if kind in SIBLINGS else RECIPE
    return re.sub(r"[^A-Za-z0-9.]+", "-", f"{said}-{recipe}").strip("-")


def _soffice_head(binary: str, profile: Path, kind: str) -> list[str]:
    """soffice and its options, before what to convert to."""
    argv = [binary, "--headless", "--norestore", "--nolockcheck", "--nodefault", "--nologo"]
    argv.append(f"-env:UserInstallation={profile.as_uri()}")
    if kind == "csv":
        argv.append(f"--infilter={_CSV_FILTER}")
    return argv


def _convert(data: bytes, name: str, kind: str, pool: ConvertPool) -> tuple[bytes, Sibling | None]:
    """The rendering's bytes and the source's OOXML sibling where it has one (to be read), made
    in a scratch folder that is removed after."""
    with tempfile.TemporaryDirectory(prefix="folio-convert-") as scratch:
        root = Path(scratch)
        out, profile = root / "out", root / "profile"
        out.mkdir()
        sibling = None
        if kind in _WEB:
            from ocr_engine.inputs.web_render import chromium_argv, page_html

            page = root / "page" / "page.html"
            page.parent.mkdir()
            page.write_text(page_html(data, kind), encoding="utf-8")
            target = out / "page.pdf"
            argv = chromium_argv(_chromium(), page, target, profile)
        else:
            source = root / f"source.{kind}"
            source.write_bytes(data)
            target = out / "source.pdf"
            head = _soffice_head(_soffice(), profile, kind)
            sibling = make_sibling(head, source, kind, pool, name)
            deck = sibling.data if sibling is not None else data
            notes = "pptx" in (kind, SIBLINGS.get(kind)) and has_notes(deck)  # go under slides
            plain = _EXPORT["sheet" if kind in _SHEETS else "other"]
            export = EXPORT_WITH_NOTES if notes else plain
            argv = [*head, "--convert-to", export, "--outdir", str(out), str(source)]
        done = pool.run(argv, cwd=root, what=name, env={"HOME": str(root)})
        if not target.exists() or target.stat().st_size == 0:
            said = " ".join(done.output.split())[-400:] or "no output"
            raise ConversionError(
                f"{name}: the converter made no PDF (exit status {done.returncode}; {said})"
            )
        return target.read_bytes(), sibling


_CACHE_BYTES = 64 << 20
_cache: OrderedDict[str, bytes] = OrderedDict()
_cache_lock = threading.Lock()
_making: dict[str, threading.Lock] = {}


def _remember(key: str, made: bytes) -> None:
    with _cache_lock:
        _cache[key] = made
        while sum(len(v) for v in _cache.values()) > _CACHE_BYTES and len(_cache) > 1:
            _cache.popitem(last=False)


def render_pdf(
    data: bytes,
    name: str,
    *,
    password: str | None = None,
    cache_dir: Path | None = None,
    pool: ConvertPool | None = None,
) -> bytes:
    """The PDF rendering of an Office, OpenDocument, CSV, HTML or Markdown file, made once; a
    password-protected one is decrypted with `password` first (`PasswordError` without it)."""
    checked = check_office(data, name)
    key = f"{hashlib.sha256(data).hexdigest()}.{checked.kind}.{converter_version(checked.kind)}"
    with _cache_lock:
        if (hit := _cache.get(key)) is not None:
            _cache.move_to_end(key)
            return hit
        making = _making.setdefault(key, threading.Lock())
    with making:  # one conversion of a file at a time; a second caller waits for the first
        kept = cache_dir / f"{key}.render.pdf" if cache_dir is not None else None
        if kept is not None and kept.exists():
            made = kept.read_bytes()
        else:
            plain = data
            if checked.encrypted:
                plain = decrypt(data, name, password)
                checked = check_office(plain, name)  # what the container held, checked too
            rendered, sibling = _convert(plain, name, checked.kind, pool or default_pool())
            limit = max_rendered_pages()
            made = finish(rendered, plain, name, checked.kind, checked.notes, limit, sibling)
            if kept is not None:
                _keep(kept, made)
        _remember(key, made)
        return made


def _keep(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def stored_rendering(path: Path) -> bytes | None:
    """The rendering of a stored original (`documents/{doc_id}.pdf` holding a .docx, ...): the
    one kept beside it, else made again under the kind an older rendering recorded; None when
    it has none (it is not one of these files)."""
    doc_id = path.stem
    kinds = [p.name.split(".")[1] for p in path.parent.glob(f"{doc_id}.*.render.pdf")]
    kind = next((k for k in kinds if k in OFFICE_SUFFIXES.values()), None)
    if kind is None:
        return None
    kept = path.parent / f"{doc_id}.{kind}.{converter_version(kind)}.render.pdf"
    if kept.exists():
        return kept.read_bytes()
    suffix = next(s for s, k in OFFICE_SUFFIXES.items() if k == kind)
    return render_pdf(path.read_bytes(), f"{doc_id}{suffix}", cache_dir=path.parent)
