"""Edges of the query index and the /v1 query route (spec 1.7, 2.4, 5): tokens of any length,
and a query's terms as the search tables key them."""

from __future__ import annotations

import random
import string

import pytest

from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.query.index import MAX_TERM_BYTES, layout, term_key
from context_service.domain.query.request import QueryInput, plan
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.test_query import hits, indexed, query

# one service for the module: every test queries a namespace of its own (``api.ns``)
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


def _word(length: int, seed: int = 1, alphabet: str = string.ascii_lowercase + string.digits,
          ) -> str:
    """One token of ``length`` characters that does not compress (a hash, a blob)."""
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(length))


def test_a_token_of_any_length_is_indexed_and_found(api: Namespaced) -> None:
    """A record whose text holds one very long token (base64 of an attachment, a minified line)
    is indexed like any other: it neither stops the index (every query answering 503) nor
    hides the other records, and the token itself finds it."""
    long_ascii, long_greek = _word(3000), _word(1200, 2, "αβγδεζηθικλμνξοπρστυφχψω")
    edge = _word(MAX_TERM_BYTES, 3)  # the longest term kept as itself
    indexed(api, "notes", [("a", f"alpha {long_ascii}"), ("b", f"alpha beta {long_greek}"),
                           ("c", f"gamma {edge}")])
    assert hits(query(api, {"query": "alpha"})) == [(1, "notes", "a"), (1, "notes", "b")]
    assert hits(query(api, {"query": long_ascii.upper()})) == [(1, "notes", "a")]
    assert hits(query(api, {"query": f"{long_greek} {long_greek} beta"})) == [(3, "notes", "b")]
    assert hits(query(api, {"query": long_ascii[:-1]})) == []  # still whole tokens only
    assert hits(query(api, {"query": f"gamma {edge}"})) == [(2, "notes", "c")]


def test_terms_are_keyed_alike_in_the_index_and_the_query() -> None:
    short, edge, long_ = "release", "é" * (MAX_TERM_BYTES // 2), _word(MAX_TERM_BYTES + 1)
    assert term_key(short) == short and term_key(edge) == edge
    key = term_key(long_)
    assert key != long_ and len(key.encode()) <= 100 and key == term_key(long_)
    assert term_key(long_[:-1] + "z") != key
    assert not any(c.isalnum() for c in key[:1])  # no token can be another term's key
    source = SourceRef("", "", "")
    index = layout([QueryRecord(id="a", context="c", type="memory", revision="r", title=long_,
                                text=f"release {long_}", source=source)])
    assert index.postings == {short: [0, 1], key: [0, 4]} and index.max_weight == 4
    planned = plan(QueryInput(query=f"{long_} Release {long_}"))
    assert planned.terms == tuple(sorted([(key, 2), (short, 1)]))
