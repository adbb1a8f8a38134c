"""The value rules of the API as JSON Schema, for documentation: what the service enforces and
writes, so a client or a fuzzer reading the document sends values the service accepts. Values
whose full rule no regular expression states (sizes, durations) are documented by a pattern
every value of which is valid; dates are the exception (``DATE``): every day 01-31 of every month,
so that a client checking a value against the document never refuses a month's end, and a date
that does not exist is the route's 400.

Each rule is a schema (``NAME``) and an annotated type for contract Structs (``Name``), whose
bounds decoding does not enforce: the routes check them in the specification's order.
"""

from __future__ import annotations

from typing import Annotated, Any

from context_service.contract.base import doc

Schema = dict[str, Any]

NAME: Schema = {"type": "string", "maxLength": 50, "pattern": "^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$"}
LABEL: Schema = {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$"}
SUBDOMAIN: Schema = {"type": "string", "maxLength": 253, "pattern":
                     "^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$"}
SIZE: Schema = {"type": "string", "pattern": "^[1-9][0-9]{0,3}(?:Ki|Mi|Gi|Ti)?$",
                "description": "a positive Kubernetes quantity"}
DURATION: Schema = {"type": "string", "pattern": "^(?:0|[1-9][0-9]{0,3}(?:h|m|s|ms))$",
                    "description": "a non-negative duration (Go syntax, no day unit)"}
DIGEST: Schema = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
# Strings never hold U+0000 (PostgreSQL text cannot store it; the service refuses it).
FREE: Schema = {"type": "string", "pattern": "^[^\\u0000]*$"}
# Python's white space (what ``str.strip`` removes) spelled out, as a regex engine's ``\s`` may
# leave out U+001C-U+001F and U+0085
SPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
TEXT: Schema = {"type": "string",  # not blank
                "pattern": f"^[^\\u0000]*[^\\u0000{SPACE}][^\\u0000]*$"}
# The calendar as a pattern states it: every day 01-31 of every month of years 0001-9999. A date
# that does not exist (February 30th, April 31st, February 29th of a common year) is the route's
# to refuse (400): a client or an agent framework checking a value against the schema must not
# refuse a month's last days, as a cap at the 28th did.
DAY = "(?:0[1-9]|[12][0-9]|3[01])"
YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"  # not 0000
DATE = f"{YEAR}-(?:0[1-9]|1[0-2])-{DAY}"
CLOCK = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
OFFSET = "[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]"  # RFC 3339's, under a day as Python reads it
# A request's time (spec 1.1.2) as the routes parse it: RFC 3339 with a zone, ``T`` and ``Z`` in
# either case, any number of fraction digits (those past microseconds truncated), at most 64
# characters (``domain.values.MAX_TIMESTAMP``). Beyond the calendar, no pattern states an
# instant that an offset moves before year 1 or past 9999: also the route's 400.
TIMESTAMP: Schema = {"type": "string", "maxLength": 64,
                     "pattern": f"^{DATE}[Tt]{CLOCK}(?:\\.[0-9]+)?(?:[Zz]|{OFFSET})$"}
INT64: Schema = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}
POSITION: Schema = {"type": "string", "pattern": "^[0-9]{1,18}$"}
PERMISSION: Schema = {"type": "string",
                      "enum": ["read", "write", "attach", "derive", "administer"]}
KIND: Schema = {"type": "string", "enum": ["user", "agent", "workload", "service"]}
SUBJECT_VALUE: Schema = {"type": "string",
                          "pattern": "^(?:user|agent|workload|service):[!-~]{1,64}$"}


Name = Annotated[str, doc(**NAME)]
Label = Annotated[str, doc(**LABEL)]
Subdomain = Annotated[str, doc(**SUBDOMAIN)]
Size = Annotated[str, doc(**SIZE)]
Duration = Annotated[str, doc(**DURATION)]
Digest = Annotated[str, doc(**DIGEST)]
Free = Annotated[str, doc(**FREE)]
Text = Annotated[str, doc(**TEXT)]
Timestamp = Annotated[str, doc(**TIMESTAMP)]
Int64 = Annotated[int, doc(minimum=-(2**63), maximum=2**63 - 1)]
Permission = Annotated[str, doc(**PERMISSION)]
Kind = Annotated[str, doc(**KIND)]
Strings = dict[Free, Free]  # msgspec writes the key and value rules itself
Stamp = Annotated[str, doc(format="date-time")]  # an answer's time, RFC 3339 in UTC
