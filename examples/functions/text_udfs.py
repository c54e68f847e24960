"""Example user functions for StreamSQL (docs/functions.md).

The admin copies this file into a function directory (``functions/`` of the streamjob
home by default, ``streamjob.security.functions.dirs``); then::

    CREATE FUNCTION shout AS 'text_udfs:shout' RETURNS STRING;

Each function is vectorised: it takes and returns a ``pandas.Series`` per argument.
"""

import pandas as pd


def shout(s: pd.Series) -> pd.Series:
    """``s`` upper-cased, with ``!`` appended; null stays null."""
    return s.str.upper() + "!"


def scaled(x: pd.Series, factor: pd.Series) -> pd.Series:
    """``x * factor``."""
    return x * factor


class Words:
    """A table function (Spark's Python UDTF): one row per word of ``text``, with the
    word and its length; no row for a null or blank text. Register it with::

        CREATE FUNCTION explode_words AS 'text_udfs:Words' RETURNS TABLE (word STRING, n INT);

    and call it in FROM or LATERAL: ``select s.id, t.word from s, lateral
    explode_words(s.text) as t(word, n)``.
    """

    def eval(self, text: str):
        for word in (text or "").split():
            yield word, len(word)
