"""What a statement's parse tree calls (issue 24): the OIDs of every function, operator and type
named in PostgreSQL's text form of the analysed query (``debug_print_parse``).

The tree comes from the server after name resolution, so schema prefixes, quoting and overloads
are already resolved to OIDs; constants appear as raw bytes and names as escaped tokens, so no
text of the statement can pose as a field. A name that happens to read like a field only adds a
candidate to check, never hides one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

# fields holding a function's OID (``opfuncid`` and friends are 0 before planning, but counted)
FUNCTION_FIELDS = frozenset({
    ":funcid", ":aggfnoid", ":winfnoid", ":opfuncid", ":hashfuncid", ":negfuncid",
    ":startInRangeFunc", ":endInRangeFunc", ":tsmhandler"})
# fields holding an operator's OID (its function is ``pg_operator.oprcode``)
OPERATOR_FIELDS = frozenset({":opno", ":eqop", ":sortop", ":opnos"})
_SPACE = " \t\n\r"
_SINGLE = "(){}"


@dataclass
class Calls:
    functions: set[int] = field(default_factory=set)
    operators: set[int] = field(default_factory=set)
    types: set[int] = field(default_factory=set)


def tokens(text: str) -> Iterator[tuple[str, bool]]:
    """The tokens of a node string as ``pg_strtok`` reads them: ``(){}`` alone, anything else
    up to white space or one of them, a backslash taking the next character literally. Each
    with whether it was escaped (an escaped token is a name, never a field)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
            continue
        if c in _SINGLE:
            yield c, False
            i += 1
            continue
        out: list[str] = []
        escaped = False
        while i < n and text[i] not in _SPACE and text[i] not in _SINGLE:
            if text[i] == "\\" and i + 1 < n:
                out.append(text[i + 1])
                escaped = True
                i += 2
            else:
                out.append(text[i])
                i += 1
        yield "".join(out), escaped


def _is_type_field(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith(":") and ("type" in lowered or lowered.endswith("typid"))


def calls(tree: str) -> Calls:
    """Every function, operator and type OID the tree names."""
    found = Calls()
    stream = list(tokens(tree))
    for i, (token, escaped) in enumerate(stream):
        if escaped or not token.startswith(":"):
            continue
        if token in FUNCTION_FIELDS:
            target = found.functions
        elif token in OPERATOR_FIELDS:
            target = found.operators
        elif _is_type_field(token):
            target = found.types
        else:
            continue
        target.update(_oids(stream, i + 1))
    found.functions.discard(0)
    found.operators.discard(0)
    found.types.discard(0)
    return found


def _oids(stream: list[tuple[str, bool]], at: int) -> list[int]:
    """The OID after a field: one integer, or an OID list ``(o 1 2)``."""
    if at >= len(stream):
        return []
    token, _ = stream[at]
    if token.isdigit():
        return [int(token)]
    if token != "(" or at + 1 >= len(stream) or stream[at + 1][0] != "o":
        return []
    out = []
    for value, _ in stream[at + 2:]:
        if not value.isdigit():
            break
        out.append(int(value))
    return out
