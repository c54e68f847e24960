"""``streamjob server``: the job manager (:class:`~streamjob.manager.server.JobServer`)."""

from __future__ import annotations

import click

from .app import _Context, client_options


@click.command()
@click.option("--until-idle", is_flag=True,
              help="Exit 0 once every job has committed all input available now.")
@click.option("--lease-ttl", "lease_ttl_ms", type=click.IntRange(min=1000), default=10_000,
              show_default=True, metavar="MS",
              help="Lease time to live in ms: a standby takes over this long after the "
                   "active server died.")
@click.option("--lease-renew", "lease_renew_ms", type=click.IntRange(min=100), default=None,
              metavar="MS",
              help="Renew the lease every MS ms (at most half the TTL; default: every "
                   "second, or a third of the TTL if shorter). A renewal that stalls for "
                   "TTL - renewal - min(2 s, TTL/4) fences the holder's jobs.")
@click.option("--warm-up/--no-warm-up", default=True, show_default=True,
              help="A standby runs one throwaway micro-batch once Spark started, so that a "
                   "takeover finds Spark's Python workers warm.")
@click.option("--poll", "poll_s", type=click.FloatRange(min=0.05), default=1.0,
              show_default=True, metavar="S",
              help="Seconds between catalog checks (PostgreSQL also wakes on NOTIFY).")
@click.option("--http", "http", metavar="HOST:PORT",
              help="Serve the HTTP API (/v1/...), the web console (/) and /metrics here "
                   "(port 0: a free one; the URL is printed).")
@click.option("--tls-cert", type=click.Path(dir_okay=False, exists=True), metavar="PEM",
              help="Serve HTTPS with this certificate (chain) file; with --tls-key.")
@click.option("--tls-key", type=click.Path(dir_okay=False, exists=True), metavar="PEM",
              help="The certificate's private key file.")
@client_options
@click.pass_obj
def server(obj: _Context, until_idle: bool, lease_ttl_ms: int, lease_renew_ms: int | None,
           warm_up: bool, poll_s: float, http: str | None, tls_cert: str | None,
           tls_key: str | None) -> None:
    """Run every job whose desired state is RUNNING (the job manager).

    Follows the catalog: jobs other clients start, stop or drop are started, stopped
    after their current batch, or stopped at once within a second. Several servers may
    share a catalog: the one holding its lease runs the jobs, the others wait as
    standbys and take over when it dies (after --lease-ttl) or exits (at once). After a
    crash (even SIGKILL), the next server resumes each job from its last checkpoint.
    Runs until Ctrl-C/SIGTERM (jobs stop after their current batch; checkpoints stay;
    their desired state stays RUNNING), or with --until-idle until every job has caught up.

    Each line it prints starts with the local time (as in Flink's and Kafka's logs) and
    also goes to <home>/logs/server.log, with the process's warnings and errors; Spark's
    own logs go to <home>/logs/spark.log (both on the terminal with --debug).

    With --http the server is also the front door (DESIGN §8): clients given
    `--server URL` submit and read through it without the catalog's credentials; once a
    token exists (`streamjob token create`), every request needs one.
    """
    from ..manager.serverlog import ServerLog, server_log

    if (tls_cert or tls_key) and not http:
        raise click.UsageError("--tls-cert/--tls-key need --http")
    if lease_renew_ms is not None and lease_renew_ms * 2 > lease_ttl_ms:
        raise click.UsageError(f"--lease-renew {lease_renew_ms} must be at most half of "
                               f"--lease-ttl {lease_ttl_ms}")
    report = ServerLog(server_log(obj.home), click.echo).attach()
    try:
        _serve(obj, report, until_idle, lease_ttl_ms, poll_s, http, tls_cert, tls_key,
               lease_renew_ms=lease_renew_ms, warm_up=warm_up)
    finally:
        report.close()


def _serve(obj: _Context, report, until_idle: bool, lease_ttl_ms: int, poll_s: float,
           http: str | None, tls_cert: str | None, tls_key: str | None,
           lease_renew_ms: int | None = None, warm_up: bool = True) -> None:
    from ..manager.server import JobServer
    from ..properties import engine_notices

    for note in engine_notices(obj.home.conf):  # Slipstream server-template settings
        report(note)
    job_server = JobServer(obj.catalog, obj.home, debug=obj.debug, lease_ttl_ms=lease_ttl_ms,
                           poll_s=poll_s, echo=report, lease_renew_ms=lease_renew_ms,
                           warm_up=warm_up and not until_idle)
    service = None
    if http:
        from ..api import create_app
        from ..api.serve import HttpService

        service = HttpService(create_app(obj.catalog.clone(), obj.home,
                                         spark=job_server.manager.spark,
                                         lease_held=lambda: job_server.holding),
                              http, tls_cert, tls_key)
        url = service.start()
        report(f"server {job_server.server_id}: HTTP API on {url}/v1 "
               f"(console {url}/, metrics {url}/metrics)")
    from ..alerts import AlertService

    alerts = AlertService(obj.catalog, active=lambda: job_server.holding).start()
    try:
        job_server.run(until_idle=until_idle)
    finally:
        alerts.stop()
        if service is not None:
            service.stop()
