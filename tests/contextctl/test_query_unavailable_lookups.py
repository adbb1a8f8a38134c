"""``contextctl query`` asks the service, one GET per unavailable context, whether each has a
revision at all, only to word the note under the results. A service that stopped answering
after the query made each of those GETs wait out the client's timeout in turn: many
unavailable contexts held the terminal for minutes over a note. The first such failure ends
the asking (the rest keep the service's general reason); a context refused on its own (gone
meanwhile, not readable) does not."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from context_service.contextctl import output
from context_service.contextctl.client import Reply, ServiceError
from context_service.contextctl.query import without_revision


class Service:
    """A client whose GETs answer from ``answers`` by context name (an exception is raised)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def get(self, path: str, params: Any = None) -> Reply:
        name = path.rsplit("/", 1)[-1]
        self.asked.append(name)
        answer = self.answers.get(name, self.answers.get("*"))
        if isinstance(answer, Exception):
            raise answer
        return Reply(200, json.dumps(answer).encode())


def _asked(answers: dict[str, Any], names: list[str]) -> tuple[list[str], list[str]]:
    service = Service(answers)
    found = without_revision(SimpleNamespace(client=service),  # type: ignore[arg-type]
                             "ns", output.TEXT, {"unavailable": names})
    return found, service.asked


def test_a_service_that_stopped_answering_is_asked_once() -> None:
    names = [f"c{number}" for number in range(40)]
    silent = ServiceError("the context service did not answer in time (ReadTimeout)")
    found, asked = _asked({"*": silent}, names)
    assert (found, asked) == ([], ["c0"])


def test_a_context_refused_on_its_own_does_not_stop_the_rest() -> None:
    gone = ServiceError("context not found", status=404)
    found, asked = _asked({"c0": gone, "c1": {"name": "c1", "currentRevision": None},
                           "c2": {"name": "c2", "currentRevision": "ab" * 32}},
                          ["c0", "c1", "c2"])
    assert (found, asked) == (["c1"], ["c0", "c1", "c2"])
