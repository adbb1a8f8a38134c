"""The one error of the local store."""

from __future__ import annotations

from context_service.contextctl.client import CommandError


class LocalStoreError(CommandError):
    """The local store refused or failed an operation; ``str()`` is shown to the user as is.

    A ``CommandError``, so that any command using the store (``local ...``, ``ctx sync push``)
    ends with contextctl's one-line error and exit code 1 without catching it itself."""


class FilesChanged(LocalStoreError):
    """The files are no longer the revision an operation sent or received (they are
    ``revision``): nothing was recorded."""

    def __init__(self, name: str, revision: str) -> None:
        super().__init__(f"the files of {name} changed meanwhile (now {revision[:12]}): nothing "
                         "was recorded")
        self.revision = revision
