"""Regular expressions over a caller's text cost time linear in it, at their worst input too.

Two patterns were tried at every place a match could start and read the same run to its end
from each, so a text of n characters cost n times n:

- the JSON web token shape of the sandbox profile's literal-secret check: "eyJ" may start after
  any "-" of a base64url run, and "eyJ-eyJ-eyJ-..." read the run again from every "eyJ". A
  template is as large as the API server allows (about 1.5 MiB): 16,000 characters cost 25 ms
  and 1 MiB would cost minutes, in the request handler;
- the URL user-information shape of the log's redaction: a scheme may start after any "." or
  "-" of a run, and "a.a.a..." or "a://a://..." read the run (or the rest of the line) again
  from each. A failed request's log line quotes its path (up to the 64 KiB head): 16,000
  characters cost 470 ms on the event loop, 64 KiB several seconds.

Each is measured as growth: four times the text must cost about four times as much (it cost
about sixteen times). The rewritten patterns must also find what the old ones found."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from context_service.domain.pool.secrets import key_shape, literal_secret
from context_service.logs import _URL_USERINFO, HIDDEN, Redactor
from tests.support.cpu_cost import least_cpu

SMALL = 4_000  # characters; the large text is four times as long
LINEAR_BOUND = 8  # linear work grows about 4 times, the quadratic patterns about 16 times


def growth(work: Callable[[str], object], text: Callable[[int], str]) -> float:
    """What four times the text costs over what the text costs."""
    small, large = text(SMALL), text(4 * SMALL)
    return least_cpu(lambda: work(large)) / least_cpu(lambda: work(small))


def repeated(unit: str, prefix: str = "") -> Callable[[int], str]:
    return lambda length: prefix + unit * (length // len(unit))


def profile(text: str) -> dict[str, object]:
    """A SandboxTemplate spec with ``text`` as a container's argument."""
    return {"podTemplate": {"spec": {"containers": [{"name": "agent", "args": [text]}]}}}


# the run in a token's first part, or in its second
@pytest.mark.parametrize("prefix", ["x ", "eyJhbGciOiJI."])
def test_a_profile_of_token_like_runs_costs_time_linear_in_its_length(prefix: str) -> None:
    assert literal_secret(profile(prefix + "eyJ-" * 1000)) is None
    ratio = growth(lambda text: literal_secret(profile(text)), repeated("eyJ-", prefix))
    assert ratio < LINEAR_BOUND, f"four times the profile's text cost {ratio:.1f} times as much"


@pytest.mark.parametrize("unit", ["a.", "a://"])
def test_a_log_line_of_url_like_runs_costs_time_linear_in_its_length(unit: str) -> None:
    redact = Redactor()
    ratio = growth(redact, repeated(unit, "request failed GET /v1/"))
    assert ratio < LINEAR_BOUND, f"four times the log line cost {ratio:.1f} times as much"


@pytest.mark.parametrize("text", [
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "--token=prefix-eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N",
    "eyJ-short-eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N",
    "eyJ-eyJ-eyJ-eyJ-eyJ- then eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3",
])
def test_a_json_web_token_is_still_found_wherever_its_run_starts(text: str) -> None:
    assert key_shape(text) == "a JSON web token"


@pytest.mark.parametrize("text", [
    "xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3",  # no word boundary before it
    "eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-eyJ-",
])
def test_what_is_no_json_web_token_stays_none(text: str) -> None:
    assert key_shape(text) is None


@pytest.mark.parametrize(("line", "shown"), [
    ("postgresql://app:s3cret@db:5432/x", f"postgresql://{HIDDEN}@db:5432/x"),
    ("GET /v1/a.b.c failed: nats://u:p@n:4222", f"GET /v1/a.b.c failed: nats://{HIDDEN}@n:4222"),
    ("x-https://a:b@c and _http://d:e@f", f"x-https://{HIDDEN}@c and _http://d:e@f"),
    ("git+ssh://git@host/repo a.a.a://u:p@h", f"git+ssh://{HIDDEN}@host/repo a.a.a://{HIDDEN}@h"),
])
def test_the_user_information_of_a_url_is_still_hidden(line: str, shown: str) -> None:
    assert Redactor()(line) == shown


# what the log's URL shape was before it was rewritten: it hid the right text, slowly
_QUADRATIC_URL = re.compile(r"""\b([a-z][a-z0-9+.-]*://)[^\s'"\\@/]*(?:/[^\s'"\\@/]*)*@""", re.I)


def test_the_log_hides_what_the_quadratic_url_shape_hid() -> None:
    pieces = ["a", "B", "0", ".", "+", "-", "_", ":", "/", "://", "@", " ", "'", '"', "\\", "é",
              "http", "\n", "\u017f"]
    draw = random.Random(20261207)
    hidden = 0
    for _ in range(20_000):
        line = "".join(draw.choice(pieces) for _ in range(draw.randint(0, 24)))
        expected = _QUADRATIC_URL.sub(rf"\g<1>{HIDDEN}@", line)
        hidden += expected != line
        assert _URL_USERINFO.sub(rf"\g<1>{HIDDEN}@", line) == expected, line
    assert hidden > 100  # the sample holds URLs with user information
