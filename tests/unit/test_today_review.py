"""Review of ``ctx sync pull``'s staging and swap: a mounted directory bounded as a bundle is, a
killed pull's staging cleared, and a pull that ends in an error recording nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from context_service.contextctl import pull as pulling
from context_service.contextctl.client import CommandError
from context_service.contextctl.local import LocalStore, LocalStoreError
from context_service.contextctl.local import snapshots as local_snapshots
from context_service.contextctl.local.errors import FilesChanged
from tests.unit.test_local_store import filled, spec_id, staged, tree


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "home")


def volume_with(root: Path, files: dict[str, bytes]) -> Path:
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    return root


def copied_bytes(target: Path) -> int:
    return sum(p.stat().st_size for p in target.rglob("*") if p.is_file())


# --- a mounted directory holds no more than the revision declares --------------------------------


def test_a_directory_holding_more_bytes_than_declared_is_refused_before_it_is_copied(
        tmp_path: Path) -> None:
    """A volume with a huge file (or one the revision never held) must not fill the local
    disk before the address check refuses it: a bundle is bounded so, a directory was not."""
    source = volume_with(tmp_path / "volume", {"memory/MEMORY.md": b"- a fact\n",
                                               "artifacts/huge.bin": b"x" * 1_000_000})
    target = tmp_path / "staged"
    target.mkdir()
    with pytest.raises(CommandError, match="more than the 1 files and 9 bytes"):
        pulling.copy_roots(source, target, pulling.Declared(1, 9))
    assert copied_bytes(target) <= 9


def test_a_directory_holding_more_files_than_declared_is_refused(tmp_path: Path) -> None:
    source = volume_with(tmp_path / "volume", {f"memory/{n}.md": b"" for n in range(5)})
    target = tmp_path / "staged"
    target.mkdir()
    with pytest.raises(CommandError, match="more than the 2 files"):
        pulling.copy_roots(source, target, pulling.Declared(2, 100))
    assert len([p for p in target.rglob("*") if p.is_file()]) <= 2


def test_a_directory_within_its_declared_totals_is_copied_whole(tmp_path: Path) -> None:
    files = {"memory/MEMORY.md": b"- a fact\n", "artifacts/run/data.bin": b"\x00" * 300}
    source = volume_with(tmp_path / "volume", files)
    target = tmp_path / "staged"
    target.mkdir()
    pulling.copy_roots(source, target, pulling.Declared(2, 309))
    assert {p.relative_to(target).as_posix(): p.read_bytes()
            for p in target.rglob("*") if p.is_file()} == files


# --- staging left by a killed pull ---------------------------------------------------------------


def test_the_staging_a_killed_pull_left_is_cleared_by_the_next_one(store: LocalStore) -> None:
    """A pull killed while it downloaded left its hidden staging (a whole bundle) in the home,
    where nothing ever removed it."""
    left = store.home / ".incoming-ctx-abandoned"
    volume_with(left, {"bundle.tar.gz": b"x" * 4096, "files/memory/MEMORY.md": b"old\n"})
    with store.staging("ctx") as staging:
        assert staging.is_dir()
        assert not left.exists()
    assert [p.name for p in store.home.iterdir()] == []


def test_a_staging_in_use_by_another_pull_is_left_alone(store: LocalStore) -> None:
    with store.staging("ctx") as first:
        (first / "files").mkdir()
        with store.staging("ctx") as second:
            assert first.is_dir() and (first / "files").is_dir()
            assert second != first
        assert first.is_dir()
    assert [p.name for p in store.home.iterdir()] == []


# --- a pull that fails after its swap ----------------------------------------------------------


def test_files_changed_during_a_pull_are_not_recorded_as_the_pulled_revision(
        store: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file written between the swap and the record: the pull fails, and the local history
    must not gain a ``sync`` entry (with the service's producer) for files that are not the
    pulled revision."""
    context = filled(store)
    context.publish("capture")
    history = context.history()
    files, revision = staged(store, {"memory/MEMORY.md": b"pulled\n"})
    real = local_snapshots.restore_files

    def then_edited(root: Path, *args: object, **kwargs: object) -> None:
        real(root, *args, **kwargs)  # type: ignore[arg-type]
        (root / "memory" / "MEMORY.md").write_bytes(b"edited meanwhile\n")

    monkeypatch.setattr(local_snapshots, "restore_files", then_edited)
    with pytest.raises(LocalStoreError, match="changed during the pull"):
        context.pull(files, revision, producer="harness")
    assert context.history() == history
    assert tree(context.root)["memory/MEMORY.md"] == b"edited meanwhile\n"
    assert spec_id("memory", {"memory/MEMORY.md": b"pulled\n"}) == revision
    assert os.path.isdir(context.root / "memory")


def test_a_publish_of_an_expected_revision_records_nothing_when_the_files_are_another(
        store: LocalStore) -> None:
    """``ctx sync push`` recorded the files as they were when it published (operation sync)
    and only then said they had changed during the push: the history gained a revision that
    was never sent."""
    context = filled(store)
    sent, _ = context.publish("capture")
    (context.root / "memory" / "MEMORY.md").write_bytes(b"written after the copy\n")
    with pytest.raises(FilesChanged) as raised:
        context.publish("sync", expected=sent["id"])
    assert raised.value.revision == context.content().revision
    assert context.history() == [sent]
    assert context.publish("sync", expected=context.content().revision)[1] is True
