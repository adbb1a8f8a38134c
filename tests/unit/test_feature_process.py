"""Features computed in the child process: the same bits as in this process, and a child that
never outlives its parent (stopped with it, or ending itself when the parent is killed)."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from context_service.adapters.embedding.feature_process import FeatureProcess
from context_service.adapters.embedding.wordllama_model import TextFeaturesModel
from context_service.projections.passage_features.features import Text

TEXTS = [Text(("The board appointed a new CFO in March.",), embed=True),
         Text(("Revenue grew", "in the third quarter"), "\n", embed=True),
         Text(("",), embed=True), Text(("Straße 东京 <s> report",)),
         Text(("budget plan", "risk audit", "growth"), "\n\n")]


@pytest.fixture(scope="module")
def model() -> TextFeaturesModel:
    return TextFeaturesModel()


def test_the_child_computes_the_same_features(model: TextFeaturesModel) -> None:
    features = FeatureProcess(model)
    assert features.child_pid() != os.getpid()
    assert features.features(TEXTS) == model.features(TEXTS)
    assert features.features([]) == []


def test_a_child_that_died_is_replaced_and_nothing_is_lost(model: TextFeaturesModel) -> None:
    features = FeatureProcess(model)
    first = features.child_pid()
    child = psutil.Process(first)  # one handle: the pool may reap the child before a second
    child.kill()
    child.wait(10)
    assert features.features(TEXTS) == model.features(TEXTS)  # computed here this once
    assert features.child_pid() not in (first, os.getpid())  # and a new child next time


def test_stop_ends_the_child(model: TextFeaturesModel) -> None:
    child = psutil.Process(FeatureProcess(model).child_pid())
    FeatureProcess.stop()
    child.wait(10)
    assert not child.is_running()


PARENT = """
import sys, time
from context_service.adapters.embedding.feature_process import FeatureProcess
from context_service.adapters.embedding.wordllama_model import TextFeaturesModel
print(FeatureProcess(TextFeaturesModel()).child_pid(), flush=True)
time.sleep(600)
"""


def test_the_child_ends_when_its_parent_is_killed() -> None:
    with subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, cwd=os.getcwd()) as parent:
        try:
            assert parent.stdout is not None
            child = psutil.Process(int(parent.stdout.readline()))
            assert child.is_running()
            parent.kill()  # no exit handler runs: only the child's own watch can end it
            parent.wait(10)
            child.wait(20)  # raises psutil.TimeoutExpired if it outlives its parent
            assert not child.is_running()
        finally:
            parent.kill()
