"""One error tree: every exception class folio defines derives from FolioError, and a password
failure is told apart by its type, not by words in its message."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from ingest.ledger.records import FailureKind
from ingest.pipeline.failures import classify
from ocr_engine.errors import BadInputError, FolioError, PasswordError
from ocr_engine.inputs.pdf import open_pdf
from tests.pdfgen import encrypted_pdf

PACKAGES = ("ocr_engine", "ingest", "retrieval", "server")


def _product_exceptions() -> list[type[BaseException]]:
    found = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(cls, BaseException)
                    and cls.__module__ == module.__name__
                    and not cls.__name__.startswith("_")
                ):
                    found.append(cls)
    return found


def test_every_folio_exception_derives_from_the_root() -> None:
    classes = _product_exceptions()
    assert len(classes) > 15, classes  # the walk found the modules
    strays = [f"{c.__module__}.{c.__name__}" for c in classes if not issubclass(c, FolioError)]
    assert strays == []


def test_a_password_failure_is_its_own_type() -> None:
    with pytest.raises(PasswordError) as needs:
        open_pdf(encrypted_pdf("s3cret"), name="locked.pdf")
    assert isinstance(needs.value, BadInputError)
    assert classify(needs.value)[0] is FailureKind.password
    # a bad-input message that happens to say "password" is not a password failure
    assert classify(BadInputError("x.pdf: the password field is blank"))[0] is FailureKind.bad_input
