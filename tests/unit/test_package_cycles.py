"""Package-level import cycles (issue 29, "Smaller"): the CEP package is the matcher only,
and the planner reads the PATTERN clause (``planner/pattern.py``), so ``streamjob.cep``
imports nothing of ``streamjob.planner`` while the planner imports ``cep.nfa``.

The job manager's files know each other one way only, type hints included (issue 29,
item 2): ``job_manager.py`` imports ``runner.py``, and a runner knows its host through
the ``RunnerHost`` protocol."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "_layout", Path(__file__).with_name("test_layout.py"))
_layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_layout)
import_graph = _layout.import_graph
cycles = _layout.cycles

pytestmark = pytest.mark.unit


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_cep_and_planner_do_not_import_each_other_both_ways():
    graph = import_graph()
    cep_imports = {_package(m) for mod, deps in graph.items()
                   if _package(mod) == "streamjob.cep" for m in deps}
    planner_imports = {_package(m) for mod, deps in graph.items()
                       if _package(mod) == "streamjob.planner" for m in deps}
    assert "streamjob.cep" in planner_imports  # the graph is really read
    assert "streamjob.planner" not in cep_imports


def test_the_job_manager_files_import_no_cycle_even_for_type_hints():
    graph = import_graph(typing=True)
    manager = {mod: {d for d in deps if d.startswith("streamjob.manager.")}
               for mod, deps in graph.items() if mod.startswith("streamjob.manager.")}
    assert "streamjob.manager.runner" in manager["streamjob.manager.job_manager"]
    assert cycles(manager) == []
