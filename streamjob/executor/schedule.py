"""Scheduled maintenance of lakehouse tables (issue 32; docs/connectors.md "Delta
table", "Maintenance on a schedule"): the server runs ``OPTIMIZE TABLE t`` and ``VACUUM
TABLE t RETAIN n HOURS`` on each Delta or Iceberg table whose TBLPROPERTIES ask for it
(``"optimize.interval"``, ``"vacuum.interval"``, ``"vacuum.retain.hours"``).

Why table properties and not job properties: maintenance belongs to the table. Several
jobs may write one table, or none (another engine feeds it); a job's property would
compact a table twice when two jobs write it, and stop when the job is dropped while
the table lives on.

The statements run through the executor exactly as a caller's would, so every refusal
holds: the role and path rules (DESIGN §9), and VACUUM's refusal while a job reads
files it would delete. They run with an **operator's** rights (principal
``server:maintenance``): TBLPROPERTIES are an operator's to write, so the schedule
reaches no further than an operator may; a table outside the admin's file roots is
refused on schedule (logged; the admin runs the statement). A refusal or failure is
logged and tried again at the next interval.

When a table is due: its interval has passed since the later of this server's last
attempt and the last such maintenance its log records (Delta: ``OPTIMIZE``, ``VACUUM
END`` commits; Iceberg: the newest ``replace`` snapshot, no VACUUM recorded; by anyone;
:func:`streamjob.connectors.lakehouse.last_maintained`), so a restarted server does not
run everything again at once. One
server runs the schedule: the holder of the manager lease (``active``), checked every
``check_s`` seconds in its own thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ..exceptions import StreamJobError

log = logging.getLogger(__name__)

__all__ = ["MaintenanceService", "PRINCIPAL"]

PRINCIPAL = "server:maintenance"
"""The principal scheduled maintenance runs as (statement log, messages)."""


class MaintenanceService:
    """The schedule of one server (module docstring).

    Args:
        catalog: the catalog (a clone is used in the thread).
        home: the streamjob home (its admin's rules).
        check_s: seconds between two looks at the schedule (> 0).
        active: whether this server runs the schedule now (the lease holder's).
        clock: ms since the epoch (tests pass their own).
    """

    def __init__(self, catalog, home, check_s: float = 30.0,
                 active: Callable[[], bool] | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        if check_s <= 0:
            raise ValueError(f"check_s must be > 0, got {check_s}")
        self.catalog, self.home, self.check_s = catalog, home, check_s
        self._active = active or (lambda: True)
        self._clock = clock or (lambda: int(time.time() * 1000))
        self._last: dict[tuple[str, str], int] = {}  # (table, what) -> ms of the last try
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def due(self, now_ms: int) -> list[tuple[object, str, dict]]:
        """``[(table record, "optimize" | "vacuum", schedule)]`` due at ``now_ms``.

        Raises:
            CatalogError: the catalog cannot be read.
        """
        from ..connectors import lakehouse
        from ..connectors import spec as cspec

        out = []
        for table in self.catalog.list_tables():
            try:
                spec = cspec.spec_of_table(table, self.home.table_location(table.database,
                                                                           table.name))
                plan = lakehouse.schedule(spec)
            except StreamJobError:
                continue
            for what in ("optimize", "vacuum"):
                every = plan.get(what)
                if every is None:
                    continue
                key = (table.qualified_name, what)
                if key not in self._last:
                    try:
                        self._last[key] = lakehouse.last_maintained(spec, what) or 0
                    except StreamJobError:
                        self._last[key] = 0
                if now_ms - self._last[key] >= every:
                    out.append((table, what, plan))
        return out

    def run_once(self, now_ms: int | None = None) -> list[tuple[str, str, str]]:
        """Run what is due: ``[(table, "optimize" | "vacuum", outcome)]``, the outcome
        the statement's message or ``refused: <why>``; each logged.

        Raises:
            CatalogError: the catalog cannot be read.
        """
        from ..catalog.records import Role
        from ..grammar import parse_script
        from . import Executor

        now = self._clock() if now_ms is None else now_ms
        done = []
        for table, what, plan in self.due(now):
            self._last[(table.qualified_name, what)] = now
            text = (f"OPTIMIZE TABLE {table.qualified_name}" if what == "optimize" else
                    f"VACUUM TABLE {table.qualified_name} RETAIN {plan['retain_hours']} HOURS")
            ex = Executor(self.catalog, self.home, role=Role.OPERATOR, principal=PRINCIPAL)
            try:
                [stmt] = parse_script(text)
                outcome = ex.execute(stmt).message or "done"
                log.info("scheduled %s: %s", text, outcome)
            except StreamJobError as exc:
                outcome = f"refused: {exc.message}"
                log.warning("scheduled %s %s", text, outcome)
            done.append((table.qualified_name, what, outcome))
        return done

    def start(self) -> "MaintenanceService":
        """Start the thread (the first look at once); returns self.

        Raises:
            RuntimeError: already started.
        """
        if self._thread is not None:
            raise RuntimeError("the maintenance service is already started")
        self.catalog = self.catalog.clone()
        self._thread = threading.Thread(target=self._loop, name="streamjob-maintenance",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread, waiting up to ``timeout`` seconds (a running OPTIMIZE or
        VACUUM finishes first); idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self._active():
                    self.run_once()
            except Exception:  # noqa: BLE001 - the thread must go on; logged
                log.exception("scheduled maintenance failed")
            self._stop.wait(self.check_s)
