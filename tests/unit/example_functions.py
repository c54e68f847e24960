"""The example user functions (examples/functions/*.py) in a home's function directory,
as an admin installs them (docs/functions.md): scripts of the corpus and of the docs
register them with CREATE FUNCTION."""

from __future__ import annotations

from pathlib import Path

from streamjob.home import Home

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "functions"


def install(home: Home) -> Home:
    """Copy the example modules into ``<home>/functions``; returns ``home``."""
    functions = Path(home.root) / "functions"
    functions.mkdir(exist_ok=True)
    for module in EXAMPLES.glob("*.py"):
        (functions / module.name).write_bytes(module.read_bytes())
    return home
