"""JSON schemas of contract Structs, as the OpenAPI document and the MCP tools state them.

msgspec generates them; a request's keys are then shown as a caller should send them: never
``null`` (``null`` and absent mean the same), the ``REQUIRED`` ones required.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from context_service.contract.base import Request


def components(types: Iterable[Any], ref_template: str) -> dict[str, Any]:
    """The named definitions of ``types`` and of every Struct they hold, by Struct name."""
    wanted = list(types)
    _, defs = msgspec.json.schema_components(wanted, ref_template=ref_template)
    structs = {t.__name__: t for t in _structs(wanted)}
    return {name: as_sent(structs.get(name), definition) for name, definition in defs.items()}


def _structs(types: Iterable[Any]) -> Iterable[type]:
    """Every Struct class reachable from ``types`` (field types, unions, containers)."""
    seen: set[type] = set()
    todo = [msgspec.inspect.type_info(t) for t in types]
    while todo:
        info = todo.pop()
        if isinstance(info, msgspec.inspect.StructType):
            if info.cls in seen:
                continue
            seen.add(info.cls)
            todo.extend(f.type for f in info.fields)
        elif isinstance(info, msgspec.inspect.Metadata):
            todo.append(info.type)
        elif isinstance(info, msgspec.inspect.UnionType):
            todo.extend(info.types)
        elif isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.SetType,
                               msgspec.inspect.FrozenSetType, msgspec.inspect.VarTupleType)):
            todo.append(info.item_type)
        elif isinstance(info, msgspec.inspect.TupleType):
            todo.extend(info.item_types)
        elif isinstance(info, msgspec.inspect.DictType):
            todo.extend((info.key_type, info.value_type))
    return seen


def as_sent(struct: Any, definition: dict[str, Any]) -> dict[str, Any]:
    """A request Struct's definition with its keys as a caller sends them; any other as is."""
    if not (isinstance(struct, type) and issubclass(struct, Request)):
        return definition
    properties = {key: _not_null(value) for key, value in definition["properties"].items()}
    out = {**definition, "properties": properties}
    out.pop("required", None)
    if struct.REQUIRED:
        out["required"] = list(struct.REQUIRED)
    out.update(struct.EXTRA)
    return out


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, null]`` with a ``null`` default is ``X``: null and absent mean the same."""
    out = {k: v for k, v in prop.items() if not (k == "default" and v is None)}
    branches = out.pop("anyOf", None)
    if branches is None:
        return out
    kept = [b for b in branches if b != {"type": "null"}]
    if len(kept) == 1:
        return {**kept[0], **out}
    return {**out, "anyOf": kept}
