"""docker-compose.yml's commented alternatives for the vllm service serve what folio expects."""

from __future__ import annotations

import re

import yaml

from ocr_engine.options import OcrFamily, default_context, ocr_family
from tests.conftest import REPO_ROOT

COMPOSE = (REPO_ROOT / "docker-compose.yml").read_text(encoding="utf-8")


def alternative(name: str) -> list[str]:
    """The YAML list commented under `# command-{name}:`, loaded."""
    block = re.search(rf"^ *# command-{name}:\n((?: *#   .*\n)+)", COMPOSE, re.M)
    assert block is not None, f"no commented command-{name} in docker-compose.yml"
    text = "\n".join(line.split("#", 1)[1][2:] for line in block.group(1).splitlines())
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, list)
    return [str(item) for item in loaded]


def test_dots_ocr_is_served_with_the_context_folio_assumes() -> None:
    command = alternative("dots")
    assert ocr_family(command[0]) is OcrFamily.dots
    assert f"FOLIO_OCR_MODEL={command[0]}" in COMPOSE
    assert command[command.index("--max-model-len") + 1] == str(default_context(command[0]))
    assert "--trust-remote-code" in command


def test_mineru_is_served_with_its_logits_processor_and_context() -> None:
    (script,) = alternative("mineru")
    words = script.split()
    model = words[words.index("serve") + 1]
    assert ocr_family(model) is OcrFamily.mineru and f"FOLIO_OCR_MODEL={model}" in COMPOSE
    assert words[words.index("--max-model-len") + 1] == str(default_context(model))
    assert words[words.index("--logits-processors") + 1] == "mineru_vl_utils:MinerULogitsProcessor"
    assert "mineru-vl-utils" in words and "mineru-vl-utils[vllm]" not in script
