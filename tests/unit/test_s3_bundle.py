"""The S3 transport's own rules: locations, the reproducible bundle, boto3 as an optional
dependency."""

from __future__ import annotations

import io
import os
import sys
import tarfile
from pathlib import Path

import pytest

from context_service.contextctl import pull, s3
from context_service.contextctl.client import CommandError
from context_service.contextctl.local import content_of


@pytest.mark.parametrize(("url", "bucket", "prefix", "key"), [
    ("s3://b/team/docs/", "b", "team/docs", "team/docs/current"),
    ("s3://b/team/docs", "b", "team/docs", "team/docs/current"),
    ("s3://b", "b", "", "current"),
    ("s3://b/", "b", "", "current"),
])
def test_locations(url: str, bucket: str, prefix: str, key: str) -> None:
    location = s3.Location.parse(url)
    assert (location.bucket, location.prefix, location.key("current")) == (bucket, prefix, key)


@pytest.mark.parametrize("url", ["s3://", "s3:///prefix", "https://b/p", "b/p"])
def test_a_location_without_a_bucket_is_refused(url: str) -> None:
    with pytest.raises(CommandError, match="is not s3://BUCKET/PREFIX"):
        s3.Location.parse(url)


def make_tree(root: Path, stamp: int) -> None:
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "MEMORY.md").write_text("- a fact\n")
    (root / "artifacts" / "b").mkdir(parents=True)
    (root / "artifacts" / "b" / "x.bin").write_bytes(b"\x00\x01")
    (root / "artifacts" / "a.txt").write_text("a")
    (root / "outside.txt").write_text("not portable")
    for path in root.rglob("*"):
        os.utime(path, (stamp, stamp))


def test_a_bundle_is_reproducible_and_holds_only_the_portable_roots(tmp_path: Path) -> None:
    make_tree(tmp_path / "one", 1_000_000)
    make_tree(tmp_path / "two", 2_000_000)
    revision = content_of(tmp_path / "one", "memory").revision
    assert content_of(tmp_path / "two", "memory").revision == revision
    with s3.bundle(tmp_path / "one", "memory", revision) as first, \
            s3.bundle(tmp_path / "two", "memory", revision) as second:
        assert first.read_bytes() == second.read_bytes()
        with tarfile.open(first, "r:gz") as tar:
            names = tar.getnames()
            assert all(m.mtime == 0 and m.uid == 0 and not m.uname for m in tar.getmembers())
    assert names == ["artifacts/a.txt", "artifacts/b/x.bin", "memory/MEMORY.md"]
    assert not first.exists()  # the temporary file is gone afterwards


def test_a_bundle_that_does_not_hold_its_revision_is_refused(tmp_path: Path) -> None:
    """Named by its revision: files changed since it was addressed must not go out under it."""
    make_tree(tmp_path / "one", 1_000_000)
    revision = content_of(tmp_path / "one", "memory").revision
    (tmp_path / "one" / "memory" / "MEMORY.md").write_text("- written meanwhile\n")
    with pytest.raises(CommandError, match="the files changed while the bundle was made"), \
            s3.bundle(tmp_path / "one", "memory", revision):
        pass
    with pytest.raises(CommandError, match="the files changed while the bundle was made"), \
            s3.bundle(tmp_path / "one", "state", content_of(tmp_path / "one", "memory").revision):
        pass  # the type is part of the id


def test_without_boto3_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(CommandError, match=r"pip install 'context-service\[s3\]'"):
        s3.client({})


def test_a_bundle_unpacks_to_the_revision_it_holds(tmp_path: Path) -> None:
    make_tree(tmp_path / "one", 1_000_000)
    revision = content_of(tmp_path / "one", "memory").revision
    with s3.bundle(tmp_path / "one", "memory", revision) as packed:
        pull.unpack(packed, tmp_path / "unpacked")
    assert pull.verify(tmp_path / "unpacked", "memory", revision, "here").revision == revision
    assert not (tmp_path / "unpacked" / "outside.txt").exists()


def hostile(path: Path, kind: bytes, name: str, link: str = "") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(tarfile.TarInfo("memory/MEMORY.md"), io.BytesIO(b""))
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        info.size = 0
        tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
    return path


@pytest.mark.parametrize(("kind", "name", "link"), [
    (tarfile.REGTYPE, "../evil", ""),
    (tarfile.REGTYPE, "memory/../../evil", ""),
    (tarfile.REGTYPE, "/tmp/evil", ""),
    (tarfile.REGTYPE, "notes/evil", ""),
    (tarfile.REGTYPE, "memory", ""),
    (tarfile.DIRTYPE, "memory/evil", ""),
    (tarfile.SYMTYPE, "memory/evil", "/etc/passwd"),
    (tarfile.LNKTYPE, "memory/evil", "memory/MEMORY.md"),
    (tarfile.CHRTYPE, "memory/evil", ""),
    (tarfile.FIFOTYPE, "memory/evil", ""),
])
def test_a_bundle_member_that_is_not_a_file_under_the_roots_unpacks_nothing(
        tmp_path: Path, kind: bytes, name: str, link: str) -> None:
    packed = hostile(tmp_path / "hostile.tar.gz", kind, name, link)
    target = tmp_path / "deep" / "staging"
    target.mkdir(parents=True)
    with pytest.raises(CommandError, match="not a regular file under the portable roots"):
        pull.unpack(packed, target)
    assert list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "hostile.tar.gz", "staging"]


def test_a_bundle_that_is_not_a_gzipped_tar_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "junk.tar.gz").write_bytes(b"\x1f\x8b\x08\x00 not really")
    with pytest.raises(CommandError, match="the bundle cannot be unpacked"):
        pull.unpack(tmp_path / "junk.tar.gz", tmp_path)


def test_a_bundle_larger_than_its_revision_declares_unpacks_nothing(tmp_path: Path) -> None:
    """A bomb: a few kilobytes that would unpack to far more than the revision's totals."""
    packed = tmp_path / "bomb.tar.gz"
    with tarfile.open(packed, "w:gz") as tar:
        for n in range(3):
            info = tarfile.TarInfo(f"artifacts/zeros-{n}")
            info.size = 4 << 20
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert packed.stat().st_size < 64 << 10
    target = tmp_path / "staging"
    target.mkdir()
    with pytest.raises(CommandError, match="more than the 3 files and 8388608 bytes"):
        pull.unpack(packed, target, pull.Declared(files=3, bytes=8 << 20))
    with pytest.raises(CommandError, match="more than the 2 files"):
        pull.unpack(packed, target, pull.Declared(files=2, bytes=12 << 20))
    assert list(target.iterdir()) == []
    pull.unpack(packed, target, pull.Declared(files=3, bytes=12 << 20))  # as declared: unpacked
    assert sorted(p.name for p in (target / "artifacts").iterdir()) == [
        "zeros-0", "zeros-1", "zeros-2"]


def test_declared_totals_come_from_an_entry_that_names_files() -> None:
    assert pull.Declared.of({"files": 2, "bytes": 10}) == pull.Declared(2, 10)
    # a clone's entry (files 0), no entry, or totals of another type: no bound to hold to
    for entry in ({"files": 0, "bytes": 0}, None, {"files": "2", "bytes": 10}, {}):
        assert pull.Declared.of(entry) is None
