"""An OpenAI-compatible server on loopback that answers like vLLM serving an OCR model.

The model name (`model`, DeepSeek-OCR by default) picks the format of the answers: DeepSeek-OCR
grounding markdown, dots.ocr JSON or MinerU2.5's layout-then-regions (`doubles.ocr_sim_formats`).

`POST /v1/chat/completions` recognises the page image by the sha256 of its decoded bytes, so every
image must be registered first (`register_pdf` renders pages with
`ocr_engine.engines.render.render_page`, exactly as the client does; `register_image`;
`register_recorded`). An unregistered image is answered 400 "unknown image": a real model would read
anything, the simulator only knows what it was told. Other answers follow vLLM: 404 for another
model name, 400 when the prompt estimate plus `max_tokens` exceeds the context,
`skip_special_tokens` true by default (tags stripped), `finish_reason` "length" when `max_tokens`
cuts the output, no EOS string in the content unless `include_stop_str_in_output` is true and
special tokens are kept. Streaming and n > 1 are refused.

Each admitted request sleeps `prefill_seconds + seconds_per_token * completion_tokens`; at most
`capacity` are admitted at once, the rest wait (vLLM's max_num_seqs). Faults (`Fault`) are queued
per page key or for any page. Recorded request bodies have each image URL replaced by a short
placeholder naming its sha256 and size.

Everything, registration included, goes through HTTP (`/_sim/...`), so the in-thread server and the
subprocess one (`process=True`, for benchmarks that time the client's CPU alone) share one path.
Run it by hand with `python -m doubles.ocr_simulator serve --port 8000`.
"""

from __future__ import annotations

import argparse
import base64
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import uvicorn

from doubles.ocr_sim_app import DEFAULT_MODEL, SimState, SimStats, SimulatorConfig, create_app
from doubles.ocr_sim_requests import Fault
from ocr_engine.options import OcrFamily, default_context, ocr_family

__all__ = [
    "RECORDED",
    "RECORDED_BY_FAMILY",
    "Fault",
    "OcrSimulator",
    "SimStats",
    "SimulatorConfig",
    "SimulatorError",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
# (PDF under ../shared/data, 1-based page) -> recorded DeepSeek-OCR output replayed for it.
RECORDED_PDF = "docling/pdf/2305.03393v1-pg9.pdf"
RECORDED = {(RECORDED_PDF, 1): "ocr_samples/deepseek_ocr__docling__deepseek_example.md"}
# the same for each model family; dots.ocr's was recorded on docling's multi_page.pdf page 1
RECORDED_BY_FAMILY: dict[OcrFamily, dict[tuple[str, int], str]] = {
    OcrFamily.deepseek: RECORDED,
    OcrFamily.dots: {
        ("docling/pdf/multi_page.pdf", 1): "ocr_samples/dots_ocr__docling__dots_list.json"
    },
    OcrFamily.mineru: {},  # the recorded layout's page (baige_page8) is not in the shared data
}
_PORT_LINE = "OCR_SIMULATOR_PORT="


class _Server(uvicorn.Server):
    """uvicorn that releases hung and sleeping requests when told to exit (signal or flag)."""

    def __init__(self, config: uvicorn.Config, state: SimState) -> None:
        super().__init__(config)
        self.sim_state = state

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.sim_state.begin_close()
        super().handle_exit(sig, frame)


def _bind_loopback(port: int = 0) -> socket.socket:
    """A listening socket; proto IPPROTO_TCP so asyncio turns Nagle off on accepted connections
    (with proto 0 it does not, and every small response waits 40 ms for a delayed ACK)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)
    return sock


def _uvicorn_server(config: SimulatorConfig) -> _Server:
    app = create_app(config)
    uv_config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=5, lifespan="on"
    )
    return _Server(uv_config, app.state.sim)


class SimulatorError(RuntimeError):
    """The simulator refused an admin call or could not start."""


class OcrSimulator:
    """Context manager around the simulator: in a thread of this process, or a subprocess."""

    def __init__(
        self,
        *,
        seconds_per_token: float = 0.0,
        capacity: int = 64,
        model: str = DEFAULT_MODEL,
        process: bool = False,
        prefill_seconds: float = 0.0,
        context_tokens: int | None = None,
        api_key: str | None = None,
        start_timeout_s: float = 30.0,
    ) -> None:
        """`model` picks the answers' format; `context_tokens` defaults to the one its family is
        served with (`ocr_engine.options.default_context`)."""
        self.config = SimulatorConfig(
            model=model,
            capacity=capacity,
            seconds_per_token=seconds_per_token,
            prefill_seconds=prefill_seconds,
            context_tokens=context_tokens or default_context(model),
            api_key=api_key,
        )
        self.process = process
        self.start_timeout_s = start_timeout_s
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._admin: httpx.Client | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """The OpenAI base URL, ending in /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> OcrSimulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if self.process:
            self._start_process()
        else:
            self._start_thread()
        self._admin = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=None)
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            try:
                if self._admin.get("/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise SimulatorError("the OCR simulator did not start")
            time.sleep(0.05)

    def _start_thread(self) -> None:
        self._sock = _bind_loopback()
        self.port = self._sock.getsockname()[1]
        self._server = _uvicorn_server(self.config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()

    def _start_process(self) -> None:
        c = self.config
        argv = [
            sys.executable,
            "-m",
            "doubles.ocr_simulator",
            "serve",
            "--port",
            "0",
            "--model",
            c.model,
            "--capacity",
            str(c.capacity),
            "--seconds-per-token",
            repr(c.seconds_per_token),
            "--prefill-seconds",
            repr(c.prefill_seconds),
            "--context-tokens",
            str(c.context_tokens),
            "--parent-pid",
            str(os.getpid()),
        ]
        env = dict(os.environ)
        if c.api_key:
            env["OCR_SIMULATOR_API_KEY"] = c.api_key
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE)
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], self.start_timeout_s)
        line = self._proc.stdout.readline().decode() if ready else ""
        self._proc.stdout.close()
        if not line.startswith(_PORT_LINE):
            self.close()
            raise SimulatorError(f"the OCR simulator subprocess did not report a port: {line!r}")
        self.port = int(line[len(_PORT_LINE) :])

    def close(self) -> None:
        """Stop the server, releasing hung requests; idempotent."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self._server is not None and self._thread is not None:
            self._server.sim_state.begin_close()
            self._server.should_exit = True
            self._thread.join(15)
            self._server = self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(15)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(5)
            self._proc = None

    def _call(self, method: str, path: str, payload: object = None) -> Any:
        if self._admin is None:
            raise SimulatorError("the simulator is not running (use it as a context manager)")
        response = self._admin.request(method, path, json=payload)
        if response.status_code != 200:
            raise SimulatorError(f"{path}: {response.status_code} {response.text}")
        return response.json()

    @staticmethod
    def _pdf_fields(name: str, value: bytes | str | Path | None) -> dict[str, str]:
        if value is None:
            return {}
        if isinstance(value, bytes | bytearray):
            return {f"{name}_b64": base64.b64encode(value).decode()}
        return {f"{name}_path": str(Path(value).resolve())}

    def register_pdf(
        self,
        pdf: bytes | str | Path,
        *,
        dpi: int = 144,
        max_pixels: int = 6_000_000,
        text_source: bytes | str | Path | None = None,
    ) -> list[str]:
        """Render each page as the client will; answers are synthesised from `text_source`'s text
        layer (default: this PDF). Returns one key (the PNG's sha256) per page."""
        name = "<bytes>" if isinstance(pdf, bytes | bytearray) else Path(pdf).name
        payload = {
            **self._pdf_fields("pdf", pdf),
            **self._pdf_fields("text_source", text_source),
            "dpi": dpi,
            "max_pixels": max_pixels,
            "name": name,
        }
        return list(self._call("POST", "/_sim/register_pdf", payload)["keys"])

    def register_image(self, image: bytes, output_text: str) -> str:
        """Any PNG/JPEG, answered with `output_text` (tagged form; stripped per request)."""
        payload = {"image_b64": base64.b64encode(image).decode(), "output_text": output_text}
        return str(self._call("POST", "/_sim/register_image", payload)["key"])

    def register_recorded(
        self, data_dir: Path, *, dpi: int = 144, max_pixels: int = 6_000_000
    ) -> list[str]:
        """Pages with a recorded output of the served model's family (`RECORDED_BY_FAMILY`)
        replay it verbatim; their keys."""
        keys = []
        for (relative, number), sample in RECORDED_BY_FAMILY[ocr_family(self.config.model)].items():
            text = (data_dir / sample).read_text(encoding="utf-8")
            payload = {
                **self._pdf_fields("pdf", data_dir / relative),
                "dpi": dpi,
                "max_pixels": max_pixels,
                "name": Path(relative).name,
                "recorded": {str(number): [text, f"recorded {sample}"]},
            }
            keys.append(self._call("POST", "/_sim/register_pdf", payload)["keys"][number - 1])
        return keys

    def add_fault(
        self, fault: Fault, key: str | None = None, times: int | None = 1, *, loop_unit: str = ". "
    ) -> None:
        """Queue a fault for `key` (None: any page) for the next `times` requests (None: always)."""
        payload = {"fault": Fault(fault).value, "key": key, "times": times, "loop_unit": loop_unit}
        self._call("POST", "/_sim/fault", payload)

    def clear_faults(self) -> None:
        self._call("DELETE", "/_sim/faults")

    def reset_stats(self) -> None:
        """Zero the counters and forget recorded requests (registrations and faults stay)."""
        self._call("POST", "/_sim/reset")

    @property
    def stats(self) -> SimStats:
        return SimStats.model_validate(self._call("GET", "/_sim/stats"))

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies received, oldest first, image data elided to `<elided sha256=... bytes=...>`."""
        return list(self._call("GET", "/_sim/requests"))


def _serve(args: argparse.Namespace) -> None:
    config = SimulatorConfig(
        model=args.model,
        capacity=args.capacity,
        seconds_per_token=args.seconds_per_token,
        prefill_seconds=args.prefill_seconds,
        context_tokens=args.context_tokens or default_context(args.model),
        api_key=os.environ.get("OCR_SIMULATOR_API_KEY") or None,
    )
    sock = _bind_loopback(args.port)
    print(f"{_PORT_LINE}{sock.getsockname()[1]}", flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the parent reads no further than the port
    server = _uvicorn_server(config)
    if args.parent_pid:
        threading.Thread(
            target=_exit_with_parent, args=(server, args.parent_pid), daemon=True
        ).start()
    server.run(sockets=[sock])


def _exit_with_parent(server: _Server, parent_pid: int) -> None:
    """Stop when the process that started this one is gone (it was killed without closing us)."""
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    server.sim_state.begin_close()
    server.should_exit = True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m doubles.ocr_simulator")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve on 127.0.0.1 (port 0: any free port)")
    serve.add_argument("--port", type=int, default=0)
    serve.add_argument("--model", default=DEFAULT_MODEL)
    serve.add_argument("--capacity", type=int, default=64)
    serve.add_argument("--seconds-per-token", type=float, default=0.0)
    serve.add_argument("--prefill-seconds", type=float, default=0.0)
    serve.add_argument("--context-tokens", type=int, default=0, help="0: the model's own")
    serve.add_argument("--parent-pid", type=int, default=0, help="exit when this process is gone")
    args = parser.parse_args(argv)
    _serve(args)


if __name__ == "__main__":
    main()
