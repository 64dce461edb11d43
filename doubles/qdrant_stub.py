"""A Qdrant REST server on loopback that records what a client asks: collection creation (with its
cluster parameters), payload indexes and writes (with their `ordering`). No Qdrant server runs
here; this is the REST surface `QdrantServerStore` uses, answered as Qdrant 1.16 does, with the
points kept and searched by qdrant-client's local engine (upsert, delete, count, query with
prefetch and fusion, scroll, retrieve, facet), so several processes can share one index through
it as they would a Qdrant server. Shards, replicas and orderings are recorded, not enacted.
"""

from __future__ import annotations

from typing import Any

from qdrant_client import QdrantClient
from qdrant_client import models as qm
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
        self.engine = QdrantClient(location=":memory:")
        self._sock = _bind_loopback()
        app = Starlette(
            routes=[
                Route("/collections/{name}/exists", self._exists, methods=["GET"]),
                Route("/collections/{name}", self._collection, methods=["GET", "PUT", "PATCH"]),
                Route("/collections/{name}/index", self._index, methods=["PUT"]),
                Route("/collections/{name}/points", self._upsert, methods=["PUT"]),
                Route("/collections/{name}/points/delete", self._delete, methods=["POST"]),
                Route("/collections/{name}/points/count", self._count, methods=["POST"]),
                Route("/collections/{name}/points/query", self._query, methods=["POST"]),
                Route("/collections/{name}/points/scroll", self._scroll, methods=["POST"]),
                Route("/collections/{name}/points", self._retrieve, methods=["POST"]),
                Route("/collections/{name}/facet", self._facet, methods=["POST"]),
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
            if name in self.created:  # as Qdrant: two processes may race to create it
                error = {"status": {"error": f"Collection `{name}` already exists!"}}
                return JSONResponse(error, 409)
            self.created[name] = body = await request.json()
            made = qm.CreateCollection.model_validate(body)
            self.engine.create_collection(
                name,
                vectors_config=made.vectors or {},
                sparse_vectors_config=made.sparse_vectors,
            )
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
        self.engine.upsert(name, points=qm.PointsList.model_validate(body).points)
        return _ok({"operation_id": len(self.writes), "status": "completed"})

    async def _delete(self, request: Request) -> JSONResponse:
        self.writes.append(("delete", dict(request.query_params)))
        body = await request.json()
        selector: qm.PointsSelector = (
            qm.FilterSelector.model_validate(body)
            if "filter" in body
            else qm.PointIdsList.model_validate(body)
        )
        self.engine.delete(request.path_params["name"], points_selector=selector)
        return _ok({"operation_id": len(self.writes), "status": "completed"})

    async def _count(self, request: Request) -> JSONResponse:
        asked = qm.CountRequest.model_validate(await request.json())
        found = self.engine.count(request.path_params["name"], count_filter=asked.filter)
        return _ok({"count": found.count})

    async def _query(self, request: Request) -> JSONResponse:
        asked = qm.QueryRequest.model_validate(await request.json())
        found = self.engine.query_points(
            request.path_params["name"],
            query=asked.query,
            using=asked.using,
            prefetch=asked.prefetch,
            query_filter=asked.filter,
            limit=asked.limit or 10,
            with_payload=asked.with_payload if asked.with_payload is not None else True,
        )
        return _ok(found.model_dump(mode="json"))

    async def _scroll(self, request: Request) -> JSONResponse:
        asked = qm.ScrollRequest.model_validate(await request.json())
        records, offset = self.engine.scroll(
            request.path_params["name"],
            scroll_filter=asked.filter,
            limit=asked.limit or 10,
            offset=asked.offset,
            with_payload=asked.with_payload if asked.with_payload is not None else True,
        )
        points = [r.model_dump(mode="json") for r in records]
        return _ok({"points": points, "next_page_offset": offset})

    async def _retrieve(self, request: Request) -> JSONResponse:
        asked = qm.PointRequest.model_validate(await request.json())
        records = self.engine.retrieve(request.path_params["name"], ids=asked.ids)
        return _ok([r.model_dump(mode="json") for r in records])

    async def _facet(self, request: Request) -> JSONResponse:
        asked = qm.FacetRequest.model_validate(await request.json())
        found = self.engine.facet(
            request.path_params["name"],
            key=asked.key,
            facet_filter=asked.filter,
            limit=asked.limit or 10,
            exact=bool(asked.exact),
        )
        return _ok(found.model_dump(mode="json"))

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
