"""Request bodies as sent: typed for the OpenAPI document, decoded by the route itself.

A route declares ``data: Sent[Body]``; Litestar documents ``Body`` as the request body, but
hands the route the bytes as they came. The route decodes them (``data.decode()``) at its place
in the specification's order of checks, so a caller refused for its subject or a missing context
hears that before anything about its body, and every message stays the specification's.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Generic, TypeVar, get_args

from litestar.dto import AbstractDTO
from litestar.dto.data_structures import DTOFieldDefinition
from litestar.openapi.spec import Reference, Schema
from litestar.typing import FieldDefinition

from context_service.http.body import check_present, decode

T = TypeVar("T")


class Sent(Generic[T]):
    """The body of a request, undecoded; ``T`` is its contract."""

    __slots__ = ("raw", "shape")

    def __init__(self, raw: bytes, shape: type[T] | None) -> None:
        self.raw = raw
        self.shape = shape

    def decode(self, refuse_nul: bool = False) -> T:
        """The body as ``T`` (400 with the specification's message when it is not one)."""
        check_present(self.raw)
        assert self.shape is not None
        return decode(self.raw, self.shape, refuse_nul=refuse_nul)

    def present(self) -> bytes:
        """The bytes, once known to be a body within the limit."""
        check_present(self.raw)
        return self.raw


NOTHING: Sent[Any] = Sent(b"", None)  # the default of ``data``: no body was sent


def shape_of(field: FieldDefinition) -> Any:
    """``T`` of a ``Sent[T]`` annotation (``Sent[T] | None`` too)."""
    for annotation in (field.annotation, *get_args(field.annotation)):
        args = get_args(annotation)
        if args and getattr(annotation, "__origin__", None) is Sent:
            return args[0]
    raise TypeError(f"not a Sent[...] annotation: {field.annotation!r}")


class SentBody(AbstractDTO[Any]):
    """The DTO of every ``data: Sent[T]``: passes the bytes through, documents ``T``."""

    @classmethod
    def generate_field_definitions(
            cls, model_type: type[Any]) -> Generator[DTOFieldDefinition, None, None]:
        yield from ()

    @classmethod
    def detect_nested_field(cls, field_definition: FieldDefinition) -> bool:
        return False

    @classmethod
    def create_for_field_definition(cls, field_definition: FieldDefinition, handler_id: str,
                                    backend_cls: Any = None) -> None:
        shape_of(field_definition)  # refuses any other annotation when the app is built

    @classmethod
    def create_openapi_schema(cls, field_definition: FieldDefinition, handler_id: str,
                              schema_creator: Any) -> Reference | Schema:
        found: Reference | Schema = schema_creator.for_field_definition(
            FieldDefinition.from_annotation(shape_of(field_definition)))
        return found

    def decode_bytes(self, value: bytes) -> Any:
        handler = self.asgi_connection.route_handler
        field = handler.parsed_fn_signature.parameters["data"]
        return Sent(value, shape_of(field))
