"""Catalog methods for the HTTP API's clients (issue 15, DESIGN §8): bearer tokens, the
statement log, and each job's progress samples.

Tokens: only a token's SHA-256 hash is stored (a token is 256 random bits, so a plain
hash is as strong as a slow one; GitHub and PyPI store API tokens the same way); the
token is shown once, by ``streamjob token create``. The statement log records who
executed which kind of statement on which object, never the text (it may carry secrets,
DESIGN §9). Progress samples are a job's rates and lag over time, written by its job
manager at most every :data:`SAMPLE_EVERY_S` seconds and pruned after
:data:`SAMPLE_RETENTION_S`; dropping the job deletes them.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any, Mapping

from sqlalchemy import delete, func, select, update

from streamjob.catalog.engine import CatalogEngine, now_utc
from streamjob.catalog.models import ApiToken, Job, ProgressSample, StatementLog
from streamjob.catalog.records import (
    ProgressSampleInfo,
    Role,
    StatementLogEntry,
    TokenInfo,
)
from streamjob.exceptions import ObjectExistsError, ObjectNotFoundError

__all__ = ["AccessMixin", "hash_token", "SAMPLE_EVERY_S", "SAMPLE_RETENTION_S"]

#: Seconds between two progress samples of one job.
SAMPLE_EVERY_S = 5.0
#: Seconds a progress sample is kept (a day: the console's charts show the last hour).
SAMPLE_RETENTION_S = 24 * 3600.0
#: Characters of an error kept in the statement log.
LOG_ERROR_CHARS = 2000
#: Seconds between two writes of a token's ``last_used_at`` (a request is a read; it
#: writes the catalog at most this often per token).
LAST_USED_EVERY_S = 60.0


def hash_token(token: str) -> str:
    """The SHA-256 hex digest (64 characters) under which ``token`` is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _token_info(row: ApiToken) -> TokenInfo:
    return TokenInfo(name=row.name, role=row.role, created_at=row.created_at,
                     last_used_at=row.last_used_at)


class AccessMixin(CatalogEngine):
    """Tokens (``create_token`` ... ``authenticate``), the statement log
    (``log_statement``, ``statement_log``) and progress samples (``add_progress_sample``,
    ``progress_samples``)."""

    # ------------------------------------------------------------------ tokens

    def create_token(self, name: str, role: str, token: str) -> TokenInfo:
        """Store a new token under ``name`` (its hash only).

        Raises:
            ValueError: ``role`` is not a :class:`Role` or ``name`` is empty.
            ObjectExistsError: a token of that name exists.
        """
        if not name or len(name) > 255:
            raise ValueError("a token name is 1 to 255 characters")
        role = Role(role).value
        with self._tx(write=True) as session:
            if session.get(ApiToken, name) is not None:
                raise ObjectExistsError(f"token {name} already exists (revoke it first)")
            row = ApiToken(name=name, token_hash=hash_token(token), role=role,
                           created_at=now_utc())
            session.add(row)
            session.flush()
            return _token_info(row)

    def list_tokens(self) -> list[TokenInfo]:
        """Every token, by name."""
        with self._tx() as session:
            return [_token_info(r) for r in session.scalars(select(ApiToken).order_by(ApiToken.name))]

    def revoke_token(self, name: str) -> TokenInfo:
        """Delete the token ``name``; requests carrying it get 401 from then on.

        Raises:
            ObjectNotFoundError: no token of that name.
        """
        with self._tx(write=True) as session:
            row = session.get(ApiToken, name)
            if row is None:
                raise ObjectNotFoundError(f"token {name} does not exist")
            info = _token_info(row)
            session.delete(row)
            return info

    def tokens_exist(self) -> bool:
        """True when at least one token exists (``streamjob server --http`` creates the
        first one when none does; having none never opens the API)."""
        with self._tx() as session:
            return bool(session.scalar(select(func.count()).select_from(ApiToken)))

    def token_valid(self, digest: str) -> bool:
        """True while a token of SHA-256 ``digest`` exists (not revoked); a read only."""
        with self._tx() as session:
            return session.scalar(select(ApiToken.name).where(ApiToken.token_hash == digest)) is not None

    def authenticate(self, token: str) -> TokenInfo | None:
        """The token's record if ``token`` is a valid one, else None; an invalid token
        changes nothing. A valid one's ``last_used_at`` is set to now when it is unset
        or older than :data:`LAST_USED_EVERY_S` (so requests do not each write)."""
        digest = hash_token(token)
        with self._tx() as session:
            row = session.scalars(select(ApiToken).where(ApiToken.token_hash == digest)).first()
            if row is None:
                return None
            info = _token_info(row)
        now = now_utc()
        last = info.last_used_at
        if last is not None and last.tzinfo is None:
            last = last.replace(tzinfo=now.tzinfo)
        if last is not None and (now - last).total_seconds() < LAST_USED_EVERY_S:
            return info
        with self._tx(write=True) as session:
            session.execute(update(ApiToken).where(ApiToken.name == info.name)
                            .values(last_used_at=now))
        return TokenInfo(name=info.name, role=info.role, created_at=info.created_at,
                         last_used_at=now)

    # ------------------------------------------------------------------ statement log

    def log_statement(self, principal: str, kind: str, object: str | None, ok: bool,
                      error: str | None = None) -> None:
        """Record that ``principal`` executed a statement of ``kind`` on ``object``; an
        ``error`` is stored masked (:func:`streamjob.sensitive.mask_text`, DESIGN §9)."""
        from streamjob.sensitive import mask_text

        error = mask_text(error) if error else None
        with self._tx(write=True) as session:
            session.add(StatementLog(at=now_utc(), principal=principal[:255], kind=kind[:64],
                                     object=object[:511] if object else None, ok=bool(ok),
                                     error=error[:LOG_ERROR_CHARS] if error else None))

    def statement_log(self, limit: int = 100) -> list[StatementLogEntry]:
        """The latest ``limit`` statements, newest first."""
        with self._tx() as session:
            rows = session.scalars(select(StatementLog).order_by(StatementLog.id.desc())
                                   .limit(max(1, int(limit))))
            return [StatementLogEntry(at=r.at, principal=r.principal, kind=r.kind,
                                      object=r.object, ok=r.ok, error=r.error) for r in rows]

    # ------------------------------------------------------------------ progress samples

    def add_progress_sample(self, job_uid: str, progress: Mapping[str, Any],
                            at: datetime | None = None) -> None:
        """Append one sample of a job's progress (the mapping of
        :meth:`update_progress`) and prune its samples older than
        :data:`SAMPLE_RETENTION_S`. A uid the catalog no longer holds is ignored."""
        at = at or now_utc()

        def num(key, kind):
            value = progress.get(key)
            try:
                return None if value is None else kind(value)
            except (TypeError, ValueError):
                return None

        with self._tx(write=True) as session:
            job_id = session.scalar(select(Job.id).where(Job.uid == job_uid))
            if job_id is None:
                return
            session.add(ProgressSample(
                job_id=job_id, at=at, batch_id=num("batch_id", int),
                input_rows_per_s=num("input_rows_per_s", float),
                processed_rows_per_s=num("processed_rows_per_s", float),
                lag_records=num("lag_records", int)))
            session.execute(delete(ProgressSample).where(
                ProgressSample.job_id == job_id,
                ProgressSample.at < at - timedelta(seconds=SAMPLE_RETENTION_S)))

    def progress_samples(self, job_uid: str, since: datetime | None = None,
                         limit: int = 2000) -> list[ProgressSampleInfo]:
        """The job's samples since ``since`` (default: all kept), oldest first, at most
        ``limit`` (the newest ones)."""
        with self._tx() as session:
            query = (select(ProgressSample).join(Job, Job.id == ProgressSample.job_id)
                     .where(Job.uid == job_uid))
            if since is not None:
                query = query.where(ProgressSample.at >= since)
            rows = list(session.scalars(query.order_by(ProgressSample.at.desc())
                                        .limit(max(1, int(limit)))))
            return [ProgressSampleInfo(at=r.at, batch_id=r.batch_id,
                                       input_rows_per_s=r.input_rows_per_s,
                                       processed_rows_per_s=r.processed_rows_per_s,
                                       lag_records=r.lag_records) for r in reversed(rows)]
