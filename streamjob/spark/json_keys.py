"""JSON records read from files matched to the declared columns the way Kafka streams
match them: a key spelt exactly as the column first, else the first key equal to it
ignoring case (:func:`streamjob.connectors.kafka.formats` per record; the
``"missing.columns"`` property's rule). Spark's own JSON reader matches a schema's field
names case-sensitively, so a key ``dateTime`` read into a column declared ``dateTime``
without backticks (stored lower-case, ``datetime``) would be NULL.

The files are read as text lines (Spark's ``text`` source: the same listing, file
tracking and compression handling as its ``json`` source) and each line is parsed with
``from_json`` and the declared schema, which gives the values, types and NULLs of Spark's
JSON reader. A line whose keys name a declared column only in another case is first
rewritten: its keys are parsed as a ``map<string, variant>``, the matching key's value is
taken for each column, and the record is encoded again as JSON with the declared
spellings. Lines with exact keys only (the usual case) are parsed twice (keys, then
values); respelt ones four times (400,000 Nexmark bids on 2 busy cores: 1.8 s with exact
keys, 3.2 s respelt, 0.4 to 1.0 s with Spark's JSON reader). As in Spark's JSON reader, blank lines
are skipped and a line holding an array of objects gives one record per object.
"""

from __future__ import annotations

import re
from typing import Sequence

TEXT_COLUMN = "value"  # Spark's text source's one column
_EXACT, _KEYS, _RECORD = "__sj_exact", "__sj_keys", "__sj_record"  # working columns
_TOKENS, _PATH, _RENAMED = "__sj_tokens", "__sj_path", "__sj_renamed"
_PLAIN = re.compile(r"[A-Za-z0-9_]+\Z")  # names no JSON escape but \u can spell


def json_columns(text_df, columns: Sequence[dict], keep: Sequence[str] = ()):
    """The declared ``columns`` (``[{"name", "type"}]``, declared order and spelling) of
    the JSON lines in ``text_df`` (a DataFrame, batch or streaming, whose ``value`` column
    holds one JSON record per row), one row per non-blank line, followed by the columns
    of ``text_df`` named in ``keep`` (e.g. the partition columns of a table), as they are.

    A malformed line, or one that is not a JSON object, gives a row of NULLs, as Spark's
    JSON reader does in its default PERMISSIVE mode; the observed metrics of
    :mod:`streamjob.spark.observe` count the columns no record carried."""
    from pyspark.sql import functions as F

    names = [c["name"] for c in columns]
    value = F.col(f"`{TEXT_COLUMN}`")
    kept = [F.col(f"`{k}`") for k in keep]
    df = _records(text_df, keep)
    if not names or not all(_PLAIN.match(n) for n in names):
        return _respelt(df, columns, keep, F.lit(2))
    # every key token spelt as a declared column ignoring case, at any depth, in order
    tokens = F.regexp_extract_all(value, F.lit(
        '"((?iu:' + "|".join(names) + '))"\\s*:'), 1)
    df = df.select(value, tokens.alias(_TOKENS), *kept)
    t = F.col(_TOKENS)
    lowered = F.transform(t, F.lower)
    lower_names = [n.lower() for n in names]
    plain = ~value.contains("\\u")  # no key hides behind an escape
    exact = F.size(F.array_except(t, F.array(*[F.lit(n) for n in names]))) == 0
    # one object, no nested one (every key token is a key of the record), each column
    # named by at most one token: rename that token to the declared spelling
    single = (F.ltrim(value).startswith("{")
              & (F.octet_length(value) - F.octet_length(F.replace(value, F.lit("{"), F.lit("")))
                 == 1)
              & (F.size(F.array_except(lowered, F.array(*[F.lit(n) for n in lower_names]))) == 0)
              & (F.size(F.array_distinct(lowered)) == F.size(t)))
    df = df.select(value, t, *kept, F.when(plain & exact, F.lit(0))
                   .when(plain & single, F.lit(1)).otherwise(F.lit(2)).alias(_PATH))
    renamed = value
    for n, low in zip(names, lower_names):
        spelt = F.get(t, (F.array_position(lowered, F.lit(low)) - 1).cast("int"))  # NULL: none
        at = F.instr(value, F.concat(F.lit('"'), spelt, F.lit('":')))
        renamed = F.when((F.col(_PATH) == 1) & spelt.isNotNull() & (spelt != F.lit(n)),
                         F.when(at > 0, F.overlay(renamed, F.lit(f'"{n}":'), at))
                         .otherwise(F.lit(None))).otherwise(renamed)
        df = df.select(value, t, *kept, F.col(_PATH), renamed.alias(_RENAMED))
        renamed = F.col(_RENAMED)
    # a token not found as `"spelling":` (space before the colon): the general path
    path = F.when((F.col(_PATH) == 1) & F.col(_RENAMED).isNull(), F.lit(2)).otherwise(F.col(_PATH))
    df = df.select(value, *kept, F.col(_RENAMED), path.alias(_PATH))
    return _respelt(df, columns, keep, F.col(_PATH), F.col(_RENAMED))


def _records(text_df, keep):
    """The non-blank lines of ``text_df`` as one JSON text per row (``value``), followed
    by the ``keep`` columns."""
    from pyspark.sql import functions as F

    value = F.col(f"`{TEXT_COLUMN}`")
    kept = [F.col(f"`{k}`") for k in keep]
    # a line holding an array of objects is one record per object, as in Spark's reader
    elements = F.from_json(value, "array<string>")
    objects = F.when(F.ltrim(value).startswith("[") & F.forall(
        elements, lambda e: F.ltrim(e).startswith("{")), elements).otherwise(F.array(value))
    return (text_df.where(F.trim(value) != F.lit(""))
            .select(F.explode(objects).alias(TEXT_COLUMN), *kept))


def _general(text_df, columns, keep=()):
    """:func:`json_columns` with every line on the general path (the implementation
    before the fast paths; tests compare the two)."""
    from pyspark.sql import functions as F

    return _respelt(_records(text_df, keep), columns, keep, F.lit(2))


def _respelt(df, columns, keep, path, renamed=None):
    """The general path (``path`` 2): the record respelt through its keys parsed as a
    ``map<string, variant>``; path 0 parses the line as it is, path 1 ``renamed``."""
    from pyspark.sql import functions as F

    from .. import types as sjtypes

    names = [c["name"] for c in columns]
    value = F.col(f"`{TEXT_COLUMN}`")
    kept = [F.col(f"`{k}`") for k in keep]
    lowered = sorted({n.lower() for n in names})
    exact_keys = F.array(*[F.lit(n) for n in names])
    lower_keys = F.array(*[F.lit(n) for n in lowered])
    # every key is either spelt as a declared column or names none of them
    exact_only = F.coalesce(F.forall(
        F.json_object_keys(value),
        lambda k: F.array_contains(exact_keys, k) | ~F.array_contains(lower_keys, F.lower(k))),
        F.lit(True))
    extra = [renamed.alias(_RENAMED)] if renamed is not None else []
    # each step its own projection, each expensive expression computed once per line
    # (Spark does not collapse a projection into one that references it twice)
    df = df.select(value, path.alias(_PATH), *extra, *kept)
    general = F.col(_PATH) == 2
    df = df.select(value, F.col(_PATH), *extra, *kept,
                   F.when(general, exact_only).alias(_EXACT))
    df = df.select(value, F.col(_PATH), *extra, *kept, F.col(_EXACT), F.when(
        general & ~F.col(_EXACT), F.from_json(value, "map<string, variant>")).alias(_KEYS))
    m = F.col(_KEYS)

    def pick(name: str):
        other_case = F.filter(F.map_entries(m), lambda e: F.lower(e["key"]) == F.lit(name.lower()))
        return F.when(F.map_contains_key(m, F.lit(name)), m[name]).otherwise(
            F.get(other_case, 0)["value"]).alias(name)

    respelt = F.to_json(F.struct(*[pick(n) for n in names]))
    text = (F.when(F.col(_PATH) == 0, value)
            .when(F.col(_PATH) == 1, F.col(_RENAMED) if renamed is not None else value)
            .when(F.col(_EXACT), value).otherwise(respelt))
    df = df.select(F.from_json(text, sjtypes.ddl(columns)).alias(_RECORD), *kept)
    return df.select(*[F.col(_RECORD)[n].alias(n) for n in names], *kept)
