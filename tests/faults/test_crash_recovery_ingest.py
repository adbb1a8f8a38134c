"""``contextctl ingest`` with the service killed between its two writes: the revision is
published, and the index's request is in flight (its append waits for the event table's lock)
when ``serve`` dies. The command says the revision is published without its index and that
queries report the context unavailable until it is run again. That must stay true once the
service is back: the dead process's append, still waiting for the lock after its death, used to
commit once the lock went, so the index appeared behind the client's back (and the run again
recorded nothing). The same command, run again, sends only the index, and the views equal a
rebuild of the log."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from context_service import bootstrap
from context_service.contextctl.client import ServiceError
from context_service.contextctl.ingestion import api, service
from context_service.contextctl.ingestion.report import INDEXED, PUBLISHED
from context_service.contextctl.settings import Settings
from tests.e2e.server import ServerProcess
from tests.faults.burst import NAMESPACE, SUBJECT
from tests.faults.conftest import Rebuild, caught_up
from tests.support.event_table import waiting_for_the_lock
from tests.support.views import differences, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NAME = "handbook"


def _files(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"part-{i}.md").write_text(
            f"# Part {i}\n\nThe release train leaves on day {i}.\n\n## Notes\n\nWords {i}.\n")
    return folder


def _query(url: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, headers=SUBJECT) as http:
        answer = http.post(f"/v1/namespaces/{NAMESPACE}/query",
                           json={"contexts": [NAME], "query": "release train"})
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_an_ingestion_cut_between_revision_and_index_is_finished_by_running_it_again(
        serve: ServerProcess, inspector: bootstrap.Container, database_url: str,
        rebuilt: Rebuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _files(tmp_path)
    serve.start()
    settings = Settings(url=serve.url, subject=SUBJECT["X-Context-Subject"],
                        namespace=NAMESPACE)
    real_send = service.send_index

    def killed_while_sending(*args: Any, **kwargs: Any) -> int | None:
        """The index's request reaches the service, whose append waits for the lock; the
        service dies there."""
        outcome: list[BaseException | int | None] = []

        def send() -> None:
            try:
                outcome.append(real_send(*args, **kwargs))
            except BaseException as exc:
                outcome.append(exc)

        with psycopg.connect(database_url) as blocker:
            blocker.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")
            sender = threading.Thread(target=send)
            sender.start()
            while not waiting_for_the_lock(database_url) and sender.is_alive():
                sender.join(0.02)
            serve.kill()
            sender.join(30)
            time.sleep(1.0)  # the lock is held a moment past the death, as a slow commit is
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    monkeypatch.setattr(service, "send_index", killed_while_sending)
    with pytest.raises(ServiceError) as cut:
        api.ingest([folder], context=NAME, create=True, settings=settings)
    assert "is published without its index" in str(cut.value)
    assert "run again" in str(cut.value)

    monkeypatch.setattr(service, "send_index", real_send)
    serve.start()
    with httpx.Client(base_url=serve.url, headers=SUBJECT) as http:
        found = http.get(f"/v1/namespaces/{NAMESPACE}/contexts/{NAME}").json()
    assert found["currentRevision"]  # the revision went in before the kill
    assert _query(serve.url).get("unavailable") == [NAME]  # its index did not

    again = api.ingest([folder], context=NAME, settings=settings)
    assert again.outcome == INDEXED != PUBLISHED  # the revision was current: the index only
    assert again.revision == found["currentRevision"]
    answer = _query(serve.url)
    assert "unavailable" not in answer and answer["items"], answer
    caught_up(inspector)
    assert differences(snapshot(inspector), rebuilt(inspector)) == {}
