"""One invocation of ``streamjob``: its options and what they open (:class:`Invocation`,
the click context's ``obj`` every verb receives)."""

from __future__ import annotations

import os

import click

from ..exceptions import StreamJobError


class Invocation:
    """The state of one ``streamjob`` invocation, the click context's ``obj``: the group's
    options (``--home``, ``--catalog``, ``--conf``, ``--debug``, ``--server``,
    ``--token``, ``--json``), and the home, catalog and client session they open, each
    opened on first use so ``--help`` touches nothing. A verb's own ``--home`` and
    ``--catalog`` (:func:`~streamjob.cli.app.client_options`) set ``home_arg`` and
    ``catalog_url`` before that.

    Raises:
        click.BadParameter: a ``--conf`` that is not ``KEY=VALUE``.
    """

    def __init__(self, home: str | None, catalog_url: str | None, conf: tuple[str, ...],
                 debug: bool, server: str | None = None, token: str | None = None) -> None:
        self.home_arg, self.catalog_url, self.debug = home, catalog_url, debug
        self.server, self.token = server, token
        self.conf = pairs(conf, "--conf")
        self.json = False  # the group's --json: output of -e, default of the verbs' --json
        self.new_catalog = os.environ.get("STREAMJOB_NEW_CATALOG", "") in ("1", "true", "yes")
        self._home = self._catalog = self._session = None

    @property
    def home(self):
        """The :class:`~streamjob.home.Home` of ``--home`` (``$STREAMJOB_HOME``, else
        ``~/.streamjob``), with ``--conf`` and ``--catalog``."""
        from ..home import Home

        if self._home is None:
            self._home = Home.open(self.home_arg, self.conf, self.catalog_url)
        return self._home

    @property
    def catalog(self):
        """The home's :class:`~streamjob.catalog.Catalog`.

        Raises:
            StreamJobError: with ``--server`` (this command works on the catalog
                directly), or the home holds checkpoints of jobs this catalog does not
                know, unless ``--new-catalog``
                (:func:`~streamjob.checkpoint.identity.refuse_orphaned`).
        """
        from ..catalog import Catalog

        if self._catalog is None:
            from ..checkpoint.identity import refuse_orphaned

            if self.server:
                raise StreamJobError(f"this command works on the catalog directly; it does "
                                     f"not go through --server {self.server} (use -e, "
                                     "submit, start, stop, drop, list, describe, "
                                     "checkpoints or status)")

            catalog = Catalog(self.home.catalog_url)
            if not self.new_catalog:
                refuse_orphaned(self.home, catalog)
            self._catalog = catalog
        return self._catalog

    @property
    def session(self):
        """The invocation's :class:`~streamjob.client.session.ClientSession` (catalog only: it
        hosts no job; ``run`` makes its own), or with ``--server`` its
        :class:`~streamjob.api.client.RemoteSession` over the HTTP API. A local session
        lets a checkpoint operation on a Hadoop URI start this process's Spark
        (:func:`~streamjob.checkpoint.filesystems.start_on_demand`)."""
        if self._session is None and self.server:
            from ..api.client import RemoteSession

            self._session = RemoteSession(self.server, self.token)
        if self._session is None:
            from ..checkpoint.filesystems import start_on_demand
            from ..client.session import ClientSession

            self._session = ClientSession(self.catalog, self.home, debug=self.debug)
            # a statement that changes a checkpoint directory on a Hadoop URI (DROP,
            # START ... FROM, savepoints) reaches it through this process's own Spark
            # session, started then, as a SELECT preview starts it
            start_on_demand(self._spark)
        return self._session

    def _spark(self):
        """The process's Spark session from the home's conf (started on first use)."""
        from ..spark.session import spark_session

        return spark_session(self.home, self.debug)


def pairs(items: tuple[str, ...], flag: str) -> dict[str, str]:
    """``{KEY: VALUE}`` of repeated ``KEY=VALUE`` option values (``--conf``, ``--var``);
    keys stripped, values kept as given.

    Raises:
        click.BadParameter: an item without ``=`` (naming ``flag``).
    """
    out = {}
    for item in items:
        if "=" not in item:
            raise click.BadParameter(f"expected KEY=VALUE, got '{item}'", param_hint=flag)
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out
