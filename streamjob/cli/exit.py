"""A quicker exit for the ``streamjob`` command (issue 19: workload A of the Flink side
by side spent 0.4-1.6 s, under load, after its last statement in the interpreter's own
shutdown).

When a Python process ends, the interpreter runs its ``atexit`` handlers and then tears
its modules down, collecting garbage over the whole heap (a py-spy profile of a ``run
--until-idle`` shows that time in ``gc_collect_main``): pyspark, pandas, pyarrow,
SQLAlchemy, sqlglot and lark make a heap of millions of objects. :func:`freeze_at_exit`
registers :func:`gc.freeze` as an exit handler: the collections of the shutdown then skip
the objects that were alive when it ran (the standard library's own "permanent
generation"). Nothing else changes: every other exit handler still runs (logging's flush,
Spark's stop, ``weakref.finalize`` callbacks), objects still lose their last reference
as modules are cleared, and the process's data were committed before (the catalog's
transactions, the sinks' commits, Spark's checkpoint files); only cyclic garbage left at
exit is not collected, as the operating system frees the memory anyway.
"""

from __future__ import annotations

import atexit
import gc

_registered = False


def freeze_at_exit() -> bool:
    """Register :func:`gc.freeze` to run at interpreter exit, once per process.

    Handlers run last-registered first, so the CLI calls this before its command runs:
    the handlers the command registers (Spark's stop, logging) run before the freeze.
    Returns True if it registered now, False if it had been already. Never raises."""
    global _registered
    if _registered:
        return False
    _registered = True
    atexit.register(gc.freeze)
    return True
