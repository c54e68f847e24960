"""The nearest known name to a misspelt one, for the "did you mean ...?" of every error
that names an unknown thing: a keyword, property, column, type, function, database,
topic, driver or Spark setting.

One rule everywhere: names are compared case-insensitively with
:func:`difflib.get_close_matches` (Ratcliff/Obershelp similarity, 0 to 1), and a name is
suggested only at or above ``cutoff``. Each caller words the hint in its own error
(``; did you mean 'x'?``, ``(did you mean FROM?)``, ``did you mean upper()?``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: difflib's own default: ``FORM`` -> FROM, ``chekpoint`` -> checkpoint, not ``id`` -> ``v``
DEFAULT_CUTOFF = 0.6


def nearest(written: str, known: Iterable[str], cutoff: float = DEFAULT_CUTOFF) -> str | None:
    """The name of ``known`` nearest to ``written``, spelt as in ``known``; None when no
    name reaches ``cutoff`` (0.0 always answers, if ``known`` is not empty).

    Compared lower-cased and stripped; ties go to the first of ``known``."""
    spelt = {}
    for name in known:
        spelt.setdefault(str(name).strip().lower(), name)
    close = difflib.get_close_matches(written.strip().lower(), list(spelt), n=1, cutoff=cutoff)
    return spelt[close[0]] if close else None
