"""A template run the database refuses answers ``query template failed: <primary message>``
(agent-context-api.md §11.4), and a primary message can quote a value the caller sent: a text
parameter cast to a number, ``invalid input syntax for type integer: "<value>"``. Decision
0059 cuts a caller's value in every agent API message; this one quoted it whole, so an answer
was as large as the parameter (up to the body, 1 MiB)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.agent.templates_support import approve, register, registered, runner
from tests.api.agent.templates_support import run as run_template
from tests.api.conftest import Api
from tests.security.template_runs import corpus as corpus  # the fixture
from tests.security.template_runs import module_settings as module_settings  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
ECHO = 64  # decision 0059: code points of a caller's value kept in a message


@pytest.fixture(scope="module")
def cast(corpus: Api) -> Iterator[Api]:
    """A template casting its text parameter to an integer."""
    registered(corpus, "cast", "SELECT :v::int AS n",
               [{"name": "v", "type": "text", "required": True}])
    approve(corpus, ["cast"], set_id="cast")
    yield corpus


def test_a_value_the_database_quotes_back_is_cut(cast: Api) -> None:
    value = "x" * 100_000
    resp = run_template(runner(cast), "cast", {"v": value}, set_id="cast")
    assert resp.status_code == 400, resp.text[:300]
    body = resp.json()
    assert body["code"] == "AGENT_QUERY_FAILED"
    assert body["details"] == {"sqlstate": "22P02"}
    message: str = body["message"]
    assert message.startswith("query template failed: invalid input syntax for type integer"), \
        message[:300]
    assert "x" * ECHO in message  # the value is still named, by its start
    assert len(resp.content) < 1024, len(resp.content)


def test_a_short_primary_message_is_answered_whole(cast: Api) -> None:
    resp = run_template(runner(cast), "cast", {"v": "twelve"}, set_id="cast")
    assert resp.status_code == 400, resp.text[:300]
    assert resp.json()["message"] == (
        'query template failed: invalid input syntax for type integer: "twelve"')


def test_a_literal_the_database_quotes_back_at_registration_is_cut(corpus: Api) -> None:
    """Registration's check runs the statement's analysis in the database (check 9), whose
    refusal is the primary message too: a literal of the SQL (up to 20,000 characters) came
    back whole."""
    resp = register(corpus, "literal", "SELECT '" + "y" * 19_000 + "'::int AS n")
    assert 400 <= resp.status_code < 500, resp.text[:300]
    message: str = resp.json()["message"]
    assert "invalid input syntax for type integer" in message, message[:300]
    assert "y" * ECHO in message
    assert len(resp.content) < 1024, len(resp.content)
