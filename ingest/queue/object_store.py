"""An S3-compatible object store (S3, MinIO, Ceph RGW) holding stored copies by sha256.

`FOLIO_OBJECT_STORE_URL=s3://bucket/prefix` names the bucket and key prefix; the endpoint and
credentials come from the usual AWS variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`), read by boto3. Each failure says which bucket,
which endpoint and which setting to look at.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from ocr_engine.errors import EngineUnavailableError

__all__ = ["ObjectStore", "ObjectStoreError", "download", "new_client", "parse_object_url"]

log = logging.getLogger(__name__)

_MISSING = {"404", "NoSuchBucket", "NoSuchKey", "NotFound"}
_REFUSED = {"403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "Forbidden"}


class ObjectStoreError(EngineUnavailableError):
    """The object store cannot be reached, or refuses, or lacks the bucket or an object."""


def parse_object_url(url: str) -> tuple[str, str]:
    """(bucket, key or prefix) of `s3://bucket/rest`; ValueError for anything else."""
    parts = urlsplit(url.strip())
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"{url!r} is not an s3://bucket/prefix URL")
    return parts.netloc, parts.path.strip("/")


def _client() -> Any:
    import boto3  # only where an object store is configured
    from botocore.config import Config

    config = Config(
        connect_timeout=5, read_timeout=60, retries={"max_attempts": 3, "mode": "standard"}
    )
    return boto3.session.Session().client("s3", config=config)  # the AWS variables as now


def _code(exc: Exception) -> str:
    """The S3 error code of a boto3 ClientError ("" for anything else)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Code", ""))


def _explain(exc: Exception, bucket: str, key: str | None, endpoint: str) -> str:
    """One line for a boto3 failure: what was asked, of whom, and the setting to fix."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

    where = f"s3://{bucket}/{key}" if key else f"bucket {bucket!r}"
    if isinstance(exc, NoCredentialsError):
        fix = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        return f"{where} at {endpoint}: no credentials ({fix})"
    if isinstance(exc, EndpointConnectionError):
        return f"{where}: cannot reach the object store at {endpoint} (set AWS_ENDPOINT_URL)"
    if isinstance(exc, ClientError):
        code = _code(exc)
        if code in _MISSING and (key is None or code == "NoSuchBucket"):
            return (
                f"the bucket {bucket!r} does not exist at {endpoint} "
                "(create it, or fix the bucket of FOLIO_OBJECT_STORE_URL)"
            )
        if code in _MISSING:
            return f"{where} is not in the object store at {endpoint}"
        if code in _REFUSED:
            return (
                f"{where}: the object store at {endpoint} refused the credentials ({code}): "
                "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
        return f"{where} at {endpoint}: {code or exc}"
    return f"{where} at {endpoint}: {type(exc).__name__}: {exc}"


class ObjectStore:
    """Stored copies under `s3://bucket/prefix/{sha256}.pdf`, through one boto3 client."""

    def __init__(self, url: str, client: Any = None) -> None:
        self.url = url.strip().rstrip("/")
        self.bucket, self.prefix = parse_object_url(self.url)
        self.client = client if client is not None else _client()
        self.endpoint = str(self.client.meta.endpoint_url)

    def key(self, doc_id: str) -> str:
        return f"{self.prefix}/{doc_id}.pdf" if self.prefix else f"{doc_id}.pdf"

    def object_url(self, doc_id: str) -> str:
        return f"s3://{self.bucket}/{self.key(doc_id)}"

    def check(self) -> None:
        """Nothing when the bucket is there and the credentials open it; ObjectStoreError."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            why = _explain(exc, self.bucket, None, self.endpoint)
            raise ObjectStoreError(f"FOLIO_OBJECT_STORE_URL={self.url}: {why}") from exc

    def upload_once(self, doc_id: str, path: Path) -> None:
        """`path` uploaded as `doc_id` unless the store holds it already."""
        key = self.key(doc_id)
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
            return
        except Exception as exc:
            if _code(exc) not in _MISSING - {"NoSuchBucket"}:
                raise ObjectStoreError(_explain(exc, self.bucket, key, self.endpoint)) from exc
        try:
            self.client.upload_file(str(path), self.bucket, key)
        except Exception as exc:
            raise ObjectStoreError(_explain(exc, self.bucket, key, self.endpoint)) from exc
        log.info("uploaded %s to s3://%s/%s", doc_id[:12], self.bucket, key)


def download(object_url: str, out: IO[bytes], client: Any) -> None:
    """The object at `object_url` written to `out`; ObjectStoreError saying what failed."""
    bucket, key = parse_object_url(object_url)
    endpoint = str(client.meta.endpoint_url)
    try:
        client.download_fileobj(bucket, key, out)
    except Exception as exc:
        raise ObjectStoreError(_explain(exc, bucket, key, endpoint)) from exc


def new_client() -> Any:
    """A boto3 S3 client from this process's AWS variables."""
    return _client()
