"""The local filesystem store of contexts (spec 7.3): one directory per context under
``CS_CONTEXT_HOME`` holding the portable roots, and beside them ``.context/`` with what the store
knows about the context (its type, revision history and snapshots). The metadata lies outside the
portable roots, so it never changes a revision id (spec 4.2)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from context_service.contextctl.contexts import TYPES
from context_service.contextctl.local import history, snapshots
from context_service.contextctl.local.content import PORTABLE_ROOTS, Content, content_of
from context_service.contextctl.local.disk import ContextLock, create_exclusive, json_bytes
from context_service.contextctl.local.errors import FilesChanged, LocalStoreError
from context_service.contextctl.local.records import (
    INDEXED_TYPES,
    knowledge_records,
    memory_records,
)

DEFAULT_HOME = "~/.contexts"
METADATA = ".context"
INCOMING = ".incoming-"  # the prefix of a pull's staging directories in the home
_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")
NAME_MESSAGE = "name must be a lowercase Kubernetes name no longer than 50 characters"


def is_context_name(name: str) -> bool:
    """The service's rule for context names (spec 2.1.1): a local context can be pushed under
    its own name. It also keeps every name a single directory under the home."""
    return len(name) <= 50 and _NAME.fullmatch(name) is not None


class LocalContext:
    """One context directory. ``root`` holds the portable roots ``harnesses/``, ``memory/``,
    ``knowledge/`` and ``artifacts/``."""

    def __init__(self, name: str, type: str, root: Path) -> None:
        self.name = name
        self.type = type
        self.root = root
        self._lock = ContextLock(self._metadata / "lock")

    def __repr__(self) -> str:
        return f"LocalContext({self.name!r}, {self.type!r}, {str(self.root)!r})"

    @property
    def _metadata(self) -> Path:
        return self.root / METADATA

    @property
    def _revisions(self) -> Path:
        return self._metadata / "revisions.jsonl"

    @property
    def _snapshots(self) -> Path:
        return self._metadata / "snapshots"

    @property
    def _work(self) -> Path:
        return self._metadata / "work"

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """The context's lock, and first the repair of what a killed command left (only when
        the lock is taken, not again by a nested block: a restore snapshots and publishes
        under the lock it holds, its own staging is no leftover)."""
        with self._lock.held():
            if self._lock.depth == 1:
                snapshots.recover(self.root, self._snapshots, self._work)
            yield

    def lock_file(self) -> None:
        """Make the lock file if it is missing."""
        with self._lock.held():
            pass

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """The context's files and metadata as one command left them: a shared lock, so that
        a read waits for a restore, pull or capture under way in another process (and they for
        it), and first the repair of what a killed one left. Reads inside a block of this
        object's own hold its lock already."""
        if self._lock.depth:
            with self._lock.held(shared=True):
                yield
            return
        while True:
            with self._lock.held(shared=True):
                if not snapshots.leftovers(self._snapshots, self._work):
                    yield
                    return
            self.recover()  # a command killed while this one waited for the lock

    def recover(self) -> None:
        """Repair what a killed command left (a restore cut short is rolled back), so that no
        command sees half a restore; a quick look first, the lock only when there is work."""
        if snapshots.leftovers(self._snapshots, self._work):
            with self._changing():
                pass

    def content(self) -> Content:
        """The portable files as they are now and their revision id (spec 4.2)."""
        with self.reading():
            return content_of(self.root, self.type)

    def history(self) -> list[dict[str, Any]]:
        """The published revisions, oldest first, in the service's revision shape."""
        with self.reading():
            return history.read(self._revisions)

    def current_revision(self) -> str:
        """The id published last ("" when none): a local publish always appends or reuses the
        last entry, so the last entry is the current revision."""
        entries = self.history()
        return str(entries[-1]["id"]) if entries else ""

    def publish(self, operation: str, producer: str = "contextctl",
                parameters: Mapping[str, str] | None = None,
                sources: Sequence[Mapping[str, str]] = (), *,
                expected: str | None = None) -> tuple[dict[str, Any], bool]:
        """Record the files as they are now as a revision (spec 4.2 "Publishing locally"):
        ``(entry, True)`` when appended, ``(last entry, False)`` when the content is the current
        revision's. ``expected``: the revision a push sent or a pull received; files that are no
        longer it are not recorded (``FilesChanged``), since the entry would describe them with
        the provenance of other files."""
        with self._changing():
            content = self.content()
            if expected is not None and content.revision != expected:
                raise FilesChanged(self.name, content.revision)
            entry = history.entry(content, operation, producer, parameters or {}, sources)
            entries = self.history()
            if entries and entries[-1].get("id") == content.revision:
                return entries[-1], False
            history.append(self._revisions, entries, entry)
            return entry, True

    def records(self, revision: str | None = None) -> list[dict[str, Any]] | None:
        """The query records of the files as they are now (spec 5.5), of ``revision`` (default:
        the files' own, addressed again); None when the context's record source does not exist
        (it is then unavailable to a query, spec 5.3). A push passes the revision it publishes,
        so that its index cannot name another one (the service would refuse it)."""
        if self.type not in INDEXED_TYPES:
            return []
        with self.reading():
            revision = revision or self.content().revision
            if self.type == "memory":
                return memory_records(self.root, self.name, revision,
                                      self._derivation_source(revision))
            return knowledge_records(self.root, self.name, self.type, revision)

    def _derivation_source(self, revision: str) -> dict[str, str]:
        """The first source of the memory's latest derivation (the last revision that names
        sources), else the memory itself. Not the last revision's: a capture or a push records
        none, and the records of one revision must not change when it is recorded."""
        sources = next((e["sources"] for e in reversed(self.history())
                        if isinstance(e.get("sources"), list) and e["sources"]), None)
        first = sources[0] if sources else None
        if isinstance(first, dict) and first.get("context"):
            return {"context": str(first.get("context", "")), "type": str(first.get("type", "")),
                    "revision": str(first.get("revision", ""))}
        return {"context": self.name, "type": self.type, "revision": revision}

    def snapshot(self, name: str | None = None, *, protected: bool = False,
                 labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Copy the portable files as they are now; returns the snapshot's document."""
        chosen_labels = dict(labels or {})
        with self._changing():
            chosen = snapshots.free_name(self._snapshots, "snapshot") if name is None else name
            snapshots.check_name(chosen)
            document: dict[str, Any] = {"name": chosen, "contextName": self.name}
            if current := self.current_revision():
                document["revision"] = current
            # what the copy holds, filled in once it is made (a file may change meanwhile)
            document.update({"contentRevision": "", "files": 0, "bytes": 0,
                             "createdAt": history.now_text()})
            if snapshots.is_protected(protected, chosen_labels):
                document["protected"] = True
            if chosen_labels:
                document["labels"] = chosen_labels
            return snapshots.take(self.root, self._snapshots, document, self.type)

    def snapshots(self) -> list[dict[str, Any]]:
        """The snapshots, oldest first."""
        with self.reading():
            return snapshots.listing(self._snapshots)

    def restore(self, snapshot: str) -> dict[str, Any]:
        """Replace the portable files by the snapshot's, in place (spec 6.6), after keeping the
        current ones as a protected safety snapshot; the result is published as a revision."""
        snapshots.check_name(snapshot)
        with self._changing():
            if not any(s.get("name") == snapshot for s in self.snapshots()):
                raise LocalStoreError(f"local snapshot not found: {snapshot}")
            safety = self.snapshot(snapshots.free_name(self._snapshots, "pre-restore"),
                                   protected=True, labels={"restore": snapshot})
            try:
                snapshots.restore_files(self.root, self._snapshots / snapshot / snapshots.FILES,
                                        self._work)
            except OSError as exc:
                raise LocalStoreError(f"restore of {snapshot} failed, the files are as they "
                                      f"were (safety snapshot {safety['name']}): {exc}") from exc
            entry, _ = self.publish("restore", parameters={"snapshot": snapshot})
            return {"restored": snapshot, "safetySnapshot": safety["name"],
                    "revision": entry["id"]}

    def uncaptured(self, content: Content | None = None) -> bool:
        """Whether the files (``content``, when the caller addressed them already) differ from
        the last captured revision: work a replacement of the files would lose."""
        return _uncaptured(content or self.content(), self.current_revision())

    def pull(self, files: Path, revision: str, *, force: bool = False,
             producer: str = "contextctl", parameters: Mapping[str, str] | None = None,
             sources: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
        """Replace the portable files by those staged under ``files`` (inside the store, already
        addressed as ``revision`` by the caller) and record them (operation ``sync``, with the
        provenance given). Uncaptured work is refused unless ``force``; files with content are
        first kept as a protected ``pre-pull-…`` snapshot; the swap is the restore's, so a
        failed or killed pull leaves the files as they were."""
        with self._changing():
            content, safety = self.content(), None
            if content.revision != revision:
                if _uncaptured(content, self.current_revision()) and not force:
                    raise LocalStoreError(
                        f"{self.name} has files not captured as a revision (they are "
                        f"{content.revision[:12]}): capture them, or pull with --force to keep "
                        "them as a protected snapshot")
                if content.files:
                    safety = self.snapshot(snapshots.free_name(self._snapshots, "pre-pull"),
                                           protected=True, labels={"pull": revision[:12]})
                try:
                    snapshots.restore_files(self.root, files, self._work, move=True)
                except OSError as exc:
                    raise LocalStoreError(f"pull of revision {revision[:12]} failed, the files "
                                          f"are as they were: {exc}") from exc
            try:
                entry, recorded = self.publish("sync", producer, parameters, sources,
                                               expected=revision)
            except FilesChanged as exc:
                raise LocalStoreError(f"the files of {self.name} changed during the pull (now "
                                      f"{exc.revision[:12]}): pull again") from None
            return {"revision": entry, "recorded": recorded,
                    "safetySnapshot": safety["name"] if safety else None}


def _uncaptured(content: Content, current: str) -> bool:
    """Files that differ from the current revision; an empty context never captured has none."""
    return content.revision != current and bool(current or content.files)


def _claimed_staging(home: Path, prefix: str) -> tuple[Path, int]:
    """A new staging directory and the descriptor holding its lock. Another pull's clearing
    may take a directory in the instant before its lock is held: then another is made."""
    while True:
        path = Path(tempfile.mkdtemp(dir=home, prefix=prefix))
        try:
            held = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        fcntl.flock(held, fcntl.LOCK_EX)
        if os.fstat(held).st_nlink > 0:  # still there: not deleted while it was being locked
            return path, held
        os.close(held)


def _clear_abandoned(home: Path, own: Path) -> None:
    """Delete the stagings whose pull is gone (no lock held on them)."""
    for path in home.glob(f"{INCOMING}*"):
        if path == own or path.is_symlink() or not path.is_dir():
            continue
        try:
            held = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # cleared by another pull meanwhile
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(held)
            continue  # in use
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(held)


class LocalStore:
    """The contexts under one home directory."""

    def __init__(self, home: Path) -> None:
        self.home = home

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> LocalStore:
        """``CS_CONTEXT_HOME`` (default ``~/.contexts``), ``~`` expanded."""
        return cls(Path(environ.get("CS_CONTEXT_HOME") or DEFAULT_HOME).expanduser().absolute())

    def create(self, name: str, type: str) -> LocalContext:
        """A new context of ``type``; a directory already holding files may become one."""
        if not is_context_name(name):
            raise LocalStoreError(NAME_MESSAGE)
        if type not in TYPES:
            raise LocalStoreError("type must be workspace, state, memory, knowledge, or "
                                  "artifacts")
        root = self.home / name
        for portable in PORTABLE_ROOTS:  # empty directories never count in a revision id
            (root / portable).mkdir(parents=True, exist_ok=True)
        document = {"name": name, "type": type, "createdAt": history.now_text()}
        if not create_exclusive(root / METADATA / "context.json", json_bytes(document)):
            raise LocalStoreError(f"local context already exists: {name}")
        context = LocalContext(name, type, root)
        context.lock_file()  # made now, so a reader never has to make it
        return context

    def exists(self, name: str) -> bool:
        return is_context_name(name) and (self.home / name / METADATA / "context.json").is_file()

    @contextlib.contextmanager
    def staging(self, name: str) -> Iterator[Path]:
        """A scratch directory inside the home for files on their way into the context ``name``
        (the same file system, so they move in by renames), deleted afterwards. Its name starts
        with a dot: never a context. It is locked while in use, so that the staging a killed
        pull left (a whole bundle, perhaps) is found unlocked and deleted by the next one."""
        if not is_context_name(name):
            raise LocalStoreError(NAME_MESSAGE)
        self.home.mkdir(parents=True, exist_ok=True)
        path, held = _claimed_staging(self.home, f"{INCOMING}{name}-")
        try:
            _clear_abandoned(self.home, path)
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
            os.close(held)

    def open(self, name: str) -> LocalContext:
        path = self.home / name / METADATA / "context.json"
        if not is_context_name(name) or not path.is_file():
            raise LocalStoreError(f"local context not found: {name}")
        try:
            document = json.loads(path.read_bytes())
            type_ = str(document["type"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LocalStoreError(f"{path} is not a context description: {exc}") from None
        context = LocalContext(name, type_, self.home / name)
        context.recover()
        return context

    def contexts(self) -> list[LocalContext]:
        """Every context under the home, by name."""
        if not self.home.is_dir():
            return []
        names = sorted(p.name for p in self.home.iterdir()
                       if is_context_name(p.name) and (p / METADATA / "context.json").is_file())
        return [self.open(name) for name in names]
