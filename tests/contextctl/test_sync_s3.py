"""``contextctl ctx sync push --to s3://…`` against an S3-compatible server process (moto's
standalone server, speaking the S3 protocol over HTTP with signed requests) and a served
Context Service: the bundle holds exactly the revision it is named by, ``current`` names it,
and pushing again sends nothing."""

from __future__ import annotations

import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.contextctl.conftest import Cli
from tests.contextctl.s3_server import CREDENTIALS, bucket, endpoint
from tests.contextctl.test_sync_push import revision_of

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-sync-s3")
__all__ = ["CREDENTIALS", "bucket", "endpoint"]  # the S3 server fixtures, shared


def test_a_context_travels_as_a_bundle_named_by_its_revision(
        cli: Cli, bucket: Any, endpoint: str, tmp_path: Path) -> None:
    home = tmp_path / "contexts"
    env = {"CS_CONTEXT_HOME": str(home), "CS_S3_ENDPOINT": endpoint}
    assert cli("local", "init", "docs", "--type", "artifacts", **env).code == 0
    root = home / "docs"
    (root / "artifacts" / "report").mkdir(parents=True)
    (root / "artifacts" / "report" / "summary.md").write_text("# Summary\n")
    (root / "artifacts" / "data.bin").write_bytes(bytes(range(256)) * 40)
    assert cli("ctx", "create", "docs", "--type", "artifacts", *NS).code == 0

    pushed = cli("ctx", "sync", "push", "docs", "--to", "s3://contexts/team/docs/", "--json",
                 *NS, **env)
    assert pushed.code == 0, pushed.err
    revision = json.loads(pushed.out)["revision"]
    assert revision == revision_of(root, "artifacts")
    current = bucket.get_object(Bucket="contexts", Key="team/docs/current")["Body"].read()
    assert current.decode() == revision
    body = bucket.get_object(Bucket="contexts", Key=f"team/docs/{revision}.tar.gz")["Body"].read()
    unpacked = tmp_path / "unpacked"
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        tar.extractall(unpacked, filter="data")
    assert revision_of(unpacked, "artifacts") == revision
    got = cli("ctx", "get", "docs", "--json", *NS)
    assert json.loads(got.out)["currentRevision"] == revision

    again = cli("ctx", "sync", "push", "docs", "--to", "s3://contexts/team/docs", "--json",
                *NS, **env)  # nothing is written again: test_sync_review's versioned bucket
    assert again.code == 0, again.err
    assert json.loads(again.out)["revisionPublished"] is False

    (root / "artifacts" / "data.bin").unlink()
    changed = cli("ctx", "sync", "push", "docs", "--to", "s3://contexts/team/docs", "--json",
                  *NS, **env)
    assert changed.code == 0, changed.err
    newer = json.loads(changed.out)["revision"]
    assert newer != revision
    keys = {o["Key"] for o in bucket.list_objects_v2(Bucket="contexts")["Contents"]}
    assert keys == {"team/docs/current", f"team/docs/{revision}.tar.gz",
                    f"team/docs/{newer}.tar.gz"}
    assert bucket.get_object(Bucket="contexts", Key="team/docs/current")["Body"].read() == (
        newer.encode())


def test_the_same_files_make_the_same_bundle(cli: Cli, bucket: Any, endpoint: str,
                                              tmp_path: Path) -> None:
    """Reproducible: two local contexts of equal files give byte-equal bundles."""
    bodies = []
    for n in (1, 2):
        home = tmp_path / f"home{n}"
        env = {"CS_CONTEXT_HOME": str(home), "CS_S3_ENDPOINT": endpoint}
        assert cli("local", "init", "same", "--type", "state", **env).code == 0
        (home / "same" / "harnesses").mkdir(parents=True, exist_ok=True)
        (home / "same" / "harnesses" / "run.json").write_text('{"steps": 3}')
        time.sleep(0.01 * n)  # different file times must not matter
        if n == 1:
            assert cli("ctx", "create", "same", "--type", "state", *NS).code == 0
        pushed = cli("ctx", "sync", "push", "same", "--to", f"s3://contexts/p{n}", "--json",
                     *NS, **env)
        assert pushed.code == 0, pushed.err
        revision = json.loads(pushed.out)["revision"]
        bodies.append(bucket.get_object(Bucket="contexts", Key=f"p{n}/{revision}.tar.gz")[
            "Body"].read())
    assert bodies[0] == bodies[1]


def test_an_unreachable_endpoint_publishes_nothing(cli: Cli, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    home = tmp_path / "contexts"
    env = {"CS_CONTEXT_HOME": str(home), "CS_S3_ENDPOINT": "http://127.0.0.1:9"}
    assert cli("local", "init", "lost", "--type", "state", **env).code == 0
    assert cli("ctx", "create", "lost", "--type", "state", *NS).code == 0
    failed = cli("ctx", "sync", "push", "lost", "--to", "s3://contexts/x", *NS, **env)
    assert failed.code == 1 and "S3 synchronization to s3://contexts/x failed" in failed.err
    got = cli("ctx", "get", "lost", "--json", *NS)
    assert not json.loads(got.out).get("currentRevision")
