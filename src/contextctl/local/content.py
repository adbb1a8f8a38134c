"""The portable content of a local context and its content address (spec 4.2).

Only regular files under the portable roots count; everything else in the context directory
(the store's metadata, a user's notes beside the roots) never changes the id. A symlink, fifo or
socket under a root is an error rather than skipped: silently leaving it out would give two
different trees the same id.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from context_service.contextctl.ingestion.revision import FileEntry, digest
from context_service.contextctl.local.errors import LocalStoreError

PORTABLE_ROOTS = ("harnesses", "memory", "knowledge", "artifacts")


@dataclass(frozen=True, slots=True)
class Content:
    """The portable files of a context as they are now, and their revision id."""

    revision: str
    files: tuple[FileEntry, ...]  # sorted by relative path, byte-wise

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


def content_of(root: Path, context_type: str) -> Content:
    """Walk the portable roots under ``root`` and address what they hold."""
    entries = sorted((_file_entry(root, path) for path in portable_files(root)),
                     key=lambda f: f.name.encode())
    return Content(digest(context_type, {}, entries), tuple(entries))


def portable_files(root: Path) -> Iterator[Path]:
    """Every regular file under the portable roots (a missing root is skipped)."""
    for name in PORTABLE_ROOTS:
        top = root / name
        if not os.path.lexists(top):
            continue
        if top.is_symlink() or not top.is_dir():
            raise LocalStoreError(f"{name} is not a directory: {top}")
        yield from _walk(root, top)


def _walk(root: Path, directory: Path) -> Iterator[Path]:
    with os.scandir(directory) as found:
        for item in sorted(found, key=lambda e: e.name):
            path = Path(item.path)
            if item.is_dir(follow_symlinks=False):
                yield from _walk(root, path)
            elif item.is_file(follow_symlinks=False):
                yield path
            else:
                raise LocalStoreError(
                    f"not a regular file: {relative_name(root, path)} (symlinks, fifos and "
                    "sockets cannot be part of a context's portable content)")


def relative_name(root: Path, path: Path) -> str:
    """The path relative to the context root with ``/`` separators, as the id hashes it."""
    name = path.relative_to(root).as_posix()
    try:
        name.encode()
    except UnicodeEncodeError:
        raise LocalStoreError(f"file name is not UTF-8: {name!r}") from None
    return name


def _file_entry(root: Path, path: Path) -> FileEntry:
    # streamed: artifacts may be far larger than memory
    with path.open("rb") as stream:
        hasher = hashlib.file_digest(stream, "sha256")
        size = stream.tell()
    return FileEntry(relative_name(root, path), hasher.hexdigest(), size)
