"""``contextctl``'s local filesystem store of contexts (spec 7.3): revision ids of the files as
they are (spec 4.2), query records (spec 5.5), local queries (spec 5.2), snapshots and in-place
restore (spec 6.6)."""

from __future__ import annotations

from context_service.contextctl.local.content import PORTABLE_ROOTS, Content, content_of
from context_service.contextctl.local.errors import LocalStoreError
from context_service.contextctl.local.search import search
from context_service.contextctl.local.store import LocalContext, LocalStore

__all__ = ["PORTABLE_ROOTS", "Content", "LocalContext", "LocalStore", "LocalStoreError",
           "content_of", "search"]
