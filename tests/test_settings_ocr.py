"""OCR settings from FOLIO_ environment variables, and the ExtractOptions they make."""

from __future__ import annotations

import pytest

from ocr_engine.options import DEFAULT_OCR_MODEL, ExtractOptions, OcrMode, VLLMOptions
from server.settings import Settings

OCR_VARS = (
    "FOLIO_OCR",
    "FOLIO_OCR_URL",
    "FOLIO_OCR_MODEL",
    "FOLIO_OCR_DPI",
    "FOLIO_OCR_MAX_IN_FLIGHT",
    "FOLIO_OCR_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OCR_VARS:
        monkeypatch.delenv(name, raising=False)


def test_defaults_read_pages_with_cpu_ocr_in_auto_mode() -> None:
    settings = Settings()
    assert settings.ocr is OcrMode.auto and settings.ocr_url == []
    options = settings.extract_options()
    assert options == ExtractOptions(ocr=OcrMode.auto, vllm=None)
    assert options.cpu.enabled


def test_endpoints_and_their_options_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FOLIO_OCR", " Always ")
    monkeypatch.setenv("FOLIO_OCR_URL", "http://vllm-a:8000/v1/, https://vllm-b.example/v1 ,")
    monkeypatch.setenv("FOLIO_OCR_MODEL", "deepseek-ai/DeepSeek-OCR-2")
    monkeypatch.setenv("FOLIO_OCR_DPI", "200")
    monkeypatch.setenv("FOLIO_OCR_MAX_IN_FLIGHT", "64")
    monkeypatch.setenv("FOLIO_OCR_API_KEY", "sk-local")
    settings = Settings()
    assert "sk-local" not in repr(settings)
    options = settings.extract_options()
    assert options.ocr is OcrMode.always
    assert options.vllm == VLLMOptions(
        urls=["http://vllm-a:8000/v1", "https://vllm-b.example/v1"],
        model="deepseek-ai/DeepSeek-OCR-2",
        api_key="sk-local",
        dpi=200,
        max_in_flight=64,
    )


def test_one_endpoint_keeps_the_model_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLIO_OCR_URL", "http://vllm:8000/v1")
    monkeypatch.setenv("FOLIO_OCR", "never")
    monkeypatch.setenv("FOLIO_OCR_API_KEY", "")
    options = Settings().extract_options()
    assert options.ocr is OcrMode.never
    assert options.vllm is not None
    assert options.vllm.urls == ["http://vllm:8000/v1"]
    assert (options.vllm.model, options.vllm.api_key) == (DEFAULT_OCR_MODEL, None)
    assert (options.vllm.dpi, options.vllm.max_in_flight) == (144, 32)


def test_a_blank_url_list_means_no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLIO_OCR_URL", " , ")
    assert Settings().extract_options().vllm is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("FOLIO_OCR_URL", "vllm:8000/v1", "not an http:// or https:// URL"),
        ("FOLIO_OCR_URL", "http://ok:8000/v1,ftp://files/v1", "not an http:// or https:// URL"),
        ("FOLIO_OCR_URL", "http://vllm:99999/v1", "bad port"),
        ("FOLIO_OCR_URL", "http:///v1", "with a host"),
        ("FOLIO_OCR", "sometimes", "auto"),
        ("FOLIO_OCR_DPI", "10", "ocr_dpi"),
        ("FOLIO_OCR_MAX_IN_FLIGHT", "0", "ocr_max_in_flight"),
        ("FOLIO_OCR_MODEL", "", "ocr_model"),
    ],
)
def test_bad_values_fail_at_startup_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message) as info:
        Settings()
    assert name.removeprefix("FOLIO_").lower() in str(info.value)
