"""The local store and the volume copy of ``ctx sync push`` under hostile input and crashes: a
destination that overlaps the local context, a volume root that is a link, records whose fields
are not what the service accepts, a process killed in the middle of a restore or a snapshot, and
file system errors, which are one line and exit 1 like any other error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from context_service.contextctl import volume as volume_copy
from context_service.contextctl.client import CommandError
from context_service.contextctl.local import LocalStore, LocalStoreError
from context_service.contextctl.main import main
from tests.support.local_store import write


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "home")


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --- the volume copy (ctx sync push --to DIR) --------------------------------------------------


def test_a_destination_inside_the_local_context_is_refused(store: LocalStore) -> None:
    """Copying into the context's own directory would change the files being pushed."""
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    write(context, "harnesses/run.txt", b"run\n")
    before = tree(context.root)
    revision = context.content().revision
    for destination in (context.root, context.root / "memory", context.root / ".context"):
        with pytest.raises(CommandError, match="overlaps the local context"):
            volume_copy.mirror(context, destination, revision)
        assert tree(context.root) == before


def test_a_destination_whose_root_is_the_local_context_is_refused(tmp_path: Path) -> None:
    """A local context named like a portable root, pushed to its own home: the swap would move
    the whole local context aside and delete it."""
    home = LocalStore(tmp_path / "home")
    context = home.create("memory", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    before = tree(context.root)
    with pytest.raises(CommandError, match="overlaps the local context"):
        volume_copy.mirror(context, home.home, context.content().revision)
    assert tree(context.root) == before
    assert home.open("memory").history() == []


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_a_volume_root_that_is_not_a_directory_is_replaced_without_leftovers(
        store: LocalStore, tmp_path: Path, kind: str) -> None:
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_bytes(b"not the volume's")
    volume = tmp_path / "volume"
    volume.mkdir()
    if kind == "symlink":
        (volume / "memory").symlink_to(elsewhere, target_is_directory=True)
    else:
        (volume / "memory").write_bytes(b"a stray file")
    volume_copy.mirror(context, volume, context.content().revision)
    assert sorted(p.name for p in volume.iterdir()) == ["artifacts", "harnesses", "knowledge",
                                                        "memory"]
    assert (volume / "memory" / "MEMORY.md").read_bytes() == b"- fact\n"
    assert not (volume / "memory").is_symlink()
    assert (elsewhere / "keep.txt").read_bytes() == b"not the volume's"  # a link is not followed


def test_a_copy_that_fails_is_one_error_naming_the_volume(
        store: LocalStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    volume = tmp_path / "volume"
    volume.mkdir()

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(volume_copy.shutil, "copytree", full)
    with pytest.raises(CommandError, match=f"copy to {volume} failed: No space left on device"):
        volume_copy.mirror(context, volume, context.content().revision)
    assert not [p for p in volume.iterdir() if p.name.startswith(".")]


def test_a_copy_killed_midway_is_cleaned_up_by_the_next_push(
        store: LocalStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed between a root's two renames: the volume's root is back in place before anything
    else, and the half copies beside the roots are deleted."""
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    volume = tmp_path / "volume"
    (volume / ".memory.outgoing-0badc0de").mkdir(parents=True)  # memory moved aside, then killed
    (volume / ".memory.outgoing-0badc0de" / "MEMORY.md").write_bytes(b"- before\n")
    (volume / ".memory.incoming-0badc0de").mkdir()
    (volume / ".memory.incoming-0badc0de" / "MEMORY.md").write_bytes(b"- half\n")
    (volume / ".artifacts.incoming-0badc0de").mkdir()
    (volume / ".keep").write_bytes(b"not a copy of ours")

    def killed(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(volume_copy.shutil, "copytree", killed)
        with pytest.raises(CommandError):
            volume_copy.mirror(context, volume, context.content().revision)
    assert sorted(p.name for p in volume.iterdir()) == [".keep", "memory"]
    assert (volume / "memory" / "MEMORY.md").read_bytes() == b"- before\n"
    volume_copy.mirror(context, volume, context.content().revision)
    assert (volume / "memory" / "MEMORY.md").read_bytes() == b"- fact\n"


# --- names and records --------------------------------------------------------------------------


def test_an_empty_snapshot_name_is_refused_not_replaced(store: LocalStore) -> None:
    context = store.create("notes", "memory")
    with pytest.raises(LocalStoreError, match="snapshot must be a Kubernetes name"):
        context.snapshot("")
    assert context.snapshots() == []


@pytest.mark.parametrize(("line", "message"), [
    ('{"id":"a","text":"t","title":5}', "line 1: title must be a string"),
    ('{"id":"a","text":"t","keywords":"one"}', "line 1: keywords must be an array of strings"),
    ('{"id":"a","text":"t","keywords":["x",2]}', "line 1: keywords must be an array of strings"),
    ('{"id":7,"text":"t"}', "line 1: id must be a string"),
    ('{"id":"a","text":["t"]}', "line 1: text must be a string"),
    ('{"id":"a","text":"t","source":"kb"}', "line 1: source must be an object of strings"),
    ('{"id":"a","text":"t","source":{"context":1}}', "line 1: source must be an object of strings"),
    ('{"id":"a","text":"t","file":3}', "line 1: file must be a string"),
    ('{"id":"","text":"t"}', "line 1: query records require id and text"),
    ('{"id":"a","text":"  "}', "line 1: query records require id and text"),
    ('{"id":"a","text":"t","context":"other"}', "line 1: record identity does not match"),
    ('{"id":"a","text":"t","type":"memory"}', "line 1: record identity does not match"),
    ('{"id":"a","text":"t","revision":"' + "0" * 64 + '"}',
     "line 1: record identity does not match"),
])
def test_knowledge_records_the_service_would_refuse_are_refused_here(
        store: LocalStore, line: str, message: str) -> None:
    """A push publishes the revision before the index: a record the service refuses would
    leave the context unavailable. Refused here, before anything is sent, with the line."""
    context = store.create("kb", "knowledge")
    write(context, "knowledge/records.jsonl", line.encode() + b"\n")
    with pytest.raises(LocalStoreError, match=f"knowledge/records.jsonl {message}"):
        context.records()


def test_records_are_of_the_revision_asked_for(store: LocalStore) -> None:
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    [record] = context.records("f" * 64) or []
    assert record["revision"] == "f" * 64


# --- crashes and errors -------------------------------------------------------------------------


def crash(home: Path, script: str) -> None:
    """Runs ``script`` in another process that dies (``os._exit``) where the script says."""
    code = textwrap.dedent("""
        import os, sys
        from pathlib import Path
        from context_service.contextctl.local import LocalStore
        from context_service.contextctl.local import snapshots
        store = LocalStore(Path(sys.argv[1]))
    """) + textwrap.dedent(script)
    done = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 9, done.stderr


@pytest.mark.parametrize("renames", [1, 3, 4, 8])
def test_a_restore_killed_between_two_renames_is_rolled_back_by_the_next_command(
        store: LocalStore, renames: int) -> None:
    """Killed after ``renames`` of the swap's eight renames (a root aside, the snapshot's in)."""
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- old\n")
    context.snapshot("first")
    write(context, "memory/MEMORY.md", b"- new\n")
    write(context, "artifacts/out.bin", b"\x00\x01")
    context.publish("capture")
    before = tree(context.root / "memory") | tree(context.root / "artifacts")
    crash(store.home, f"""
        real = os.replace
        count = 0
        def dying(a, b):
            global count
            real(a, b)
            count += 1
            if count == {renames}:
                os._exit(9)
        snapshots.os.replace = dying
        store.open("notes").restore("first")
    """)
    reopened = store.open("notes")
    assert tree(reopened.root / "memory") | tree(reopened.root / "artifacts") == before
    assert reopened.content().revision == reopened.current_revision()
    assert list((reopened.root / ".context" / "work").iterdir()) == []
    # the safety snapshot was complete before the swap began and stays
    assert [s["name"].startswith("pre-restore-") for s in reopened.snapshots()] == [False, True]


def test_a_snapshot_killed_while_copying_leaves_nothing_listed_and_is_cleaned_up(
        store: LocalStore) -> None:
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    write(context, "memory/more.md", b"- more\n")
    crash(store.home, """
        real = snapshots.shutil.copy2
        def dying(a, b):
            real(a, b)
            os._exit(9)
        snapshots.shutil.copy2 = dying
        store.open("notes").snapshot("half")
    """)
    directory = context.root / ".context" / "snapshots"
    assert [p.name for p in directory.iterdir() if p.name.startswith(".half.")]
    assert context.snapshots() == []
    context.snapshot("whole")
    assert [p.name for p in directory.iterdir()] == ["whole"]


def test_file_system_errors_are_one_line_and_exit_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "contexts"
    home.mkdir()
    (home / "notes").write_bytes(b"a file where the context would go")
    monkeypatch.setenv("CS_CONTEXT_HOME", str(home))
    assert main(["local", "init", "notes", "--type", "memory"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("contextctl: ") and err.count("\n") == 1
    assert str(home / "notes") in err


def test_a_snapshot_document_is_read_from_its_directory(store: LocalStore) -> None:
    """A listed snapshot's name is its directory's: a document naming another directory cannot
    send a restore there."""
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    context.snapshot("good")
    document = context.root / ".context" / "snapshots" / "good" / "snapshot.json"
    data = json.loads(document.read_bytes())
    document.write_text(json.dumps({**data, "name": "../../.."}))
    assert [s["name"] for s in context.snapshots()] == ["good"]
    with pytest.raises(LocalStoreError, match="snapshot must be a Kubernetes name"):
        context.restore("../../..")
    assert [s["name"] for s in context.snapshots()] == ["good"]  # no safety snapshot taken


def test_a_memorys_record_source_is_its_derivation_whatever_was_recorded_since(
        store: LocalStore) -> None:
    """The records of one revision are the same before and after a push records it (a sync
    revision names no sources): else the index a push publishes differs from the one the next
    push computes."""
    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    origin = {"context": "origin", "type": "knowledge", "revision": "a" * 64}
    context.publish("derive", sources=[origin])
    write(context, "memory/MEMORY.md", b"- fact\n- edited\n")
    before = context.records()
    context.publish("sync")
    assert context.records() == before
    assert [r["source"] for r in before or []] == [origin, origin]


def test_a_snapshot_describes_the_files_it_holds(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file written while the snapshot is copied: its document must address the copy."""
    from context_service.contextctl.local import content_of
    from context_service.contextctl.local import snapshots as local_snapshots

    context = store.create("notes", "memory")
    write(context, "memory/MEMORY.md", b"- fact\n")
    write(context, "memory/zz.md", b"z")
    copy = local_snapshots.shutil.copy2

    def copy_then_write(source: str, target: str) -> object:
        done = copy(source, target)
        if Path(source).name == "MEMORY.md":
            write(context, "memory/zz.md", b"written meanwhile")
        return done

    monkeypatch.setattr(local_snapshots.shutil, "copy2", copy_then_write)
    taken = context.snapshot("racing")
    copied = content_of(context.root / ".context" / "snapshots" / "racing" / "files", "memory")
    assert (taken["contentRevision"], taken["files"], taken["bytes"]) == (
        copied.revision, len(copied.files), copied.bytes)
    [listed] = context.snapshots()
    assert listed["contentRevision"] == copied.revision
