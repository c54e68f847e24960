"""Delivery of alerts to webhooks: one JSON POST per alert, retried with exponential
backoff on background threads, never raising and never blocking the evaluation.

The body is :meth:`streamjob.alerts.rules.Alert.payload` (Prometheus Alertmanager's
webhook receiver in spirit: status firing/resolved, a fingerprint, starts_at/ends_at).
A ``user:password`` in the webhook URL is sent as HTTP basic auth, never as part of the
URL httpx logs; every URL this module logs is masked (:func:`streamjob.sensitive.mask_url`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from ..sensitive import mask_text, mask_url
from .rules import Alert

log = logging.getLogger(__name__)

#: HTTP statuses worth retrying besides 5xx (timeout, rate limit); other 4xx are final.
RETRYABLE_4XX = (408, 425, 429)


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``(url without user:password, (user, password) or None)``, percent-decoded.

    ``https://u:p%40ss@h/x`` -> ``("https://h/x", ("u", "p@ss"))``.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), (unquote(user), unquote(password))


class _MaskUrls(logging.Filter):
    """Masks credentials in the arguments of httpx's own request log lines
    (``HTTP Request: POST <url> ...``), e.g. a ``?token=`` in a webhook URL."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(mask_text(str(a)) if isinstance(a, httpx.URL) else a
                                for a in record.args)
        return True


_FILTER = _MaskUrls()


class WebhookSender:
    """Delivers :class:`~streamjob.alerts.rules.Alert` s to their webhooks.

    :meth:`send` queues and returns at once; one daemon thread per webhook URL POSTs that
    URL's alerts in order (a FIRING before its RESOLVED), each with up to ``retries``
    retries after ``backoff_s``, 2 x ``backoff_s``, 4 x ... seconds (defaults: 4
    attempts, waits 0.5 s, 1 s, 2 s). A 2xx answer delivers; a connection error, a
    timeout, a 5xx, 408, 425 or 429 is retried; another 4xx is final. An alert not
    delivered is dropped and logged at WARNING naming the rule, the job and the masked
    URL, once per webhook while it stays down (then at DEBUG, until it accepts one
    again, logged at INFO). Nothing here raises into the caller.

    Args:
        retries: retries after the first attempt (>= 0).
        backoff_s: the first wait between attempts, seconds; it doubles per retry.
        timeout_s: timeout of each request (connect, read, write), seconds.
        client_factory: makes one ``httpx.Client`` per webhook thread (tests may pass
            their own); default ``httpx.Client(timeout=timeout_s)``.
    """

    def __init__(self, retries: int = 3, backoff_s: float = 0.5, timeout_s: float = 5.0,
                 client_factory: Callable[[], httpx.Client] | None = None) -> None:
        if retries < 0 or backoff_s < 0 or timeout_s <= 0:
            raise ValueError("retries and backoff_s must be >= 0, timeout_s > 0")
        self.retries, self.backoff_s, self.timeout_s = retries, backoff_s, timeout_s
        self._client_factory = client_factory or (lambda: httpx.Client(timeout=timeout_s))
        self._lock = threading.Condition()
        self._workers: dict[str, tuple[threading.Thread, queue.SimpleQueue]] = {}
        self._pending = 0
        self._down: set[str] = set()
        self._closing = threading.Event()
        self.delivered = 0
        self.dropped = 0
        httpx_log = logging.getLogger("httpx")
        if _FILTER not in httpx_log.filters:
            httpx_log.addFilter(_FILTER)

    def send(self, alert: Alert) -> None:
        """Queue ``alert`` for delivery to ``alert.webhook``; returns at once. Ignored
        (logged at DEBUG) once :meth:`close` has begun."""
        if self._closing.is_set():
            log.debug("alert %s of job %s not sent: the sender is closed", alert.rule, alert.job)
            return
        with self._lock:
            worker = self._workers.get(alert.webhook)
            if worker is None:
                q: queue.SimpleQueue = queue.SimpleQueue()
                thread = threading.Thread(target=self._run, args=(alert.webhook, q),
                                          name="streamjob-alert-webhook", daemon=True)
                worker = self._workers[alert.webhook] = (thread, q)
                thread.start()
            self._pending += 1
            worker[1].put(alert)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued alert is delivered or dropped; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the threads: alerts still queued get one attempt each, no more retries;
        waits up to ``timeout`` seconds in all."""
        self._closing.set()
        with self._lock:
            workers = list(self._workers.values())
        for _thread, q in workers:
            q.put(None)
        end = time.monotonic() + timeout
        for thread, _q in workers:
            thread.join(max(0.0, end - time.monotonic()))

    # --------------------------------------------------------------------- internals

    def _run(self, url: str, q: queue.SimpleQueue) -> None:
        try:
            client = self._client_factory()
        except Exception as exc:  # a bad factory must not kill silently
            log.warning("alert webhook %s: no HTTP client: %s", mask_url(url), mask_text(str(exc)))
            client = None
        try:
            while True:
                alert = q.get()
                if alert is None:
                    return
                ok = False
                try:
                    ok = client is not None and self._deliver(client, url, alert)
                except Exception as exc:  # never let one alert kill the thread
                    log.warning("alert %s of job %s to webhook %s failed: %s", alert.rule,
                                alert.job, mask_url(url), mask_text(repr(exc)))
                finally:
                    with self._lock:
                        if ok:
                            self.delivered += 1
                        else:
                            self.dropped += 1
                        self._pending -= 1
                        self._lock.notify_all()
        finally:
            if client is not None:
                client.close()

    def _deliver(self, client: httpx.Client, url: str, alert: Alert) -> bool:
        from ..exceptions import StreamJobError
        from ..security.resolve import resolve_url

        try:  # a password sealed in the catalog (streamjob/security/sealed.py)
            target, auth = split_credentials(resolve_url(url, "the alert webhook"))
        except StreamJobError as exc:
            log.warning("alert %s of job %s not delivered to %s: %s", alert.rule, alert.job,
                        mask_url(url), exc)
            return False
        body: dict[str, Any] = alert.payload()
        attempts, problem = 0, "not attempted"
        for attempt in range(self.retries + 1):
            if attempt and self._closing.wait(self.backoff_s * 2 ** (attempt - 1)):
                break  # closing: no more retries
            attempts += 1
            try:
                response = client.post(target, json=body, auth=auth)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {mask_text(str(exc)) or 'no detail'}"
                continue
            if response.is_success:
                if url in self._down:
                    self._down.discard(url)
                    log.info("alert webhook %s accepts alerts again", mask_url(url))
                return True
            problem = f"HTTP {response.status_code}"
            if response.status_code < 500 and response.status_code not in RETRYABLE_4XX:
                break
        if url not in self._down:
            self._down.add(url)
            log.warning("alert %s (%s) of job %s dropped: webhook %s did not accept it "
                        "after %d attempt(s), last: %s; further failures of this webhook "
                        "are logged at DEBUG until it accepts one", alert.rule, alert.status,
                        alert.job, mask_url(url), attempts, problem)
        else:
            log.debug("alert %s (%s) of job %s dropped: webhook %s still fails (%s)",
                      alert.rule, alert.status, alert.job, mask_url(url), problem)
        return False
