"""``history audit --all`` and ``history events --all`` on a terminal: the table written a page
at a time is the table ``output.table`` writes for every item at once, at the terminal's width.
Each page's columns given the widest cell's width as their least made the whole row wider than
the terminal: the columns past it were cut to nothing (``TARGET`` shown empty on every row)
where the table of all the items wraps and shortens cells to fit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.contextctl.test_audit_all_pages import COMMANDS, Service, former, run

__all__ = ["run"]  # the fixture, used by name


@pytest.mark.parametrize("columns", ["60", "100", "160", "400"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_page_on_a_terminal_is_the_former_table(
        run: Callable[..., int], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, command: str, columns: str) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # a terminal, as rich tells one
    monkeypatch.setenv("COLUMNS", columns)
    event, table = COMMANDS[command]
    service = Service(2_345, event)
    capsys.readouterr()
    assert run(service, "history", command, "ctx", "--all") == 0
    printed = capsys.readouterr()
    assert printed.err == ""
    expected = former(service, "text", table)
    assert len(service.asked) == 3
    assert printed.out == expected
