"""Password-protected Office files, opened with msoffcrypto-tool before any converter sees them.

An encrypted Word, Excel or PowerPoint file (OOXML in an OLE2 `EncryptionInfo` container, or a
legacy .doc/.xls/.ppt with its encryption record) is decrypted in memory with the password folio
looks up for it (a sidecar `NAME.password` or `passwords.json`, as for PDFs); without one, or
with a wrong one, the file fails with `PasswordError` naming it and what to provide.
"""

from __future__ import annotations

import io
import logging

from ocr_engine.errors import PasswordError

__all__ = ["decrypt", "is_encrypted"]

log = logging.getLogger(__name__)

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_EXCEL_DEFAULT = "VelvetSweatshop"  # what Excel encrypts a write-protected-only workbook with


def _office_file(data: bytes) -> object | None:
    import msoffcrypto
    from msoffcrypto.exceptions import FileFormatError

    try:
        return msoffcrypto.OfficeFile(io.BytesIO(data))
    except (FileFormatError, OSError, ValueError) as exc:
        log.debug("msoffcrypto cannot read this OLE2 file: %s", exc)
        return None


def is_encrypted(data: bytes) -> bool:
    """Whether an OLE2 Office file is encrypted (OOXML or legacy); False for anything else."""
    if not data.startswith(_OLE):
        return False
    office = _office_file(data)
    if office is None:
        return "EncryptionInfo".encode("utf-16-le") in data[: 1 << 20] + data[-(1 << 20) :]
    try:
        return bool(office.is_encrypted())  # type: ignore[attr-defined]
    except Exception as exc:  # a damaged stream: the converter says what is wrong with it
        log.debug("msoffcrypto cannot tell whether this file is encrypted: %s", exc)
        return False


def _needs(name: str) -> str:
    return (
        f"put its password in a file {name}.password beside it, or in passwords.json under "
        "its file name or sha256"
    )


def _try(data: bytes, password: str) -> bytes | None:
    """The decrypted bytes, None when this password does not open the file."""
    from msoffcrypto.exceptions import DecryptionError, InvalidKeyError

    office = _office_file(data)
    if office is None:
        return None
    out = io.BytesIO()
    try:
        if type(office).__name__ == "OOXMLFile":
            office.load_key(password=password, verify_password=True)  # type: ignore[attr-defined]
        else:
            office.load_key(password=password)  # type: ignore[attr-defined]
        office.decrypt(out)  # type: ignore[attr-defined]
    except InvalidKeyError:
        return None
    except (DecryptionError, AssertionError, KeyError, ValueError) as exc:
        raise PasswordError(f"cannot decrypt: {exc}") from None
    return out.getvalue()


def decrypt(data: bytes, name: str, password: str | None) -> bytes:
    """The file's plain bytes; `PasswordError` when no password, or a wrong one, is given."""
    tries = [password] if password is not None else []
    if password is None and name.lower().endswith(".xls"):
        tries = [_EXCEL_DEFAULT]  # a workbook only protected from writing opens without one
    opened = None
    for attempt in tries:
        try:
            opened = _try(data, attempt)
        except PasswordError as exc:
            raise PasswordError(
                f"{name}: a password-protected Office file folio cannot decrypt ({exc}); save "
                "a copy without a password"
            ) from None
    if opened is not None:
        return opened
    if password is None:
        raise PasswordError(f"{name}: a password-protected Office file; {_needs(name)}")
    raise PasswordError(
        f"{name}: the password given does not open this password-protected Office file; "
        f"{_needs(name)}"
    )
