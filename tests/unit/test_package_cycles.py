"""Package-level import cycles (issue 29, "Smaller"): the CEP package is the matcher only,
and the planner reads the PATTERN clause (``planner/pattern.py``), so ``streamjob.cep``
imports nothing of ``streamjob.planner`` while the planner imports ``cep.nfa``. The home,
the property registry and the admin's policy depend one way (home -> properties,
security; security -> properties), and so do the catalog and its watcher, counting the
imports made for type annotations only.

The job manager's files know each other one way only, type hints included (issue 29,
item 2): ``job_manager.py`` imports ``runner.py``, and a runner knows its host through
the ``RunnerHost`` protocol."""

from __future__ import annotations

import pytest

from .codebase import cycles, import_graph

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



#: The front ends and the client room below them (issue 29, item 4).
CLIENT_ROOMS = ("streamjob.cli", "streamjob.shell", "streamjob.client")
FRONT_ENDS = ("streamjob.cli", "streamjob.shell", "streamjob.api")
#: File cycles through ``if TYPE_CHECKING:`` imports left in other rooms, each being
#: broken in its own change; this list only shrinks.
KNOWN_CYCLES: tuple[set[str], ...] = ()


def test_no_file_cycle_in_the_client_rooms_counting_type_checking_imports():
    """cli/app.py <-> cli/execute.py and shell/app.py <-> shell/meta.py and the preview
    were cycles through annotations only: the state they shared is now an object passed
    in (``cli/context.Invocation``, ``shell/context.ShellContext``,
    ``client/preview.Previews``), never a module imported back."""
    graph = import_graph(type_checking=True)
    assert "streamjob.shell.context" in graph["streamjob.shell.meta"]  # really read
    rooms = [c for c in cycles(graph) if any(_package(m) in CLIENT_ROOMS for m in c)]
    assert rooms == []


def test_no_other_file_cycle_counting_type_checking_imports():
    graph = import_graph(type_checking=True)
    new = [c for c in cycles(graph) if set(c) not in KNOWN_CYCLES]
    assert new == []


def test_the_client_room_imports_no_front_end():
    """``streamjob.client`` is below the command line, the shell and the HTTP API: they
    import it, it imports none of them (so the shell, ``-e`` and the API share one
    session, one preview and one renderer without a cycle)."""
    graph = import_graph(type_checking=True)
    client = {d for mod, deps in graph.items() if _package(mod) == "streamjob.client"
              for d in deps}
    assert "streamjob.client.scratch" in client  # the graph is really read
    assert {d for d in client if _package(d) in FRONT_ENDS} == set()


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        mod = todo.pop()
        if mod == goal:
            return True
        if mod not in seen:
            seen.add(mod)
            todo.extend(graph.get(mod, ()))
    return False


def test_home_properties_and_security_depend_one_way():
    """The admin's settings are registry entries (``properties/definitions.py``) the
    policy reads its defaults from, and the home builds its policy: before, the registry
    imported the settings from ``security/policy.py``, which named ``Home`` and copied
    its layout, while ``home.py`` imported both inside functions."""
    graph = import_graph(type_checking=True)
    assert {"streamjob.properties", "streamjob.security.policy"} <= graph["streamjob.home"]
    assert "streamjob.properties.definitions" in graph["streamjob.security.policy"]
    for low in ("streamjob.properties", "streamjob.properties.definitions",
                "streamjob.security.policy", "streamjob.security"):
        assert not _reaches(graph, low, "streamjob.home"), low
    assert not _reaches(graph, "streamjob.properties.definitions", "streamjob.security.policy")


def test_the_catalog_and_its_watcher_depend_one_way():
    """The watcher needs the catalog's connection half (``CatalogEngine``: URL, dialect),
    not ``Catalog``, which hands out watchers."""
    graph = import_graph(type_checking=True)
    assert "streamjob.catalog.watch" in graph["streamjob.catalog.api"]
    assert not _reaches(graph, "streamjob.catalog.watch", "streamjob.catalog.api")


def test_the_job_manager_files_import_no_cycle_even_for_type_hints():
    graph = import_graph(type_checking=True)
    manager = {mod: {d for d in deps if d.startswith("streamjob.manager.")}
               for mod, deps in graph.items() if mod.startswith("streamjob.manager.")}
    assert "streamjob.manager.runner" in manager["streamjob.manager.job_manager"]
    assert cycles(manager) == []


def test_no_package_cycle_in_the_whole_tree_counting_type_checking_imports():
    """No two rooms of streamjob import each other, even through annotations (issue 29's
    "done when"): the grammar knows no properties (SHOW CREATE's rendering is the
    executor's, ``executor/ddl.py``), and the security room, below the connectors, holds
    the policy while the planner applies it to declarations and plans
    (``planner/checks.py``)."""
    graph = import_graph(type_checking=True)
    packages: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        packages.setdefault(_package(mod), set()).update(
            _package(d) for d in deps if _package(d) != _package(mod))
    for deps in list(packages.values()):
        for d in deps:
            packages.setdefault(d, set())
    assert {"streamjob.connectors", "streamjob.security"} <= set(packages)  # really read
    assert cycles(packages) == []


#: The rooms whose knowledge is bound into a job's plan before the Spark room builds its
#: query (issue 29, second pass): the planner's plan, the connectors' readers and sink,
#: the security room's secrets.
BOUND_BEFORE_SPARK = ("streamjob.connectors", "streamjob.planner", "streamjob.security")


def test_the_spark_room_builds_the_query_from_the_bound_plan_alone():
    """``spark/query.py`` and the helpers it applies readers with (observed metrics, JSON
    keys) import nothing of the planner, the connectors or the security room, at module
    or function level, annotations included: every reader comes described in full
    (``planner/bind.py``, each connector's ``reader``/``table_reader``) and the sink
    built and prepared by the job manager, so a walk of START to a running query enters
    the Spark room once and never climbs back to ask."""
    graph = import_graph(type_checking=True)
    assert "streamjob.planner.bind" in graph["streamjob.manager.attempt"]  # really read
    assert "streamjob.spark.run" in graph["streamjob.manager.attempt"]
    assert "streamjob.spark.query" in graph["streamjob.spark.run"]
    for mod in ("streamjob.spark.run", "streamjob.spark.query", "streamjob.spark.observe",
                "streamjob.spark.json_keys"):
        assert {d for d in graph[mod] if _package(d) in BOUND_BEFORE_SPARK} == set(), mod


def test_each_side_of_an_attempt_imports_none_of_the_others():
    """One run of a job's query is built by one object per room, entered once each from
    the top down (``manager/attempt.py``): the checkpoint side
    (``checkpoint/run.py``), the connector side (``connectors/run.py``), the Spark side
    (``spark/run.py``). What one needs of another comes in as values and callables, so
    none imports another side or the job manager, annotations included."""
    graph = import_graph(type_checking=True)
    sides = {"streamjob.checkpoint.run": ("streamjob.connectors", "streamjob.spark"),
             "streamjob.connectors.run": ("streamjob.checkpoint", "streamjob.spark"),
             "streamjob.spark.run": ("streamjob.checkpoint", "streamjob.connectors")}
    for mod, others in sides.items():
        assert mod in graph["streamjob.manager.attempt"]  # really read
        assert {d for d in graph[mod]
                if _package(d) in (*others, "streamjob.manager")} == set(), mod
