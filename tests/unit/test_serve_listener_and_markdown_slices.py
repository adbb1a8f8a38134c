"""Without a server: ``serve`` leaves no listening socket behind on a start-up refusal, and a
large Markdown file parsed in slices resolves the link references of one parse (a changelog's
``## [1.0.0]`` headings, defined at its end)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from context_service import cli
from context_service.adapters import optional
from context_service.config import Settings
from context_service.contextctl.ingestion import markdown


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_serve_closes_its_listener_when_an_embedded_server_is_not_installed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bound: list[socket.socket] = []

    def listener(settings: Settings) -> socket.socket:
        bound.append(made := real(settings))
        return made

    real = cli._listener
    monkeypatch.setattr(cli, "_listener", listener)
    monkeypatch.setattr(optional, "find_spec", lambda name: None)  # no 'embedded' extra
    settings = Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                        listen_addr=f"127.0.0.1:{free_port()}", workers=())
    with pytest.raises(optional.NotInstalledError):
        cli._serve(settings)
    # the refusal ends the command (exit 2); no socket bound before it may outlive it
    left_open = [sock for sock in bound if sock.fileno() != -1]
    for sock in left_open:
        sock.close()
    assert left_open == []


CHANGELOG = """# Changelog

## [1.0.0] - 2026-01-02

First release.

## [0.9.0] - 2025-12-01

Beta.

[1.0.0]: https://example.com/releases/1.0.0
[0.9.0]: https://example.com/releases/0.9.0
"""


def test_markdown_slices_resolve_link_references_defined_further_down() -> None:
    whole = markdown.parse(CHANGELOG, "CHANGELOG.md")
    assert [b.heading for b in whole.blocks] == [
        ("Changelog", "1.0.0 - 2026-01-02"), ("Changelog", "0.9.0 - 2025-12-01")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(markdown, "SLICE", 1)  # a slice per section, the references in the last
        sliced = markdown.parse(CHANGELOG, "CHANGELOG.md")
    assert sliced == whole
