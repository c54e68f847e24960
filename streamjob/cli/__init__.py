"""``streamjob``: the command line (click).

One error boundary: a :class:`~streamjob.exceptions.StreamJobError` prints one red
``Error:`` line (a parse error also shows the line and a caret) and exits 1; any other
exception is a bug, printed the same way with a hint to rerun with ``--debug``, which
shows the full trace. pyspark is imported only by commands that run jobs, so
``streamjob --help`` is instant.

Clients (DESIGN §8) change the catalog and read it: ``-e "STATEMENTS"``, ``submit``, and
the verbs ``start``/``stop``/``drop`` (which set the desired state and say whether a job
manager holds the lease to act on it), ``list``, ``describe``, ``checkpoints``,
``status [--watch]``. Every read verb takes ``--json`` (indented; ``status --watch
--json`` prints one compact document per refresh, one per line). The group's ``--json``
is the default of the verbs' and applies to ``-e``, which prints one compact document
per statement, one per line (so one statement gives exactly one JSON document).
``--home`` and ``--catalog`` are accepted before the verb and after it
(:func:`~streamjob.cli.app.client_options`; after it wins).

The modules, by concern:

* :mod:`.app` — the group :func:`main`: global options, ``-e``, the error boundary and
  the verbs' ``--home``/``--catalog``;
* :mod:`.context` — :class:`~.context.Invocation`, the per-invocation state every verb
  receives (home, catalog and client session, opened on first use);
* :mod:`.execute` — executing statements: ``-e``/file text and its SELECT previews
  (:class:`streamjob.client.preview.Previews`), the statement a verb builds;
* :mod:`.scripts` — ``run``, ``submit`` and ``check`` of a StreamSQL file;
* :mod:`.server` and :mod:`.shell` — the job manager and the interactive shell;
* :mod:`.jobs` — ``start``, ``stop``, ``drop``; :mod:`.read` — ``list``, ``describe``,
  ``checkpoints``; :mod:`.status` — ``status [--watch]``;
* :mod:`.tokens` — ``token create|list|revoke``, the HTTP API's bearer tokens;
* :mod:`.savepoints` — ``savepoint create|list|drop`` (issue 30);
* :mod:`.shadow` — ``shadow run|show|promote|discard`` (issue 30 point 4).
"""

from __future__ import annotations

from .app import main
from .jobs import drop, start, stop
from .read import checkpoints, describe, list_jobs
from .savepoints import savepoint
from .scripts import check, run, submit
from .server import server
from .shadow import shadow
from .shell import shell
from .status import status
from .tokens import token

__all__ = ["main"]

for _command in (run, server, submit, check, list_jobs, describe, checkpoints, start, stop,
                 drop, status, shell, token, savepoint, shadow):
    main.add_command(_command)
del _command
