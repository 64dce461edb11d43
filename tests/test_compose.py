"""docker-compose.yml: valid against the Compose Specification, and wired as folio expects."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from jsonschema import Draft7Validator

from server.settings import Settings
from tests.conftest import REPO_ROOT, shared_path

COMPOSE = REPO_ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_it_follows_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads(shared_path("compose_spec", "compose-spec.json").read_text("utf-8"))
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in Draft7Validator(schema).iter_errors(compose)
    ]
    assert errors == []


def test_folio_points_at_the_qdrant_and_vllm_services(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    services = compose["services"]
    folio = services["folio"]
    env = folio["environment"]
    qdrant, ocr = urlsplit(env["FOLIO_QDRANT_URL"]), urlsplit(env["FOLIO_OCR_URL"])
    assert (qdrant.hostname, qdrant.port) == ("qdrant", 6333)
    assert (ocr.hostname, ocr.port, ocr.path) == ("vllm", 8000, "/v1")
    assert qdrant.hostname in services and ocr.hostname in services
    assert folio["depends_on"] == {
        "qdrant": {"condition": "service_healthy"},
        "vllm": {"condition": "service_healthy"},
    }
    assert folio["build"] == "."
    assert "folio-data:/data" in folio["volumes"]
    assert any(v.split(":")[1] == "/inbox" for v in folio["volumes"])
    # the same variables make valid settings, with the vLLM endpoint and model served below
    for name, value in env.items():
        if "${" not in str(value):
            monkeypatch.setenv(name, str(value))
    options = Settings().extract_options()
    assert options.vllm is not None
    assert options.vllm.urls == ["http://vllm:8000/v1"]
    assert options.vllm.model == services["vllm"]["command"][0]


def test_vllm_serves_deepseek_ocr_with_the_recipe_flags(compose: dict[str, Any]) -> None:
    vllm = compose["services"]["vllm"]
    image, tag = vllm["image"].split(":")
    assert image == "vllm/vllm-openai"
    assert tuple(int(x) for x in tag.removeprefix("v").split(".")[:2]) >= (0, 12)
    command = [str(part) for part in vllm["command"]]
    assert command[0] == "deepseek-ai/DeepSeek-OCR"

    def value_of(flag: str) -> str:
        assert flag in command, flag
        return command[command.index(flag) + 1]

    processor = "vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor"
    assert value_of("--logits-processors") == processor
    assert "--no-enable-prefix-caching" in command
    assert value_of("--mm-processor-cache-gb") == "0"
    assert value_of("--max-model-len") == "8192"
    assert "/health" in " ".join(vllm["healthcheck"]["test"])
    assert vllm.get("ipc") == "host" or "shm_size" in vllm


def test_the_gpu_is_reserved_for_vllm(compose: dict[str, Any]) -> None:
    devices = compose["services"]["vllm"]["deploy"]["resources"]["reservations"]["devices"]
    assert {"driver": "nvidia", "count": 1, "capabilities": ["gpu"]} in devices
    assert "deploy" not in compose["services"]["folio"]


def test_every_dependency_has_a_healthcheck_and_images_are_pinned(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    for name, service in services.items():
        if "image" in service and not service["image"].startswith("folio:"):
            assert not service["image"].endswith(":latest") and ":" in service["image"], name
        if "build" not in service:  # a built folio has the Dockerfile's HEALTHCHECK
            assert service["healthcheck"]["test"][0] == "CMD", name
    assert "/readyz" in " ".join(services["qdrant"]["healthcheck"]["test"])
    assert services["llm"]["profiles"] == ["llm"]
    declared = set(compose["volumes"])
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith(".") or source in declared, volume


def test_the_optional_llm_serves_the_model_folio_asks_for(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    services = compose["services"]
    llm, env = services["llm"], services["folio"]["environment"]
    assert llm["profiles"] == ["llm"] and "llm" not in services["folio"]["depends_on"]
    assert str(llm["command"][0]) == env["FOLIO_LLM_MODEL"]  # the same ${LLM_MODEL:-...}
    assert env["FOLIO_LLM_URL"] == "${FOLIO_LLM_URL:-}"  # blank unless set: extractive answers
    monkeypatch.setenv("FOLIO_LLM_URL", "http://llm:8000/v1")
    monkeypatch.setenv("FOLIO_LLM_MODEL", "Qwen/Qwen2.5-7B-Instruct")
    options = Settings().llm_options()
    assert options is not None and urlsplit(options.url).hostname == "llm"


SCALE = {
    "redis",
    "qdrant-1",
    "qdrant-2",
    "qdrant-3",
    "ocr",
    "embed",
    "folio-coordinator",
    "folio-worker",
    "folio-query",
    "folio-proxy",
}
NGINX = REPO_ROOT / "deploy" / "nginx-scale.conf"


def _env_settings(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings from a service's environment, `${VAR:-default}` taken at its default."""
    for name, value in env.items():
        text = str(value)
        if text.startswith("${") and ":-" in text:
            text = text.split(":-", 1)[1].rstrip("}")
        monkeypatch.setenv(name, text)
    return Settings()


def test_the_scale_profile_holds_a_queue_workers_a_qdrant_cluster_and_gpu_services(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    scale = {name for name, s in services.items() if "scale" in s.get("profiles", [])}
    assert scale == SCALE
    for name in SCALE - {"folio-proxy"}:
        assert "ports" not in services[name], f"{name} publishes a port"
    nodes = [services[f"qdrant-{i}"] for i in (1, 2, 3)]
    for i, node in enumerate(nodes, start=1):
        assert node["environment"]["QDRANT__CLUSTER__ENABLED"] == "true"
        command = [str(part) for part in node["command"]]
        assert command[command.index("--uri") + 1] == f"http://qdrant-{i}:6335"
        assert ("--bootstrap" in command) == (i > 1)
        if i > 1:
            assert command[command.index("--bootstrap") + 1] == "http://qdrant-1:6335"
    volumes = {v for node in nodes for v in node["volumes"]}
    assert len(volumes) == 3  # a disk per peer
    worker = services["folio-worker"]
    assert worker["entrypoint"][:2] == ["folio", "worker"]
    assert worker["deploy"]["replicas"] == "${FOLIO_WORKERS:-4}"
    assert worker["volumes"] == ["folio-scale-data:/data:ro"]  # reads the PDFs, writes nothing
    ocr = services["ocr"]
    command = [str(part) for part in ocr["command"]]
    (device,) = ocr["deploy"]["resources"]["reservations"]["devices"]
    assert command[command.index("--data-parallel-size") + 1] == device["count"]
    assert command[0] == services["vllm"]["command"][0]
    embed = [str(part) for part in services["embed"]["command"]]
    assert embed[embed.index("--runner") + 1] == "pooling"


def test_the_coordinator_and_workers_point_at_the_scale_services(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    services = compose["services"]
    coordinator = services["folio-coordinator"]
    settings = _env_settings(coordinator["environment"], monkeypatch)
    for url in (settings.broker_url, settings.qdrant_url, settings.embed_url):
        assert url is not None and urlsplit(url).hostname in services
        assert urlsplit(url).hostname in coordinator["depends_on"]
    assert settings.extract_options().vllm is not None
    assert urlsplit(settings.extract_options().vllm.urls[0]).hostname == "ocr"
    assert settings.embed_model == str(services["embed"]["command"][0]).split(":-")[1].rstrip("}")
    assert settings.qdrant_replicas is not None and settings.qdrant_replicas <= 3
    assert (settings.qdrant_shards or 1) >= 3  # every peer holds shards
    worker = services["folio-worker"]["environment"]
    assert worker["FOLIO_BROKER_URL"] == coordinator["environment"]["FOLIO_BROKER_URL"]
    data = next(v for v in coordinator["volumes"] if v.endswith(":/data"))
    assert services["folio-worker"]["volumes"] == [f"{data}:ro"]


def _nginx_routes() -> tuple[dict[str, str], dict[str, list[str]]]:
    """deploy/nginx-scale.conf read: each location's upstream, and each upstream's servers."""
    text = NGINX.read_text(encoding="utf-8")
    text = re.sub(r"#[^\n]*", "", text)
    routes = {
        where.strip(): upstream
        for where, upstream in re.findall(
            r"location\s+([^{]+?)\s*\{[^}]*?proxy_pass\s+http://([\w-]+);", text
        )
    }
    upstreams = {
        name: re.findall(r"server\s+([\w.-]+:\d+)", body)
        for name, body in re.findall(r"upstream\s+([\w-]+)\s*\{([^}]*)\}", text)
    }
    return routes, upstreams


def test_query_replicas_answer_behind_the_proxy_and_the_rest_goes_to_the_coordinator(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    services = compose["services"]
    proxy, query = services["folio-proxy"], services["folio-query"]
    assert proxy["ports"] == ["${FOLIO_PUBLISHED_PORT:-8000}:80"]
    assert f"./{NGINX.relative_to(REPO_ROOT)}:/etc/nginx/conf.d/default.conf:ro" in proxy["volumes"]
    assert set(proxy["depends_on"]) == {"folio-coordinator", "folio-query"}
    routes, upstreams = _nginx_routes()
    served_by = {name: servers[0].split(":")[0] for name, servers in upstreams.items()}
    assert set(served_by.values()) == {"folio-query", "folio-coordinator"}
    for servers in upstreams.values():
        assert servers[0].split(":")[1] == "8000"  # where `folio serve` listens in the image
    replicas = {where for where, upstream in routes.items() if served_by[upstream] == "folio-query"}
    assert replicas == {
        "= /query",
        "= /query/stream",
        "~ ^/documents/[^/]+/pages/",
        "= /",
        "/static/",
    }
    assert served_by[routes["/"]] == "folio-coordinator"  # uploads, documents, /worker/, ...
    # a replica: `folio serve --query-only`, no volume, as many as FOLIO_QUERY_REPLICAS
    assert query["entrypoint"][:4] == ["folio", "serve", "--query-only", "--host"]
    assert "volumes" not in query
    assert query["deploy"]["replicas"] == "${FOLIO_QUERY_REPLICAS:-2}"
    coordinator_env = services["folio-coordinator"]["environment"]
    env = query["environment"]
    for name in ("FOLIO_API_KEY", "FOLIO_QDRANT_URL", "FOLIO_QDRANT_COLLECTION", "FOLIO_EMBED_URL",
                 "FOLIO_EMBED_MODEL", "FOLIO_OBJECT_STORE_URL", "FOLIO_LLM_URL"):  # fmt: skip
        assert env[name] == coordinator_env[name], name  # one index, one key for signed links
    settings = _env_settings(env, monkeypatch)
    assert settings.coordinator_url is not None
    coordinator = urlsplit(settings.coordinator_url)
    assert (coordinator.hostname, coordinator.port) == ("folio-coordinator", 8000)
    assert settings.qdrant_url is not None
    assert urlsplit(settings.qdrant_url).hostname in query["depends_on"]
    assert query["healthcheck"]["test"][0] == "CMD"
