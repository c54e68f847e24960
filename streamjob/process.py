"""Facts about processes on this machine, asked in one place."""

from __future__ import annotations

import os


def pid_alive(pid) -> bool:
    """True if a process with id ``pid`` exists on this machine (``kill(pid, 0)``: one
    owned by another user counts as alive). A ``pid`` that is not a positive int is not
    alive. Raises nothing."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
