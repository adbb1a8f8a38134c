"""The contract Structs against the real routes: every agent answer decodes strictly into its
answer Struct and encodes back to the same JSON (no key lost, none invented), the stream's lines
decode into ``PackLine``, errors into ``ErrorBody``; and each route decodes its body with the
request Struct its tool and the client send. One service and one seeded workspace for the module:
its tests only read the workspace (a pack or replay they release is their own)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from litestar import Litestar

from context_service.contract import agent as c
from context_service.contract import tools as catalogue
from tests.api.agent.packs_corpus import TASK, pack_body
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import (
    Workspace,
)
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture
from tests.api.agent_mcp.test_mcp_tools import CALLS

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
AGENT = "/api/agent/v1"


def _same(body: bytes, answer_type: Any) -> Any:
    decoded = msgspec.json.decode(body, type=answer_type, strict=True)
    assert msgspec.to_builtins(decoded) == msgspec.json.decode(body), answer_type
    return decoded


def _post(workspace: Workspace, path: str, body: dict[str, Any]) -> Any:
    resp = workspace.api.as_(None).post(AGENT + path, body, headers={
        "Authorization": f"Bearer {workspace.runner}"})
    return resp


def test_every_answer_decodes_into_its_struct(workspace: Workspace) -> None:
    for name, (path, body) in CALLS.items():
        resp = _post(workspace, path, body)
        assert resp.status_code == 200, resp.text
        _same(resp.content, catalogue.BY_NAME[name].answer)
    pack = _post(workspace, "/context-packs", pack_body())
    decoded = _same(pack.content, c.ContextPack)
    assert decoded.items and decoded.items[0].trust == "untrusted"
    lines = _post(workspace, "/context-packs/stream", pack_body()).content.splitlines()
    parsed = [_same(line, c.PackLine) for line in lines]
    assert [type(p) for p in parsed] == [c.HeaderLine, *[c.ItemLine] * len(decoded.items),
                                         c.FooterLine]
    replay = f"/replays/{decoded.replay_id}"
    verified = _same(_post(workspace, replay, {"mode": "verify"}).content, c.Replay)
    assert isinstance(verified, c.Verification) and verified.matches
    recomputed = _same(_post(workspace, replay, {"mode": "recompute", "task": TASK}).content,
                       c.Replay)
    assert isinstance(recomputed, c.Recomputation)
    error = _post(workspace, "/context-packs", {})
    assert error.status_code == 400
    assert _same(error.content, c.ErrorBody).code == "VALIDATION_ERROR"


def test_the_routes_decode_the_request_structs(mcp_app: Litestar) -> None:
    bodies = {path: handler.opt["body"] for route in mcp_app.routes
              for handler in getattr(route, "route_handlers", [])
              for path in handler.paths if handler.opt.get("body") is not None}
    for tool in catalogue.TOOLS:
        route = bodies[tool.path.replace("{replayId}", "{replayId:str}")]
        # a replay's tool adds the replay id (the route's path) to the route's body
        assert tool.request is route or issubclass(tool.request, route), tool.name
    assert bodies[AGENT + "/context-packs/stream"] is c.PackRequest
