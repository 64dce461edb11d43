"""The OpenAPI document: FastAPI's, with the one error shape, bearer auth and the live limits.

Every operation documents its errors with `ErrorBody` (401 where the key is needed, 404, 422,
500: FastAPI's default 422 schema is not what folio answers), the bearer security scheme, and
`QueryRequest`'s bounds as configured (`FOLIO_MAX_QUESTION_CHARS`, `FOLIO_MAX_TOP_K`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from server.http.errors import ErrorBody
from server.http.security import is_open
from server.settings import Settings

__all__ = ["install_openapi"]

_ERRORS = {
    "401": "missing or wrong API key (when FOLIO_API_KEY is set)",
    "404": "unknown document, page or route",
    "422": "invalid request: parameters, body or limits",
    "500": "internal error (logged on the server)",
}
_REF = {"$ref": "#/components/schemas/ErrorBody"}


def _type_raw_bodies(responses: dict[str, Any]) -> None:
    """Bodies that are not JSON (images, HTML, SSE, text) are strings; say so where a route
    left the schema empty. An empty JSON schema is left alone (a test refuses it)."""
    for response in responses.values():
        for media, body in response.get("content", {}).items():
            if media != "application/json" and not body.get("schema"):
                binary = media.startswith(("image/", "application/pdf", "application/octet"))
                body["schema"] = {"type": "string", **({"format": "binary"} if binary else {})}


def _schema(app: FastAPI, settings: Settings) -> dict[str, Any]:
    doc = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name, schema in ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")[
        "$defs"
    ].items():
        schemas.setdefault(name, schema)
    body = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    body.pop("$defs", None)
    schemas["ErrorBody"] = body
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    components["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": "FOLIO_API_KEY"}
    }
    for path, item in doc.get("paths", {}).items():
        for method, operation in item.items():
            responses = operation.setdefault("responses", {})
            _type_raw_bodies(responses)
            guarded = not is_open(method.upper(), path)
            for status, description in _ERRORS.items():
                if status == "401" and not guarded:
                    continue
                responses[status] = {
                    "description": description,
                    "content": {"application/json": {"schema": dict(_REF)}},
                }
            if "requestBody" in operation:
                responses["413"] = {
                    "description": "request body over the upload limit (FOLIO_MAX_UPLOAD_MB)",
                    "content": {"application/json": {"schema": dict(_REF)}},
                }
            operation["security"] = [{"bearer": []}] if guarded else []
    query = schemas.get("QueryRequest", {}).get("properties", {})
    if "question" in query:
        query["question"]["maxLength"] = settings.max_question_chars
    if "top_k" in query:
        query["top_k"]["maximum"] = settings.max_top_k
    return doc


def install_openapi(app: FastAPI, settings: Settings) -> None:
    """Replace `app.openapi` with the documented, cached version."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _schema(app, settings)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
