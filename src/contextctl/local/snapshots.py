"""Snapshots of a local context's portable files and in-place restore (spec 6.6 "Restore").

A snapshot is a directory ``<name>/`` beside the others holding ``snapshot.json`` and a copy of
the portable roots under ``files/``. It is assembled under a temporary name and renamed into
place, so a snapshot that is listed is always complete.

A restore copies the snapshot into a directory inside the context first (the same file system,
so the roots can then be swapped by renames), moves each current root aside and the snapshot's
into place; when any step fails, the moves done so far are undone and the context is as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from context_service.contextctl.local.content import PORTABLE_ROOTS, portable_files
from context_service.contextctl.local.disk import json_bytes
from context_service.contextctl.local.errors import LocalStoreError

DOCUMENT = "snapshot.json"
FILES = "files"
_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")


def check_name(name: str) -> None:
    """Snapshot names follow the service's rule (a DNS-1123 label), so a local snapshot's name
    means the same thing wherever the context goes."""
    if len(name) > 63 or not _LABEL.fullmatch(name):
        raise LocalStoreError("snapshot must be a Kubernetes name")


def free_name(directory: Path, prefix: str) -> str:
    """``<prefix>-<UTC time>``, with a counter when a snapshot of that second exists."""
    base = f"{prefix}-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    name, counter = base, 1
    while (directory / name).exists():
        counter += 1
        name = f"{base}-{counter}"
    return name


def is_protected(protected: bool, labels: Mapping[str, str]) -> bool:
    """As the service decides: ``labels.protected`` equal to ``true`` (any case) protects too."""
    return protected or labels.get("protected", "").lower() == "true"


def take(root: Path, directory: Path, document: Mapping[str, Any]) -> None:
    """Copy the portable files of ``root`` into the snapshot ``document["name"]``."""
    name = str(document["name"])
    if (directory / name).exists():
        raise LocalStoreError(f"local snapshot already exists: {name}")
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory, prefix=f".{name}."))
    try:
        for path in portable_files(root):
            target = staging / FILES / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        (staging / DOCUMENT).write_bytes(json_bytes(dict(document)))
        os.rename(staging, directory / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def listing(directory: Path) -> list[dict[str, Any]]:
    """Every complete snapshot, ordered by (createdAt, name) as the service orders them."""
    found = []
    if directory.is_dir():
        for item in directory.iterdir():
            if item.name.startswith("."):
                continue  # one being assembled, or left by a crash
            try:
                found.append(json.loads((item / DOCUMENT).read_bytes()))
            except FileNotFoundError:
                continue
            except ValueError as exc:
                raise LocalStoreError(f"{item / DOCUMENT} is not JSON: {exc}") from None
    return sorted(found, key=lambda s: (str(s.get("createdAt", "")), str(s.get("name", ""))))


def restore_files(root: Path, snapshot: Path, work: Path) -> None:
    """Replace the portable roots of ``root`` by the snapshot's; on failure leave them as they
    were (``work`` is a directory inside the context where the copy is staged)."""
    work.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=work, prefix="restore-"))
    incoming, outgoing = staging / "new", staging / "old"
    try:
        if (snapshot / FILES).is_dir():
            shutil.copytree(snapshot / FILES, incoming, symlinks=True)
        else:
            incoming.mkdir()  # a snapshot of a context without files
        outgoing.mkdir()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap(root, incoming, outgoing, staging)
    shutil.rmtree(staging, ignore_errors=True)  # the old roots; a leftover is harmless
    for name in PORTABLE_ROOTS:  # as a new context has them (empty ones hold no content)
        (root / name).mkdir(exist_ok=True)


def _swap(root: Path, incoming: Path, outgoing: Path, staging: Path) -> None:
    done: list[tuple[str, bool, bool]] = []  # (root name, moved aside, snapshot's put in)
    try:
        for name in PORTABLE_ROOTS:
            current = root / name
            aside = os.path.lexists(current)
            if aside:
                os.replace(current, outgoing / name)
            done.append((name, aside, False))
            if os.path.lexists(incoming / name):
                os.replace(incoming / name, current)
                done[-1] = (name, aside, True)
    except BaseException:
        try:
            _undo(root, incoming, outgoing, done)
        except OSError as exc:
            # nothing is lost: the previous roots wait in the staging directory
            raise LocalStoreError(
                f"restore failed and could not be undone ({exc}): the previous files are in "
                f"{outgoing}") from exc
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _undo(root: Path, incoming: Path, outgoing: Path,
          done: list[tuple[str, bool, bool]]) -> None:
    for name, aside, put_in in reversed(done):
        current = root / name
        if put_in:
            os.replace(current, incoming / name)
        if aside:
            os.replace(outgoing / name, current)
