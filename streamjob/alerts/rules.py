"""A job's alert rules and their evaluation against the status snapshot (issue 15).

The rules are job properties (``streamjob.alert.*``, documented in
``docs/properties.md``), so they layer like every job property (default < ``SET`` <
JOBPROPERTIES) and ``ALTER STREAMJOB j SET JOBPROPERTIES(...)`` changes them; they are
read again at every evaluation:

* ``failed``: the job is in status FAILED (always on when a webhook is set);
* ``checkpoint_age``: the job is RUNNING and its last completed checkpoint is older than
  ``streamjob.alert.checkpoint.age`` ms (it stopped checkpointing);
* ``lag``: the source lag stays above ``streamjob.alert.lag.records`` records for
  ``streamjob.alert.lag.for`` ms (Prometheus' ``for:`` clause: pending, then firing).

These are the alerts Flink and ksqlDB users ask for on their jobs (failed job, stalled
checkpoints, consumer lag); the transitions and their payload follow Prometheus
Alertmanager: an alert is FIRING once when its condition becomes true and RESOLVED once
when it becomes false again, identified by a stable fingerprint.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from .. import properties as jp
from ..catalog.records import JobInfo, JobStatus
from ..exceptions import PropertyError
from ..status import parse_time

log = logging.getLogger(__name__)

#: The rules, in the order they are evaluated for each job.
RULES = ("failed", "checkpoint_age", "lag")
FIRING, RESOLVED = "firing", "resolved"
#: Longest error text carried in an alert's summary and value (characters).
MAX_ERROR_CHARS = 1000


@dataclass(frozen=True)
class AlertRules:
    """A job's alert rules, from its effective job properties.

    ``webhook``: the URL alerts are POSTed to, None = no alerts; ``checkpoint_age_ms``:
    ms, 0 = off; ``lag_records``: records, 0 = off; ``lag_for_ms``: ms.
    """

    webhook: str | None
    checkpoint_age_ms: int = 0
    lag_records: int = 0
    lag_for_ms: int = 60_000

    @classmethod
    def of(cls, props: jp.JobProperties) -> "AlertRules":
        """The rules of typed effective job properties."""
        return cls(props.alert_webhook or None, props.alert_checkpoint_age_ms,
                   props.alert_lag_records, props.alert_lag_for_ms)


def rules_of(job: JobInfo) -> AlertRules:
    """The alert rules of a catalog job: its effective properties (default < the SET
    values captured at CREATE < JOBPROPERTIES), as :func:`streamjob.properties.values`.

    Raises:
        PropertyError: a stored property value no longer parses.
    """
    return AlertRules.of(jp.values(job.properties, job.session_properties))


def fingerprint(job_uid: str, rule: str) -> str:
    """A stable id of one rule of one job incarnation (16 hex digits): the same for its
    FIRING and RESOLVED notifications, different for a dropped and recreated job."""
    return hashlib.sha256(f"{job_uid}/{rule}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Alert:
    """One transition of one rule of one job, to be delivered to ``webhook``.

    ``status`` is ``firing`` or ``resolved``; ``job`` the qualified name
    (``default.j``) and ``job_uid`` its incarnation; ``value`` and ``threshold`` are in
    ``unit`` (``ms`` for checkpoint_age, ``records`` for lag; for failed ``value`` is
    the job's error text, masked by the catalog, and there is no threshold);
    ``starts_at`` is when the alert started firing, ``ends_at`` when it resolved (None
    while firing), both aware UTC datetimes.
    """

    status: str
    job: str
    job_uid: str
    rule: str
    summary: str
    value: Any
    threshold: Any
    unit: str | None
    starts_at: datetime
    ends_at: datetime | None
    webhook: str

    @property
    def fingerprint(self) -> str:
        """:func:`fingerprint` of the job's uid and the rule."""
        return fingerprint(self.job_uid, self.rule)

    def payload(self) -> dict[str, Any]:
        """The JSON body POSTed to the webhook (Alertmanager's webhook payload in
        spirit, one alert per request): status, job, job_uid, rule, summary, value,
        threshold, unit, starts_at, ends_at (ISO-8601 UTC, ends_at null while firing),
        fingerprint. The webhook URL itself is not in it."""
        return {
            "status": self.status, "job": self.job, "job_uid": self.job_uid,
            "rule": self.rule, "summary": self.summary, "value": self.value,
            "threshold": self.threshold, "unit": self.unit,
            "starts_at": _iso(self.starts_at),
            "ends_at": _iso(self.ends_at) if self.ends_at else None,
            "fingerprint": self.fingerprint,
        }


@dataclass
class _Firing:
    """A rule firing now: since when, where its FIRING went (its RESOLVED goes there
    too), and the job's name then."""

    starts_at: datetime
    webhook: str
    job: str
    threshold: Any
    unit: str | None


@dataclass(frozen=True)
class _Condition:
    active: bool
    value: Any
    threshold: Any
    unit: str | None
    summary: str


class AlertEvaluator:
    """Turns status snapshots into alert transitions, remembering what fires.

    Call :meth:`evaluate` with each new snapshot (in ``now`` order); it returns the
    FIRING and RESOLVED :class:`Alert` s that happened since the previous call. One
    FIRING per (job uid, rule) until it resolves; state is kept per job uid, so a job
    dropped and recreated under the same name starts fresh (the old incarnation's
    firing alerts resolve as dropped). State lives in memory: a new evaluator (a
    restarted server) notifies what still fires once more, with the same fingerprint.
    Thread-safe (one lock), though one caller at a time is the intended use.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._firing: dict[tuple[str, str], _Firing] = {}
        self._status: dict[str, str] = {}
        #: uid -> (when it was seen entering RUNNING, whether the entry was observed)
        self._running: dict[str, tuple[datetime, bool]] = {}
        self._lag_since: dict[str, datetime] = {}
        self._unreadable: set[str] = set()

    def firing(self) -> list[tuple[str, str]]:
        """The (job uid, rule) pairs firing now."""
        with self._lock:
            return sorted(self._firing)

    def evaluate(self, snapshot: Mapping[str, Any], now: datetime,
                 jobs: Iterable[JobInfo]) -> list[Alert]:
        """The alert transitions at ``now``.

        Args:
            snapshot: :func:`streamjob.status.status_snapshot` (``{"jobs": [{"job",
                "status", "lag_records", "last_checkpoint_at", "error", ...}]}``); only
                ``jobs`` is read.
            now: the evaluation time, an aware datetime (naive = UTC); the checkpoint
                age is measured to it (from ``last_checkpoint_at``), and lag.for by it.
            jobs: the catalog's jobs (``catalog.list_jobs()``), for each job's uid and
                effective properties; matched to the snapshot's rows by qualified name.
                A job uid firing before and absent from ``jobs`` was dropped: its alerts
                resolve. A job without a snapshot row is left as it was.

        Returns:
            FIRING and RESOLVED alerts, in job then rule order (resolutions of dropped
            jobs last). Rules are checked only for jobs with a webhook; a job whose
            stored properties no longer parse is skipped (logged once at WARNING).
        """
        now = _utc(now)
        rows = {row.get("job"): row for row in snapshot.get("jobs", ())}
        out: list[Alert] = []
        with self._lock:
            alive = set()
            for job in jobs:
                alive.add(job.uid)
                row = rows.get(job.qualified_name)
                if row is not None:
                    out += self._job(job, row, now)
            for key in [k for k in self._firing if k[0] not in alive]:
                firing = self._firing.pop(key)
                out.append(self._resolved(key, firing, now, None,
                                          f"job {firing.job} was dropped"))
            for state in (self._status, self._running, self._lag_since):
                for uid in [u for u in state if u not in alive]:
                    del state[uid]
            self._unreadable &= alive
        return out

    # --------------------------------------------------------------------- internals

    def _job(self, job: JobInfo, row: Mapping[str, Any], now: datetime) -> list[Alert]:
        uid, status = job.uid, row.get("status")
        previous = self._status.get(uid)
        self._status[uid] = status
        if status == JobStatus.RUNNING and previous != JobStatus.RUNNING:
            self._running[uid] = (now, previous is not None)
        elif status != JobStatus.RUNNING:
            self._running.pop(uid, None)
        try:
            rules = rules_of(job)
        except PropertyError as exc:
            if uid not in self._unreadable:
                self._unreadable.add(uid)
                log.warning("alerts of job %s are not evaluated: %s", job.qualified_name, exc)
            return []
        self._unreadable.discard(uid)
        out = []
        for rule in RULES:
            cond = getattr(self, f"_{rule}")(uid, job.qualified_name, row, rules, now)
            key = (uid, rule)
            firing = self._firing.get(key)
            if cond.active and rules.webhook and firing is None:
                firing = _Firing(now, rules.webhook, job.qualified_name, cond.threshold, cond.unit)
                self._firing[key] = firing
                out.append(Alert(FIRING, job.qualified_name, uid, rule, cond.summary,
                                 cond.value, cond.threshold, cond.unit, now, None, rules.webhook))
            elif firing is not None and not (cond.active and rules.webhook):
                del self._firing[key]
                summary = cond.summary if rules.webhook else (
                    f"alerts of job {job.qualified_name} were turned off")
                out.append(self._resolved(key, firing, now, cond.value, summary))
        return out

    @staticmethod
    def _resolved(key: tuple[str, str], firing: _Firing, now: datetime, value: Any,
                  summary: str) -> Alert:
        return Alert(RESOLVED, firing.job, key[0], key[1], summary, value, firing.threshold,
                     firing.unit, firing.starts_at, now, firing.webhook)

    def _failed(self, uid, name, row, rules, now) -> _Condition:
        status = row.get("status")
        error = row.get("error")
        if isinstance(error, str) and len(error) > MAX_ERROR_CHARS:
            error = error[:MAX_ERROR_CHARS] + "..."
        if status == JobStatus.FAILED:
            return _Condition(True, error, None, None,
                              f"job {name} FAILED" + (f": {error}" if error else ""))
        return _Condition(False, error, None, None, f"job {name} is {status}, no longer FAILED")

    def _checkpoint_age(self, uid, name, row, rules, now) -> _Condition:
        """The age is measured from the last completed checkpoint; when the evaluator
        saw the job enter RUNNING (a start or restart), from no earlier than that, so a
        restarted job gets ``checkpoint.age`` to complete its first checkpoint. A job
        first seen RUNNING without any checkpoint is measured from that sight."""
        threshold = rules.checkpoint_age_ms
        if threshold <= 0 or row.get("status") != JobStatus.RUNNING:
            return _Condition(False, None, threshold or None, "ms",
                              f"job {name} is {row.get('status')}: checkpoint age not checked")
        since, observed = self._running.get(uid, (now, False))
        last = parse_time(row.get("last_checkpoint_at"))
        ref = (max(last, since) if observed else last) if last else since
        age = max(0, int((now - ref).total_seconds() * 1000))
        if age > threshold:
            what = ("completed no checkpoint" if last is None or ref != last
                    else "completed no checkpoint since " + _iso(last))
            return _Condition(True, age, threshold, "ms",
                              f"job {name} {what} for {_duration(age)} "
                              f"(streamjob.alert.checkpoint.age {_duration(threshold)})")
        return _Condition(False, age, threshold, "ms",
                          f"job {name} checkpoints again: last one {_duration(age)} ago")

    def _lag(self, uid, name, row, rules, now) -> _Condition:
        threshold, lag = rules.lag_records, row.get("lag_records")
        if threshold <= 0 or not isinstance(lag, (int, float)) or lag <= threshold:
            self._lag_since.pop(uid, None)
            return _Condition(False, lag, threshold or None, "records",
                              f"job {name} lag is "
                              + ("unknown" if lag is None else f"{lag} records")
                              + (f", at most {threshold}" if threshold > 0 and lag is not None else ""))
        since = self._lag_since.setdefault(uid, now)
        held = int((now - since).total_seconds() * 1000)
        return _Condition(held >= rules.lag_for_ms, lag, threshold, "records",
                          f"job {name} lags {lag} records behind its sources, above "
                          f"{threshold} for {_duration(held)} "
                          f"(streamjob.alert.lag.for {_duration(rules.lag_for_ms)})")


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _duration(ms: int) -> str:
    """``1500`` -> ``1.5 s``; ``90000`` -> ``90 s``; under a second in ms."""
    if ms < 1000:
        return f"{ms} ms"
    return f"{ms / 1000:g} s"
