"""The shell's backslash commands (``\\help``, ``\\q``, ``\\l``, ``\\d``, ``\\status``,
``\\i``, ``\\timing``, ``\\json``, ``\\pager``, ``\\x``), modelled on psql/pgcli. A meta
command is one line and needs no ``;``; ``help``, ``quit`` and ``exit`` work without the
backslash.

A meta command reads and changes the shell's :class:`~streamjob.shell.context.ShellContext`
and answers what the loop runs next (:class:`Then`): statements (``\\l``, ``\\d``), a
script (``\\i``), or nothing more (``\\q`` quits)."""

from __future__ import annotations

from dataclasses import dataclass

import click

from ..exceptions import StreamJobError
from .completion import META_COMMANDS, PREVIEW_RESET_KEY
from .context import ShellContext

HELP = f"""\
Statements end with ';' (Enter on an unfinished statement continues it on the next line):
  CREATE STREAM s (col type, ...) TBLPROPERTIES("topic"="t", "kafka.broker.list"="host:port")
  CREATE TABLE t (col type, ...) [STORED AS PARQUET|ORC|JSON|CSV|TEXTFILE] [TBLPROPERTIES(...)]
  CREATE STREAMJOB j AS ("insert into t select ... from s") [JOBPROPERTIES(...)]
  INSERT INTO t SELECT ... FROM s   starts an implicit job insert_<hex> (once per INSERT)
  START STREAMJOB j [FROM CHECKPOINT n] | STOP STREAMJOB j | DROP STREAMJOB j
  CREATE SAVEPOINT sp FOR STREAMJOB j   STOP STREAMJOB j WITH SAVEPOINT sp   SHOW SAVEPOINTS
  START STREAMJOB j FROM SAVEPOINT sp | FROM CHECKPOINT AT 'yyyy-MM-dd HH:mm:ss'
  DROP SAVEPOINT sp FOR STREAMJOB j
  ALTER STREAMJOB j AS ("insert ...") WITH SHADOW [JOBPROPERTIES('shadow.batches'='5')]
  SHOW SHADOW FOR STREAMJOB j | PROMOTE SHADOW FOR STREAMJOB j | DISCARD SHADOW FOR STREAMJOB j
  ALTER STREAMJOB j SET JOBPROPERTIES(...)   LIST STREAMJOBS   SHOW STREAMS | TABLES
  DESCRIBE [STREAMJOB] name   SHOW CHECKPOINTS FOR STREAMJOB j   SET k=v | SET | RESET [k]
  SELECT ... FROM s [LIMIT n]   prints rows of stream s as they arrive, until n rows
                                (20 without LIMIT) or Ctrl-C; Kafka streams are read from
                                their reset strategy (earliest unless the stream says
                                otherwise, or SET {PREVIEW_RESET_KEY}=latest)
Meta commands (one line, no ';'):
""" + "\n".join(f"  {name:<9} {text}" for name, text in META_COMMANDS.items()) + """
Keys: Tab completes, Up/Down recall history, Ctrl-C clears the input (and stops a
SELECT), Ctrl-D quits. Spark's own messages go to logs/spark.log in the streamjob home
(to the terminal with streamjob --debug shell).
"""


@dataclass(frozen=True)
class Then:
    """What the shell does after a meta command: ``quit``; run ``statements`` in order (as
    typed statements: the first error stops the rest); run ``script`` as a script named
    ``source`` (``\\i FILE``: its errors are the script's, and a quit in it quits)."""

    quit: bool = False
    statements: tuple[str, ...] = ()
    script: str | None = None
    source: str | None = None


def run_meta(ctx: ShellContext, line: str) -> Then:
    """Run one meta command line over the shell's context; returns what the shell runs
    next.

    Raises:
        StreamJobError: an unknown command, a missing or bad argument, a file of ``\\i``
            that cannot be read.
    """
    command, _, arg = line.strip().partition(" ")
    command, arg = command.lower(), arg.strip()
    if command in ("\\q", "\\quit"):
        return Then(quit=True)
    if command in ("\\?", "\\help", "\\h"):
        click.echo(HELP.rstrip("\n"))
    elif command == "\\l":
        return Then(statements=("LIST STREAMJOBS",))
    elif command == "\\d":
        return Then(statements=describe(ctx, arg))
    elif command == "\\status":
        show_status(ctx)
    elif command == "\\i":
        if not arg:
            raise StreamJobError("\\i needs a file: \\i FILE")
        from ..script import read_script

        return Then(script=read_script(arg), source=arg)
    elif command == "\\timing":
        ctx.timing = not ctx.timing
        click.echo(f"Timing is {'on' if ctx.timing else 'off'}.")
    elif command == "\\pager":
        set_pager(ctx, arg)
    elif command == "\\x":
        set_expanded(ctx, arg)
    elif command == "\\json":
        ctx.as_json = not ctx.as_json
        click.echo(f"Output format is {'JSON' if ctx.as_json else 'tables'}.")
    else:
        raise StreamJobError(f"unknown command {command}; \\? lists the commands")
    return Then()


def set_pager(ctx: ShellContext, arg: str) -> None:
    """``\\pager on|off``: page results longer than the terminal (:mod:`.pager`), or
    not; ``\\pager`` alone says which.

    Raises:
        StreamJobError: an argument other than on/off.
    """
    if arg.lower() not in ("", "on", "off"):
        raise StreamJobError(f"\\pager takes on or off, got '{arg}'")
    if arg:
        ctx.pager = arg.lower() == "on"
    import os

    from .pager import LESS

    how = os.environ.get("PAGER") or f"less (LESS={os.environ.get('LESS', LESS)})"
    click.echo(f"Pager is {'on' if ctx.pager else 'off'}" + (
        f": results longer than the terminal go through {how}" if ctx.pager else "") + ".")


def set_expanded(ctx: ShellContext, arg: str) -> None:
    """``\\x [on|off|auto]``, psql's expanded display: tables one field per line always
    (``on``), never (``off``), or when wider than the terminal (``auto``, the default);
    ``\\x`` alone turns it on, or off when it is on (as psql).

    Raises:
        StreamJobError: an argument other than on/off/auto.
    """
    from ..client.render import EXPANDED_MODES

    mode = arg.lower() or ("off" if ctx.expanded == "on" else "on")
    if mode not in EXPANDED_MODES:
        raise StreamJobError(f"\\x takes on, off or auto, got '{arg}'")
    ctx.expanded = mode
    click.echo("Expanded display is " + ("used automatically" if mode == "auto" else mode) + ".")


def show_status(ctx: ShellContext) -> None:
    """``\\status``: the table of ``streamjob status`` (JSON under ``\\json``)."""
    import json

    snapshot = ctx.session.status()
    if ctx.as_json:
        click.echo(json.dumps(snapshot, default=str))
        return
    from ..client.render import status_view, terminal_console

    terminal_console().print(status_view(snapshot))


def describe(ctx: ShellContext, name: str) -> tuple[str, ...]:
    """``\\d``: the statements listing every stream, table and streamjob; ``\\d name``:
    DESCRIBE STREAMJOB name if a job has that name, else DESCRIBE name (a stream or
    table)."""
    if not name:
        return ("SHOW STREAMS", "SHOW TABLES", "LIST STREAMJOBS")
    db, _, obj = name.rpartition(".")
    if ctx.catalog.get_job((db or ctx.database).strip("`"), obj.strip("`")) is not None:
        return (f"DESCRIBE STREAMJOB {name}",)
    return (f"DESCRIBE {name}",)
