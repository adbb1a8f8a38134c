"""contextctl's local store (spec 7.3): revision ids of the portable files (4.2), local
publishing, memory and knowledge records (5.5), snapshots and in-place restore (6.6)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.local import LocalContext, LocalStore, LocalStoreError
from context_service.contextctl.local import history as local_history
from context_service.contextctl.local import snapshots as local_snapshots
from tests.support.local_store import write


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "home")


DIGEST = re.compile(r"[0-9a-f]{64}")


def spec_id(context_type: str, files: dict[str, bytes]) -> str:
    """Spec 4.2 by hand: "type" NUL type NUL, then per file by path (byte-wise) path NUL
    sha256 hex NUL size NUL."""
    hasher = hashlib.sha256(b"type\x00" + context_type.encode() + b"\x00")
    for path in sorted(files, key=str.encode):
        data = files[path]
        hasher.update(path.encode() + b"\x00" + hashlib.sha256(data).hexdigest().encode()
                      + b"\x00" + str(len(data)).encode() + b"\x00")
    return hasher.hexdigest()


def tree(root: Path) -> dict[str, bytes]:
    """Every file under the portable roots, for comparing a context before and after."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for name in ("harnesses", "memory", "knowledge", "artifacts")
            for p in sorted((root / name).rglob("*")) if p.is_file()}


# --- revision ids (4.2) -------------------------------------------------------------------------


def test_the_revision_id_is_the_specs_digest_of_the_portable_files(store: LocalStore) -> None:
    context = store.create("research", "memory")
    portable = {"memory/MEMORY.md": b"- Friday release\n", "memory/b.md": b"bb",
                "memory/Zeta.md": b"z",
                "knowledge/notes/\u00e9t\u00e9.txt": "\u00e9t\u00e9".encode(),
                "knowledge/a.txt": b""}
    for relative, data in portable.items():
        write(context, relative, data)
    write(context, "README.md", b"outside every root: never part of the content")
    content = context.content()
    # byte-wise: upper case before lower case
    assert [f.name for f in content.files] == ["knowledge/a.txt",
                                               "knowledge/notes/\u00e9t\u00e9.txt",
                                               "memory/MEMORY.md", "memory/Zeta.md",
                                               "memory/b.md"]
    assert content.revision == spec_id("memory", portable)
    assert (len(content.files), content.bytes) == (5, 17 + 2 + 1 + 5 + 0)
    expected = hashlib.sha256(
        b"type\x00memory\x00"
        + b"knowledge/a.txt\x00" + hashlib.sha256(b"").hexdigest().encode() + b"\x000\x00"
        + "knowledge/notes/\u00e9t\u00e9.txt".encode() + b"\x00"
        + hashlib.sha256("\u00e9t\u00e9".encode()).hexdigest().encode() + b"\x005\x00"
        + b"memory/MEMORY.md\x00" + hashlib.sha256(b"- Friday release\n").hexdigest().encode()
        + b"\x0017\x00"
        + b"memory/Zeta.md\x00" + hashlib.sha256(b"z").hexdigest().encode() + b"\x001\x00"
        + b"memory/b.md\x00" + hashlib.sha256(b"bb").hexdigest().encode() + b"\x002\x00")
    assert content.revision == expected.hexdigest()


def test_metadata_and_files_outside_the_roots_never_change_the_id(store: LocalStore) -> None:
    context = store.create("research", "memory")
    write(context, "memory/MEMORY.md", b"fact\n")
    before = context.content().revision
    context.publish("capture")
    context.snapshot("s1")
    write(context, "notes.txt", b"beside the roots")
    (context.root / "memory" / "empty-dir").mkdir()
    assert context.content().revision == before == spec_id("memory", {"memory/MEMORY.md":
                                                                        b"fact\n"})


def test_the_type_is_part_of_the_hash(store: LocalStore) -> None:
    memory, state = store.create("m", "memory"), store.create("s", "state")
    for context in (memory, state):
        write(context, "harnesses/claude/settings.json", b"{}")
    files = {"harnesses/claude/settings.json": b"{}"}
    assert memory.content().revision == spec_id("memory", files)
    assert state.content().revision == spec_id("state", files)
    assert memory.content().revision != state.content().revision


def test_an_empty_context_has_the_id_of_its_type_alone(store: LocalStore) -> None:
    context = store.create("empty", "artifacts")
    assert context.content().revision == hashlib.sha256(b"type\x00artifacts\x00").hexdigest()


def test_a_symlink_under_a_root_is_an_error_naming_it(store: LocalStore) -> None:
    context = store.create("research", "memory")
    write(context, "memory/MEMORY.md", b"fact\n")
    (context.root / "memory" / "link.md").symlink_to(context.root / "memory" / "MEMORY.md")
    with pytest.raises(LocalStoreError, match=r"not a regular file: memory/link\.md"):
        context.content()
    with pytest.raises(LocalStoreError, match=r"memory/link\.md"):
        context.publish("capture")
    assert context.history() == []


def test_a_linked_directory_and_a_fifo_are_errors_too(store: LocalStore, tmp_path: Path) -> None:
    context = store.create("research", "knowledge")
    (tmp_path / "elsewhere").mkdir()
    (context.root / "knowledge" / "more").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LocalStoreError, match="not a regular file: knowledge/more"):
        context.content()
    (context.root / "knowledge" / "more").unlink()
    os.mkfifo(context.root / "artifacts" / "pipe")
    with pytest.raises(LocalStoreError, match="not a regular file: artifacts/pipe"):
        context.content()


def test_a_root_that_is_a_link_is_an_error(store: LocalStore, tmp_path: Path) -> None:
    context = store.create("research", "memory")
    (tmp_path / "real").mkdir()
    (context.root / "memory").rmdir()
    (context.root / "memory").symlink_to(tmp_path / "real")
    with pytest.raises(LocalStoreError, match="memory is not a directory"):
        context.content()


# --- publishing (4.2 "Publishing locally") ------------------------------------------------------


def test_recapturing_unchanged_files_appends_nothing(store: LocalStore) -> None:
    context = store.create("research", "memory")
    write(context, "memory/MEMORY.md", b"fact\n")
    first, appended = context.publish("capture")
    assert appended is True
    again, appended_again = context.publish("sync", producer="other", parameters={"k": "v"})
    assert (again, appended_again) == (first, False)
    assert context.history() == [first]
    write(context, "memory/MEMORY.md", b"fact\nanother\n")
    second, appended = context.publish("capture")
    assert appended is True and second["id"] != first["id"]
    assert context.history() == [first, second]
    assert context.current_revision() == second["id"]
    write(context, "memory/MEMORY.md", b"fact\n")  # back to the first content: appended again
    third, appended = context.publish("capture")
    assert appended is True and third["id"] == first["id"]
    assert [e["id"] for e in context.history()] == [first["id"], second["id"], first["id"]]


def test_a_revision_has_the_services_shape(store: LocalStore) -> None:
    context = store.create("derived", "memory")
    write(context, "memory/MEMORY.md", b"fact\n")
    r1, r2 = "b" * 64, "a" * 64
    entry, _ = context.publish("derive", producer="codex", parameters={"generator": "codex"},
                               sources=[{"context": "z-state", "type": "state", "revision": r2},
                                        {"context": "a-state", "type": "state", "revision": r1},
                                        {"context": "a-state", "type": "state", "revision": r2}])
    assert list(entry) == ["id", "createdAt", "operation", "producer", "parameters", "sources",
                           "files", "bytes"]
    assert DIGEST.fullmatch(entry["id"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["createdAt"])
    assert (entry["operation"], entry["producer"], entry["parameters"]) == \
        ("derive", "codex", {"generator": "codex"})
    assert entry["sources"] == [{"context": "a-state", "type": "state", "revision": r2},
                                {"context": "a-state", "type": "state", "revision": r1},
                                {"context": "z-state", "type": "state", "revision": r2}]
    assert (entry["files"], entry["bytes"]) == (1, 5)
    assert context.history() == [entry]


def test_empty_optional_fields_are_left_out_as_the_service_does(store: LocalStore) -> None:
    context = store.create("plain", "workspace")
    entry, _ = context.publish("capture", producer="")
    assert list(entry) == ["id", "createdAt", "operation", "files", "bytes"]
    assert (entry["files"], entry["bytes"]) == (0, 0)


def test_a_revision_the_service_would_refuse_is_refused(store: LocalStore) -> None:
    context = store.create("plain", "workspace")
    with pytest.raises(LocalStoreError, match="revision operation is required"):
        context.publish(" ")
    with pytest.raises(LocalStoreError, match="source revision must be a lowercase SHA-256"):
        context.publish("derive", sources=[{"context": "a", "type": "state", "revision": "x"}])
    with pytest.raises(LocalStoreError, match="revision sources require context and type"):
        context.publish("derive", sources=[{"context": "", "type": "state",
                                            "revision": "a" * 64}])
    assert context.history() == []


def test_the_history_is_written_whole_through_a_temporary_file(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    context = store.create("plain", "workspace")
    write(context, "artifacts/a", b"a")
    first, _ = context.publish("capture")
    write(context, "artifacts/a", b"b")

    def refuse(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        context.publish("capture")
    monkeypatch.undo()
    assert context.history() == [first]
    assert [p.name for p in (context.root / ".context").iterdir() if p.suffix == ".tmp"] == []


def locked_by_another(context: LocalContext) -> bool:
    """Whether another open file description cannot take the context's lock right now."""
    fd = os.open(context.root / ".context" / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_publishing_snapshotting_and_restoring_hold_the_contexts_lock(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    context = store.create("plain", "workspace")
    write(context, "artifacts/a", b"a")
    seen: list[tuple[str, bool]] = []
    real_append, real_take, real_restore = (local_history.append, local_snapshots.take,
                                            local_snapshots.restore_files)

    def append(*args: Any) -> None:
        seen.append(("append", locked_by_another(context)))
        real_append(*args)

    def take(*args: Any) -> dict[str, Any]:
        seen.append(("take", locked_by_another(context)))
        return real_take(*args)

    def restore_files(*args: Any) -> None:
        seen.append(("restore", locked_by_another(context)))
        real_restore(*args)

    monkeypatch.setattr(local_history, "append", append)
    monkeypatch.setattr(local_snapshots, "take", take)
    monkeypatch.setattr(local_snapshots, "restore_files", restore_files)
    context.publish("capture")
    context.snapshot("s1")
    write(context, "artifacts/a", b"b")
    context.restore("s1")
    assert seen == [("append", True), ("take", True), ("take", True), ("restore", True)]
    assert not locked_by_another(context)  # released afterwards


@contextlib.contextmanager
def held_by_another(context: LocalContext) -> Iterator[None]:
    """The context's lock taken exclusively on another open file description, as another
    process's restore, pull or capture would hold it."""
    fd = os.open(context.root / ".context" / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_reads_share_the_contexts_lock_and_keep_changes_out(store: LocalStore) -> None:
    context = store.create("shared", "memory")
    write(context, "memory/MEMORY.md", b"- a\n")
    with context.reading():
        assert locked_by_another(context)  # a change waits for the read
        fd = os.open(context.root / ".context" / "lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another read does not
        finally:
            os.close(fd)
        assert context.content().revision == context.records()[0]["revision"]  # nested reads
        with pytest.raises(RuntimeError, match="a change inside a read"):
            context.publish("capture")
    assert not locked_by_another(context)


def test_a_read_waits_for_a_change_under_way_in_another_process(store: LocalStore) -> None:
    """A restore swaps the roots by renames: a ``local status`` or ``query`` run meanwhile
    read the files with a root moved aside (a revision that never existed, records missing)."""
    context = store.create("swapping", "memory")
    write(context, "memory/MEMORY.md", b"- kept\n")
    write(context, "artifacts/out.bin", b"\x00")
    whole = context.content().revision
    reader = store.open("swapping")
    aside = store.home / "aside"
    seen: list[str] = []
    with held_by_another(context):
        (context.root / "memory").rename(aside)  # half a swap, as another process does it
        thread = threading.Thread(target=lambda: seen.append(reader.content().revision))
        thread.start()
        thread.join(0.3)  # read at once before the fix: it saw the half
        aside.rename(context.root / "memory")
    thread.join(10)
    assert seen == [whole]


def test_a_read_repairs_what_a_command_killed_while_it_waited_left(store: LocalStore) -> None:
    context = store.create("killed", "workspace")
    write(context, "artifacts/a", b"a")
    reader = store.open("killed")
    seen: list[str] = []
    leftover = context.root / ".context" / "snapshots" / ".s1.taking"
    with held_by_another(context):
        thread = threading.Thread(target=lambda: seen.append(reader.content().revision))
        thread.start()
        thread.join(0.3)
        leftover.mkdir(parents=True)  # a snapshot never renamed into place, then killed
    thread.join(10)
    assert seen == [context.content().revision]
    assert not leftover.exists()


# --- the store -----------------------------------------------------------------------------------


def test_contexts_are_created_once_opened_by_name_and_listed_by_name(store: LocalStore) -> None:
    store.create("zeta", "knowledge")
    made = store.create("alpha", "memory")
    assert sorted(p.name for p in made.root.iterdir()) == [
        ".context", "artifacts", "harnesses", "knowledge", "memory"]
    with pytest.raises(LocalStoreError, match=r"^local context already exists: alpha$"):
        store.create("alpha", "state")
    opened = store.open("alpha")
    assert (opened.name, opened.type, opened.root) == ("alpha", "memory", store.home / "alpha")
    assert [(c.name, c.type) for c in store.contexts()] == [("alpha", "memory"),
                                                             ("zeta", "knowledge")]
    with pytest.raises(LocalStoreError, match=r"^local context not found: beta$"):
        store.open("beta")
    (store.home / "not-a-context").mkdir()
    assert [c.name for c in store.contexts()] == ["alpha", "zeta"]


def test_names_and_types_follow_the_services_rules(store: LocalStore) -> None:
    for bad in ("Upper", "-lead", "trail-", "a.b", "a/b", "..", "", "x" * 51):
        with pytest.raises(LocalStoreError, match="lowercase Kubernetes name no longer than 50"):
            store.create(bad, "memory")
    store.create("x" * 50, "memory")
    with pytest.raises(LocalStoreError, match="type must be workspace, state, memory"):
        store.create("ok", "notes")
    with pytest.raises(LocalStoreError, match=r"local context not found: \.\./home"):
        store.open("../home")


def test_an_existing_directory_becomes_a_context_keeping_its_files(store: LocalStore) -> None:
    (store.home / "adopted" / "memory").mkdir(parents=True)
    (store.home / "adopted" / "memory" / "MEMORY.md").write_bytes(b"kept\n")
    context = store.create("adopted", "memory")
    assert context.content().revision == spec_id("memory", {"memory/MEMORY.md": b"kept\n"})


def test_the_home_comes_from_the_environment(tmp_path: Path) -> None:
    home = Path("~").expanduser()
    assert LocalStore.from_environment({}).home == home / ".contexts"
    assert LocalStore.from_environment({"CS_CONTEXT_HOME": ""}).home == home / ".contexts"
    assert LocalStore.from_environment({"CS_CONTEXT_HOME": "~/ctx"}).home == home / "ctx"
    assert LocalStore.from_environment({"CS_CONTEXT_HOME": str(tmp_path)}).home == tmp_path


# --- records (5.5) -------------------------------------------------------------------------------


def memory_id(context: str, revision: str, text: str) -> str:
    return hashlib.sha256(
        context.encode() + b"\x00" + revision.encode() + b"\x00memory/MEMORY.md\x00"
        + text.encode()).hexdigest()[:32]


def test_each_memory_line_is_a_record_with_the_specs_id(store: LocalStore) -> None:
    context = store.create("mem", "memory")
    long = "Long " + "x" * 100
    write(context, "memory/MEMORY.md",
          f"# Release schedule\n\n- Friday release\r\n  * ## nested marks\n#\n- \n{long}\n"
          "plain line".encode())
    revision = context.content().revision
    records = context.records()
    assert records is not None
    texts = ["Release schedule", "Friday release", "nested marks", long, "plain line"]
    assert [r["text"] for r in records] == texts
    first = records[0]
    assert first == {"id": memory_id("mem", revision, "Release schedule"), "context": "mem",
                     "type": "memory", "revision": revision, "title": "Release schedule",
                     "text": "Release schedule",
                     "source": {"context": "mem", "type": "memory", "revision": revision},
                     "file": "memory/MEMORY.md"}
    assert list(first) == ["id", "context", "type", "revision", "title", "text", "source",
                           "file"]
    assert [r["id"] for r in records] == [memory_id("mem", revision, t) for t in texts]
    assert records[3]["title"] == long[:80] and len(records[3]["title"]) == 80


def test_a_memory_record_names_the_current_revisions_first_source(store: LocalStore) -> None:
    context = store.create("mem", "memory")
    write(context, "memory/MEMORY.md", b"fact\n")
    source = {"context": "project-state", "type": "state", "revision": "9" * 64}
    context.publish("derive", sources=[source, {"context": "zz", "type": "state",
                                                "revision": "1" * 64}])
    records = context.records()
    assert records is not None and records[0]["source"] == source
    assert records[0]["revision"] == context.current_revision()


def test_records_follow_the_files_not_the_last_capture(store: LocalStore) -> None:
    context = store.create("mem", "memory")
    write(context, "memory/MEMORY.md", b"old\n")
    context.publish("capture")
    write(context, "memory/MEMORY.md", b"new\n")
    records = context.records()
    now = context.content().revision
    assert records is not None and [(r["text"], r["revision"], r["id"]) for r in records] == [
        ("new", now, memory_id("mem", now, "new"))]


def test_without_their_source_file_memory_and_knowledge_have_no_records(
        store: LocalStore) -> None:
    assert store.create("mem", "memory").records() is None
    assert store.create("kb", "knowledge").records() is None
    state = store.create("st", "state")
    write(state, "memory/MEMORY.md", b"not searched\n")
    assert state.records() == []


def test_knowledge_records_are_filled_in_as_index_push_does(store: LocalStore) -> None:
    context = store.create("kb", "knowledge")
    lines = [{"id": "r1", "text": "one", "keywords": ["k"]},
             {"id": "r2", "text": "two", "context": "kb", "type": "knowledge"}]
    write(context, "knowledge/records.jsonl",
          ("\n".join(json.dumps(line) for line in lines) + "\n\n").encode())
    revision = context.content().revision
    assert context.records() == [
        {"id": "r1", "text": "one", "keywords": ["k"], "context": "kb", "type": "knowledge",
         "revision": revision},
        {"id": "r2", "text": "two", "context": "kb", "type": "knowledge", "revision": revision}]
    # another identity is refused (the service would refuse the index after the revision was
    # published): tests/unit/test_local_review.py


def test_a_bad_knowledge_line_is_an_error_with_its_number(store: LocalStore) -> None:
    context = store.create("kb", "knowledge")
    write(context, "knowledge/records.jsonl", b'{"id":"a","text":"t"}\n\n[1]\n')
    with pytest.raises(LocalStoreError, match=r"records\.jsonl line 3 is not a JSON object"):
        context.records()
    write(context, "knowledge/records.jsonl", b'{"id":"a","text":"t"}\n{oops\n')
    with pytest.raises(LocalStoreError, match=r"records\.jsonl line 2 is not JSON"):
        context.records()


# --- snapshots and restore (6.6) -----------------------------------------------------------------


def filled(store: LocalStore) -> LocalContext:
    context = store.create("ctx", "memory")
    write(context, "memory/MEMORY.md", b"first\n")
    write(context, "harnesses/claude/settings.json", b"{}")
    write(context, "knowledge/records.jsonl", b"")
    return context


def test_a_snapshot_records_the_files_and_the_current_revision(store: LocalStore) -> None:
    context = filled(store)
    entry, _ = context.publish("capture")
    taken = context.snapshot("s1", labels={"team": "a"})
    assert taken["name"] == "s1" and taken["contextName"] == "ctx"
    assert taken["revision"] == entry["id"] == taken["contentRevision"]
    assert (taken["files"], taken["bytes"], taken["labels"]) == (3, 8, {"team": "a"})
    assert "protected" not in taken
    assert context.snapshot("s2", labels={"protected": "TRUE"})["protected"] is True
    assert [s["name"] for s in context.snapshots()] == ["s1", "s2"]
    with pytest.raises(LocalStoreError, match="local snapshot already exists: s1"):
        context.snapshot("s1")
    with pytest.raises(LocalStoreError, match="snapshot must be a Kubernetes name"):
        context.snapshot("Bad_Name")
    assert re.fullmatch(r"snapshot-\d{8}-\d{6}", context.snapshot()["name"])


def test_restore_brings_back_the_bytes_and_keeps_a_protected_safety_snapshot(
        store: LocalStore) -> None:
    context = filled(store)
    context.publish("capture")
    before = tree(context.root)
    context.snapshot("s1")
    write(context, "memory/MEMORY.md", b"changed\n")
    write(context, "artifacts/new.bin", b"\x00\x01")
    (context.root / "harnesses" / "claude" / "settings.json").unlink()
    changed = tree(context.root)
    changed_id = context.content().revision

    done = context.restore("s1")

    assert tree(context.root) == before
    assert sorted(p.name for p in context.root.iterdir()) == [
        ".context", "artifacts", "harnesses", "knowledge", "memory"]
    safety = next(s for s in context.snapshots() if s["name"] == done["safetySnapshot"])
    assert safety["protected"] is True and safety["contentRevision"] == changed_id
    assert done == {"restored": "s1", "safetySnapshot": safety["name"],
                    "revision": context.content().revision}
    # the restored content was the current revision: nothing appended
    assert [e["operation"] for e in context.history()] == ["capture"]
    context.restore(safety["name"])  # and back again, now a new revision
    assert tree(context.root) == changed
    assert [e["operation"] for e in context.history()] == ["capture", "restore"]
    assert context.history()[-1]["parameters"] == {"snapshot": safety["name"]}
    assert context.current_revision() == changed_id


def test_restoring_an_unknown_snapshot_changes_nothing(store: LocalStore) -> None:
    context = filled(store)
    with pytest.raises(LocalStoreError, match="local snapshot not found: nope"):
        context.restore("nope")
    assert context.snapshots() == []


@pytest.mark.parametrize("failing_root", ["harnesses", "memory", "knowledge", "artifacts"])
def test_a_restore_failing_half_way_leaves_the_files_as_they_were(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch, failing_root: str) -> None:
    context = filled(store)
    write(context, "artifacts/report.txt", b"report")
    context.publish("capture")
    context.snapshot("s1")
    write(context, "memory/MEMORY.md", b"changed\n")
    write(context, "knowledge/records.jsonl", b'{"id":"x","text":"y"}\n')
    write(context, "harnesses/codex/config.toml", b"model = 'x'")
    (context.root / "artifacts" / "report.txt").unlink()
    before, history = tree(context.root), context.history()
    real_replace = os.replace

    def failing(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        # the snapshot's root is put in place: the roots before it have been swapped already
        if Path(dst) == context.root / failing_root and Path(src).parent.name == "new":
            raise OSError("injected failure")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(LocalStoreError, match="restore of s1 failed, the files are as they were"):
        context.restore("s1")
    monkeypatch.undo()
    assert tree(context.root) == before
    assert context.history() == history
    assert list((context.root / ".context" / "work").iterdir()) == []
    safety = [s for s in context.snapshots() if s.get("protected")]
    assert len(safety) == 1  # the current state was kept before anything moved


def test_a_restore_failing_while_copying_leaves_the_files_as_they_were(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    context = filled(store)
    context.snapshot("s1")
    write(context, "memory/MEMORY.md", b"changed\n")
    before = tree(context.root)

    def failing(*args: object, **kwargs: object) -> None:
        raise OSError("no space left on device")

    monkeypatch.setattr(shutil, "copytree", failing)
    with pytest.raises(LocalStoreError, match="no space left on device"):
        context.restore("s1")
    monkeypatch.undo()
    assert tree(context.root) == before
    assert list((context.root / ".context" / "work").iterdir()) == []


def test_a_restore_that_cannot_be_undone_says_where_the_previous_files_are(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    context = filled(store)
    context.snapshot("s1")
    write(context, "memory/MEMORY.md", b"changed\n")
    before = tree(context.root)
    real_replace = os.replace

    def failing(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == context.root / "memory" and "restore-" in str(src):
            raise OSError("injected failure")  # putting the snapshot's root in and undoing
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(LocalStoreError, match="could not be undone") as raised:
        context.restore("s1")
    monkeypatch.undo()
    kept = Path(str(raised.value).rsplit("the previous files are in ", 1)[1])
    assert (kept / "memory" / "MEMORY.md").read_bytes() == before["memory/MEMORY.md"]


# --- a pull's swap (ctx sync pull) ---------------------------------------------------------------


def staged(store: LocalStore, files: dict[str, bytes]) -> tuple[Path, str]:
    """Files staged in the home as a pull stages them, and their revision."""
    staging = store.home / ".incoming-ctx-test" / "files"
    for relative, data in files.items():
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        (staging / relative).write_bytes(data)
    return staging, spec_id("memory", files)


def test_a_pull_keeps_the_files_as_a_protected_snapshot_and_records_the_revision(
        store: LocalStore) -> None:
    context = filled(store)
    captured, _ = context.publish("capture")
    files, revision = staged(store, {"memory/MEMORY.md": b"pulled\n"})
    done = context.pull(files, revision, producer="harness", parameters={"run": "7"})
    assert tree(context.root) == {"memory/MEMORY.md": b"pulled\n"}
    [safety] = context.snapshots()
    assert (safety["name"], safety["protected"], safety["contentRevision"]) == (
        done["safetySnapshot"], True, captured["id"])
    assert [(e["id"], e["operation"], e.get("producer"), e.get("parameters"))
            for e in context.history()] == [(captured["id"], "capture", "contextctl", None),
                                            (revision, "sync", "harness", {"run": "7"})]
    assert not files.exists()  # moved in, not copied


def test_a_pull_refuses_uncaptured_work_under_the_lock_unless_forced(store: LocalStore) -> None:
    context = filled(store)  # files, never captured
    files, revision = staged(store, {"memory/MEMORY.md": b"pulled\n"})
    before = tree(context.root)
    with pytest.raises(LocalStoreError, match=r"not captured as a revision.*--force"):
        context.pull(files, revision)
    assert tree(context.root) == before and context.snapshots() == []
    done = context.pull(files, revision, force=True)
    assert done["safetySnapshot"] and tree(context.root) == {"memory/MEMORY.md": b"pulled\n"}


def test_an_empty_context_is_no_uncaptured_work(store: LocalStore) -> None:
    context = store.create("ctx", "memory")
    assert not context.uncaptured()
    files, revision = staged(store, {"memory/MEMORY.md": b"pulled\n"})
    done = context.pull(files, revision)
    assert done["safetySnapshot"] is None and context.snapshots() == []
    assert context.current_revision() == revision and not context.uncaptured()


def test_a_pull_failing_half_way_leaves_the_files_as_they_were(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    context = filled(store)
    context.publish("capture")
    before, history = tree(context.root), context.history()
    files, revision = staged(store, {"memory/MEMORY.md": b"pulled\n",
                                     "artifacts/a.bin": b"a"})
    real_replace = os.replace

    def failing(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == context.root / "memory" and Path(src).parent.name == "new":
            raise OSError("injected failure")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(LocalStoreError, match=r"pull of revision .* failed, the files are as"):
        context.pull(files, revision)
    monkeypatch.undo()
    assert tree(context.root) == before and context.history() == history
    assert list((context.root / ".context" / "work").iterdir()) == []
    assert [s["protected"] for s in context.snapshots()] == [True]
