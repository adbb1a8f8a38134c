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

from context_service.contextctl.local.content import PORTABLE_ROOTS, content_of, portable_files
from context_service.contextctl.local.disk import json_bytes
from context_service.contextctl.local.errors import LocalStoreError

DOCUMENT = "snapshot.json"
FILES = "files"
RESTORING, DONE = "restore-", "done-"  # a restore's staging under work/, before and after
INCOMING, OUTGOING = "new", "old"
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


def take(root: Path, directory: Path, document: Mapping[str, Any],
         context_type: str) -> dict[str, Any]:
    """Copy the portable files of ``root`` into the snapshot ``document["name"]``; the document
    as written, with the copy's own revision, files and bytes (a file written while it was
    copied is described as the snapshot holds it)."""
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
        copied = content_of(staging / FILES, context_type)
        written = {**document, "contentRevision": copied.revision, "files": len(copied.files),
                   "bytes": copied.bytes}
        (staging / DOCUMENT).write_bytes(json_bytes(written))
        os.rename(staging, directory / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


def listing(directory: Path) -> list[dict[str, Any]]:
    """Every complete snapshot, ordered by (createdAt, name) as the service orders them."""
    found = []
    if directory.is_dir():
        for item in directory.iterdir():
            if item.name.startswith("."):
                continue  # one being assembled, or left by a crash
            try:
                document = json.loads((item / DOCUMENT).read_bytes())
            except FileNotFoundError:
                continue
            except ValueError as exc:
                raise LocalStoreError(f"{item / DOCUMENT} is not JSON: {exc}") from None
            if not isinstance(document, dict):
                raise LocalStoreError(f"{item / DOCUMENT} is not a snapshot")
            # the directory is the snapshot: a restore reads the files under its name
            found.append({**document, "name": item.name})
    return sorted(found, key=lambda s: (str(s.get("createdAt", "")), str(s.get("name", ""))))


def restore_files(root: Path, files: Path, work: Path, *, move: bool = False) -> None:
    """Replace the portable roots of ``root`` by those under ``files`` (a snapshot's copy, or
    files a pull staged and verified); on failure leave them as they were (``work`` is a
    directory inside the context where they are staged). ``move``: ``files`` is a staging of
    the caller's, moved rather than copied (a rename within the store's file system).

    Every root is made to exist on both sides before the swap (an empty root holds no content),
    so the swap is the same two renames for each root and the state of a swap cut short by a
    killed process can be read from the disk alone: ``recover`` undoes it."""
    work.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=work, prefix=RESTORING))
    incoming, outgoing = staging / INCOMING, staging / OUTGOING
    try:
        if files.is_dir() and move:
            shutil.move(files, incoming)
        elif files.is_dir():
            shutil.copytree(files, incoming, symlinks=True)
        for name in PORTABLE_ROOTS:
            (incoming / name).mkdir(parents=True, exist_ok=True)
            (root / name).mkdir(exist_ok=True)
        outgoing.mkdir()  # from here on the swap may have begun
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap(root, staging)
    done = work / f"{DONE}{staging.name}"
    os.rename(staging, done)  # the old roots: never to be put back once the swap is complete
    shutil.rmtree(done, ignore_errors=True)


def _swap(root: Path, staging: Path) -> None:
    try:
        for name in PORTABLE_ROOTS:
            os.replace(root / name, staging / OUTGOING / name)
            os.replace(staging / INCOMING / name, root / name)
    except BaseException:
        try:
            _roll_back(root, staging)
        except OSError as exc:
            # nothing is lost: the previous roots wait in the staging directory, and the next
            # command on this context tries again
            raise LocalStoreError(
                f"restore failed and could not be undone ({exc}): the previous files are in "
                f"{staging / OUTGOING}") from exc
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _roll_back(root: Path, staging: Path) -> None:
    """Put back every root the swap moved aside (a root in its place then is the snapshot's)."""
    for name in PORTABLE_ROOTS:
        previous = staging / OUTGOING / name
        if not os.path.lexists(previous):
            continue
        if os.path.lexists(root / name):
            os.replace(root / name, staging / INCOMING / name)
        os.replace(previous, root / name)


def leftovers(directory: Path, work: Path) -> bool:
    """Whether a killed command left anything behind (a quick look, without the lock)."""
    return ((work.is_dir() and any(work.iterdir()))
            or (directory.is_dir() and any(p.name.startswith(".") for p in directory.iterdir())))


def recover(root: Path, directory: Path, work: Path) -> None:
    """Undo what a killed command left, under the context's lock: a restore's swap is rolled
    back (the context is as before it; its safety snapshot stays), a restore that had
    completed loses its staging, and a snapshot never renamed into place is deleted."""
    if work.is_dir():
        for staging in sorted(work.iterdir()):
            if staging.name.startswith(RESTORING) and (staging / OUTGOING).is_dir():
                _roll_back(root, staging)
            shutil.rmtree(staging)
    if directory.is_dir():
        for item in directory.iterdir():
            if item.name.startswith("."):
                shutil.rmtree(item)
