"""The files to ingest: every file of a supported format under the given folders (hidden files
and folders left out), and the files given by name. Each file's name in the index is its path
relative to the common folder of the inputs (a folder counts as itself, a file as its folder),
with ``/`` separators, in Unicode's composed form (NFC): macOS writes names decomposed (NFD),
Linux and Windows as they were typed, mostly NFC, and the same folder must give the same names,
ids and revision on each."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from context_service.contextctl.client import CommandError, printable
from context_service.contextctl.ingestion.formats import SUFFIXES, format_of


@dataclass(frozen=True, slots=True)
class Source:
    path: Path  # where to read it
    name: str  # its file in the index: relative, ``/`` separators
    format: str
    named: bool  # given by name on the command line (not found in a folder)
    size: int = 0  # its bytes when found: what the reading bar counts for it, however it is read


@dataclass(frozen=True, slots=True)
class Found:
    sources: list[Source]
    ignored: list[str]  # files in the folders whose format is not supported
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (name, reason): a folder
    # that cannot be listed, a file whose name is not UTF-8


def discover(paths: Sequence[str | os.PathLike[str]]) -> Found:
    if not paths:
        raise CommandError("name at least one file or folder to ingest")
    roots = [Path(p) for p in paths]
    for root in roots:
        if not root.exists() and not root.is_symlink():
            raise CommandError(f"{printable(_shown(os.fspath(root)))}: no such file or folder")
    base = Path(os.path.commonpath(
        [str((r if r.is_dir() else r.parent).resolve()) for r in roots]))
    # one file reached by two paths (a folder and a link to it, ``a/../a``) is read once, under
    # one name; a file named on the command line counts as named whatever the order
    sources: dict[Path, Source] = {}
    ignored: list[str] = []
    unreadable: dict[str, str] = {}

    def add(path: Path, kind: str, named: bool) -> None:
        key = path.parent.resolve() / path.name
        name = _name(path, base)
        if not _utf8(name):
            unreadable[_shown(name)] = "file name is not UTF-8"
        elif key not in sources or (named and not sources[key].named):
            sources[key] = Source(path, name, kind, named, _size(path))

    for root in roots:
        if root.is_dir():
            def refused(error: OSError, root: Path = root) -> None:
                folder = Path(error.filename) if error.filename else root
                name = _name(folder, base)
                unreadable[_shown(os.fspath(root) if name == "." else name) + "/"] = (
                    f"cannot be read ({error.strerror or error})")

            for path in _walk(root, refused):
                kind = format_of(path)
                if kind is None:
                    ignored.append(_shown(_name(path, base)))
                else:
                    add(path, kind, False)
        else:
            kind = format_of(root)
            if kind is None:
                raise CommandError(f"{printable(_shown(os.fspath(root)))}: unsupported format "
                                   "(ingest reads "
                                   f"{', '.join(SUFFIXES)})")
            add(root, kind, True)
    kept = _unique_names(list(sources.values()), unreadable)
    return Found(sorted(kept, key=lambda s: s.name.encode()),
                 sorted(set(ignored), key=str.encode),
                 sorted(unreadable.items(), key=lambda item: item[0].encode()))


def _walk(root: Path, refused: Callable[[OSError], None]) -> Iterable[Path]:
    """The files under ``root``; a folder that cannot be listed is reported to ``refused``
    (``os.walk`` would leave it out without a word)."""
    for folder, folders, files in os.walk(root, onerror=refused):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for file in sorted(files):
            path = Path(folder, file)
            if not file.startswith(".") and (path.is_file() or path.is_symlink()):
                yield path


def _unique_names(sources: list[Source], unreadable: dict[str, str]) -> list[Source]:
    """The sources without those whose names are one once composed (two files that only a
    file system keeping both forms can hold): which one to publish under the name would
    depend on the order of the walk, so neither is, and the name is reported."""
    counts: dict[str, int] = {}
    for source in sources:
        counts[source.name] = counts.get(source.name, 0) + 1
    for name, count in counts.items():
        if count > 1:
            unreadable[name] = (f"{count} files have this name, written in different Unicode "
                                "forms (NFC and NFD): rename one")
    return [source for source in sources if counts[source.name] == 1]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # a dangling link: set aside when it is read
        return 0


def _name(path: Path, base: Path) -> str:
    parent = path.parent.resolve()
    return unicodedata.normalize("NFC", (parent / path.name).relative_to(base).as_posix())


def _utf8(name: str) -> bool:
    """Whether a name is UTF-8 (undecodable bytes come as lone surrogates, which no record,
    report or terminal can carry)."""
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _shown(name: str) -> str:
    """A name as it can be printed: bytes that are not UTF-8 shown as U+FFFD."""
    return os.fsencode(name).decode("utf-8", "replace")
