"""The S3 transport's own rules: locations, the reproducible bundle, boto3 as an optional
dependency."""

from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

import pytest

from context_service.contextctl import s3
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
