"""Passwords for encrypted PDFs: a sidecar file beside the PDF, or an entry in a passwords file.

A sidecar `NAME.pdf.password` holds the password of `NAME.pdf` (a trailing line break is dropped).
The passwords file (`DATA_DIR/passwords.json` unless configured) is a JSON object mapping a
document's sha256 or its file name to its password. The sidecar wins, then the hash, then the name.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = ["PASSWORDS_FILE", "SIDECAR_SUFFIX", "PasswordBook", "fingerprint"]

log = logging.getLogger(__name__)

PASSWORDS_FILE = "passwords.json"
SIDECAR_SUFFIX = ".password"


def fingerprint(password: str | None) -> str:
    """What the ledger keeps of a password it tried: enough to notice a new one, not the secret."""
    if password is None:
        return "none"
    return hashlib.sha256(b"folio-password\0" + password.encode("utf-8")).hexdigest()[:16]


def sidecar_of(pdf: Path) -> Path:
    return pdf.with_name(pdf.name + SIDECAR_SUFFIX)


class PasswordBook:
    """Looks passwords up; the passwords file is re-read when it changes."""

    def __init__(self, passwords_file: Path | None) -> None:
        self.passwords_file = passwords_file
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._entries: dict[str, str] = {}

    def lookup(self, doc_id: str, paths: Iterable[str], source: str) -> str | None:
        """The password for these bytes, or None when none is known."""
        for path in paths:
            password = self._sidecar(Path(path))
            if password is not None:
                return password
        entries = self._load()
        return entries.get(doc_id) or entries.get(source) or None

    @staticmethod
    def _sidecar(pdf: Path) -> str | None:
        side = sidecar_of(pdf)
        try:
            text = side.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("cannot read password file %s: %s", side, exc)
            return None
        return text.removesuffix("\n").removesuffix("\r")

    def _load(self) -> dict[str, str]:
        path = self.passwords_file
        if path is None:
            return {}
        with self._lock:
            try:
                stat = path.stat()
            except FileNotFoundError:
                self._stamp, self._entries = None, {}
                return {}
            stamp = (stat.st_size, stat.st_mtime_ns)
            if stamp != self._stamp:
                self._entries = self._parse(path)
                self._stamp = stamp
            return self._entries

    @staticmethod
    def _parse(path: Path) -> dict[str, str]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("ignoring passwords file %s: %s", path, exc)
            return {}
        if not isinstance(data, dict):
            log.warning("ignoring passwords file %s: not a JSON object", path)
            return {}
        return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}
