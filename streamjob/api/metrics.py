"""``GET /metrics``: the jobs' state in Prometheus' text format (issue 15).

Read from the catalog at each scrape (a custom collector of ``prometheus_client``), so
every server of a catalog, active or standby, reports the same jobs. Names follow
Prometheus' conventions (``streamjob_`` prefix, base units: seconds, rows, records;
counters end in ``_total``), one series per job (label ``job``, ``database.name``):

* ``streamjob_job_status{job,status}``: 1 for the job's status, 0 for the others (a
  state set); ``streamjob_job_desired_running{job}``: 1 while START is in effect;
* ``streamjob_job_input_rows_per_second``, ``streamjob_job_processed_rows_per_second``
  (Spark's rates of the current run's latest batch), ``streamjob_job_lag_records``
  (records the Kafka sources hold that the job has not committed, all partitions:
  :mod:`streamjob.manager.lag`) and ``streamjob_job_partition_lag_records``
  ``{job,topic,partition}``; only while a live job manager runs the job, and only once
  known: a restarted job has no rate series until its run's first batch ends (never
  the previous run's), and no lag series until its run has read the broker;
* ``streamjob_job_last_checkpoint_age_seconds``, ``streamjob_job_last_checkpoint_id``,
  ``streamjob_job_checkpoint_duration_seconds`` (the latest checkpoint's),
  ``streamjob_job_state_rows`` and ``streamjob_job_state_bytes`` (state at the latest
  checkpoint: rows, and bytes as Spark's ``memoryUsedBytes``);
* ``streamjob_job_failures_total`` (runs that ended FAILED), ``streamjob_job_restarts_total``
  (runs after the first), ``streamjob_job_malformed_records_total{job,stream}``,
  ``streamjob_job_expired_checkpoints_total``;
* ``streamjob_server_lease_held``: 1 when this process holds the job manager lease;
  ``streamjob_server_up``: 1 when a live job manager holds it;
* sharing servers (``streamjob server --share``, issue 33): ``streamjob_server_jobs
  {server}``, the jobs each live sharing server runs (the live job leases it holds),
  and ``streamjob_job_lease_takeovers_total{job}``, how often the job's lease was taken
  again after its first taking (its fencing epoch minus one: after its server died,
  exited, lost the lease or handed the job over, or after a STOP and START); of those,
  ``streamjob_job_moves_total{job}`` counts the hand-overs at a checkpoint boundary
  (rebalancing) and ``streamjob_job_lease_losses_total{job}`` the leases its server lost
  (died, froze) that another server took; ``streamjob_server_cores``,
  ``streamjob_server_memory_bytes`` (declared with ``--cores``/``--memory``; absent when
  not declared), ``streamjob_server_cores_used`` and ``streamjob_server_memory_used_bytes``
  (what its jobs need, ``streamjob.placement.cores``/``.memory``) per sharing server, and
  ``streamjob_job_waiting{job}``: 1 while no sharing server can take the RUNNING job.
"""

from __future__ import annotations

from typing import Callable

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..catalog.records import JobStatus, RunStatus


class _JobsCollector:
    def __init__(self, catalog, lease_held: Callable[[], bool] | None) -> None:
        self.catalog, self.lease_held = catalog, lease_held

    def collect(self):  # noqa: C901 - one family after the other
        from ..status import status_snapshot

        snapshot = status_snapshot(self.catalog)
        jobs = {j.qualified_name: j for j in self.catalog.list_jobs()}
        g = {name: GaugeMetricFamily(f"streamjob_{name}", doc, labels=labels) for name, doc, labels in (
            ("job_status", "1 for the job's status, 0 for the others", ["job", "status"]),
            ("job_desired_running", "1 while the job's desired state is RUNNING", ["job"]),
            ("job_input_rows_per_second", "rows/s arriving (Spark, the run's latest batch)", ["job"]),
            ("job_processed_rows_per_second", "rows/s processed (Spark, the run's latest batch)",
             ["job"]),
            ("job_lag_records", "Kafka records the job has not committed yet", ["job"]),
            ("job_partition_lag_records", "Kafka records the job has not committed yet, per partition",
             ["job", "topic", "partition"]),
            ("job_last_checkpoint_age_seconds", "seconds since the latest checkpoint", ["job"]),
            ("job_last_checkpoint_id", "id (batch) of the latest checkpoint", ["job"]),
            ("job_checkpoint_duration_seconds", "duration of the latest checkpoint", ["job"]),
            ("job_state_rows", "rows in state at the latest checkpoint", ["job"]),
            ("job_state_bytes", "bytes of state at the latest checkpoint", ["job"]),
            ("server_jobs", "jobs a live sharing server runs (job leases held)", ["server"]),
            ("server_cores", "cores a sharing server declared for its drivers", ["server"]),
            ("server_cores_used", "cores the jobs of a sharing server need", ["server"]),
            ("server_memory_bytes", "memory a sharing server declared for its drivers",
             ["server"]),
            ("server_memory_used_bytes", "memory the jobs of a sharing server need", ["server"]),
            ("job_waiting", "1 while no sharing server can take the RUNNING job", ["job"]),
        )}
        c = {name: CounterMetricFamily(f"streamjob_{name}", doc, labels=labels) for name, doc, labels in (
            ("job_failures", "runs of the job that ended FAILED", ["job"]),
            ("job_restarts", "runs of the job after its first", ["job"]),
            ("job_malformed_records", "malformed source records skipped", ["job", "stream"]),
            ("job_expired_checkpoints", "checkpoints that expired", ["job"]),
            ("job_lease_takeovers", "times the job's lease was taken again (its epoch - 1)",
             ["job"]),
            ("job_moves", "hand-overs of the job to another sharing server at a checkpoint "
             "boundary (rebalancing)", ["job"]),
            ("job_lease_losses", "times the job's server lost its lease (died, froze) and "
             "another server took it", ["job"]),
        )}
        for state in snapshot["jobs"]:
            name = state["job"]
            job = jobs.get(name)
            if job is None:
                continue
            for status in JobStatus:
                g["job_status"].add_metric([name, status.value], 1.0 if job.status == status else 0.0)
            g["job_desired_running"].add_metric([name], 1.0 if job.desired_state == "RUNNING" else 0.0)
            for key, family in (("input_rows_per_s", "job_input_rows_per_second"),
                                ("processed_rows_per_s", "job_processed_rows_per_second"),
                                ("lag_records", "job_lag_records"),
                                ("last_checkpoint_age_s", "job_last_checkpoint_age_seconds"),
                                ("batch", "job_last_checkpoint_id")):
                if state.get(key) is not None:
                    g[family].add_metric([name], float(state[key]))
            if state.get("lag_records") is not None:
                for part, lag in sorted((job.progress.get("lag_by_partition") or {}).items()):
                    topic, _, partition = part.rpartition(":")
                    g["job_partition_lag_records"].add_metric([name, topic, partition], float(lag))
            latest = self.catalog.latest_checkpoint(job.uid)
            if latest is not None:
                if latest.duration_ms is not None:
                    g["job_checkpoint_duration_seconds"].add_metric([name], latest.duration_ms / 1000)
                if latest.state_rows is not None:
                    g["job_state_rows"].add_metric([name], float(latest.state_rows))
                if latest.state_bytes is not None:
                    g["job_state_bytes"].add_metric([name], float(latest.state_bytes))
            runs = self.catalog.list_runs(job.uid)
            c["job_failures"].add_metric([name], float(sum(r.status == RunStatus.FAILED for r in runs)))
            c["job_restarts"].add_metric([name], float(max(0, len(runs) - 1)))
            for stream, count in sorted(job.malformed_counts.items()):
                c["job_malformed_records"].add_metric([name, stream], float(count))
            c["job_expired_checkpoints"].add_metric([name], float(job.expired_checkpoints))
        takeovers = c["job_lease_takeovers"]
        by_uid = {j.uid: n for n, j in jobs.items()}
        for lease in getattr(self.catalog, "job_leases", list)():
            if lease.job_uid in by_uid:
                takeovers.add_metric([by_uid[lease.job_uid]], float(max(0, lease.epoch - 1)))
                c["job_moves"].add_metric([by_uid[lease.job_uid]], float(lease.moves))
                c["job_lease_losses"].add_metric([by_uid[lease.job_uid]], float(lease.losses))
        for name in (snapshot.get("placement") or {}).get("waiting") or {}:
            g["job_waiting"].add_metric([name], 1.0)
        mib = 1024 * 1024
        for server in snapshot.get("servers") or []:
            label = [server["label"]]
            g["server_jobs"].add_metric(label, float(len(server["jobs"])))
            g["server_cores_used"].add_metric(label, float(server["cores_used"]))
            g["server_memory_used_bytes"].add_metric(label, float(server["memory_used_mb"] * mib))
            if server["cores"] is not None:
                g["server_cores"].add_metric(label, float(server["cores"]))
            if server["memory_mb"] is not None:
                g["server_memory_bytes"].add_metric(label, float(server["memory_mb"] * mib))
        yield from g.values()
        yield from c.values()
        held = GaugeMetricFamily("streamjob_server_lease_held",
                                 "1 when this process holds the job manager lease")
        held.add_metric([], 1.0 if self.lease_held and self.lease_held() else 0.0)
        yield held
        up = GaugeMetricFamily("streamjob_server_up", "1 when a live job manager holds the lease")
        up.add_metric([], 1.0 if snapshot.get("server") else 0.0)
        yield up


def metrics_text(catalog, lease_held: Callable[[], bool] | None = None) -> tuple[bytes, str]:
    """``(body, content type)`` of one scrape: the module docstring's metrics, read now.

    Raises:
        CatalogError: the catalog cannot be read.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_JobsCollector(catalog, lease_held))
    return generate_latest(registry), CONTENT_TYPE_LATEST
