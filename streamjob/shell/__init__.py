"""``streamjob shell``: an interactive StreamSQL shell in the manner of pgcli and litecli.

- :mod:`.app` — the loop: prompt, statements, results, where jobs run;
- :mod:`.context` — what the loop shares with the meta commands (session, output settings);
- :mod:`.errors` — an error as one red line with its position and a caret;
- :mod:`.lexer` — syntax highlighting (pygments) and the keyword lists;
- :mod:`.completion` — keywords, property names and values, catalog names;
- :mod:`.columns` — where a query expects a column, and the objects it reads;
- :mod:`.meta` — ``\\help``, ``\\q``, ``\\l``, ``\\d``, ``\\i``, ``\\timing``, ``\\json``,
  ``\\pager``, ``\\x``, ``\\status``;
- :mod:`.pager` — results longer than the terminal through ``$PAGER`` (less -SRXF);
- :mod:`.terminal` — the JVM's stderr, Ctrl-C, log lines above the prompt.

Input is cut into statements by :mod:`streamjob.client.splitter`, a ``SELECT ... FROM
stream [LIMIT n]`` runs through :class:`streamjob.client.preview.Previews` (as ``-e``'s),
results print through :mod:`streamjob.client.render`, all over the client session of
:mod:`streamjob.client.session`.

prompt_toolkit and pyspark are imported only when the shell runs (``streamjob --help``
stays instant).
"""

from __future__ import annotations


def run_shell(catalog, home, debug: bool = False, as_json: bool = False,
              interactive: bool | None = None, session=None, file: str | None = None) -> int:
    """Run the shell over ``catalog`` (or, given a ``--server`` client ``session``, over
    the HTTP API) until quit or end of input; returns the exit status.

    Interactive when stdin is a terminal (unless ``interactive`` says otherwise); else
    the statements on stdin run without prompts or questions; so do those of ``file``
    (``shell -f FILE``, as ``psql -f``), whose errors name it."""
    from .app import Shell

    if file is not None:
        from ..script import read_script
        import io

        shell = Shell(catalog, home, debug=debug, as_json=as_json, interactive=False,
                      session=session)
        return shell.run(io.StringIO(read_script(file)), source=file)
    return Shell(catalog, home, debug=debug, as_json=as_json, interactive=interactive,
                 session=session).run()


__all__ = ["run_shell"]
