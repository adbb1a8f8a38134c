"""The ``context-service`` command when things go wrong, as an operator meets it: a file that
cannot be read or written, a database that is not there, Ctrl-C, output piped to a file (no
progress bar in it), a flag out of range; each is one line on standard error and an exit
code, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from context_service import cli as service_cli
from context_service.adapters.eventstore import export as export_module
from context_service.bootstrap import Container
from tests.projections.history import write_history

BAR = "━"  # what rich draws a progress bar with


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command as a process, its output piped (not a terminal)."""
    merged = {**{k: v for k, v in os.environ.items() if not k.startswith("CS_")},
              "CS_LOG_FORMAT": "json", **env}
    return subprocess.run([sys.executable, "-m", "context_service.cli", *args], env=merged,
                          text=True, capture_output=True, timeout=120, check=False)


def one_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("context-service: ") and result.stderr.count("\n") == 1, \
        result.stderr
    return result.stderr


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_verify_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    missing = one_line(run("history", "verify", str(tmp_path / "nope.jsonl")), 2)
    assert f"cannot read {tmp_path / 'nope.jsonl'}: No such file or directory" in missing
    folder = one_line(run("history", "verify", str(tmp_path)), 2)
    assert f"cannot read {tmp_path}: Is a directory" in folder


def test_export_into_a_missing_folder_fails_before_the_database(tmp_path: Path) -> None:
    """Checked first: no embedded PostgreSQL is started (nor a database waited for) to find out
    that the file cannot be written."""
    target = tmp_path / "no-such-folder" / "log.jsonl"
    result = run("history", "export", "--output", str(target),
                 CS_DATABASE_URL=f"postgresql://cs:pw@127.0.0.1:{closed_port()}/cs")
    assert f"cannot write {target}: No such file or directory" in one_line(result, 2)


@pytest.mark.slow
def test_a_database_that_is_not_there(tmp_path: Path) -> None:
    """The pool's wait for a connection (10 s), then one line naming the setting, without the
    password the URL holds."""
    result = run("projections", "status",
                 CS_DATABASE_URL=f"postgresql://cs:s3cret-pw@127.0.0.1:{closed_port()}/cs")
    message = one_line(result, 2)
    assert "cannot reach the database (CS_DATABASE_URL)" in message
    assert "s3cret-pw" not in result.stderr + result.stdout


def test_a_database_url_that_is_not_one() -> None:
    message = one_line(run("migrate", CS_DATABASE_URL="password=s3cret-pw nonsense"), 2)
    assert "CS_DATABASE_URL is not a PostgreSQL connection string" in message
    assert "s3cret-pw" not in message


def test_limit_must_be_positive() -> None:
    for limit in ("0", "-3"):
        result = run("events", "tail", "--limit", limit)
        assert result.returncode == 2 and "--limit" in result.stderr
        assert "Traceback" not in result.stderr


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    def interrupted(_: Path, __: str | None) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(service_cli, "_verify", interrupted)
    monkeypatch.setenv("CS_DATA_DIR", str(tmp_path))
    assert service_cli.main(["history", "verify", str(tmp_path / "x")]) == 130
    assert capsys.readouterr().err.endswith("context-service: interrupted\n")


@pytest.mark.e2e
@pytest.mark.postgres
def test_an_interrupted_export_leaves_no_file_that_verifies(
        idle_container: Container, database_url: str, data_dir: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A truncated hash-chained export is still an intact chain, so ``verify`` would call half a
    log whole: the export is written beside the target and replaces it only once complete."""
    write_history(idle_container.contexts, seed=5, steps=20)
    real = export_module.export

    def stopped_midway(store: object, out: object, *args: object) -> tuple[int, str]:
        count = real(store, out, *args)  # type: ignore[arg-type]
        raise KeyboardInterrupt(count)

    monkeypatch.setattr(export_module, "export", stopped_midway)
    monkeypatch.setenv("CS_DATABASE_URL", database_url)
    monkeypatch.setenv("CS_DATA_DIR", str(data_dir))
    previous = data_dir / "previous.jsonl"
    previous.write_text("an earlier export\n")
    fresh = data_dir / "fresh.jsonl"
    for target in (previous, fresh):
        assert service_cli.main(["history", "export", "--output", str(target)]) == 130
    assert previous.read_text() == "an earlier export\n"
    assert sorted(p.name for p in data_dir.iterdir() if p.suffix in (".jsonl", ".partial")
                  or ".partial" in p.name) == ["previous.jsonl"]
    capsys.readouterr()


@pytest.mark.e2e
@pytest.mark.postgres
def test_piped_output_holds_no_progress_bar(idle_container: Container, database_url: str,
                                            data_dir: Path) -> None:
    """``rebuild`` and ``export`` piped or redirected: standard output is their result lines
    only, and no bar is drawn for a reader that is not a terminal."""
    write_history(idle_container.contexts, seed=6, steps=30)
    head = idle_container.store.head()
    rebuilt = run("projections", "rebuild", "context_catalog", CS_DATABASE_URL=database_url)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert BAR not in rebuilt.stdout + rebuilt.stderr
    assert [line.split(" events in ")[0] for line in rebuilt.stdout.splitlines()] == [
        f"context_catalog: {head}"]
    out = data_dir / "log.jsonl"
    exported = run("history", "export", "--output", str(out), CS_DATABASE_URL=database_url)
    assert exported.returncode == 0, exported.stderr
    assert BAR not in exported.stdout + exported.stderr
    last = out.read_bytes().splitlines()[-1].rsplit(b'"hash":"', 1)[1][:64].decode()
    assert exported.stdout == f"exported {head} events to {out}, last hash {last}\n"
    verified = run("history", "verify", str(out))
    assert verified.stdout == f"{out}: {head} lines, hash chain intact\n"


def test_tail_without_nats_is_one_line_and_exit_1() -> None:
    result = run("events", "tail", CS_NATS_URL=f"nats://u:pw@127.0.0.1:{closed_port()}")
    message = one_line(result, 1)
    assert "cannot reach NATS" in message and "pw" not in message
