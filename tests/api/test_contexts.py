"""Spec 1.5, 2.1 and 2.2: create, list, read and delete named contexts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.api.conftest import Api, context_body, each
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import fresh, grant

# one service for the module: every test lists and names a namespace of its own (``api.ns``)
pytestmark = pytest.mark.shared_service
FULL = ["read", "write", "attach", "derive", "administer"]
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
EXISTS = {"error": "already_exists", "message": "context resource already exists"}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,5}[1-9])?Z$")
ADMIN = "service:context-service-admin"



def invalid(message: str) -> dict[str, str]:
    return {"error": "invalid_request", "message": message}


def attach(api: Namespaced, kind: str, name: str) -> None:
    resp = api.put(api.context + "/consumers",
                   {"kind": kind, "name": name, "accessMode": "readOnly"})
    assert resp.status_code == 200, resp.text


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


# --- create ---------------------------------------------------------------------------------------

def test_create_returns_the_resource_without_read_only_fields(api: Namespaced) -> None:
    resp = api.as_("user:alice").post("/v1/contexts", api.context_body(storage_class=None))
    assert resp.status_code == 201
    assert resp.text == (
        '{"name":"research-memory","namespace":"' + api.ns + '","type":"memory",'
        '"status":"provisioning",'
        '"storage":{"backend":"pvc","size":"5Gi","accessMode":"ReadWriteMany"},'
        '"attachment":{"kind":"pvc","claimName":"context-research-memory"}}')


def test_create_accepts_every_type_and_access_mode(api: Namespaced) -> None:
    types = ["workspace", "state", "memory", "knowledge", "artifacts"]
    for i, type_ in enumerate(types):
        mode = "ReadWriteOnce" if i % 2 else "ReadWriteMany"
        resp = api.post("/v1/contexts", api.context_body(name=f"c-{type_}", type_=type_,
                                                      access_mode=mode))
        assert resp.status_code == 201, resp.text
        assert (resp.json()["type"], resp.json()["storage"]["accessMode"]) == (type_, mode)
    names = [c["name"] for c in api.get(api.contexts).json()["items"]]
    assert names == sorted(f"c-{t}" for t in types)


def test_sizes_are_echoed_in_canonical_form(api: Namespaced) -> None:
    table = {
        "5Gi": "5Gi", "1024Mi": "1Gi", "1.5Gi": "1536Mi", "0.5Gi": "512Mi", "1.5Ki": "1536",
        "1000M": "1G", "1.5G": "1500M", "100": "100", "0.5": "500m", "1e3": "1e3",
        "2048Ki": "2Mi", "1536Mi": "1536Mi", "1024": "1024", "1000k": "1M", "+5Gi": "5Gi",
        "5.": "5", ".5Gi": "512Mi", "1E": "1E", "1E3": "1e3", "12e2": "1200", "1500e3": "1500e3",
        "1e-3": "1e-3", "0.1n": "1n", "1Ei": "1Ei", "7Ei": "7Ei", "1048576Ki": "1Gi",
        "1.0Gi": "1Gi", "10Ti": "10Ti", "0.001": "1m", "1000": "1k", "0.5Ki": "512",
    }

    def probe(case: tuple[int, tuple[str, str]]) -> None:
        i, (sent, echoed) = case
        resp = api.post("/v1/contexts", api.context_body(name=f"s{i}", size=sent))
        assert resp.status_code == 201, resp.text
        assert resp.json()["storage"]["size"] == echoed
        assert api.get(f"{api.contexts}/s{i}").json()["storage"]["size"] == echoed

    each(enumerate(table.items()), probe)


def test_invalid_sizes_are_rejected(api: Namespaced) -> None:
    message = invalid("storage.size must be a positive Kubernetes quantity")
    cases = ["0", "0Gi", "-1Gi", "abc", "1 Gi", " 1Gi", "1Gi ", "", "Gi", "1GB", "1gi", "8Ei",
             "9223372036854775808", "1.2.3", "--1", "1e", "0.0", "-0", "1Ki1", "1e400"]
    each(cases, lambda size: _expect(api.post("/v1/contexts", api.context_body(size=size)), 400,
                                     message))
    body = api.context_body()
    del body["storage"]["size"]
    _expect(api.post("/v1/contexts", body), 400, message)
    assert api.get(api.contexts).json() == {"items": []}


def _expect(resp: Any, status: int, body: dict[str, str]) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json() == body


def test_names_follow_the_context_name_rule(api: Namespaced) -> None:
    message = invalid("name must be a lowercase Kubernetes name no longer than 50 characters")
    bad = ["", "A", "Research", "-a", "a-", "a.b", "a_b", "a b", "a" * 51, "é", "a/b"]
    each(bad, lambda name: _expect(api.post("/v1/contexts", api.context_body(name=name)), 400,
                                   message))
    good = ["a", "0", "a" * 50, "a-b-c", "9to5", "a--b"]
    each(good, lambda name: _expect_created(api.post("/v1/contexts", api.context_body(name=name))))


def _expect_created(resp: Any) -> None:
    assert resp.status_code == 201, resp.text


def test_namespace_is_a_dns_label(api: Namespaced) -> None:
    message = invalid("namespace must be a lowercase Kubernetes name")
    bad = ["", "Team1", "team.1", "-team", "team-", "t_1", "a" * 64]
    each(bad, lambda ns: _expect(api.post("/v1/contexts", context_body(namespace=ns)), 400,
                                 message))
    assert api.post("/v1/contexts", context_body(namespace="a" * 63)).status_code == 201


def test_create_validation_runs_in_the_documented_order(api: Namespaced) -> None:
    def body(**storage: Any) -> dict[str, Any]:
        return {"name": "Bad!", "namespace": "Bad!", "type": "other", "storage": storage}

    steps = [
        (body(backend="s3", size="0", accessMode="x"),
         "name must be a lowercase Kubernetes name no longer than 50 characters"),
        ({**body(backend="s3", size="0", accessMode="x"), "name": "ok"},
         "namespace must be a lowercase Kubernetes name"),
        ({**body(backend="s3", size="0", accessMode="x"), "name": "ok", "namespace": "team1"},
         "type must be workspace, state, memory, knowledge, or artifacts"),
        ({**body(backend="s3", size="0", accessMode="x"), "name": "ok", "namespace": "team1",
          "type": "state"}, "storage.backend must be pvc"),
        ({**body(backend="pvc", size="0", accessMode="x"), "name": "ok", "namespace": "team1",
          "type": "state"}, "storage.size must be a positive Kubernetes quantity"),
        ({**body(backend="pvc", size="1Gi", accessMode="x"), "name": "ok", "namespace": "team1",
          "type": "state"}, "storage.accessMode must be ReadWriteOnce or ReadWriteMany"),
    ]
    each(steps, lambda step: _expect(api.post("/v1/contexts", step[0]), 400, invalid(step[1])))
    each([{}, {"storage": {}}], lambda b: _expect(api.post("/v1/contexts", b), 400, invalid(
        "name must be a lowercase Kubernetes name no longer than 50 characters")))


def test_enumerations_are_exact(api: Namespaced) -> None:
    type_message = invalid("type must be workspace, state, memory, knowledge, or artifacts")
    each(["Memory", "memory ", "", "snapshot"], lambda t: _expect(
        api.post("/v1/contexts", api.context_body(type_=t)), 400, type_message))
    mode_message = invalid("storage.accessMode must be ReadWriteOnce or ReadWriteMany")
    each(["ReadOnlyMany", "readwriteonce", "", "ReadWriteOncePod"], lambda m: _expect(
        api.post("/v1/contexts", api.context_body(access_mode=m)), 400, mode_message))
    body = api.context_body()
    body["storage"]["backend"] = "PVC"
    _expect(api.post("/v1/contexts", body), 400, invalid("storage.backend must be pvc"))


def test_storage_class_is_free_form(api: Namespaced) -> None:
    resp = api.post("/v1/contexts", api.context_body(storage_class="No Such Class!"))
    assert resp.status_code == 201
    assert resp.json()["storage"]["storageClass"] == "No Such Class!"
    resp = api.post("/v1/contexts", api.context_body(name="empty-class", storage_class=""))
    assert "storageClass" not in resp.json()["storage"]


def test_live_name_is_taken_per_namespace(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    _expect(api.as_("user:bob").post("/v1/contexts", api.context_body(type_="state", size="1Gi")),
            409, EXISTS)
    assert api.post("/v1/contexts", context_body(namespace=fresh("team"))).status_code == 201
    assert api.get(api.context).json()["type"] == "memory"


def test_validation_comes_before_the_name_check(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    _expect(api.post("/v1/contexts", api.context_body(size="0")), 400,
            invalid("storage.size must be a positive Kubernetes quantity"))


# --- list and get ---------------------------------------------------------------------------------

def test_get_and_list_add_access_and_consumers(api: Namespaced) -> None:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", api.context_body()).status_code == 201
    attach(alice, "agent", "summarizer")
    one = alice.get(api.context)
    assert one.status_code == 200
    body = one.json()
    assert list(body) == ["name", "namespace", "type", "status", "storage", "attachment",
                          "effectiveAccess", "consumers"]
    assert body["effectiveAccess"] == FULL
    assert body["consumers"][0]["name"] == "summarizer"
    assert alice.get(api.contexts).json() == {"items": [body]}


def test_effective_access_is_in_canonical_order(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    grant(api, "agent:x", "administer", "derive", "read", "attach", path=api.context)
    body = api.as_("agent:x").get(api.context).json()
    assert body["effectiveAccess"] == ["read", "attach", "derive", "administer"]
    assert "consumers" not in body


def test_list_is_sorted_and_filtered_by_any_permission(api: Namespaced) -> None:
    for name in ("zeta", "alpha", "mid", "hidden"):
        assert api.post("/v1/contexts", api.context_body(name=name)).status_code == 201
    grant(api, "agent:x", "read", path=api.contexts + "/zeta")
    grant(api, "agent:x", "administer", path=api.contexts + "/alpha")
    grant(api, "agent:x", "read", "attach", path=api.contexts + "/mid")
    items = api.as_("agent:x").get(api.contexts).json()["items"]
    assert [(c["name"], c["effectiveAccess"]) for c in items] == [
        ("alpha", ["administer"]), ("mid", ["read", "attach"]), ("zeta", ["read"])]
    assert api.as_("agent:y").get(api.contexts).json() == {"items": []}
    assert api.get(f"/v1/namespaces/{fresh('empty')}/contexts").text == '{"items":[]}'


def test_administer_only_lists_but_cannot_get(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    grant(api, "agent:admin", "administer", path=api.context)
    admin = api.as_("agent:admin")
    assert [c["name"] for c in admin.get(api.contexts).json()["items"]] == ["research-memory"]
    _expect(admin.get(api.context), 404, NOT_FOUND)
    _expect(admin.get(api.context + "/revisions"), 404, NOT_FOUND)
    _expect(admin.get(api.context + "/consumers"), 404, NOT_FOUND)
    assert admin.get(api.context + "/grants").status_code == 200
    assert admin.get(api.context + "/audit").status_code == 200


def test_hidden_equals_absent(api: Namespaced) -> None:
    assert api.as_("user:alice").post("/v1/contexts", api.context_body()).status_code == 201
    for subject in ("user:bob", "user:Alice", "agent:alice", "user:alice2"):
        hidden = api.as_(subject).get(api.context)
        absent = api.as_(subject).get(api.contexts + "/absent")
        assert hidden.status_code == absent.status_code == 404, subject
        assert hidden.text == absent.text == (
            '{"error":"not_found","message":"context resource not found"}')
    assert api.as_("user:bob").get(api.contexts).json() == {"items": []}


def test_namespaces_isolate_contexts(api: Namespaced) -> None:
    alice = api.as_("user:alice")
    other = fresh("team")
    for ns in (api.ns, other):
        assert alice.post("/v1/contexts", context_body(name="shared", namespace=ns)).status_code \
            == 201
    grant(alice, "user:bob", "read", path=api.contexts + "/shared")
    bob = api.as_("user:bob")
    assert bob.get(api.contexts + "/shared").status_code == 200
    _expect(bob.get(f"/v1/namespaces/{other}/contexts/shared"), 404, NOT_FOUND)
    assert bob.get(f"/v1/namespaces/{other}/contexts").json() == {"items": []}
    assert [c["namespace"] for c in bob.get(api.contexts).json()["items"]] == [api.ns]


def test_bootstrap_admin_sees_everything(api: Namespaced) -> None:
    assert api.as_("user:alice").post("/v1/contexts", api.context_body()).status_code == 201
    assert api.as_("user:bob").post("/v1/contexts", api.context_body(name="b")).status_code == 201
    admin = api.as_(ADMIN)
    items = admin.get(api.contexts).json()["items"]
    assert [(c["name"], c["effectiveAccess"]) for c in items] == [
        ("b", FULL), ("research-memory", FULL)]
    assert admin.get(api.context).json()["effectiveAccess"] == FULL
    assert api.as_("service:context-service-admin2").get(api.context).status_code == 404
    assert api.as_("user:context-service-admin").get(api.context).status_code == 404


def test_bootstrap_admin_recovers_a_context_without_grants(api: Namespaced) -> None:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", api.context_body()).status_code == 201
    revoked = alice.delete(api.context + "/grants", {"kind": "user", "name": "alice"})
    assert revoked.status_code == 200
    _expect(alice.get(api.context), 404, NOT_FOUND)
    assert alice.get(api.contexts).json() == {"items": []}
    admin = api.as_(ADMIN)
    assert admin.get(api.context + "/grants").json() == {"items": []}
    assert [c["name"] for c in admin.get(api.contexts).json()["items"]] == ["research-memory"]
    grant(admin, "user:alice", "read", "administer", path=api.context)
    assert alice.get(api.context).json()["effectiveAccess"] == ["read", "administer"]


# --- delete ---------------------------------------------------------------------------------------

def test_delete_requires_administer(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    grant(api, "agent:rw", "read", "write", "attach", "derive", path=api.context)
    _expect(api.as_("agent:rw").delete(api.context), 404, NOT_FOUND)
    _expect(api.as_("agent:none").delete(api.context), 404, NOT_FOUND)
    _expect(api.delete(api.contexts + "/absent"), 404, NOT_FOUND)
    grant(api, "agent:adm", "administer", path=api.context)
    assert api.as_("agent:adm").delete(api.context).status_code == 204


def test_delete_with_consumers_is_in_use(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    attach(api, "sandbox", "box-1")
    attach(api, "agent", "summarizer")
    attach(api, "pod", "p")
    expected = {"error": "in_use", "message": (
        "context resource is in use: research-memory is used by agent/summarizer, pod/p, "
        "sandbox/box-1; detach consumers or use force deletion")}
    for query in ("", "?force=True", "?force=1", "?force=yes", "?force="):
        _expect(api.delete(api.context + query), 409, expected)
    assert api.get(api.context).status_code == 200


def test_detached_consumers_no_longer_block(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    attach(api, "agent", "a")
    assert api.delete(api.context + "/consumers", {"kind": "agent", "name": "a"}).status_code == 200
    assert api.delete(api.context).status_code == 204


def test_force_delete_ignores_consumers(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    attach(api, "agent", "a")
    resp = api.delete(api.context + "?force=true")
    assert resp.status_code == 204
    assert resp.content == b""
    _expect(api.get(api.context), 404, NOT_FOUND)


def test_deleted_context_is_absent_everywhere(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    assert api.delete(api.context).status_code == 204
    assert api.get(api.contexts).json() == {"items": []}
    assert api.as_(ADMIN).get(api.contexts).json() == {"items": []}
    for suffix in ("", "/revisions", "/grants", "/consumers", "/audit"):
        _expect(api.get(api.context + suffix), 404, NOT_FOUND)
        _expect(api.as_(ADMIN).get(api.context + suffix), 404, NOT_FOUND)
    _expect(api.delete(api.context), 404, NOT_FOUND)
    _expect(api.put(api.context + "/grants", {"subject": {"kind": "user", "name": "x"},
                                      "permissions": ["read"]}), 404, NOT_FOUND)


def test_delete_frees_the_name_for_a_fresh_context(api: Namespaced) -> None:
    alice, bob = api.as_("user:alice"), api.as_("user:bob")
    assert alice.post("/v1/contexts", api.context_body()).status_code == 201
    grant(alice, "agent:x", "read", path=api.context)
    attach(alice, "agent", "a")
    revision = {"id": "b" * 64, "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}
    assert alice.post(api.context + "/revisions", revision).status_code == 201
    assert alice.delete(api.context + "?force=true").status_code == 204
    resp = bob.post("/v1/contexts", api.context_body(type_="knowledge", size="2Gi"))
    assert resp.status_code == 201
    body = bob.get(api.context).json()
    assert (body["type"], body["storage"]["size"]) == ("knowledge", "2Gi")
    assert "currentRevision" not in body and "consumers" not in body
    assert bob.get(api.context + "/revisions").json() == {"items": []}
    assert bob.get(api.context + "/consumers").json() == {"items": []}
    grants = bob.get(api.context + "/grants").json()["items"]
    assert [g["subject"] for g in grants] == [{"kind": "user", "name": "bob"}]
    audit = bob.get(api.context + "/audit").json()["items"]
    assert [(e["action"], e["subject"]["name"]) for e in audit] == [("context.created", "bob")]
    _expect(alice.get(api.context), 404, NOT_FOUND)
    assert api.as_("agent:x").get(api.contexts).json() == {"items": []}


def test_timestamps_are_utc_with_trimmed_fractions(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    attach(api, "agent", "a")
    stamps = [g["createdAt"] for g in api.get(api.context + "/grants").json()["items"]]
    stamps += [c["since"] for c in api.get(api.context + "/consumers").json()["items"]]
    stamps += [e["time"] for e in api.get(api.context + "/audit").json()["items"]]
    assert len(stamps) == 4
    assert all(TIMESTAMP.fullmatch(s) for s in stamps), stamps
