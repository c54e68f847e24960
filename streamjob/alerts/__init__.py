"""Alerts (issue 15): per-job rules as job properties, evaluated on the status snapshot
and delivered to webhooks.

* :mod:`.rules` — :class:`AlertRules` (``streamjob.alert.*`` job properties),
  :class:`AlertEvaluator` (snapshot -> FIRING/RESOLVED :class:`Alert` s, de-duplicated
  per job uid and rule);
* :mod:`.webhook` — :class:`WebhookSender` (JSON POST, retries with backoff on
  background threads, masked logs);
* :mod:`.service` — :class:`AlertService` (the periodic runner a server starts).

The rules follow what Flink and ksqlDB users ask of their job managers (alert on a
failed job, on stalled checkpoints, on consumer lag); the notifications follow
Prometheus Alertmanager's webhook receiver (firing/resolved, fingerprint, starts/ends).
"""

from __future__ import annotations

from .rules import FIRING, RESOLVED, RULES, Alert, AlertEvaluator, AlertRules, fingerprint, rules_of
from .service import AlertService
from .webhook import WebhookSender

__all__ = ["FIRING", "RESOLVED", "RULES", "Alert", "AlertEvaluator", "AlertRules",
           "AlertService", "WebhookSender", "fingerprint", "rules_of"]
