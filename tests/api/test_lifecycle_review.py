"""Lifecycle edge cases through HTTP against the session kube-apiserver (spec 1.11, 6.6):
snapshots the cluster refuses, one VolumeSnapshot name computed for two snapshots, errors a CSI
driver reports that the log cannot hold as they are, and odd paths and bodies."""

from __future__ import annotations

from typing import Any

import pytest

from context_service.adapters.kubernetes.cluster import SNAPSHOT
from tests.api.test_lifecycle import EXISTS, Env, env

__all__ = ["env"]
# one service for the module: each test's contexts live in its own Kubernetes namespace
pytestmark = [pytest.mark.k8s, pytest.mark.postgres, pytest.mark.shared_service]


@pytest.fixture
def notes(env: Env) -> Env:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    return env


def status_of(env: Env, context: str, snapshot: str) -> dict[str, Any]:
    answer = env.api.get(env.path(context, f"/snapshots/{snapshot}"))
    assert answer.status_code == 200
    return dict(answer.json())


# --- snapshots the cluster refuses ------------------------------------------------------------


def test_a_snapshot_the_cluster_refuses_fails_instead_of_creating_for_ever(notes: Env) -> None:
    # labels the request accepts (well under 1 MiB) but a VolumeSnapshot's annotations cannot hold
    labels = {f"k{i}": "v" * 1000 for i in range(300)}
    assert notes.snapshot("notes", "big", labels=labels).status_code == 201
    first = notes.worker.run_once()
    assert (first.created, first.failures, first.observed) == (0, 0, 1)
    got = status_of(notes, "notes", "big")
    assert got["status"] == "failed"
    assert got["error"].startswith('VolumeSnapshot "context-notes-big" was refused: ')
    again = notes.worker.run_once()  # nothing left to do: no retry storm, the reason stays
    assert (again.created, again.failures, again.observed) == (0, 0, 0)
    assert status_of(notes, "notes", "big")["error"] == got["error"]
    assert notes.snapshot("notes", "small").status_code == 201  # the others go on
    notes.converge()
    assert status_of(notes, "notes", "small")["status"] == "ready"


# --- one VolumeSnapshot name, two snapshots ---------------------------------------------------


def shared_name(env: Env) -> None:
    """Context "a" snapshot "b-c" and context "a-b" snapshot "c" both map to the VolumeSnapshot
    "context-a-b-c" (spec 6.6); both are recorded before the worker made either object."""
    env.context("a")
    env.context("a-b")
    assert env.snapshot("a", "b-c").status_code == 201
    assert env.snapshot("a-b", "c").status_code == 201


def test_a_snapshot_never_adopts_another_snapshots_volume_snapshot(notes: Env) -> None:
    shared_name(notes)
    notes.converge()
    assert status_of(notes, "a", "b-c")["status"] == "ready"
    other = status_of(notes, "a-b", "c")
    assert other["status"] == "failed"
    # the message names no context: "a" may be hidden from the readers of "a-b"
    assert other["error"] == 'VolumeSnapshot "context-a-b-c" belongs to another snapshot'
    clone = notes.api.post(notes.path("a-b", "/clones"), {"name": "copy", "snapshot": "c"})
    assert (clone.status_code, clone.json()["message"]) == (
        400, 'invalid context resource: snapshot "c" is not ready')
    assert notes.snapshot("a-b", "c").json() == EXISTS  # still recorded for "a-b"


def test_gc_never_deletes_another_snapshots_volume_snapshot(notes: Env) -> None:
    shared_name(notes)
    notes.converge()
    assert notes.api.put(notes.path("a-b", "/retention"), {"keepLast": 0,
                                                           "maxAge": "1ns"}).status_code == 200
    collected = notes.api.post(notes.path("a-b", "/gc")).json()
    assert [s["name"] for s in collected["deleted"]] == ["c"]
    report = notes.worker.run_once()
    assert (report.deleted, report.failures) == (0, 0)
    raw = notes.kube.rest.get(SNAPSHOT.path(notes.ns, "context-a-b-c"))
    assert "deletionTimestamp" not in raw["metadata"]
    assert status_of(notes, "a", "b-c")["status"] == "ready"
    assert notes.worker.run_once().observed == 0


# --- what a CSI driver reports ----------------------------------------------------------------


@pytest.mark.parametrize("message", ["quota\x00exceeded", "x" * 1_100_000])
def test_any_error_a_driver_reports_is_recorded(notes: Env, message: str) -> None:
    """The log stores no U+0000 (one held every view at its event) and no event above 1 MB (the
    observation was refused on every pass): the error is recorded cleaned and cut."""
    assert notes.snapshot("notes", "s1").status_code == 201
    notes.worker.run_once()
    notes.sim.fail_snapshot(notes.ns, "context-notes-s1", message)
    report = notes.worker.run_once()
    assert (report.observed, report.failures) == (1, 0)
    got = status_of(notes, "notes", "s1")
    assert got["status"] == "failed"
    assert "\x00" not in got["error"] and 0 < len(got["error"]) <= 4096
    assert got["error"].startswith(message[:5].replace("\x00", "\ufffd"))
    assert notes.worker.run_once().observed == 0  # recorded once: it matches what is recorded


# --- odd path values --------------------------------------------------------------------------

ODD = ["a%00b", "a" * 5000, "%C3%A9t%C3%A9", "%F0%9F%98%80", "a%20b"]


@pytest.mark.parametrize("odd", ODD)
def test_odd_path_values_answer_not_found(notes: Env, odd: str) -> None:
    for namespace, name in ((odd, "notes"), (notes.ns, odd)):
        base = f"/v1/namespaces/{namespace}/contexts/{name}"
        for method, suffix, body in (
                ("GET", "/snapshots", None), ("GET", "/snapshots/s1", None),
                ("GET", "/capabilities", None), ("POST", "/snapshots", {"name": "s1"}),
                ("POST", "/clones", {"name": "c", "snapshot": "s1"}),
                ("POST", "/restore", {"snapshot": "s1"}), ("PUT", "/retention", {}),
                ("POST", "/gc", None), ("POST", "/gc?dryRun=true", None)):
            answer = notes.api.request(method, base + suffix, body)
            assert (method, suffix, answer.status_code, answer.json()) == (
                method, suffix, 404, {"error": "not_found",
                                      "message": "context resource not found"})
    answer = notes.api.get(notes.path("notes", f"/snapshots/{odd}"))
    assert (answer.status_code, answer.json()["error"]) == (404, "not_found")


# --- odd bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize(("suffix", "raw"), [
    ("/snapshots", b'{"name":"s1","labels":{"a":null}}'),
    ("/snapshots", b'{"name":"s1","labels":[]}'),
    ("/snapshots", b'{"name":"s1","protected":"true"}'),
    ("/snapshots", b'{"name":"s1","snapshotClass":"a\\u0000b"}'),
    ("/snapshots", b'{"name":"s1","labels":{"k":"\\u0000"}}'),
    ("/snapshots", b'{"name":"s1"} {}'),
    ("/snapshots", b'[]'),
    ("/snapshots", b'{"name":"\\ud800"}'),
    ("/clones", b'{"name":["x"],"snapshot":"s1"}'),
    ("/clones", b'{"name":"c","snapshot":1e400}'),
    ("/restore", b'{"snapshot":{}}'),
    ("/retention", b'{"keepLast":true}'),
    ("/retention", b'{"keepLast":1.5}'),
    ("/retention", b'{"maxAge":5}'),
    ("/retention", b'{"maxAge":"1h\\u0000"}'),
    ("/retention", b'{"maxAge":"' + b"9" * 100_000 + b'h"}'),
])
def test_odd_bodies_are_refused_as_invalid(notes: Env, suffix: str, raw: bytes) -> None:
    method = "PUT" if suffix == "/retention" else "POST"
    answer = notes.api.request(method, notes.path("notes", suffix), raw=raw)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_request")
