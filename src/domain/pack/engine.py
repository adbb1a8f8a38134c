"""Assembling a pack (§7.4-§7.10): ranked lists under the latency deadline, deduplication,
graph facts, set-first packing within the budget, the release check and completeness.

Pure: the clock arrives as ``deadline_passed``, the tokenizer as a ``TokenCount``, the vector
scan as the ``Retrieval`` port, access now as ``readable_now``."""

from __future__ import annotations

from collections.abc import Callable

from context_service.domain.pack.items import Pack
from context_service.domain.pack.model import Corpus, Retrieval, TokenCount
from context_service.domain.pack.request import AsOf, PackRequest
from context_service.domain.pack.scope import PackScope, Readable


def assemble(request: PackRequest, as_of: AsOf, scope: PackScope, corpus: Corpus,
             retrieval: Retrieval, count_tokens: TokenCount, readable_now: Readable,
             deadline_passed: Callable[[], bool]) -> Pack:
    """The pack of ``request`` at ``as_of`` (§7.2 steps 10-12).

    ``scope`` comes from ``pack_scope`` (its ``not_found`` already answered by the route);
    ``corpus`` holds the usable indexes of ``scope.usable`` by collection name. The release
    check reads ``readable_now`` again at the end, so call it with access as of release.
    Items carry their hashes; ``Pack.refused`` says when ``require_complete`` must answer 422."""
    raise NotImplementedError
