"""The files to ingest: every file of a supported format under the given folders (hidden files
and folders left out), and the files given by name. Each file's name in the index is its path
relative to the common folder of the inputs (a folder counts as itself, a file as its folder),
with ``/`` separators."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from context_service.contextctl.client import CommandError
from context_service.contextctl.ingestion.formats import SUFFIXES, format_of


@dataclass(frozen=True, slots=True)
class Source:
    path: Path  # where to read it
    name: str  # its file in the index: relative, ``/`` separators
    format: str
    named: bool  # given by name on the command line (not found in a folder)


@dataclass(frozen=True, slots=True)
class Found:
    sources: list[Source]
    ignored: list[str]  # files in the folders whose format is not supported


def discover(paths: Sequence[str | os.PathLike[str]]) -> Found:
    if not paths:
        raise CommandError("name at least one file or folder to ingest")
    roots = [Path(p) for p in paths]
    for root in roots:
        if not root.exists() and not root.is_symlink():
            raise CommandError(f"{root}: no such file or folder")
    base = Path(os.path.commonpath(
        [str((r if r.is_dir() else r.parent).resolve()) for r in roots]))
    sources: dict[Path, Source] = {}
    ignored: list[str] = []
    for root in roots:
        if root.is_dir():
            for path in _walk(root):
                name = _name(path, base)
                kind = format_of(path)
                if kind is None:
                    ignored.append(name)
                else:
                    sources.setdefault(path.absolute(), Source(path, name, kind, False))
        else:
            kind = format_of(root)
            if kind is None:
                raise CommandError(f"{root}: unsupported format (ingest reads "
                                   f"{', '.join(SUFFIXES)})")
            sources.setdefault(root.absolute(), Source(root, _name(root, base), kind, True))
    return Found(sorted(sources.values(), key=lambda s: s.name.encode()),
                 sorted(set(ignored), key=str.encode))


def _walk(root: Path) -> Iterable[Path]:
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for file in sorted(files):
            path = Path(folder, file)
            if not file.startswith(".") and (path.is_file() or path.is_symlink()):
                yield path


def _name(path: Path, base: Path) -> str:
    parent = path.parent.resolve()
    return (parent / path.name).relative_to(base).as_posix()
