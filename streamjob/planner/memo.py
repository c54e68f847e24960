"""Plans of one script, shared by its two passes: a script is checked whole on a scratch
copy of the catalog before its statements execute (``ClientSession.execute_script``), so
each CREATE STREAMJOB, ALTER, START or EXPLAIN would plan its job twice. A
:class:`PlanMemo` keeps the check's plans, and the execution takes a plan from it when it
plans the same job from the same inputs and every object the plan read is defined as it
was then; otherwise it plans again. A statement thus plans its job once, and a job's run
once per attempt (the job manager plans from the catalog, without a memo).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..catalog import Catalog
from ..home import Home
from .plan import JobPlan, plan_job


class PlanMemo:
    """:func:`~.plan.plan_job`, remembered for one script (module docstring).

    A plan is taken from the memo when the call's arguments other than the catalog are
    equal (database, job name, query, job and session properties, position) and each
    object of :attr:`JobPlan.dependencies` is defined in ``catalog`` as it was when the
    plan was made (columns, properties, row format, query, storage; not uids or
    creation times, which differ on the scratch copy). A job property holding a literal
    secret differs between the passes (sealed in the catalog, as given on the scratch
    copy), so such a job is planned again.
    """

    def __init__(self) -> None:
        self._plans: dict[tuple, tuple[JobPlan, list]] = {}

    def plan(self, catalog: Catalog, home: Home, database: str, name: str, query: str,
             job_props: dict[str, str], session_props: dict[str, str] | None = None,
             position: Any = None) -> JobPlan:
        """The plan :func:`~.plan.plan_job` returns for these arguments; raises what it
        raises."""
        key = (database, name, query, _frozen(job_props), _frozen(session_props), position)
        hit = self._plans.get(key)
        if hit is not None and _definitions(catalog, hit[0]) == hit[1]:
            return hit[0]
        plan = plan_job(catalog, home, database, name, query, job_props, session_props,
                        position)
        self._plans[key] = (plan, _definitions(catalog, plan))
        return plan


def _frozen(props: dict | None) -> tuple:
    return tuple(sorted((props or {}).items()))


def _definitions(catalog: Catalog, plan: JobPlan) -> list:
    """How each object the plan read is defined in ``catalog`` now (None: gone)."""
    out = []
    for kind, database, name, _role in plan.dependencies:
        obj = (catalog.get_stream if kind == "stream" else catalog.get_table)(database, name)
        out.append(None if obj is None else
                   {k: v for k, v in dataclasses.asdict(obj).items() if k != "created_at"})
    return out
