"""Numbers beyond a double in /v1 bodies (spec 1.1.3 rule 6; agent api 5.1 check 8, 11.2): any
JSON number decodes, and the field that takes it says whether it may. A studied ``number`` is a
finite double, so ``1e400`` answers that field's own message, after the checks before it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.test_query import create, digest, invalid, publish_revision, put_index

# one service for the module: every test's contexts live in a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
NAME = "facts"
REV = digest(NAME)
MISMATCH = 'field "amount" has a value that does not match its type'


@pytest.fixture
def facts(api: Api) -> Namespaced:
    """A knowledge context with a current revision, in a namespace of the test's own."""
    own = namespaced(api)
    create(own, NAME, "knowledge")
    publish_revision(own, NAME, REV)
    return own


def index_with(value: str, **record: Any) -> bytes:
    """The index body of one record whose ``amount`` field holds ``value`` as written."""
    body = {"revision": REV, "records": [{
        "id": "r1", "context": NAME, "type": "knowledge", "revision": REV,
        "text": "Invoice 7 totals a lot", "fields": [
            {"name": "amount", "type": "number", "value": "VALUE"}], **record}]}
    return json.dumps(body).replace('"VALUE"', value).encode()


@pytest.mark.parametrize("value", ["1e400", "-1E+400", "1" + "0" * 400 + ".5"])
def test_a_number_field_beyond_a_double_answers_its_type_mismatch(
        facts: Namespaced, value: str) -> None:
    resp = put_index(facts, NAME, None, raw=index_with(value))
    assert resp.status_code == 400, resp.text
    assert resp.json() == invalid(MISMATCH)


def test_checks_before_the_field_check_still_answer_first(facts: Namespaced) -> None:
    """Check 7 (factKey) comes before check 8: the big number does not jump the order."""
    resp = put_index(facts, NAME, None, raw=index_with("1e400", factKey=" "))
    assert resp.status_code == 400, resp.text
    assert resp.json() == invalid("query record factKey must be 1 to 200 characters")


def test_a_number_field_within_a_double_is_published_as_before(facts: Namespaced) -> None:
    resp = put_index(facts, NAME, None, raw=index_with("1e300"))
    assert resp.status_code == 204, resp.text
