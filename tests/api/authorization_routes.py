"""The route families of the authorization matrix: every documented path belongs to exactly one,
and each family is covered by its own rules, so a route registered later is covered by the
rules of its family, and a route of no family fails the matrix."""

from __future__ import annotations

from typing import Any

# path prefix -> family (the longest prefix wins)
FAMILIES = {
    # one named context: test_authorization_matrix.py
    "/v1/namespaces/{namespace}/contexts/{name}": "context",
    # a list or search judging each context on its own: the hidden one is left out
    "/v1/namespaces/{namespace}/contexts": "listed",
    "/v1/namespaces/{namespace}/query": "listed",
    "/v1/workspaces": "listed",
    # workspace administration (test_authorization_workspaces.py)
    "/v1/namespaces/{namespace}/members": "workspace",
    "/v1/namespaces/{namespace}/context-sets": "workspace",
    "/v1/namespaces/{namespace}/query-templates": "workspace",
    "/api/w/{wsId}": "workspace-api",
    # bearer credentials: a workspace's credential sees only that workspace
    "/api/agent/v1": "agent",
    # the agent API's tools over MCP, outside the document (test_authorization_matrix.py)
    "/mcp": "mcp",
    "/.well-known/oauth-protected-resource": "open",
    # nothing of a namespace, or a create whose name conflict the spec states (409)
    "/v1/contexts": "open",
    "/v1/sandbox-pools": "open",
    "/v1/storage-classes": "open",
    "/healthz": "open",
    "/readyz": "open",
}


def family(path: str) -> str | None:
    found = [prefix for prefix in FAMILIES if path == prefix or path.startswith(prefix + "/")]
    return FAMILIES[max(found, key=len)] if found else None


def routes_of(document: dict[str, Any], wanted: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every documented operation of one family."""
    return [(method.upper(), path, op) for path, ops in document["paths"].items()
            for method, op in ops.items() if family(path) == wanted]


def leaked(response: Any, secrets: tuple[str, ...]) -> list[str]:
    """The secrets a response's body or headers show."""
    shown = response.text + " ".join(f"{k}: {v}" for k, v in response.headers.items())
    return [s for s in secrets if s in shown]
