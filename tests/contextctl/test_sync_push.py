"""``contextctl ctx sync push`` through a served process: a context of the local store
(``CS_CONTEXT_HOME``) copied to a mounted volume, its revision and query index published, and
nothing published again for unchanged files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl import volume as volume_copy
from tests.contextctl.conftest import Cli

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-sync")
MEMORY = "# Notes\n- Release schedule: Friday\n\n* the release train leaves at noon\n"


def revision_of(root: Path, kind: str) -> str:
    """§4.2 by hand: every file under the portable roots, by relative path."""
    entries = sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for top in ("harnesses", "memory", "knowledge", "artifacts") if (root / top).is_dir()
        for p in (root / top).rglob("*") if p.is_file())
    hasher = hashlib.sha256(b"type\x00" + kind.encode() + b"\x00")
    for path, data in entries:
        hasher.update(f"{path}\x00{hashlib.sha256(data).hexdigest()}\x00{len(data)}\x00".encode())
    return hasher.hexdigest()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "contexts"


def local(cli: Cli, home: Path, *args: str) -> Any:
    done = cli("local", *args, CS_CONTEXT_HOME=str(home))
    assert done.code == 0, done.err
    return done


def push(cli: Cli, home: Path, name: str, *args: str) -> Any:
    return cli("ctx", "sync", "push", name, *args, *NS, CS_CONTEXT_HOME=str(home))


def remote(cli: Cli, name: str) -> dict[str, Any]:
    got = cli("ctx", "get", name, "--json", *NS)
    assert got.code == 0, got.err
    return json.loads(got.out)


def revisions(cli: Cli, name: str) -> list[dict[str, Any]]:
    got = cli("ctx", "revisions", name, "--json", *NS)
    assert got.code == 0, got.err
    data = json.loads(got.out)
    return list(data["items"] if isinstance(data, dict) else data)


def query(cli: Cli, text: str, name: str) -> dict[str, Any]:
    got = cli("query", text, "--context", name, "--json", *NS)
    assert got.code == 0, got.err
    return dict(json.loads(got.out))


def test_a_memory_is_copied_published_and_indexed_once(cli: Cli, home: Path,
                                                       tmp_path: Path) -> None:
    local(cli, home, "init", "notes", "--type", "memory")
    (home / "notes" / "memory").mkdir(parents=True, exist_ok=True)
    (home / "notes" / "memory" / "MEMORY.md").write_text(MEMORY)
    assert cli("ctx", "create", "notes", "--type", "memory", *NS).code == 0
    volume = tmp_path / "volume"
    volume.mkdir()
    (volume / "artifacts").mkdir()
    (volume / "artifacts" / "stale.txt").write_text("from an earlier sync")
    (volume / "lost+found").mkdir()  # outside the portable roots: left alone

    pushed = push(cli, home, "notes", "--to", str(volume), "--json")
    assert pushed.code == 0, pushed.err
    report = json.loads(pushed.out)
    expected = revision_of(home / "notes", "memory")
    assert report["revision"] == expected == revision_of(volume, "memory")
    assert (report["revisionPublished"], report["recorded"]) == (True, True)
    assert report["index"] == {"records": 3, "published": True}
    assert (volume / "memory" / "MEMORY.md").read_text() == MEMORY
    assert not (volume / "artifacts" / "stale.txt").exists() and (volume / "lost+found").is_dir()
    assert not [p for p in volume.iterdir() if p.name.startswith(".")]  # no staging left

    assert remote(cli, "notes")["currentRevision"] == expected
    [entry] = revisions(cli, "notes")
    assert (entry["id"], entry["operation"], entry["producer"], entry["files"],
            entry["bytes"]) == (expected, "sync", "contextctl", 1, len(MEMORY.encode()))
    found = query(cli, "release", "notes")
    ids = {item["record"]["id"] for item in found["items"]}
    text = "Release schedule: Friday"
    assert hashlib.sha256(f"notes\0{expected}\0memory/MEMORY.md\0{text}".encode()).hexdigest()[
        :32] in ids
    assert len(ids) == 2 and not found.get("unavailable")

    local_found = cli("local", "query", "release", "--json", CS_CONTEXT_HOME=str(home))
    assert local_found.code == 0, local_found.err
    local_items = json.loads(local_found.out)["items"]
    assert [(i["score"], i["record"]["id"]) for i in local_items] == [
        (i["score"], i["record"]["id"]) for i in found["items"]]

    again = push(cli, home, "notes", "--to", str(volume), "--json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["revisionPublished"] is False
    assert json.loads(again.out)["index"] == {"records": 3, "published": False}
    assert len(revisions(cli, "notes")) == 1

    (home / "notes" / "memory" / "MEMORY.md").write_text("- a new fact about releases\n")
    changed = push(cli, home, "notes", "--to", str(volume), "--param", "reason=edit")
    assert changed.code == 0, changed.err
    assert "revision published" in changed.out and "index of 1 record published" in changed.out
    newer = revisions(cli, "notes")
    assert len(newer) == 2 and newer[-1]["parameters"] == {"reason": "edit"}
    assert remote(cli, "notes")["currentRevision"] == newer[-1]["id"] == revision_of(
        volume, "memory")
    assert [i["record"]["text"] for i in query(cli, "releases", "notes")["items"]] == [
        "a new fact about releases"]


def test_a_knowledge_context_publish_only(cli: Cli, home: Path) -> None:
    local(cli, home, "init", "kb", "--type", "knowledge")
    assert cli("ctx", "create", "kb", "--type", "knowledge", *NS).code == 0
    missing = push(cli, home, "kb", "--publish-only")
    assert missing.code == 0, missing.err
    assert "no index: knowledge/records.jsonl does not exist" in missing.out
    assert query(cli, "anything", "kb")["unavailable"] == ["kb"]

    (home / "kb" / "knowledge").mkdir(parents=True, exist_ok=True)
    (home / "kb" / "knowledge" / "records.jsonl").write_text(
        json.dumps({"id": "r1", "title": "Boundary layer", "text": "laminar flow"}) + "\n")
    pushed = push(cli, home, "kb", "--publish-only", "--json")
    assert pushed.code == 0, pushed.err
    report = json.loads(pushed.out)
    assert report["transferred"] is None and report["index"] == {"records": 1,
                                                                  "published": True}
    [item] = query(cli, "laminar", "kb")["items"]
    assert item["record"]["revision"] == report["revision"] == remote(cli, "kb")[
        "currentRevision"]


def test_refusals_publish_nothing(cli: Cli, home: Path, tmp_path: Path) -> None:
    local(cli, home, "init", "state1", "--type", "state")
    assert cli("ctx", "create", "state1", "--type", "memory", *NS).code == 0
    neither = push(cli, home, "state1")
    assert neither.code == 2 and "exactly one of --to DIR and --publish-only" in neither.err
    both = push(cli, home, "state1", "--to", str(tmp_path), "--publish-only")
    assert both.code == 2
    mismatch = push(cli, home, "state1", "--publish-only")
    assert mismatch.code == 1
    assert "state1 is a memory context and the local state1 a state one" in mismatch.err
    assert revisions(cli, "state1") == []
    unknown = push(cli, home, "nowhere", "--publish-only")
    assert unknown.code == 1 and "local context not found: nowhere" in unknown.err
    no_volume = push(cli, home, "state1", "--local", "state1", "--to", str(tmp_path / "absent"))
    assert no_volume.code in (1, 2) and revisions(cli, "state1") == []


def test_a_copy_that_does_not_match_its_revision_publishes_nothing(
        cli: Cli, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that changes while it is copied: the copy is addressed again and refused."""
    local(cli, home, "init", "moving", "--type", "state")
    (home / "moving" / "harnesses").mkdir(parents=True, exist_ok=True)
    (home / "moving" / "harnesses" / "run.log").write_text("step 1\n")
    assert cli("ctx", "create", "moving", "--type", "state", *NS).code == 0
    copy = volume_copy.shutil.copytree

    def copy_then_write(source: Any, target: Any, **kwargs: Any) -> Any:
        done = copy(source, target, **kwargs)
        if Path(source).name == "harnesses":
            (Path(target) / "run.log").write_text("step 1\nstep 2\n")  # written meanwhile
        return done

    monkeypatch.setattr(volume_copy.shutil, "copytree", copy_then_write)
    volume = tmp_path / "volume"
    volume.mkdir()
    failed = push(cli, home, "moving", "--to", str(volume))
    assert failed.code == 1 and "a file changed while it was copied" in failed.err
    assert revisions(cli, "moving") == []
    assert not [p for p in volume.iterdir() if p.name.startswith(".")]
    history = cli("local", "revisions", "moving", "--json", CS_CONTEXT_HOME=str(home))
    assert json.loads(history.out)["items"] == []  # a failed push records nothing locally
