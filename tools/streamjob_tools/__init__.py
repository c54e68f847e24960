"""streamjob's development tools, not part of the installed ``streamjob`` package: the
benchmark harness (:mod:`streamjob_tools.bench`, ``make bench``) and the helpers of the
demo, the tests and the benchmark (:mod:`streamjob_tools.dev`: the local broker, the NYC
flights replay, the Nexmark generator, the bulk producer).

They run from a checkout of the repository: ``make setup`` installs this package
(``tools/``) editable into the venv beside streamjob."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The checkout's root (``tools/streamjob_tools/`` is two levels below it): where the
benchmark finds ``examples/`` and runs ``git show`` for ``--compare-source``."""
