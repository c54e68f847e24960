"""The ``streamjob`` click group: global options, ``-e``, and the error boundary.

:func:`main` is the group every command is added to (:mod:`streamjob.cli`). Its
:class:`_Group` is the one error boundary (see :mod:`streamjob.cli`); the invocation's
state is a :class:`~streamjob.cli.context.Invocation`; :func:`client_options` gives a verb
its own ``--home``/``--catalog``.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click

from ..exceptions import StreamJobError
from .context import Invocation


class _Group(click.Group):
    """The error boundary (see the module docstring)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            click.secho("Interrupted.", fg="yellow", err=True)
            sys.exit(130)
        except StreamJobError as exc:
            if _debug(ctx):
                raise
            _print_error(exc)
            sys.exit(1)
        except Exception as exc:  # noqa: BLE001 - the boundary
            if _debug(ctx):
                raise
            click.secho(f"Error: internal error: {type(exc).__name__}: {exc}", fg="red", err=True)
            click.echo("(run with --debug for the full trace)", err=True)
            sys.exit(1)


def _debug(ctx: click.Context) -> bool:
    obj = ctx.obj
    return bool(obj and obj.debug) or "--debug" in sys.argv


def _print_error(exc: StreamJobError) -> None:
    click.secho(f"Error: {exc}", fg="red", err=True)
    if exc.snippet:
        click.echo(exc.snippet, err=True)
    if exc.note:
        click.echo(exc.note, err=True)


@click.group(cls=_Group, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="STREAMJOB_HOME", type=click.Path(file_okay=False),
              help="streamjob home (catalog, checkpoints, warehouse); default ~/.streamjob.")
@click.option("--catalog", "catalog_url", metavar="URL", help="Catalog database URL (SQLAlchemy).")
@click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Engine property (repeatable).")
@click.option("-e", "--execute", "statements", multiple=True, metavar="STATEMENTS",
              help="Execute these ;-separated statements against the catalog, print each "
                   "result and exit (repeatable, one session: SET carries over; not with a "
                   "command). A SELECT ... FROM stream [LIMIT n] prints a preview's rows.")
@click.option("--json", "as_json", is_flag=True,
              help="JSON output: of -e (one document per statement, one per line), and the "
                   "default of every read command's --json.")
@click.option("--server", "server_url", envvar="STREAMJOB_SERVER", metavar="URL",
              help="Go through the HTTP API of `streamjob server --http` at URL instead of "
                   "the catalog (env STREAMJOB_SERVER): -e, submit and the job verbs.")
@click.option("--token", envvar="STREAMJOB_TOKEN", metavar="TOKEN",
              help="Bearer token for --server (env STREAMJOB_TOKEN; `streamjob token create`).")
@click.option("--debug", is_flag=True, help="Show Spark logs and full traces.")
@click.option("--new-catalog", is_flag=True,
              help="Use a catalog without streamjobs even though the home holds checkpoints "
                   "of jobs (after losing the catalog; env STREAMJOB_NEW_CATALOG=1).")
@click.version_option(package_name="streamjob")
@click.pass_context
def main(ctx: click.Context, home, catalog_url, conf, statements, as_json, server_url, token,
         debug, new_catalog) -> None:
    """streamjob: StreamSQL jobs as checkpointed Spark Structured Streaming queries.

    The catalog is the control plane: commands and statements change it, and the job
    manager (`streamjob server`) runs every job whose desired state is RUNNING.
    --home and --catalog may also follow the command (`streamjob list --catalog URL`).
    """
    ctx.obj = Invocation(home, catalog_url, conf, debug, server_url, token)
    ctx.obj.json = as_json
    ctx.obj.new_catalog = ctx.obj.new_catalog or new_catalog
    if debug:  # Spark's Python worker processes inherit it (connectors/worker.py)
        os.environ["STREAMJOB_DEBUG"] = "1"
    configure_logging(debug)
    from ..phases import mark_start
    from .exit import freeze_at_exit

    freeze_at_exit()  # the heap left at exit is not collected again (exit.py)

    mark_start()
    if statements:
        if ctx.invoked_subcommand is not None:
            raise click.UsageError(f"-e cannot be combined with the command "
                                   f"'{ctx.invoked_subcommand}'")
        from .execute import execute_options

        execute_options(ctx.obj, statements, as_json)
    elif ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


class _NotFromPy4J(logging.Filter):
    """Drops records made by Py4J's own code. When the JVM dies, Py4J reports the broken
    socket with ``logging.exception`` on the *root* logger
    (``py4j.java_gateway.GatewayClient.send_command``), so the level set on the ``py4j``
    logger does not reach it; the CLI says the JVM died in one sentence instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in record.pathname


def configure_logging(debug: bool) -> None:
    """The CLI's logging: WARNING and above on stderr as ``<time> <level> <logger>:
    <message>``; DEBUG and the Kafka client's and Py4J's records only with ``--debug``."""
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not debug:
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
        for handler in logging.getLogger().handlers:
            if not any(isinstance(f, _NotFromPy4J) for f in handler.filters):
                handler.addFilter(_NotFromPy4J())


def _set_client_option(ctx: click.Context, param: click.Parameter, value) -> None:
    """Callback of a command's --home/--catalog: overrides the group's value."""
    if value is not None:
        obj = ctx.find_object(Invocation)
        setattr(obj, "home_arg" if param.name == "home" else "catalog_url", value)


def client_options(command):
    """Decorator: give a command its own ``--home`` and ``--catalog`` options, so they
    may follow the verb (``streamjob list --catalog URL``) as well as precede it; a value
    given after the verb wins over the group's."""
    command = click.option("--catalog", "catalog_url", metavar="URL", expose_value=False,
                           callback=_set_client_option,
                           help="Catalog database URL (SQLAlchemy).")(command)
    return click.option("--home", type=click.Path(file_okay=False), expose_value=False,
                        callback=_set_client_option,
                        help="streamjob home; default $STREAMJOB_HOME or ~/.streamjob.")(command)
