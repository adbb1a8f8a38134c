"""Review of ``ctx sync pull`` against a served process: what is refused before anything is
fetched or created, and the volume bounded by the revision's declared totals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.contextctl.conftest import Cli
from tests.contextctl.test_sync_pull import everything, files_of, local_json, published, pull

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


def test_an_invalid_local_name_is_refused_before_anything_is_fetched(
        cli: Cli, tmp_path: Path) -> None:
    """The name was checked only when the context was created, after the whole copy or
    download; and the staging's name was built from it unchecked."""
    volume = tmp_path / "volume"
    volume.mkdir()
    published(cli, tmp_path / "a", "named", "memory", "--to", str(volume))
    home = tmp_path / "b"
    for bad in ("Named", "a/b"):
        refused = pull(cli, home, "named", "--from", str(volume), "--local", bad)
        assert refused.code == 1
        assert "name must be a lowercase Kubernetes name" in refused.err, refused.err
        assert not home.exists()


def test_a_directory_that_is_not_a_context_is_adopted_only_with_force(
        cli: Cli, tmp_path: Path) -> None:
    """Files in the home under the context's name, never made a context: a refused pull must
    change nothing (it made the directory a context, after the whole download); with --force
    they are kept as a protected snapshot."""
    volume = tmp_path / "volume"
    volume.mkdir()
    root, revision = published(cli, tmp_path / "a", "adopted", "memory", "--to", str(volume))
    home = tmp_path / "b"
    mine = home / "adopted" / "memory" / "MEMORY.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("- my own notes\n")
    before = everything(home)

    refused = pull(cli, home, "adopted", "--from", str(volume))
    assert refused.code == 1 and "--force" in refused.err, refused.err
    assert everything(home) == before

    forced = pull(cli, home, "adopted", "--from", str(volume), "--force", "--json")
    assert forced.code == 0, forced.err
    report = json.loads(forced.out)
    assert report["created"] is True and report["safetySnapshot"]
    assert files_of(home / "adopted") == files_of(root)
    [snapshot] = local_json(cli, home, "snapshots", "adopted")["items"]
    assert (snapshot["name"], snapshot["files"]) == (report["safetySnapshot"], 1)
    snapshot_file = (home / "adopted" / ".context" / "snapshots" / snapshot["name"] / "files"
                     / "memory" / "MEMORY.md")
    assert snapshot_file.read_text() == "- my own notes\n"
    assert local_json(cli, home, "status", "adopted")["currentRevision"] == revision


def test_a_volume_holding_more_than_the_revision_declares_is_not_copied(
        cli: Cli, tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    published(cli, tmp_path / "a", "grown", "artifacts", "--to", str(volume))
    (volume / "artifacts" / "core.dump").write_bytes(b"\x00" * 2_000_000)
    home = tmp_path / "b"
    refused = pull(cli, home, "grown", "--from", str(volume))
    assert refused.code == 1
    assert "bytes its revision declares" in refused.err, refused.err
    assert everything(home) == {}
