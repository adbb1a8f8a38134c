"""``ctx sync push`` against what a careless user or a hostile file gives it: an empty or
overlapping destination, records the service would refuse, an index published for the revision
with other records, and S3 failures and bundles that would not hold their revision. Whatever
fails publishes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl import s3
from context_service.contextctl.client import CommandError
from context_service.contextctl.local import LocalStore
from tests.contextctl.conftest import Cli
from tests.contextctl.test_sync_s3 import CREDENTIALS, endpoint

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-sync-review")
__all__ = ["endpoint"]  # the S3 server fixture, shared


def local(cli: Cli, home: Path, *args: str) -> Any:
    done = cli("local", *args, CS_CONTEXT_HOME=str(home))
    assert done.code == 0, done.err
    return done


def push(cli: Cli, home: Path, name: str, *args: str, **env: str) -> Any:
    return cli("ctx", "sync", "push", name, *args, *NS, CS_CONTEXT_HOME=str(home), **env)


def revisions(cli: Cli, name: str) -> list[dict[str, Any]]:
    got = cli("ctx", "revisions", name, "--json", *NS)
    assert got.code == 0, got.err
    data = json.loads(got.out)
    return list(data["items"] if isinstance(data, dict) else data)


def local_history(cli: Cli, home: Path, name: str) -> list[dict[str, Any]]:
    return list(json.loads(local(cli, home, "revisions", name, "--json").out)["items"])


def memory(cli: Cli, home: Path, name: str, text: str) -> Path:
    local(cli, home, "init", name, "--type", "memory")
    (home / name / "memory" / "MEMORY.md").write_text(text)
    assert cli("ctx", "create", name, "--type", "memory", *NS).code == 0
    return home / name


def test_an_empty_destination_is_refused(cli: Cli, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``--to "$MOUNT"`` with the variable unset: not the working directory."""
    home = tmp_path / "contexts"
    memory(cli, home, "empty-to", "- fact\n")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    refused = push(cli, home, "empty-to", "--to", "")
    assert refused.code == 2 and "--to must name a directory or s3://BUCKET/PREFIX" in refused.err
    assert list(here.iterdir()) == []
    assert revisions(cli, "empty-to") == [] and local_history(cli, home, "empty-to") == []


def test_a_destination_overlapping_the_local_context_publishes_nothing(
        cli: Cli, tmp_path: Path) -> None:
    home = tmp_path / "contexts"
    root = memory(cli, home, "memory", "- fact\n")
    for destination in (root, root / "memory", home):
        refused = push(cli, home, "memory", "--to", str(destination))
        assert refused.code == 1 and "overlaps the local context memory" in refused.err
        assert (root / "memory" / "MEMORY.md").read_text() == "- fact\n"
    assert revisions(cli, "memory") == [] and local_history(cli, home, "memory") == []


def test_a_record_the_service_would_refuse_publishes_nothing(cli: Cli, tmp_path: Path) -> None:
    """The revision is published before the index: a refused index would leave the context
    unavailable at a revision the service now names current."""
    home = tmp_path / "contexts"
    local(cli, home, "init", "kb-bad", "--type", "knowledge")
    (home / "kb-bad" / "knowledge" / "records.jsonl").write_text(
        '{"id":"a","text":"fine"}\n{"id":"b","text":"t","title":5}\n')
    assert cli("ctx", "create", "kb-bad", "--type", "knowledge", *NS).code == 0
    refused = push(cli, home, "kb-bad", "--publish-only")
    assert refused.code == 1, refused.err
    assert "knowledge/records.jsonl line 2: title must be a string" in refused.err
    assert revisions(cli, "kb-bad") == [] and local_history(cli, home, "kb-bad") == []


def test_an_index_of_other_records_for_the_revision_is_published_again(
        cli: Cli, tmp_path: Path) -> None:
    """Someone published, for the current revision, an index holding only the first record:
    its first id is there, but the index is not the context's."""
    home = tmp_path / "contexts"
    memory(cli, home, "partial", "- the release train leaves on Fridays\n- lunch at noon\n")
    first = push(cli, home, "partial", "--publish-only", "--json")
    assert first.code == 0, first.err
    records = local(cli, home, "records", "partial").out.splitlines()
    assert len(records) == 2
    subset = tmp_path / "subset.jsonl"
    subset.write_text(records[0] + "\n")
    assert cli("index", "push", "partial", str(subset), "--no-progress", *NS).code == 0
    assert json.loads(cli("query", "lunch", "--context", "partial", "--json", *NS).out)[
        "items"] == []

    again = push(cli, home, "partial", "--publish-only", "--json")
    assert again.code == 0, again.err
    report = json.loads(again.out)
    assert report["revisionPublished"] is False
    assert report["index"] == {"records": 2, "published": True}
    [found] = json.loads(cli("query", "lunch", "--context", "partial", "--json", *NS).out)[
        "items"]
    assert found["record"]["text"] == "lunch at noon"

    unchanged = push(cli, home, "partial", "--publish-only", "--json")
    assert json.loads(unchanged.out)["index"] == {"records": 2, "published": False}


@pytest.fixture
def s3_env(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    return {"CS_S3_ENDPOINT": endpoint}


def test_a_bucket_that_does_not_exist_is_one_error_and_publishes_nothing(
        cli: Cli, tmp_path: Path, s3_env: dict[str, str]) -> None:
    home = tmp_path / "contexts"
    memory(cli, home, "no-bucket", "- fact\n")
    failed = push(cli, home, "no-bucket", "--to", "s3://no-such-bucket/p", "--no-progress",
                  **s3_env)
    assert failed.code == 1
    assert failed.err.startswith("contextctl: S3 synchronization to s3://no-such-bucket/p "
                                 "failed: ")
    assert "Traceback" not in failed.err
    assert revisions(cli, "no-bucket") == [] and local_history(cli, home, "no-bucket") == []


def test_a_bundle_is_sent_only_when_it_holds_its_revision(
        tmp_path: Path, s3_env: dict[str, str]) -> None:
    """The files changed after the revision was addressed: a bundle of them must not go out
    under that revision's name (a later push of that revision would find it and not send it
    again), nor ``current`` name it."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3_env["CS_S3_ENDPOINT"], region_name="eu-west-1")
    client.create_bucket(Bucket="stale", CreateBucketConfiguration={
        "LocationConstraint": "eu-west-1"})
    context = LocalStore(tmp_path / "contexts").create("moving", "state")
    (context.root / "harnesses" / "run.log").write_text("step 1\n")
    revision = context.content().revision
    (context.root / "harnesses" / "run.log").write_text("step 1\nstep 2\n")
    with pytest.raises(CommandError, match="changed while the bundle was made"):
        s3.push(s3.Location("stale", "p"), context.root, "state", revision,
                lambda total: lambda n: None, s3_env | CREDENTIALS)
    assert client.list_objects_v2(Bucket="stale").get("Contents", []) == []
    client.delete_bucket(Bucket="stale")


def test_pushing_unchanged_files_to_s3_writes_nothing(
        cli: Cli, tmp_path: Path, s3_env: dict[str, str]) -> None:
    """A versioned bucket keeps every write: a second push of the same files adds none."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3_env["CS_S3_ENDPOINT"], region_name="eu-west-1")
    client.create_bucket(Bucket="versioned", CreateBucketConfiguration={
        "LocationConstraint": "eu-west-1"})
    client.put_bucket_versioning(Bucket="versioned",
                                 VersioningConfiguration={"Status": "Enabled"})
    home = tmp_path / "contexts"
    memory(cli, home, "twice", "- fact\n")
    for _ in range(2):
        pushed = push(cli, home, "twice", "--to", "s3://versioned/t", "--no-progress", **s3_env)
        assert pushed.code == 0, pushed.err
    versions = client.list_object_versions(Bucket="versioned")["Versions"]
    assert sorted(v["Key"] for v in versions) == sorted(
        ["t/current", f"t/{revisions(cli, 'twice')[0]['id']}.tar.gz"])
