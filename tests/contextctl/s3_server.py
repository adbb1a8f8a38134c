"""An S3-compatible server process for the synchronization tests: moto's standalone server on
loopback, speaking signed S3 over HTTP, and a bucket of it emptied after each test."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "CS_S3_REGION": "eu-west-1"}
BUCKET = "contexts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H",
                             "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert proc.poll() is None, "the S3 server exited"
                assert time.monotonic() < deadline, "the S3 server did not start"
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def bucket(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The bucket ``contexts``, the credentials set for contextctl; emptied and deleted after."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="eu-west-1")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    yield s3
    for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=item["Key"])
    s3.delete_bucket(Bucket=BUCKET)
