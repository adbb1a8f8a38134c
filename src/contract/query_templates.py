"""Query templates of a workspace (``/v1/namespaces/{namespace}/query-templates``,
agent-context-api.md §11.1, §11.2): the register and replace bodies with their field rules, and
the template as the routes render it (SQL included: only managers read it).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from msgspec import UNSET

from context_service.contract.base import Closed, Request, doc, one_of
from context_service.contract.values import CLOCK, DATE, FREE, INT64, OFFSET, TEXT, Label, Stamp

PARAMETER_TYPES = ("text", "integer", "number", "boolean", "date", "timestamp")
MAX_DESCRIPTION, MAX_SQL, MAX_PARAMETERS = 1000, 20000, 20

# the JSON form of a default, by parameter type, as registration reads it (spec 11.4): every
# calendar day (a date that does not exist is refused, 400); a timestamp's ``T`` may also be a
# space, its fraction has any number of digits and its offset is any under a day (a run binds
# the instant, also one an offset moves out of years 1-9999)
FORMS: dict[str, dict[str, Any]] = {
    "text": FREE, "integer": INT64, "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string", "pattern": f"^{DATE}$"},
    "timestamp": {"type": "string",
                  "pattern": f"^{DATE}[Tt ]{CLOCK}(?:\\.[0-9]+)?(?:[Zz]|{OFFSET})$"}}
_PARAMETER_NAME: dict[str, Any] = {"type": "string", "pattern": "^[a-z_][a-z0-9_]{0,62}$",
                                   "description": "distinct within the template"}


def _closed(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": {**required, **(optional or {})},
            "additionalProperties": False, "required": list(required)}


# --- requests ---------------------------------------------------------------------------------


class TemplateParameterRequest(Request, kw_only=True):
    """A declared parameter: required, or optional with or without a default of its type's
    form."""

    REQUIRED = ("name", "type")
    EXTRA = {"anyOf": [alternative for kind in PARAMETER_TYPES for alternative in (
        _closed({"name": _PARAMETER_NAME, "type": {"const": kind}},
                {"required": {"type": "boolean"}}),
        _closed({"name": _PARAMETER_NAME, "type": {"const": kind}, "default": FORMS[kind]},
                {"required": {"const": False}}))]}
    name: Annotated[str, doc(**_PARAMETER_NAME)] | None = None
    type: Annotated[str, one_of(*PARAMETER_TYPES)] | None = None
    required: bool | None = None
    default: Any = None


_DESCRIPTION = Annotated[str, doc(maxLength=MAX_DESCRIPTION,
                                  pattern=TEXT["pattern"])]
_SQL = Annotated[str, doc("one SELECT or WITH statement over the agent views, its :name "
                          "placeholders exactly the parameters (else 400)",
                          maxLength=MAX_SQL, pattern=TEXT["pattern"])]


class QueryTemplateRequest(Request, kw_only=True):
    """``POST /v1/namespaces/{namespace}/query-templates``: a new template."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("id", "description", "sql")
    id: Label | None = None
    description: _DESCRIPTION | None = None
    sql: _SQL | None = None
    parameters: Annotated[list[TemplateParameterRequest],
                          doc(maxItems=MAX_PARAMETERS)] | None = None
    max_rows: Annotated[int, doc(minimum=1, maximum=1000, default=100)] | None = None
    timeout_ms: Annotated[int, doc(minimum=100, maximum=10000, default=5000)] | None = None


class ReplaceQueryTemplateRequest(QueryTemplateRequest, kw_only=True):
    """``PUT .../query-templates/{id}``: the whole content; the id, when given, must equal the
    path's (else 400)."""

    REQUIRED = ("description", "sql")


# --- answers ----------------------------------------------------------------------------------


class QueryTemplateParameter(Closed, kw_only=True):
    name: str
    type: Annotated[str, one_of(*PARAMETER_TYPES)]
    required: bool
    default: Any = UNSET


class QueryTemplate(Closed, kw_only=True):
    """A template as a manager reads it, SQL included."""

    id: str
    description: str
    sql: str
    parameters: list[QueryTemplateParameter]
    max_rows: int
    timeout_ms: int
    status: Annotated[str, one_of("active", "retired")]
    version: Annotated[int, doc(minimum=1)]
    created_at: Stamp
    updated_at: Stamp


class QueryTemplateList(Closed, kw_only=True):
    items: Annotated[list[QueryTemplate], doc("every template of the namespace, both "
                                              "statuses, sorted by id")]
