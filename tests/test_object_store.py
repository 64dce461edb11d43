"""Document bytes through an S3 API on loopback: the `moto` server, started as a process, stands
in for MinIO/S3 (it enforces credentials once its first IAM actions have made a user and a key).
The coordinator uploads each stored copy once; two `folio worker`s in fresh directories with only
FOLIO_BROKER_URL and AWS credentials (no data directory; the coordinator's API unreachable) read
the documents from the bucket, one SIGKILLed mid-unit, and the points are those of an embedded
run. A missing bucket and wrong credentials are each a clear error, at the coordinator and at a
worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from ingest.queue.object_store import ObjectStoreError
from ingest.queue.work_queue import QueueExtractor
from server.services import build_services
from tests.pdfgen import FACTS, fact_pdf
from tests.test_doc_bytes import EMBED_DIM, LONG_PAGES, fresh_worker, generated_folder
from tests.test_work_queue import (
    HEARTBEAT_S,
    _left_unread,
    _points,
    _settings,
    _stop_mid_unit,
    _units,
    redis_url,
)

__all__ = ["redis_url"]

BUCKET = "folio-docs"
MOTO = Path(sys.executable).parent / "moto_server"
NO_AUTH_ACTIONS = 4  # the IAM user, its policy, its key and the bucket; then credentials count


def _up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "the moto server exited"
        try:
            httpx.get(f"{url}/moto-api/", timeout=2)
            return
        except httpx.HTTPError:
            assert time.monotonic() < deadline, "the moto server did not start"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """The AWS variables of a moto server on loopback holding BUCKET, for a user it checks."""
    if not MOTO.exists():
        pytest.skip("moto_server is not installed (pip install 'moto[server]': the dev extra)")
    import boto3

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(NO_AUTH_ACTIONS)}
    proc = subprocess.Popen(
        [str(MOTO), "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _up(url, proc)
        anyone: dict[str, Any] = {
            "endpoint_url": url,
            "region_name": "us-east-1",
            "aws_access_key_id": "setup",
            "aws_secret_access_key": "setup",
        }
        iam = boto3.client("iam", **anyone)
        iam.create_user(UserName="folio")
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
        }
        iam.put_user_policy(UserName="folio", PolicyName="s3", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="folio")["AccessKey"]
        aws = {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        boto3.client("s3", **{**anyone, **_kw(aws)}).create_bucket(Bucket=BUCKET)
        yield aws
    finally:
        proc.kill()
        proc.wait(10)


def _kw(aws: dict[str, str]) -> dict[str, str]:
    return {
        "aws_access_key_id": aws["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": aws["AWS_SECRET_ACCESS_KEY"],
    }


def _env(monkeypatch: pytest.MonkeyPatch, aws: dict[str, str]) -> None:
    """This process (the coordinator) with `aws` as its AWS variables, and no others."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in aws.items():
        monkeypatch.setenv(name, value)


def _coordinator(tmp_path: Path, redis_url: str, prefix: str, **more: object) -> Any:
    settings = _settings(
        tmp_path / "coordinator",
        broker_url=redis_url,
        broker_window=2,
        broker_heartbeat_s=HEARTBEAT_S,
        public_url=f"http://127.0.0.1:{free_port()}",  # nothing listens: the bucket alone serves
        object_store_url=f"s3://{BUCKET}/{prefix}",
        **more,
    )
    return build_services(settings, embedder=HashEmbedder(EMBED_DIM))


def test_two_workers_read_from_the_object_store_one_killed(
    tmp_path: Path,
    redis_url: str,
    s3: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import boto3

    caplog.set_level("INFO", logger="ingest.queue.object_store")
    _env(monkeypatch, s3)
    folder = generated_folder(tmp_path)
    embedded = build_services(_settings(tmp_path / "embedded"), embedder=HashEmbedder(EMBED_DIM))
    try:
        expected = {r.source: r.status for r in embedded.sync.ingest_paths([folder])}
        points = _points(embedded)
    finally:
        embedded.close()
    coordinator = _coordinator(tmp_path, redis_url, "run1")
    assert isinstance(coordinator.ingestor.extractor, QueueExtractor)
    logs = [tmp_path / f"worker{i}.log" for i in (1, 2)]
    workers = [fresh_worker(tmp_path / f"w{i}", redis_url, log, **s3) for i, log in enumerate(logs)]
    results: list[Any] = []
    try:
        run = threading.Thread(
            target=lambda: results.extend(coordinator.sync.ingest_paths([folder]))
        )
        run.start()
        killed, unfinished = _stop_mid_unit(workers, logs, LONG_PAGES, lambda: True, alone=False)
        workers[killed].send_signal(signal.SIGKILL)
        run.join(120)
        assert not run.is_alive(), "the run did not end after a worker was killed"
        got = {r.source: r.status for r in results}
        assert got == expected, [r.error for r in results if r.status == "failed"]
        assert _points(coordinator) == points
        lost = _left_unread(unfinished, logs[killed])
        assert lost <= set(_units(logs[1 - killed], "read"))
        doc_ids = {r.doc_id for r in coordinator.ledger.documents()}
    finally:
        coordinator.close()
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    client = boto3.client("s3", **_kw(s3))
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="run1/")["Contents"]
    assert {o["Key"] for o in listed} == {f"run1/{d}.pdf" for d in doc_ids}
    uploads = [m for m in caplog.messages if m.startswith("uploaded ")]
    assert len(uploads) == len(doc_ids)  # once each, though each sent several units
    survivor = logs[1 - killed].read_text(errors="replace")
    assert f"from s3://{BUCKET}/run1/" in survivor


def test_a_missing_bucket_is_named_when_the_coordinator_starts(
    tmp_path: Path, redis_url: str, s3: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(monkeypatch, s3)
    settings = _settings(
        tmp_path / "data", broker_url=redis_url, object_store_url="s3://no-such-bucket/docs"
    )
    endpoint = s3["AWS_ENDPOINT_URL"]
    with pytest.raises(ObjectStoreError) as caught:
        build_services(settings, embedder=HashEmbedder(EMBED_DIM))
    assert str(caught.value) == (
        f"FOLIO_OBJECT_STORE_URL=s3://no-such-bucket/docs: the bucket 'no-such-bucket' does not "
        f"exist at {endpoint} (create it, or fix the bucket of FOLIO_OBJECT_STORE_URL)"
    )


def test_wrong_credentials_are_named_at_the_coordinator(
    tmp_path: Path, redis_url: str, s3: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(monkeypatch, {**s3, "AWS_ACCESS_KEY_ID": "AKIAWRONGWRONGWRONG0"})
    settings = _settings(tmp_path / "data", broker_url=redis_url, object_store_url=f"s3://{BUCKET}")
    with pytest.raises(ObjectStoreError, match="refused the credentials") as caught:
        build_services(settings, embedder=HashEmbedder(EMBED_DIM))
    assert f"bucket '{BUCKET}'" in str(caught.value)
    assert "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in str(caught.value)


def test_a_worker_with_wrong_credentials_says_so_and_the_document_waits(
    tmp_path: Path, redis_url: str, s3: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(monkeypatch, s3)
    pdf = tmp_path / "bakery.pdf"
    pdf.write_bytes(fact_pdf(*FACTS["bakery.pdf"], filler_pages=1))
    coordinator = _coordinator(tmp_path, redis_url, "run2")
    wrong = {**s3, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    worker = fresh_worker(tmp_path / "w", redis_url, tmp_path / "worker.log", **wrong)
    try:
        [result] = coordinator.sync.ingest_paths([pdf])
    finally:
        coordinator.close()
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    error = result.error or ""
    assert result.status == "failed" and result.retry, error
    assert error.startswith("waiting for a worker that can read it: worker: cannot read bakery.pdf")
    where = f"s3://{BUCKET}/run2/{result.doc_id}.pdf"
    store = s3["AWS_ENDPOINT_URL"]
    refused = f"{where}: the object store at {store} refused the credentials (403)"
    assert f"; {refused}: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; " in error
    assert "ConnectError" in error  # the coordinator's URL was tried too
