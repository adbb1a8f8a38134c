"""``contextctl ctx sync pull``: the way back. The service names the revision (its current one);
its files come from a mounted volume's directory or from the S3 bundle named by that revision,
are staged inside the local store, addressed again and only then swapped in. Against a served
process and an S3-compatible server process (moto's)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.contextctl.conftest import Cli
from tests.contextctl.s3_server import BUCKET, bucket, endpoint
from tests.contextctl.test_sync_push import revision_of

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-sync-pull")
__all__ = ["bucket", "endpoint"]  # the S3 server fixtures, shared
MEMORY = "# Notes\n- the release train leaves on Fridays\n"


def run_local(cli: Cli, home: Path, *args: str) -> Any:
    done = cli("local", *args, CS_CONTEXT_HOME=str(home))
    assert done.code == 0, done.err
    return done


def local_json(cli: Cli, home: Path, *args: str) -> Any:
    return json.loads(run_local(cli, home, *args, "--json").out)


def pull(cli: Cli, home: Path, name: str, *args: str, **env: str) -> Any:
    return cli("ctx", "sync", "pull", name, *args, "--no-progress", *NS,
               CS_CONTEXT_HOME=str(home), **env)


def files_of(root: Path) -> dict[str, bytes]:
    """The portable files under ``root`` by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for top in ("harnesses", "memory", "knowledge", "artifacts")
            for p in sorted((root / top).rglob("*")) if p.is_file()}


def everything(directory: Path) -> dict[str, bytes | None]:
    """Every path under ``directory`` (files with their bytes), to show nothing changed."""
    if not directory.exists():
        return {}
    return {p.relative_to(directory).as_posix(): p.read_bytes() if p.is_file() else None
            for p in sorted(directory.rglob("*"))}


def published(cli: Cli, home: Path, name: str, kind: str, *push_args: str,
              **env: str) -> tuple[Path, str]:
    """A local context of home ``home`` with a few files, created on the service and pushed;
    its root and revision."""
    run_local(cli, home, "init", name, "--type", kind)
    root = home / name
    (root / "memory" / "MEMORY.md").write_text(MEMORY)
    (root / "artifacts" / "run" / "nested").mkdir(parents=True)
    (root / "artifacts" / "run" / "nested" / "data.bin").write_bytes(bytes(range(256)) * 9)
    assert cli("ctx", "create", name, "--type", kind, *NS).code == 0
    pushed = cli("ctx", "sync", "push", name, *push_args, "--no-progress", "--json", *NS,
                 CS_CONTEXT_HOME=str(home), **env)
    assert pushed.code == 0, pushed.err
    return root, str(json.loads(pushed.out)["revision"])


def s3_env(endpoint: str) -> dict[str, str]:
    return {"CS_S3_ENDPOINT": endpoint}


def bundle_of(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    """A gzipped tar holding ``members`` (name: bytes) and symlinks (name: target)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return raw.getvalue()


def test_a_context_pushed_from_one_home_is_pulled_into_another(
        cli: Cli, bucket: Any, endpoint: str, tmp_path: Path) -> None:
    env = s3_env(endpoint)
    root, revision = published(cli, tmp_path / "a", "travel", "memory", "--to",
                               "s3://contexts/team/travel", "--producer", "harness",
                               "--param", "run=7", **env)
    # the service names the revision: not whatever PREFIX/current says
    bucket.put_object(Bucket=BUCKET, Key="team/travel/current", Body=b"0" * 64)
    home = tmp_path / "b"

    pulled = pull(cli, home, "travel", "--from", "s3://contexts/team/travel", "--json", **env)
    assert pulled.code == 0, pulled.err
    report = json.loads(pulled.out)
    assert report["revision"] == revision and report["changed"] is True
    assert report["created"] is True and report["safetySnapshot"] is None
    assert files_of(home / "travel") == files_of(root)
    assert revision_of(home / "travel", "memory") == revision
    [entry] = local_json(cli, home, "revisions", "travel")["items"]
    assert (entry["id"], entry["operation"], entry["producer"], entry["parameters"]) == (
        revision, "sync", "harness", {"run": "7"})
    assert local_json(cli, home, "status", "travel")["changed"] is False
    assert [p.name for p in home.iterdir()] == ["travel"]  # no staging left behind

    before = everything(home)
    again = pull(cli, home, "travel", "--from", "s3://contexts/team/travel", **env)
    assert again.code == 0, again.err
    assert "nothing changed" in again.out
    assert everything(home) == before


def test_a_context_is_pulled_from_a_mounted_volume(cli: Cli, tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    (volume / "lost+found").mkdir()
    root, revision = published(cli, tmp_path / "a", "mounted", "artifacts", "--to", str(volume))
    home = tmp_path / "b"

    pulled = pull(cli, home, "mounted", "--from", str(volume), "--json")
    assert pulled.code == 0, pulled.err
    assert json.loads(pulled.out)["revision"] == revision
    assert files_of(home / "mounted") == files_of(root)
    assert [e["id"] for e in local_json(cli, home, "revisions", "mounted")["items"]] == [
        revision]
    assert not (home / "mounted" / "lost+found").exists()


def test_a_bundle_that_does_not_give_the_revision_is_refused(
        cli: Cli, bucket: Any, endpoint: str, tmp_path: Path) -> None:
    env = s3_env(endpoint)
    _, revision = published(cli, tmp_path / "a", "tampered", "memory", "--to",
                            "s3://contexts/t", **env)
    forged = {"memory/MEMORY.md": b"- something else\n"}
    bucket.put_object(Bucket=BUCKET, Key=f"t/{revision}.tar.gz", Body=bundle_of(forged))
    unpacked = tmp_path / "forged"
    (unpacked / "memory").mkdir(parents=True)
    (unpacked / "memory" / "MEMORY.md").write_bytes(forged["memory/MEMORY.md"])
    held = revision_of(unpacked, "memory")

    home = tmp_path / "b"  # a local context with captured files of its own
    run_local(cli, home, "init", "tampered", "--type", "memory")
    (home / "tampered" / "memory" / "MEMORY.md").write_text("- mine\n")
    run_local(cli, home, "capture", "tampered")
    before = everything(home)
    refused = pull(cli, home, "tampered", "--from", "s3://contexts/t", **env)
    assert refused.code == 1
    assert revision in refused.err and held in refused.err
    assert everything(home) == before

    empty = tmp_path / "c"  # no local context: none is created
    refused = pull(cli, empty, "tampered", "--from", "s3://contexts/t", **env)
    assert refused.code == 1 and held in refused.err
    assert everything(empty) == {}


@pytest.mark.parametrize(("name", "members", "links"), [
    ("parent", {"memory/MEMORY.md": b"x", "../evil": b"evil"}, {}),
    ("parent-inside", {"memory/../../../evil": b"evil"}, {}),
    ("absolute", {"/evil": b"evil"}, {}),
    ("outside-roots", {"evil": b"outside the portable roots"}, {}),
    ("symlink", {}, {"memory/MEMORY.md": "../../../evil"}),
])
def test_a_bundle_member_outside_the_portable_roots_is_refused(
        cli: Cli, bucket: Any, endpoint: str, tmp_path: Path, name: str,
        members: dict[str, bytes], links: dict[str, str]) -> None:
    env = s3_env(endpoint)
    _, revision = published(cli, tmp_path / "a", name, "memory", "--to", "s3://contexts/h",
                            **env)
    bucket.put_object(Bucket=BUCKET, Key=f"h/{revision}.tar.gz", Body=bundle_of(members, links))
    home = tmp_path / "b" / "home"

    refused = pull(cli, home, name, "--from", "s3://contexts/h", **env)
    assert refused.code == 1
    assert "not a regular file under the portable roots" in refused.err
    assert "Traceback" not in refused.err
    assert [p for p in tmp_path.rglob("*evil*")] == []
    assert everything(home) == {}


def test_uncaptured_local_work_is_refused_and_kept_as_a_snapshot_with_force(
        cli: Cli, tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    root, revision = published(cli, tmp_path / "a", "worked", "memory", "--to", str(volume))
    home = tmp_path / "b"
    run_local(cli, home, "init", "worked", "--type", "memory")
    mine = home / "worked" / "memory" / "MEMORY.md"
    mine.write_text("- captured\n")
    run_local(cli, home, "capture", "worked")
    mine.write_text("- not captured yet\n")
    uncaptured = revision_of(home / "worked", "memory")
    before = everything(home)

    refused = pull(cli, home, "worked", "--from", str(volume))
    assert refused.code == 1 and "--force" in refused.err
    assert everything(home) == before

    forced = pull(cli, home, "worked", "--from", str(volume), "--force", "--json")
    assert forced.code == 0, forced.err
    safety = json.loads(forced.out)["safetySnapshot"]
    assert safety.startswith("pre-pull-")
    assert files_of(home / "worked") == files_of(root)
    [snapshot] = local_json(cli, home, "snapshots", "worked")["items"]
    assert (snapshot["name"], snapshot["protected"], snapshot["contentRevision"]) == (
        safety, True, uncaptured)
    assert [e["id"] for e in local_json(cli, home, "revisions", "worked")["items"]][-1] == (
        revision)


def test_captured_local_files_are_kept_as_a_snapshot(cli: Cli, tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    root, revision = published(cli, tmp_path / "a", "older", "memory", "--to", str(volume))
    home = tmp_path / "b"
    run_local(cli, home, "init", "older", "--type", "memory")
    (home / "older" / "memory" / "MEMORY.md").write_text("- an older fact\n")
    captured = local_json(cli, home, "capture", "older")["revision"]["id"]

    pulled = pull(cli, home, "older", "--from", str(volume), "--json")
    assert pulled.code == 0, pulled.err
    report = json.loads(pulled.out)
    [snapshot] = local_json(cli, home, "snapshots", "older")["items"]
    assert (snapshot["name"], snapshot["protected"], snapshot["contentRevision"]) == (
        report["safetySnapshot"], True, captured)
    assert files_of(home / "older") == files_of(root)
    assert [e["id"] for e in local_json(cli, home, "revisions", "older")["items"]] == [
        captured, revision]


def test_a_local_context_of_another_type_is_refused(cli: Cli, tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    published(cli, tmp_path / "a", "typed", "memory", "--to", str(volume))
    home = tmp_path / "b"
    run_local(cli, home, "init", "typed", "--type", "state")
    before = everything(home)
    refused = pull(cli, home, "typed", "--from", str(volume))
    assert refused.code == 1
    assert "typed is a memory context and the local typed a state one" in refused.err
    assert everything(home) == before


def test_a_context_without_a_published_revision_pulls_nothing(cli: Cli, tmp_path: Path) -> None:
    assert cli("ctx", "create", "unpublished", "--type", "memory", *NS).code == 0
    volume = tmp_path / "volume"
    (volume / "memory").mkdir(parents=True)
    (volume / "memory" / "MEMORY.md").write_text(MEMORY)
    home = tmp_path / "b"
    refused = pull(cli, home, "unpublished", "--from", str(volume))
    assert refused.code == 1 and "has no published revision" in refused.err
    assert not home.exists()


def test_another_local_name_and_an_empty_source(cli: Cli, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    root, revision = published(cli, tmp_path / "a", "renamed", "knowledge", "--to", str(volume))
    home = tmp_path / "b"
    monkeypatch.chdir(tmp_path)
    refused = pull(cli, home, "renamed", "--from", "")
    assert refused.code == 2 and "--from must name a directory or s3://BUCKET/PREFIX" in (
        refused.err)
    pulled = pull(cli, home, "renamed", "--from", str(volume), "--local", "copy")
    assert pulled.code == 0, pulled.err
    assert files_of(home / "copy") == files_of(root)
    assert local_json(cli, home, "status", "copy")["currentRevision"] == revision


def test_a_prefix_without_the_revisions_bundle_pulls_nothing(
        cli: Cli, bucket: Any, endpoint: str, tmp_path: Path) -> None:
    """``current`` names a bundle that is there, but not the revision the service names."""
    env = s3_env(endpoint)
    _, old = published(cli, tmp_path / "a", "moved-on", "memory", "--to", "s3://contexts/m",
                       **env)
    (tmp_path / "a" / "moved-on" / "memory" / "MEMORY.md").write_text("- newer\n")
    newer = cli("ctx", "sync", "push", "moved-on", "--publish-only", "--json", *NS,
                CS_CONTEXT_HOME=str(tmp_path / "a"))
    assert newer.code == 0, newer.err
    revision = json.loads(newer.out)["revision"]
    assert bucket.get_object(Bucket=BUCKET, Key="m/current")["Body"].read() == old.encode()
    home = tmp_path / "b"
    refused = pull(cli, home, "moved-on", "--from", "s3://contexts/m", **env)
    assert refused.code == 1
    assert f"s3://contexts/m holds no bundle of revision {revision}" in refused.err
    assert everything(home) == {}
