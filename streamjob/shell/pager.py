"""The shell's pager, as pgcli's: a statement's result taller than the terminal (or a
line wider than it) goes through ``$PAGER``, by default ``less`` with ``LESS=-SRXF``
(``-S`` long lines are not wrapped but scrolled sideways, ``-R`` colours, ``-X`` the
output stays on the screen after ``q``, ``-F`` quits at once when it fits after all);
``\\pager off`` turns it off for the session, ``\\pager on`` back on, ``\\pager`` says
which.

Only results of statements are paged (tables, messages, JSON): not the rows of a SELECT
preview (they stream as they arrive, until Ctrl-C), not errors, not meta commands'
help. Nothing is paged when stdin or stdout is not a terminal (``shell < file``, ``|``).
Paging goes through click's :func:`click.echo_via_pager` (which picks ``$PAGER``, then
``less``, then ``more``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from typing import Callable

import click

__all__ = ["LESS", "captured", "page", "too_big"]

#: ``$LESS`` when the user has not set it (pgcli's choice).
LESS = "-SRXF"


class _TerminalBuffer(io.StringIO):
    """A buffer that says it is a terminal, so what is rendered into it (rich's colours
    and its width, taken from the real terminal) is what the terminal would have got."""

    def isatty(self) -> bool:  # noqa: D401 - the buffer stands in for the terminal
        return True


def captured(render: Callable[[], None]) -> str:
    """What ``render()`` prints on stdout, as it would print it on this terminal."""
    buffer = _TerminalBuffer()
    with contextlib.redirect_stdout(buffer):
        render()
    return buffer.getvalue()


def too_big(text: str, size: os.terminal_size | None = None) -> bool:
    """True when ``text`` does not fit the terminal (``size``, default the current one):
    more lines than its height less one (the prompt's), or a line wider than it (escape
    sequences not counted)."""
    size = size or shutil.get_terminal_size()
    lines = text.splitlines()
    return len(lines) > size.lines - 1 or any(len(click.unstyle(line)) > size.columns
                                              for line in lines)


def page(text: str) -> None:
    """Show ``text`` through the pager when it does not fit the terminal, else print it
    (see the module docstring). ``$LESS`` defaults to :data:`LESS`."""
    if not text:
        return
    if not too_big(text):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    os.environ.setdefault("LESS", LESS)
    click.echo_via_pager(text.removesuffix("\n"))
