"""A Qdrant REST stub on loopback that records what a client asks: collection creation (with its
cluster parameters), payload indexes and writes (with their `ordering`). qdrant-client's local mode
ignores shards, replicas and orderings, and no Qdrant server runs here; this is the REST surface
`QdrantServerStore` uses to create a collection and write points, answered as Qdrant 1.16 does.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from doubles.loopback import ThreadedServer
from doubles.ocr_simulator import _bind_loopback

__all__ = ["QdrantStub"]


def _ok(result: Any) -> JSONResponse:
    return JSONResponse({"result": result, "status": "ok", "time": 0.0})


class QdrantStub(ThreadedServer):
    """Context manager: the stub on a free loopback port; `created` and `writes` record calls."""

    name = "Qdrant stub"

    def __init__(self) -> None:
        self.created: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, dict[str, str]]] = []
        self.points: dict[str, int] = {}
        self._sock = _bind_loopback()
        app = Starlette(
            routes=[
                Route("/collections/{name}/exists", self._exists, methods=["GET"]),
                Route("/collections/{name}", self._collection, methods=["GET", "PUT", "PATCH"]),
                Route("/collections/{name}/index", self._index, methods=["PUT"]),
                Route("/collections/{name}/points", self._upsert, methods=["PUT"]),
                Route("/collections/{name}/points/delete", self._delete, methods=["POST"]),
                Route("/collections/{name}/points/count", self._count, methods=["POST"]),
            ]
        )
        self._listen(app, self._sock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _exists(self, request: Request) -> JSONResponse:
        return _ok({"exists": request.path_params["name"] in self.created})

    async def _collection(self, request: Request) -> JSONResponse:
        name = request.path_params["name"]
        if request.method == "PUT":
            self.created[name] = await request.json()
            return _ok(True)
        if request.method == "PATCH":
            body = await request.json()
            self.created[name]["metadata"] = body.get("metadata")
            return _ok(True)
        if name not in self.created:
            return JSONResponse({"status": {"error": f"Collection `{name}` doesn't exist!"}}, 404)
        return _ok(self._info(self.created[name]))

    async def _index(self, request: Request) -> JSONResponse:
        return _ok({"operation_id": 0, "status": "completed"})

    async def _upsert(self, request: Request) -> JSONResponse:
        name = request.path_params["name"]
        body = await request.json()
        self.writes.append(("upsert", dict(request.query_params)))
        self.points[name] = self.points.get(name, 0) + len(body.get("points", []))
        return _ok({"operation_id": len(self.writes), "status": "completed"})

    async def _delete(self, request: Request) -> JSONResponse:
        self.writes.append(("delete", dict(request.query_params)))
        return _ok({"operation_id": len(self.writes), "status": "completed"})

    async def _count(self, request: Request) -> JSONResponse:
        return _ok({"count": self.points.get(request.path_params["name"], 0)})

    @staticmethod
    def _info(created: dict[str, Any]) -> dict[str, Any]:
        params = {
            "vectors": created["vectors"],
            "sparse_vectors": created.get("sparse_vectors"),
            "shard_number": created.get("shard_number") or 1,
            "replication_factor": created.get("replication_factor") or 1,
            "write_consistency_factor": created.get("write_consistency_factor") or 1,
        }
        return {
            "status": "green",
            "optimizer_status": "ok",
            "segments_count": 1,
            "points_count": 0,
            "indexed_vectors_count": 0,
            "payload_schema": {},
            "config": {
                "params": params,
                "hnsw_config": {"m": 16, "ef_construct": 100, "full_scan_threshold": 10000},
                "optimizer_config": {"default_segment_number": 0, "flush_interval_sec": 5},
                "wal_config": {"wal_capacity_mb": 32, "wal_segments_ahead": 0},
                "metadata": created.get("metadata"),
            },
        }
