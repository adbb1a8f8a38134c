"""``serve`` with the local Kubernetes control plane: SIGTERM stops the children in dependency
order (controller-manager, apiserver, etcd; nats-server; PostgreSQL last) and leaves none; after
a SIGKILL the kernel ends them all (the apiserver and controller-manager outright, since an
apiserver without its etcd ignores SIGTERM)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import ServerProcess, await_no_processes, data_dir_processes
from tests.e2e.test_shutdown import shutdown_steps

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.nats, pytest.mark.k8s,
              pytest.mark.slow]
CHILDREN = ["controller-manager", "apiserver", "etcd", "nats-server", "postgres"]


@pytest.fixture
def server(data_dir: Path, kube_bin_dir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(data_dir, env={"CS_KUBE": "local", "CS_KUBE_BIN_DIR": str(kube_bin_dir),
                                        "CS_WORKERS": "projections,reconciler,relay"})
    yield proc
    proc.cleanup()


def test_children_stop_in_order_on_sigterm_and_die_with_a_killed_serve(
        server: ServerProcess, data_dir: Path) -> None:
    server.start(timeout=120)
    names = {Path(p.info["cmdline"][0]).name for p in data_dir_processes(data_dir)}
    assert names >= {"postgres", "nats-server", "etcd", "kube-apiserver",
                     "kube-controller-manager"}, names
    code, seconds = server.signal_and_wait(signal.SIGTERM)
    assert code == 0, server.log_text()[-3000:]
    stopped = [step for step in shutdown_steps(server) if step in CHILDREN]
    assert stopped == CHILDREN
    killed = [r["step"] for r in server.log_records() if r.get("killed") is True]
    assert killed == []  # each stopped on its signal, none needed SIGKILL
    assert await_no_processes(data_dir, timeout=2) == []
    assert seconds < 20

    server.start(timeout=120)
    server.kill()
    assert await_no_processes(data_dir, timeout=10) == []
