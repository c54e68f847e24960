"""SET / RESET: the session's defaults for job properties (DESIGN §3).

A session is what one client keeps between statements: a shell session, the rest of a
script (``submit``, ``run``, ``-e``), every ``-e`` of one invocation, the ``properties``
a client of the HTTP API sends back. SET says what its value is for: streamjobs created
later in the session capture it (as Flink SQL's ``SET`` applies to jobs submitted after
it); existing streamjobs keep theirs (``ALTER STREAMJOB`` changes them). A front end that
knows nothing follows in the session (the last statement of ``-e``) says so
(:func:`streamjob.cli.execute.execute_text`).
"""

from __future__ import annotations

from .. import properties as jp
from ..grammar import statements as st
from ..planner import checks
from .result import Result


class SessionStatements:
    """``SET k=v``, ``SET``, ``RESET [k]`` of :class:`~streamjob.executor.Executor`.

    A job created in this session keeps the session's values at that moment (its
    DESCRIBE shows them with origin SET); later SETs do not change existing jobs.
    """

    def _do_SetProperty(self, s: st.SetProperty) -> Result:
        if s.key is None:
            rows = [(k, jp.display(k, v.value), v.origin)
                    for k, v in jp.effective({}, self.session_props).items()]
            return Result(columns=("property", "value", "origin"), rows=rows,
                          title="session properties")
        value = (s.value or "").strip()
        checked = jp.validate({s.key: value})
        checks.check_job_properties(self.home.policy, checked, self.confined)
        self.set_session_props(checked)
        (name, raw), = checked.items()
        return Result("\n".join([f"{name}={jp.mask(name, raw)}{set_scope(name)}",
                                  *jp.notices(checked)]))

    def _do_ResetProperty(self, s: st.ResetProperty) -> Result:
        if s.key is None:
            self.reset_session_props()
            return Result("session properties reset")
        key = s.key.strip().lower()
        if key not in self.session_props:
            key = jp.lookup(key).name
        self.reset_session_props(key)
        return Result(f"{key} reset: streamjobs created later in this session take its "
                      "default")


def set_scope(name: str) -> str:
    """What a ``SET name=...`` is for, as its message's tail: streamjobs created later in
    the session; for a ``spark.sql.*`` setting, the session's SELECT previews too (they
    run with the session's Spark settings, :mod:`streamjob.planner.preview`)."""
    also = " and its SELECT previews" if name.startswith("spark.sql.") else ""
    return (f" (for streamjobs created later in this session{also}; existing streamjobs "
            "keep theirs)")
