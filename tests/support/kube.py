"""A throwaway etcd + kube-apiserver on 127.0.0.1 for tests (fresh ports, data in ``work``).

Built on the adapter's ``ControlPlane``; etcd skips fsync because the data dies with the test.
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Iterator
from typing import Any

from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.rest import Rest
from context_service.devcluster.controlplane import ControlPlane, Ports
from context_service.devcluster.local import CRD_DIR, install_crds

CRDS = CRD_DIR


@contextlib.contextmanager
def running_apiserver(
    bin_dir: pathlib.Path,
    work: pathlib.Path,
    crds: pathlib.Path | None = CRDS,
    controller_manager: bool = False,
    authorization: str = "AlwaysAllow",
) -> Iterator[ControlPlane]:
    """Start a server (and optionally the controller-manager), install the CRDs found in
    ``crds`` (None: none), and stop everything on exit. ``plane.kubeconfig`` is written.
    ``authorization="RBAC"`` enforces Roles (the plane's own token stays an administrator)."""
    plane = ControlPlane(
        bin_dir,
        work,
        Ports.pick(),
        fsync=False,
        controller_manager=controller_manager,
        authorization=authorization,
    )  # its processes die with the test run, even a killed one
    plane.start()
    try:
        if crds is not None:
            api = plane.api_client()
            try:
                install_crds(Rest(api), crds)
            finally:
                close(api)
        if controller_manager:
            plane.start_controller_manager()
        yield plane
    finally:
        plane.stop()


@contextlib.contextmanager
def local_apiserver(
    bin_dir: pathlib.Path, work: pathlib.Path, crds: pathlib.Path | None = CRDS
) -> Iterator[Any]:
    """Like ``running_apiserver`` but yields a connected ``kubernetes.client.ApiClient``."""
    with running_apiserver(bin_dir, work, crds) as plane:
        api = plane.api_client()
        try:
            yield api
        finally:
            close(api)
