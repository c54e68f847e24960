"""The shell's backslash commands (``\\help``, ``\\q``, ``\\l``, ``\\d``, ``\\status``,
``\\i``, ``\\timing``, ``\\json``, ``\\pager``, ``\\x``), modelled on psql/pgcli. A meta
command is one line and needs no ``;``; ``help``, ``quit`` and ``exit`` work without the
backslash."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exceptions import StreamJobError
from .completion import META_COMMANDS, PREVIEW_RESET_KEY

if TYPE_CHECKING:  # pragma: no cover
    from .app import Shell

HELP = f"""\
Statements end with ';' (Enter on an unfinished statement continues it on the next line):
  CREATE STREAM s (col type, ...) TBLPROPERTIES("topic"="t", "kafka.broker.list"="host:port")
  CREATE TABLE t (col type, ...) [STORED AS PARQUET|ORC|JSON|CSV|TEXTFILE] [TBLPROPERTIES(...)]
  CREATE STREAMJOB j AS ("insert into t select ... from s") [JOBPROPERTIES(...)]
  INSERT INTO t SELECT ... FROM s   starts an implicit job insert_<hex> (once per INSERT)
  START STREAMJOB j [FROM CHECKPOINT n] | STOP STREAMJOB j | DROP STREAMJOB j
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


def run_meta(shell: "Shell", line: str) -> bool:
    """Run one meta command line; returns False when the shell should quit.

    Raises:
        StreamJobError: an unknown command, a missing argument, or the error of the
            statement it runs.
    """
    command, _, arg = line.strip().partition(" ")
    command, arg = command.lower(), arg.strip()
    if command in ("\\q", "\\quit"):
        return False
    if command in ("\\?", "\\help", "\\h"):
        shell.echo(HELP.rstrip("\n"))
    elif command == "\\l":
        shell.run_statement("LIST STREAMJOBS")
    elif command == "\\d":
        describe(shell, arg)
    elif command == "\\status":
        show_status(shell)
    elif command == "\\i":
        if not arg:
            raise StreamJobError("\\i needs a file: \\i FILE")
        from ..script import read_script

        text = read_script(arg)
        return shell.run_text(text, source=arg)
    elif command == "\\timing":
        shell.timing = not shell.timing
        shell.echo(f"Timing is {'on' if shell.timing else 'off'}.")
    elif command == "\\pager":
        set_pager(shell, arg)
    elif command == "\\x":
        set_expanded(shell, arg)
    elif command == "\\json":
        shell.as_json = not shell.as_json
        shell.echo(f"Output format is {'JSON' if shell.as_json else 'tables'}.")
    else:
        raise StreamJobError(f"unknown command {command}; \\? lists the commands")
    return True


def set_pager(shell: "Shell", arg: str) -> None:
    """``\\pager on|off``: page results longer than the terminal (:mod:`.pager`), or
    not; ``\\pager`` alone says which.

    Raises:
        StreamJobError: an argument other than on/off.
    """
    if arg.lower() not in ("", "on", "off"):
        raise StreamJobError(f"\\pager takes on or off, got '{arg}'")
    if arg:
        shell.pager = arg.lower() == "on"
    import os

    from .pager import LESS

    how = os.environ.get("PAGER") or f"less (LESS={os.environ.get('LESS', LESS)})"
    shell.echo(f"Pager is {'on' if shell.pager else 'off'}" + (
        f": results longer than the terminal go through {how}" if shell.pager else "") + ".")


def set_expanded(shell: "Shell", arg: str) -> None:
    """``\\x [on|off|auto]``, psql's expanded display: tables one field per line always
    (``on``), never (``off``), or when wider than the terminal (``auto``, the default);
    ``\\x`` alone turns it on, or off when it is on (as psql).

    Raises:
        StreamJobError: an argument other than on/off/auto.
    """
    from ..client.render import EXPANDED_MODES

    mode = arg.lower() or ("off" if shell.expanded == "on" else "on")
    if mode not in EXPANDED_MODES:
        raise StreamJobError(f"\\x takes on, off or auto, got '{arg}'")
    shell.expanded = mode
    shell.echo("Expanded display is " + ("used automatically" if mode == "auto" else mode) + ".")


def show_status(shell: "Shell") -> None:
    """``\\status``: the table of ``streamjob status`` (JSON under ``\\json``)."""
    import json

    snapshot = shell.session.status()
    if shell.as_json:
        shell.echo(json.dumps(snapshot, default=str))
        return
    from ..client.render import _console, status_view

    _console().print(status_view(snapshot))


def describe(shell: "Shell", name: str) -> None:
    """``\\d``: every stream, table and streamjob; ``\\d name``: DESCRIBE STREAMJOB name if
    a job has that name, else DESCRIBE name (a stream or table)."""
    if not name:
        for sql in ("SHOW STREAMS", "SHOW TABLES", "LIST STREAMJOBS"):
            shell.run_statement(sql)
        return
    db, _, obj = name.rpartition(".")
    if shell.catalog.get_job((db or shell.database).strip("`"), obj.strip("`")) is not None:
        shell.run_statement(f"DESCRIBE STREAMJOB {name}")
    else:
        shell.run_statement(f"DESCRIBE {name}")
