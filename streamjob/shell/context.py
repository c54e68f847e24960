"""What a shell session shares with its meta commands: :class:`ShellContext`, owned by the
loop (:class:`~streamjob.shell.app.Shell`) and passed to :func:`~streamjob.shell.meta.run_meta`,
so the meta commands read and change it without importing the loop back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ShellContext:
    """The client session of a shell and how it shows results.

    ``session``: the :class:`~streamjob.client.session.ClientSession`, or with
    ``--server`` the :class:`~streamjob.api.client.RemoteSession`. ``as_json``: results as
    JSON (``\\json``); ``timing``: each command's time printed after it (``\\timing``);
    ``expanded``: tables one field per line ``on``, ``off`` or ``auto`` when wider than the
    terminal (``\\x``, :data:`streamjob.client.render.EXPANDED_MODES`); ``pager``: long
    results through ``$PAGER`` on a terminal (``\\pager``)."""

    session: Any
    as_json: bool = False
    timing: bool = False
    expanded: str = "auto"
    pager: bool = True

    @property
    def catalog(self):
        """The session's catalog (over the HTTP API with ``--server``)."""
        return self.session.catalog

    @property
    def database(self) -> str:
        """The session's current database (``USE``), of unqualified names."""
        return getattr(self.session, "database", "default")
