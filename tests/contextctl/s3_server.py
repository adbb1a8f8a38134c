"""An S3-compatible server process for the synchronization tests: moto's standalone server on
loopback, speaking signed S3 over HTTP, and a bucket of it emptied after each test.

``restricted`` is a second server that enforces IAM (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``:
the first requests, which create the bucket and the users, are let through unchecked, every
later one is authenticated and checked against the caller's policies), with users granted only
some object actions on a prefix, as bucket policies often grant them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
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


@contextmanager
def serving(environ: Mapping[str, str] | None = None) -> Iterator[str]:
    """A moto server process on a free loopback port (``environ`` added to its environment);
    its URL."""
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H",
                             "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, **(environ or {})})
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


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with serving() as url:
        yield url


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


RESTRICTED_BUCKET = "guarded"
RESTRICTED_PREFIX = "team"
# The object actions each user of the restricted server is granted on RESTRICTED_PREFIX/*
# (None: every action on everything). Only admin may list the bucket.
GRANTS = {"admin": None,  # everything: the tests' own view of the bucket
          "get-put": ["s3:GetObject", "s3:PutObject"],
          "put-only": ["s3:PutObject"]}
# The requests the restricted server lets through before it enforces IAM: the bucket, then a
# user, an access key and a policy for each of GRANTS.
SETUP_REQUESTS = 1 + 3 * len(GRANTS)


@dataclass(frozen=True)
class Restricted:
    """The IAM-enforcing server: its URL and each user's credentials (contextctl's environment)."""

    endpoint: str
    users: Mapping[str, Mapping[str, str]]

    def client(self, user: str = "admin") -> Any:
        keys = self.users[user]
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="eu-west-1",
                            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])


def _policy(actions: list[str] | None) -> str:
    statement = ({"Effect": "Allow", "Action": "*", "Resource": "*"} if actions is None else
                 {"Effect": "Allow", "Action": actions,
                  "Resource": f"arn:aws:s3:::{RESTRICTED_BUCKET}/{RESTRICTED_PREFIX}/*"})
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@pytest.fixture(scope="module")
def restricted() -> Iterator[Restricted]:
    """A second server enforcing IAM, with the bucket RESTRICTED_BUCKET and the users of GRANTS;
    set up with requests it does not check (SETUP_REQUESTS of them, no more: a further one
    would go unchecked too)."""
    with serving({"INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_REQUESTS)}) as url:
        setup = {"endpoint_url": url, "region_name": "eu-west-1",
                 "aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        boto3.client("s3", **setup).create_bucket(
            Bucket=RESTRICTED_BUCKET,
            CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        iam = boto3.client("iam", **setup)
        users = {}
        for user, actions in GRANTS.items():
            iam.create_user(UserName=user)
            key = iam.create_access_key(UserName=user)["AccessKey"]
            iam.put_user_policy(UserName=user, PolicyName="objects",
                                PolicyDocument=_policy(actions))
            users[user] = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                           "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                           "CS_S3_REGION": "eu-west-1"}
        yield Restricted(url, users)
