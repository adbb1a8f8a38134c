"""``ctx sync pull``'s staging: a context's files brought from a mounted volume's directory or an
S3 bundle into a directory inside the local store, and addressed there (§4.2) before anything
of the local context changes. What arrives is untrusted: a bundle's members must be regular
files under the portable roots (no ``..``, absolute names, links or devices), and the staged
files must give the revision the service names current."""

from __future__ import annotations

import gzip
import shutil
import tarfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from context_service.contextctl import s3
from context_service.contextctl.client import CommandError
from context_service.contextctl.local import PORTABLE_ROOTS, Content, content_of
from context_service.contextctl.local.content import portable_files

FILES = "files"
BUNDLE = "bundle.tar.gz"


@dataclass(frozen=True, slots=True)
class Declared:
    """The totals the revision's entry declares (spec 4.3): what a bundle of it may unpack to.
    Unknown (None) when the entry declares no files, as the service's clone entries do."""

    files: int
    bytes: int

    @classmethod
    def of(cls, entry: Mapping[str, Any] | None) -> Declared | None:
        files, size = (entry or {}).get("files"), (entry or {}).get("bytes")
        if not isinstance(files, int) or not isinstance(size, int) or files <= 0 or size < 0:
            return None
        return cls(files, size)


def stage(source: str, staging: Path, context_type: str, revision: str,
          progress: Callable[[int | None], Callable[[int], None]],
          declared: Declared | None = None) -> Path:
    """The files of ``revision`` from ``source`` (a directory or ``s3://BUCKET/PREFIX``) under
    ``staging/files``; a ``CommandError`` when they are not ``revision``, or when a bundle holds
    more files or bytes than ``declared`` (checked before anything is unpacked: a small
    download must not fill the disk)."""
    files = staging / FILES
    files.mkdir()
    if s3.is_s3(source):
        bundle = staging / BUNDLE
        # bounded by the declared totals, if any (a clone's entry declares none: not bounded)
        largest = None if declared is None else s3.largest_bundle(declared.files, declared.bytes)
        s3.fetch(s3.Location.parse(source), revision, bundle, progress, largest=largest)
        unpack(bundle, files, declared)
        bundle.unlink()
    else:
        copy_roots(Path(source), files, declared)
    verify(files, context_type, revision, source)
    return files


def copy_roots(source: Path, target: Path, declared: Declared | None = None) -> None:
    """The portable roots under ``source`` copied to ``target``: regular files only (a link, a
    fifo or a socket under a root is an error, as when addressing), and no more files or bytes
    than ``declared``: a volume holding a file the revision never had (a core dump, a runaway
    log) must not fill the local disk before the address check refuses it."""
    if not source.is_dir():
        raise CommandError(f"{source} is not a directory: mount the context's volume there first")
    within = _Within(declared, str(source))
    for path in portable_files(source):
        within.add(path.lstat().st_size)  # counted before it is copied
        copied = target / path.relative_to(source)
        copied.parent.mkdir(parents=True, exist_ok=True)
        # a file swapped for a link meanwhile is copied as a link, and addressing then refuses it
        shutil.copyfile(path, copied, follow_symlinks=False)


def unpack(bundle: Path, target: Path, declared: Declared | None = None) -> None:
    """A bundle's members extracted under ``target``, after every member is checked: tarfile's
    ``data`` filter alone would accept a file outside the portable roots, which the revision
    check would never see (it addresses the roots only)."""
    try:
        with tarfile.open(bundle, "r:gz") as tar:
            members, within = [], _Within(declared, "the bundle")
            for member in tar:  # read one header at a time: a bomb is stopped at its bound
                _check(member)
                members.append(member)
                within.add(member.size)
            tar.extractall(target, members=members, filter="data")
    except (tarfile.TarError, gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise CommandError(f"the bundle cannot be unpacked: {exc}") from exc


class _Within:
    """The files and bytes of a source counted as they come, against the revision's totals."""

    def __init__(self, declared: Declared | None, source: str) -> None:
        self.declared, self.source = declared, source
        self.files = self.bytes = 0

    def add(self, size: int) -> None:
        self.files, self.bytes = self.files + 1, self.bytes + size
        declared = self.declared
        if declared is not None and (self.files > declared.files or self.bytes > declared.bytes):
            raise CommandError(
                f"{self.source} holds more than the {declared.files} files and "
                f"{declared.bytes} bytes its revision declares: refused, nothing was pulled")


def _check(member: tarfile.TarInfo) -> None:
    parts = PurePosixPath(member.name).parts
    if (not member.isreg() or member.name.startswith("/") or ".." in parts or len(parts) < 2
            or parts[0] not in PORTABLE_ROOTS):
        raise CommandError(f"the bundle holds {member.name!r}, not a regular file under the "
                           "portable roots: refused, nothing was pulled")


def verify(files: Path, context_type: str, revision: str, source: str) -> Content:
    """The staged files addressed (§4.2): they must be the revision the service names."""
    content = content_of(files, context_type)
    if content.revision != revision:
        raise CommandError(f"the files at {source} are revision {content.revision}, not "
                           f"{revision} (the context's current revision): nothing was pulled")
    return content
