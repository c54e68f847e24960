"""The client room: what every front end (the CLI's verbs, ``-e`` and files, the shell,
the HTTP API's statements) does on the client side of the catalog, in one place.

- :mod:`.session` — :class:`~.session.ClientSession`, the one session under every front
  end: SET values, current database, jobs hosted in this process, where a START runs;
- :mod:`.preview` — :class:`~.preview.Previews`, the one way a bare
  ``SELECT ... FROM stream [LIMIT n]`` runs as a transient query (the shell, ``-e``);
- :mod:`.render` — a statement's result shown as rich tables or JSON; the status table;
- :mod:`.splitter` — client input cut into statements (``;``, meta-command lines);
- :mod:`.check` — ``streamjob check``: a dry run on a scratch catalog;
- :mod:`.compat` — ``streamjob check --compat``: what happens to each Slipstream clause;
- :mod:`.scratch` — the scratch copy of a catalog a script is tried on first.

Nothing here imports the front ends (:mod:`streamjob.cli`, :mod:`streamjob.shell`,
:mod:`streamjob.api`); they import this room. Importing the package imports nothing.
"""
