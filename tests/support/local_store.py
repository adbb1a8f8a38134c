"""What the local store's tests share: writing a file into a context."""

from __future__ import annotations

from context_service.contextctl.local import LocalContext


def write(context: LocalContext, relative: str, data: bytes) -> None:
    path = context.root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
