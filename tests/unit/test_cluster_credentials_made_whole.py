"""The development cluster's credentials are there only once made whole, owner-only from the
start.

``openssl genrsa -out sa.key`` creates ``sa.key`` (empty, owner-only) before it generates the
key. One that failed, hung (killed past its timeout) or was killed left that empty file, and
every later start took it for a key made: ``openssl`` was never run again, and the API server
was started with an empty service-account key, the control plane's own error about openssl
gone. Each later start must make the key again, as the first ``initdb`` of the embedded
PostgreSQL is made beside its directory and moved into place once finished. The admin token
file was written with the umask and made owner-only after."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from context_service.devcluster import controlplane
from context_service.devcluster.controlplane import ControlPlane, ControlPlaneError, Ports

KEY = "-----BEGIN PRIVATE KEY-----\nmade\n-----END PRIVATE KEY-----"


def openssl(folder: Path, then: str) -> None:
    """A stand-in ``openssl`` first on PATH: it creates the ``-out`` file empty, as openssl
    does before generating, then runs the shell lines ``then`` (``$out`` the file)."""
    script = folder / "openssl"
    script.write_text('#!/bin/sh\nout=""\n'
                      'while [ $# -gt 0 ]; do [ "$1" = -out ] && out="$2"; shift; done\n'
                      f': > "$out"\n{then}\n')
    script.chmod(0o755)


@pytest.fixture
def stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "stand-ins"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def plane(tmp_path: Path) -> ControlPlane:
    return ControlPlane(tmp_path / "bin", tmp_path / "work", Ports(api=1, etcd=2, peer=3))


def test_an_openssl_that_failed_is_run_again_at_the_next_start(
        tmp_path: Path, stand_ins: Path) -> None:
    openssl(stand_ins, "echo 'genrsa: out of entropy' >&2; exit 1")
    with pytest.raises(ControlPlaneError, match="openssl could not make the service-account"):
        plane(tmp_path)._prepare()
    openssl(stand_ins, f"printf '%s\\n' {shlex.quote(KEY)} > \"$out\"")
    plane(tmp_path)._prepare()
    assert (tmp_path / "work" / "pki" / "sa.key").read_text() == KEY + "\n"


def test_an_openssl_killed_past_its_timeout_is_run_again_at_the_next_start(
        tmp_path: Path, stand_ins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = controlplane.run_once

    def hung(args: Sequence[str | Path], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        Path(args[args.index("-out") + 1]).touch(0o600)  # created, then killed at the timeout
        raise subprocess.TimeoutExpired([str(a) for a in args], kwargs.get("timeout") or 0)

    monkeypatch.setattr(controlplane, "run_once", hung)
    with pytest.raises(ControlPlaneError, match="openssl could not make the service-account"):
        plane(tmp_path)._prepare()
    monkeypatch.setattr(controlplane, "run_once", real)
    openssl(stand_ins, f"printf '%s\\n' {shlex.quote(KEY)} > \"$out\"")
    plane(tmp_path)._prepare()
    assert (tmp_path / "work" / "pki" / "sa.key").read_text() == KEY + "\n"


def test_a_key_already_made_is_kept(tmp_path: Path, stand_ins: Path) -> None:
    openssl(stand_ins, f"printf '%s\\n' {shlex.quote(KEY)} > \"$out\"")
    plane(tmp_path)._prepare()
    openssl(stand_ins, "echo 'run again' >&2; exit 1")  # never run: the key is there
    plane(tmp_path)._prepare()
    assert (tmp_path / "work" / "pki" / "sa.key").read_text() == KEY + "\n"


def test_the_admin_token_file_is_never_readable_by_others(
        tmp_path: Path, stand_ins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tokens.csv`` holds a ``system:masters`` token. Written with the process's umask and
    only then made owner-only, it was readable by every local user meanwhile, and for good
    when the start was stopped in between (the next start finds it and keeps it as it is)."""
    openssl(stand_ins, f"printf '%s\\n' {shlex.quote(KEY)} > \"$out\"")
    real_chmod = Path.chmod

    def stopped(path: Path, mode: int, **kwargs: Any) -> None:
        if path.name == "tokens.csv":  # the start stopped right after the token was written
            raise KeyboardInterrupt
        real_chmod(path, mode, **kwargs)

    previous = os.umask(0o022)  # an ordinary umask: a file is made readable by all
    try:
        with monkeypatch.context() as patched:
            patched.setattr(Path, "chmod", stopped)
            with contextlib.suppress(KeyboardInterrupt):
                plane(tmp_path)._prepare()
        plane(tmp_path)._prepare()  # the next start
    finally:
        os.umask(previous)
    tokens = tmp_path / "work" / "pki" / "tokens.csv"
    assert tokens.stat().st_mode & 0o077 == 0, oct(tokens.stat().st_mode)
    assert tokens.read_text().endswith(",admin,admin,system:masters\n")
