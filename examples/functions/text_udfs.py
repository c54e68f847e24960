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
