"""``ctx sync push --to s3://…`` and ``ctx sync pull --from s3://…`` with the permissions S3
policies commonly grant: object actions on a prefix, no ``s3:ListBucket``. Without it AWS answers
a read of a missing key with 403 instead of 404, so a push cannot learn whether the bundle or
``current`` is there; with ``s3:PutObject`` alone it cannot read them at all. Against an
S3-compatible server process enforcing IAM (moto's, see ``restricted``) and a served Context
Service.

moto is stricter than AWS on HEAD and looser on GET: it authorizes a HEAD as ``s3:HeadObject``
(AWS as ``s3:GetObject``), so every HEAD by these users is a 403, the answer AWS gives for a
missing key; and it answers a GET of a missing key the policy allows with 404. The push must
treat a 403 on either read as "unknown", and the pull must read with a GET alone."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.contextctl.conftest import Cli
from tests.contextctl.s3_server import RESTRICTED_BUCKET, RESTRICTED_PREFIX, Restricted, restricted
from tests.contextctl.test_sync_push import revision_of

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-sync-s3-permissions")
__all__ = ["restricted"]  # the IAM-enforcing S3 server fixture, shared


def local_context(cli: Cli, home: Path, name: str, text: str) -> Path:
    """A local artifacts context holding one file, and the service's context of its name."""
    assert cli("local", "init", name, "--type", "artifacts", CS_CONTEXT_HOME=str(home)).code == 0
    root = home / name
    (root / "artifacts" / "notes.md").write_text(text)
    assert cli("ctx", "create", name, "--type", "artifacts", *NS).code == 0
    return root


def push(cli: Cli, server: Restricted, user: str, home: Path, name: str, url: str) -> Any:
    return cli("ctx", "sync", "push", name, "--to", url, "--no-progress", "--json", *NS,
               CS_CONTEXT_HOME=str(home), CS_S3_ENDPOINT=server.endpoint, **server.users[user])


def pull(cli: Cli, server: Restricted, user: str, home: Path, name: str, url: str) -> Any:
    return cli("ctx", "sync", "pull", name, "--from", url, "--no-progress", "--json", *NS,
               CS_CONTEXT_HOME=str(home), CS_S3_ENDPOINT=server.endpoint, **server.users[user])


def read(server: Restricted, key: str) -> bytes:
    """An object as the bucket's administrator reads it."""
    body = server.client().get_object(Bucket=RESTRICTED_BUCKET, Key=key)["Body"].read()
    return bytes(body)


def keys(server: Restricted, prefix: str) -> set[str]:
    listed = server.client().list_objects_v2(Bucket=RESTRICTED_BUCKET, Prefix=prefix)
    return {o["Key"] for o in listed.get("Contents", [])}


def unpacked_revision(body: bytes, target: Path) -> str:
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        tar.extractall(target, filter="data")
    return revision_of(target, "artifacts")


def current_revision(cli: Cli, name: str) -> Any:
    return json.loads(cli("ctx", "get", name, "--json", *NS).out).get("currentRevision")


def test_the_server_denies_reads_to_a_user_who_may_only_write(restricted: Restricted) -> None:
    """The premise: IAM is enforced, and a read the policy does not grant is a 403."""
    writer = restricted.client("put-only")
    key = f"{RESTRICTED_PREFIX}/premise"
    writer.put_object(Bucket=RESTRICTED_BUCKET, Key=key, Body=b"x")
    with pytest.raises(ClientError) as head:
        writer.head_object(Bucket=RESTRICTED_BUCKET, Key=key)
    assert head.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as outside:
        writer.put_object(Bucket=RESTRICTED_BUCKET, Key="elsewhere/premise", Body=b"x")
    assert outside.value.response["Error"]["Code"] == "AccessDenied"
    reader = restricted.client("get-put")
    with pytest.raises(ClientError) as heading:  # moto asks for s3:HeadObject here
        reader.head_object(Bucket=RESTRICTED_BUCKET, Key=key)
    assert heading.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert reader.get_object(Bucket=RESTRICTED_BUCKET, Key=key)["Body"].read() == b"x"
    assert read(restricted, key) == b"x"


def test_a_user_who_may_only_write_pushes_the_bundle_then_current(
        cli: Cli, restricted: Restricted, tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = local_context(cli, home, "write-only", "# written, never read back\n")
    url = f"s3://{RESTRICTED_BUCKET}/{RESTRICTED_PREFIX}/write-only"

    pushed = push(cli, restricted, "put-only", home, "write-only", url)
    assert pushed.code == 0, pushed.err
    revision = json.loads(pushed.out)["revision"]
    assert revision == revision_of(root, "artifacts")
    bundle_key = f"{RESTRICTED_PREFIX}/write-only/{revision}.tar.gz"
    body = read(restricted, bundle_key)
    assert unpacked_revision(body, tmp_path / "unpacked") == revision
    assert read(restricted, f"{RESTRICTED_PREFIX}/write-only/current") == revision.encode()
    assert current_revision(cli, "write-only") == revision

    # it cannot see what is there, so it writes again: the same bytes under the same names
    again = push(cli, restricted, "put-only", home, "write-only", url)
    assert again.code == 0, again.err
    assert json.loads(again.out)["revisionPublished"] is False
    assert read(restricted, bundle_key) == body
    assert keys(restricted, f"{RESTRICTED_PREFIX}/write-only/") == {
        bundle_key, f"{RESTRICTED_PREFIX}/write-only/current"}


def test_a_user_who_may_read_and_write_pushes_and_pulls(
        cli: Cli, restricted: Restricted, tmp_path: Path) -> None:
    """s3:GetObject and s3:PutObject on the prefix, no listing: the whole round trip."""
    root = local_context(cli, tmp_path / "a", "read-write", "- a fact\n")
    url = f"s3://{RESTRICTED_BUCKET}/{RESTRICTED_PREFIX}/read-write"
    pushed = push(cli, restricted, "get-put", tmp_path / "a", "read-write", url)
    assert pushed.code == 0, pushed.err
    revision = json.loads(pushed.out)["revision"]
    assert read(restricted, f"{RESTRICTED_PREFIX}/read-write/current") == revision.encode()

    pulled = pull(cli, restricted, "get-put", tmp_path / "b", "read-write", url)
    assert pulled.code == 0, pulled.err
    assert json.loads(pulled.out)["revision"] == revision
    assert (tmp_path / "b" / "read-write" / "artifacts" / "notes.md").read_bytes() == (
        root / "artifacts" / "notes.md").read_bytes()


def test_a_push_where_the_user_may_not_write_publishes_nothing(
        cli: Cli, restricted: Restricted, tmp_path: Path) -> None:
    home = tmp_path / "home"
    local_context(cli, home, "outside", "- not allowed there\n")
    url = f"s3://{RESTRICTED_BUCKET}/elsewhere/outside"  # outside the granted prefix

    failed = push(cli, restricted, "put-only", home, "outside", url)
    assert failed.code == 1
    assert failed.err.startswith(f"contextctl: S3 synchronization to {url} failed")
    assert "AccessDenied" in failed.err
    assert current_revision(cli, "outside") is None
    assert keys(restricted, "elsewhere/") == set()
    history = cli("local", "revisions", "outside", "--json", CS_CONTEXT_HOME=str(home))
    assert json.loads(history.out)["items"] == []


def test_a_pull_of_a_bundle_the_user_may_not_read_says_so(
        cli: Cli, restricted: Restricted, tmp_path: Path) -> None:
    url = f"s3://{RESTRICTED_BUCKET}/{RESTRICTED_PREFIX}/unreadable"
    local_context(cli, tmp_path / "a", "unreadable", "- for readers only\n")
    pushed = push(cli, restricted, "get-put", tmp_path / "a", "unreadable", url)
    assert pushed.code == 0, pushed.err
    revision = json.loads(pushed.out)["revision"]
    home = tmp_path / "b"

    denied = pull(cli, restricted, "put-only", home, "unreadable", url)
    assert denied.code == 1
    assert denied.err.startswith(
        f"contextctl: {url}/{revision}.tar.gz is not found or not readable with these "
        "credentials (S3 answered 403")
    assert not (home / "unreadable").exists()

    # the same process, other credentials: each synchronization signs with the ones it is given
    readable = pull(cli, restricted, "get-put", home, "unreadable", url)
    assert readable.code == 0, readable.err
    assert json.loads(readable.out)["revision"] == revision
