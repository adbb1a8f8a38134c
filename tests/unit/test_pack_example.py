"""The worked example of agent-context-api §7.15 through pack-engine/2, byte for byte: the
response body (ids, item hashes, Merkle root), the canonical request, the stream, and the
example's variants (another valid time, the `finance` set, a 256-token budget). The
specification's body is engine 1's (``cfo-response.json``); engine 2's hybrid list ranks the
example's records by its own rules (docs/pack-engine.md), so its body is
``cfo-response-engine2.json``."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from context_service.domain.pack.engine import assemble
from context_service.domain.pack.items import Pack
from context_service.domain.pack.render import (
    pack_digest,
    pack_id,
    render,
    replay_id,
    stream_lines,
)
from context_service.domain.pack.request import AsOf, PackRequest, canonical_request
from context_service.domain.pack.scope import pack_scope
from tests.unit import pack_cfo as ex

GOLDEN = (Path(__file__).resolve().parent.parent / "golden" / "packs"
          / "cfo-response-engine2.json")
T = datetime(2025, 1, 1, tzinfo=UTC)
CANONICAL = (
    b'{"taskSha256":"d91fbb43537e4b195780a881c2402c631186992305ac6a3ce1751c96c9ca9401",'
    b'"budget":{"maxTokens":2000,"maxLatencyMs":15000,"coverage":"best_effort"},'
    b'"asOf":{"validTime":"2025-01-01T00:00:00Z","systemTime":"2025-06-12T09:30:00Z",'
    b'"position":1842},"filters":{"collectionIds":[],"documentIds":[],'
    b'"sources":["passages","graph","documents"]},"retrieval":"hybrid","contextSetId":"",'
    b'"contextSetVersion":0,"engineVersion":"pack-engine/2"}')


def expected_body() -> bytes:
    return "".join(line.strip() for line in GOLDEN.read_text().splitlines()).encode()


def pack(valid_time: datetime = T, **kw: Any) -> tuple[PackRequest, AsOf, Pack]:
    request = PackRequest(task=ex.TASK, max_tokens=kw.pop("max_tokens", 2000), **kw)
    active = ex.FINANCE if request.context_set_id else None
    scope = pack_scope(ex.namespace(), request, active, lambda c: True)
    as_of = AsOf(valid_time=valid_time, system_time=ex.SYSTEM_TIME, position=1842)
    built = assemble(request, as_of, scope, ex.corpus(), ex.retrieval(), ex.count_tokens,
                     lambda c: True, lambda: False)
    return request, as_of, built


def body_of(request: PackRequest, as_of: AsOf, built: Pack, set_version: int = 0) -> bytes:
    canonical = canonical_request(request, as_of, set_version)
    return render(built, replay_id(ex.CREDENTIAL, canonical, pack_digest(built)),
                  ex.EXPIRES_AT)


def items_of(built: Pack) -> list[tuple[str, str, int]]:
    return [(i.id, i.cls, i.tokens) for i in built.items]


def test_the_response_body_is_the_golden_body_byte_for_byte() -> None:
    request, as_of, built = pack()
    assert body_of(request, as_of, built) == expected_body()


def test_canonical_request_task_hash_and_ids() -> None:
    request, as_of, built = pack()
    canonical = canonical_request(request, as_of, 0)
    assert canonical == CANONICAL
    assert hashlib.sha256(ex.TASK.encode()).hexdigest() == json.loads(canonical)["taskSha256"]
    digest = pack_digest(built)
    assert pack_id(digest) == "pk_bbb9ebde96e7cdc0ed1c8b04c08202e6"
    assert replay_id(ex.CREDENTIAL, canonical, digest) == "rp_186d2d2c3567f3fcd294653860690d9d"
    assert built.merkle_root == ("sha256:b4d812b178897ce5e3fb95dee987fea3f22a02a7281cdbf07c732fb"
                                 "3c308b17d")


def test_another_credential_has_another_replay_id_and_the_same_pack_id() -> None:
    request, as_of, built = pack()
    canonical = canonical_request(request, as_of, 0)
    digest = pack_digest(built)
    assert replay_id("0000000000000000", canonical, digest) != replay_id(
        ex.CREDENTIAL, canonical, digest)


def test_the_same_inputs_give_identical_bytes() -> None:
    first = body_of(*pack())
    assert all(body_of(*pack()) == first for _ in range(3))


def test_the_stream_carries_the_same_pack() -> None:
    request, as_of, built = pack()
    canonical = canonical_request(request, as_of, 0)
    replay = replay_id(ex.CREDENTIAL, canonical, pack_digest(built))
    lines = stream_lines(built, replay, ex.EXPIRES_AT)
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)
    decoded = [json.loads(line) for line in lines]
    body = json.loads(expected_body())
    header, footer = decoded[0], decoded[-1]
    assert list(header) == ["type", "packId", "replayId", "asOf", "budget"]
    assert header == {"type": "header", "packId": body["packId"], "replayId": body["replayId"],
                      "asOf": body["asOf"],
                      "budget": {"maxTokens": 2000, "coverage": "best_effort"}}
    assert [d["item"] for d in decoded[1:-1]] == body["items"]
    assert all(list(d) == ["type", "item"] and d["type"] == "item" for d in decoded[1:-1])
    assert list(footer) == ["type", "usedTokens", "complete", "omitted", "missing", "receipt",
                            "expiresAt"]
    assert footer["usedTokens"] == 367 and footer["receipt"] == body["receipt"]
    assert footer["omitted"] == body["omitted"] and footer["expiresAt"] == body["expiresAt"]
    item_bytes = [line[len(b'{"type":"item","item":'):-2] for line in lines[1:-1]]
    assert b"[" + b",".join(item_bytes) + b"]" in expected_body()


def test_valid_time_april_2025_moves_the_answer() -> None:
    _, _, built = pack(datetime(2025, 4, 1, tzinfo=UTC))
    first = built.items[0]
    assert first.id == "psg:company-facts/cfo-2025"
    assert first.flags is not None and first.flags.validity.status == "valid"
    assert first.flags.contradicts == ("company-facts/org-chart-finance",)
    by_id = {i.id: i for i in built.items}
    chart = by_id["psg:company-facts/org-chart-finance"].flags
    assert chart is not None and chart.contradicts == ("company-facts/cfo-2025",)
    # cfo-2024 is superseded now (tier 1): the in-force newsletter copy is walked first and
    # keeps the text, absorbing it
    assert built.omitted.duplicate_ids == ("psg:company-facts/cfo-2024",)
    news = by_id["psg:company-facts/news-2024-07-a"]
    assert news.absorbed == ("psg:company-facts/cfo-2024",)
    assert built.complete and built.used_tokens <= 2000


def test_with_the_finance_set() -> None:
    request, as_of, built = pack(context_set_id="finance")
    assert items_of(built) == [
        ("set:finance/answer/current-cfo", "verified_answers", 45),
        ("set:finance/definition/CFO", "definitions", 37),
        ("set:finance/instruction/cite", "instructions", 27),
        ("psg:company-facts/cfo-2024", "required_evidence", 42),
        ("psg:company-facts/org-chart-finance", "required_evidence", 34),
        ("psg:company-facts/cfo-2021", "required_evidence", 36),
        ("gph:11146dffbb953cc59f458817", "evidence", 60),
        ("gph:5820b4e03799ed8194a96be0", "evidence", 70),
        ("gph:0ee53483be7208289e15cd4e", "evidence", 56),
        ("psg:company-facts/news-2024-07-b", "evidence", 26),
        ("psg:company-facts/cfo-2025", "evidence", 43),
    ]
    assert built.used_tokens == 476 and built.complete
    body = json.loads(body_of(request, as_of, built, set_version=3))
    answer = body["items"][0]
    assert answer["trust"] == "approved" and answer["score"] == 0.571429
    assert answer["text"] == "Q: Who is our CFO?\nA: Priya Raman has been CFO since 1 July 2024."
    assert answer["source"] == {"kind": "context_set", "contextSetId": "finance",
                                "contextSetVersion": 3}
    assert list(answer) == ["id", "class", "trust", "text", "tokens", "score", "source", "hash"]
    assert body["items"][3]["requirementIds"] == ["appointment"]
    assert body["items"][3]["absorbed"] == ["psg:company-facts/news-2024-07-a"]
    assert all(i["trust"] == "untrusted" for i in body["items"][3:])
    assert json.loads(canonical_request(request, as_of, 3))["contextSetVersion"] == 3


def test_with_the_finance_set_and_256_tokens() -> None:
    _, _, built = pack(context_set_id="finance", max_tokens=256)
    assert [i.id for i in built.items] == [
        "set:finance/answer/current-cfo", "set:finance/definition/CFO",
        "set:finance/instruction/cite", "psg:company-facts/cfo-2024",
        "psg:company-facts/org-chart-finance", "psg:company-facts/cfo-2021",
        "psg:company-facts/news-2024-07-b"]
    assert built.used_tokens == 247
    assert built.omitted.budget_ids == (
        "gph:11146dffbb953cc59f458817", "gph:5820b4e03799ed8194a96be0",
        "gph:0ee53483be7208289e15cd4e", "psg:company-facts/cfo-2025")
    assert built.omitted.budget_count == 4
    assert built.complete and built.missing == ()


def laid_out(body: bytes) -> str:
    """A body in the golden file's layout: one top-level member, and one item, per line."""
    members = json.loads(body)
    lines = ["{"]
    for at, (key, value) in enumerate(members.items()):
        comma = "," if at < len(members) - 1 else ""
        if key == "items":
            items = [json.dumps(i, ensure_ascii=False, separators=(",", ":")) for i in value]
            lines += [' "items":[', *(f" {i}," for i in items[:-1]), f" {items[-1]}",
                      f" ]{comma}"]
        else:
            lines.append(f" {json.dumps(key)}:"
                         f"{json.dumps(value, ensure_ascii=False, separators=(',', ':'))}{comma}")
    return "\n".join([*lines, "}"]) + "\n"


if __name__ == "__main__":  # python -m tests.unit.test_pack_example: rewrite the golden body
    GOLDEN.write_text(laid_out(body_of(*pack())))
