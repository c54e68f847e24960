"""``streamjob server``: the job manager (:class:`~streamjob.manager.server.JobServer`)."""

from __future__ import annotations

import click

from ..api.door import BURST, MAX_STATEMENTS, RATE_PER_S
from .app import client_options
from .context import Invocation


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
@click.option("--spark-at-start/--spark-on-demand", default=True, show_default=True,
              help="Start Spark when the server starts (standbys too, so that a takeover "
                   "need not wait for it), or only when a job or a SELECT preview first "
                   "needs it: a server that serves the HTTP API and console but runs no "
                   "job then runs no JVM. A sharing server starts it at once.")
@click.option("--share", is_flag=True,
              help="Run a share of the jobs beside the other sharing servers on this "
                   "catalog, each job under its own lease (implied by --max-jobs and "
                   "--labels).")
@click.option("--max-jobs", type=click.IntRange(min=0), default=None, metavar="N",
              help="Sharing: run at most N jobs at once (default: no limit).")
@click.option("--cores", type=click.IntRange(min=0), default=None, metavar="N",
              help="Sharing: cores for this server's drivers; a job needs "
                   "streamjob.placement.cores of them (default: no limit).")
@click.option("--memory", default=None, metavar="SIZE",
              help="Sharing: memory for this server's drivers (512m, 4g); a job needs "
                   "streamjob.placement.memory MiB of it (default: no limit).")
@click.option("--spark-master", default=None, metavar="URL",
              help="The Spark master of this server's drivers (default: the one "
                   "streamjob.placement.masters gives its labels, else spark.master).")
@click.option("--labels", default=None, metavar="A,B",
              help="Sharing: this server's labels; a job with the property "
                   "streamjob.placement.labels runs only on a server having them all.")
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
@click.option("--http-host-name", "host_names", multiple=True, metavar="NAME",
              help="Another name clients reach the API by (a reverse proxy's, a DNS "
                   "name); repeatable. Requests whose Host header names none of these, "
                   "nor the bound address, get 403 (DNS rebinding).")
@click.option("--no-auth", is_flag=True,
              help="Development only: requests without a token act as an operator. "
                   "Accepted only with --http on a loopback address (127.0.0.1, ::1).")
@click.option("--http-rate", type=click.FloatRange(min=0.1), default=RATE_PER_S,
              show_default=True, metavar="N",
              help="Requests per second each token may sustain (then 429).")
@click.option("--http-burst", type=click.IntRange(min=1), default=BURST, show_default=True,
              metavar="N", help="Requests a token may make at once after a quiet spell.")
@click.option("--http-max-statements", type=click.IntRange(min=1), default=MAX_STATEMENTS,
              show_default=True, metavar="N",
              help="Most statements one request may carry (then 413).")
@client_options
@click.pass_obj
def server(obj: Invocation, until_idle: bool, lease_ttl_ms: int, lease_renew_ms: int | None,
           warm_up: bool, spark_at_start: bool, poll_s: float, http: str | None,
           tls_cert: str | None, tls_key: str | None, host_names: tuple[str, ...], no_auth: bool, http_rate: float,
           http_burst: int, http_max_statements: int, share: bool = False,
           max_jobs: int | None = None, labels: str | None = None, cores: int | None = None,
           memory: str | None = None, spark_master: str | None = None) -> None:
    """Run every job whose desired state is RUNNING (the job manager).

    Follows the catalog: jobs other clients start, stop or drop are started, stopped
    after their current batch, or stopped at once within a second. Several servers may
    share a catalog: the one holding its lease runs the jobs, the others wait as
    standbys and take over when it dies (after --lease-ttl) or exits (at once). With
    --share (or --max-jobs/--cores/--memory/--labels) every server runs a share of the
    jobs, each job under a lease of its own: new or orphaned jobs go to the eligible
    server with the fewest jobs, then the most room (job places, cores, memory),
    and a dead server's jobs restart on the others after --lease-ttl. After a
    crash (even SIGKILL), the next server resumes each job from its last checkpoint.
    Runs until Ctrl-C/SIGTERM (jobs stop after their current batch; checkpoints stay;
    their desired state stays RUNNING), or with --until-idle until every job has caught up.

    Each line it prints starts with the local time (as in Flink's and Kafka's logs) and
    also goes to <home>/logs/server.log, with the process's warnings and errors; Spark's
    own logs go to <home>/logs/spark.log (both on the terminal with --debug).

    With --http the server is also the front door (DESIGN §8, docs/security.md): clients
    given `--server URL` submit and read through it without the catalog's credentials,
    and every request needs a token (`streamjob token create`). Started on a catalog
    without any token, it creates an admin token and prints it once (never to
    server.log).
    """
    from ..manager.serverlog import ServerLog, server_log

    if (tls_cert or tls_key) and not http:
        raise click.UsageError("--tls-cert/--tls-key need --http")
    if (no_auth or host_names) and not http:
        raise click.UsageError("--no-auth and --http-host-name need --http")
    door = None
    if http:
        door = _front_door(http, host_names, no_auth, http_rate, http_burst,
                           http_max_statements)
    if lease_renew_ms is not None and lease_renew_ms * 2 > lease_ttl_ms:
        raise click.UsageError(f"--lease-renew {lease_renew_ms} must be at most half of "
                               f"--lease-ttl {lease_ttl_ms}")
    from ..manager.placement import parse_memory

    try:
        memory_mb = parse_memory(memory) if memory is not None else None
    except ValueError as exc:
        raise click.UsageError(f"--memory: {exc}") from None
    sharing = share or bool(labels) or {max_jobs, cores, memory_mb} != {None}
    if until_idle and sharing:
        raise click.UsageError("--until-idle runs every job in one server; not with "
                               "--share, --max-jobs, --cores, --memory or --labels")
    report = ServerLog(server_log(obj.home), click.echo).attach()
    try:
        _serve(obj, report, until_idle, lease_ttl_ms, poll_s, http, tls_cert, tls_key,
               lease_renew_ms=lease_renew_ms, warm_up=warm_up,
               spark_at_start=spark_at_start, door=door,
               share=sharing, max_jobs=max_jobs, labels=labels,
               capacity={"cores": cores, "memory_mb": memory_mb, "spark_master": spark_master})
    finally:
        report.close()


def _front_door(http: str, host_names, no_auth: bool, rate: float, burst: int,
                max_statements: int):
    """The :class:`~streamjob.api.door.FrontDoor` of the --http options (a usage error
    for a bad address, or --no-auth off loopback)."""
    from ..api.door import FrontDoor
    from ..api.serve import parse_address
    from ..exceptions import StreamJobError

    try:
        host, _port = parse_address(http)
        return FrontDoor(bind_host=host, names=frozenset(host_names), no_auth=no_auth,
                         rate_per_s=rate, burst=burst, max_statements=max_statements)
    except (StreamJobError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None


def _announce(report, door, url: str, admin_token: str | None) -> None:
    """Say where the API listens, warn of --no-auth, and show a new admin token once:
    printed, never written to server.log (``report`` writes there)."""
    from ..api.door import is_wildcard, local_addresses

    port = url.rsplit(":", 1)[1]
    if is_wildcard(door.bind_host):
        scheme = url.split("://", 1)[0]
        shown = ", ".join(f"{scheme}://{f'[{a}]' if ':' in a else a}:{port}"
                          for a in local_addresses())
        report(f"HTTP API listening on every address of this machine, among them {shown}")
    if door.no_auth:
        report(f"WARNING: --no-auth: {url} accepts requests without a token, as an operator, "
               "from anyone on this machine; use it for local development only")
    if admin_token:
        click.echo(f"admin token (new; shown only now, not logged): {admin_token}")
        click.echo("  use it with --token or STREAMJOB_TOKEN, or in the console's token "
                   "field; more tokens: streamjob token create NAME --role admin|operator|viewer")


def _serve(obj: Invocation, report, until_idle: bool, lease_ttl_ms: int, poll_s: float,
           http: str | None, tls_cert: str | None, tls_key: str | None,
           lease_renew_ms: int | None = None, warm_up: bool = True,
           spark_at_start: bool = True, door=None,
           share: bool = False, max_jobs: int | None = None, labels: str | None = None,
           capacity: dict | None = None) -> None:
    from ..executor import Executor
    from ..executor.switch_finish import finish_start_over
    from ..manager.server import JobServer
    from ..properties import engine_notices

    for note in engine_notices(obj.home.conf):  # Slipstream server-template settings
        report(note)
    job_server = JobServer(obj.catalog, obj.home, debug=obj.debug, lease_ttl_ms=lease_ttl_ms,
                           poll_s=poll_s, echo=report, lease_renew_ms=lease_renew_ms,
                           warm_up=warm_up and not until_idle,
                           spark_at_start=spark_at_start, share=share,
                           max_jobs=max_jobs, labels=labels, **(capacity or {}),
                           finish_switch=lambda job: finish_start_over(  # a killed ALTER's epoch
                               Executor(obj.catalog, obj.home), job))
    service = None
    if http:
        from ..api import create_app
        from ..api.auth import first_admin_token
        from ..api.door import FrontDoor
        from ..api.serve import HttpService

        door = door or FrontDoor()
        service = HttpService(create_app(obj.catalog.clone(), obj.home,
                                         spark=job_server.manager.spark,
                                         lease_held=lambda: job_server.holding, door=door),
                              http, tls_cert, tls_key)
        url = service.start()
        report(f"server {job_server.server_id}: HTTP API on {url}/v1 "
               f"(console {url}/, metrics {url}/metrics)")
        _announce(report, door, url, None if door.no_auth else first_admin_token(obj.catalog))
    from ..alerts import AlertService

    alerts = AlertService(obj.catalog, active=lambda: job_server.holding).start()
    maintenance = None
    if not until_idle:  # scheduled OPTIMIZE / VACUUM of lakehouse tables
        from ..executor.schedule import MaintenanceService

        maintenance = MaintenanceService(obj.catalog, obj.home,
                                         active=lambda: job_server.holding).start()
    try:
        job_server.run(until_idle=until_idle)
    finally:
        if maintenance is not None:
            maintenance.stop()
        alerts.stop()
        if service is not None:
            service.stop()
