"""A client bound to a namespace of the test's own: in a module sharing one service, the
namespace keeps what a test creates, lists and counts apart from every other test's."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api, context_body
from tests.support.api_helpers import fresh


class Namespaced(Api):
    """``Api`` whose tests speak about ``ns``, a namespace no other test of the run names."""

    def __init__(self, client: Any, ns: str) -> None:
        super().__init__(client)
        self.ns = ns

    def as_(self, subject: str | None) -> Namespaced:
        other = Namespaced(self.client, self.ns)
        other.subject = subject
        return other

    @property
    def contexts(self) -> str:
        """The path of the namespace's context list."""
        return f"/v1/namespaces/{self.ns}/contexts"

    @property
    def context(self) -> str:
        """The path of the namespace's ``research-memory``, the specification's example."""
        return self.contexts + "/research-memory"

    def context_body(self, **fields: Any) -> dict[str, Any]:
        """``context_body`` of a context in ``ns``."""
        return context_body(namespace=self.ns, **fields)


def namespaced(api: Api, prefix: str = "team") -> Namespaced:
    """``api``'s client, as ``api``'s subject, over a fresh namespace named after ``prefix``."""
    bound = Namespaced(api.client, fresh(prefix))
    bound.subject = api.subject
    return bound
