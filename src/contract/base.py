"""The bases of every request and answer Struct of the HTTP contract, and documentation-only
bounds.

A request is decoded with its Struct; the route then checks the required keys (``REQUIRED``)
and every documented bound in the specification's order, with its messages. The bounds are
therefore only documented (``doc``): decoding enforces the JSON types and nothing more.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec


class Request(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True,
              forbid_unknown_fields=True):
    """A request body, as the route decodes it: camelCase keys, none unknown; a field left
    ``None`` is not sent (``null`` and absent mean the same). ``REQUIRED`` names the keys the
    route requires: it checks them, and every bound, after decoding. ``EXTRA`` documents a rule
    across keys (``oneOf``, ``dependentRequired``) in the body's schema."""

    REQUIRED: ClassVar[tuple[str, ...]] = ()
    EXTRA: ClassVar[dict[str, Any]] = {}


class Answer(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """An answer body: camelCase keys; a key the service omits stays ``UNSET``. Open: a client
    decoding it accepts keys a later version adds."""


class Closed(Answer, kw_only=True, forbid_unknown_fields=True):
    """An answer whose keys are all listed (the document says ``additionalProperties: false``,
    so a conformance check catches a key the route writes and the contract does not name)."""


def doc(description: str = "", **schema: Any) -> msgspec.Meta:
    """A field's description and JSON-schema bounds, documented but not enforced by decoding:
    the route reports a violated bound with the specification's message."""
    if description:
        schema["description"] = description
    return msgspec.Meta(extra_json_schema=schema)


def one_of(*values: str, description: str = "") -> msgspec.Meta:
    return doc(description, enum=list(values))
