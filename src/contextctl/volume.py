"""``ctx sync push --to DIR``: a local context's portable roots copied to the directory where the
named context's volume is mounted. Each root is copied beside its place and swapped in by two
renames (a reader of the volume sees a root's old or its new files, never a half copy), what a
push killed midway left is put right by the next one, and the copy is addressed again (§4.2):
it must hold the revision being pushed."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from context_service.contextctl.client import CommandError
from context_service.contextctl.local import (
    PORTABLE_ROOTS,
    LocalContext,
    LocalStoreError,
    content_of,
)


def mirror(local: LocalContext, destination: Path, revision: str) -> None:
    """Makes the portable roots under ``destination`` exactly the local context's. Each root is
    copied beside its place first and then swapped in by two renames, so a reader of the volume
    sees a root's old or its new files, never a half copy; what lies outside the roots is left
    alone. The copy is then addressed again (§4.2) and must give the pushed revision."""
    if not destination.is_dir():
        raise CommandError(f"{destination} is not a directory: mount the context's volume there "
                           "first")
    _refuse_overlap(local, destination)
    token = secrets.token_hex(4)
    try:
        _recover(destination)
        for root in PORTABLE_ROOTS:
            _swap_in(local.root / root, destination, root, token)
    except OSError as exc:
        raise CommandError(f"the copy to {destination} failed: {_reason(exc)}") from exc
    try:
        copied = content_of(destination, local.type).revision
    except LocalStoreError as exc:
        raise CommandError(f"the copy at {destination} cannot be addressed: {exc}") from exc
    if copied != revision:
        raise CommandError(f"the copy at {destination} has revision {copied[:12]}, not "
                           f"{revision[:12]}: a file changed while it was copied; push again")


def _refuse_overlap(local: LocalContext, destination: Path) -> None:
    """The volume's roots are replaced whole: a destination inside the local context would
    change the files being pushed, and a local context inside one of the destination's roots
    (a context named ``memory`` pushed to its own home) would be moved aside and deleted."""
    context, target = local.root.resolve(), destination.resolve()
    replaced = [target / root for root in PORTABLE_ROOTS]
    if _within(target, context) or any(_within(context, root) for root in replaced):
        raise CommandError(f"{destination} overlaps the local context {local.name} "
                           f"({local.root}): push to the directory where the volume is mounted")


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _swap_in(source: Path, destination: Path, root: str, token: str) -> None:
    target = destination / root
    incoming = destination / f".{root}.incoming-{token}"
    outgoing = destination / f".{root}.outgoing-{token}"
    try:
        if source.is_dir():
            shutil.copytree(source, incoming, symlinks=True)
        if os.path.lexists(target):
            os.rename(target, outgoing)
        if incoming.exists():
            os.rename(incoming, target)
    finally:
        _remove(incoming)
        _remove(outgoing)


def _recover(destination: Path) -> None:
    """What a push killed midway left on the volume (one context's pusher a volume): a root
    moved aside and not yet replaced goes back in place, and the copies beside the roots are
    deleted."""
    for root in PORTABLE_ROOTS:
        aside = sorted(destination.glob(f".{root}.outgoing-*"))
        if aside and not os.path.lexists(destination / root):
            os.rename(aside[0], destination / root)
        for leftover in [*destination.glob(f".{root}.outgoing-*"),
                         *destination.glob(f".{root}.incoming-*")]:
            _remove(leftover)


def _remove(path: Path) -> None:
    """Deletes what a volume root was: a directory's files, but a link itself (never what it
    points to) and a stray file too, so nothing is left beside the roots."""
    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
