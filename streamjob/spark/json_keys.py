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
values); respelt ones four times. 400,000 Nexmark bids into Spark's ``noop`` sink,
``local[2]`` on 2 shared cores, variants alternated in one sitting (min-max of 5): exact
keys 1.7-2.8 s, respelt (``dateTime`` into ``datetime``) 3.6-7.4 s, ``from_json`` alone
0.9-1.7 s, Spark's JSON reader 0.4-1.1 s. ``from_json`` parses each line through a
``java.io.Reader`` (``CreateJacksonParser.utf8String``), Spark's reader the bytes, so
one ``from_json`` per line is about twice the reader; ``json_object_keys`` costs about
as much as ``from_json``, and so does a one-pass regular expression finding the key
tokens (docs/results/2026-11-25.md, "JSON file streams"). As in Spark's JSON reader, blank lines
are skipped and a line holding an array of objects gives one record per object.
"""

from __future__ import annotations

from typing import Sequence

TEXT_COLUMN = "value"  # Spark's text source's one column
_EXACT, _KEYS, _RECORD = "__sj_exact", "__sj_keys", "__sj_record"  # working columns


def json_columns(text_df, names: Sequence[str], schema: str, keep: Sequence[str] = ()):
    """The declared columns ``names`` (declared order and spelling), typed as ``schema``
    (their Spark DDL, in that order), of the JSON lines in ``text_df`` (a DataFrame, batch or streaming, whose ``value`` column
    holds one JSON record per row), one row per non-blank line, followed by the columns
    of ``text_df`` named in ``keep`` (e.g. the partition columns of a table), as they are.

    A malformed line, or one that is not a JSON object, gives a row of NULLs, as Spark's
    JSON reader does in its default PERMISSIVE mode; the observed metrics of
    :mod:`streamjob.spark.observe` count the columns no record carried."""
    from pyspark.sql import functions as F

    names = list(names)
    value = F.col(f"`{TEXT_COLUMN}`")
    lowered = sorted({n.lower() for n in names})
    exact_keys = F.array(*[F.lit(n) for n in names])
    lower_keys = F.array(*[F.lit(n) for n in lowered])
    # every key is either spelt as a declared column or names none of them
    exact_only = F.coalesce(F.forall(
        F.json_object_keys(value),
        lambda k: F.array_contains(exact_keys, k) | ~F.array_contains(lower_keys, F.lower(k))),
        F.lit(True))
    # each step its own projection, each expensive expression computed once per line
    # (Spark does not collapse a projection into one that references it twice)
    kept = [F.col(f"`{k}`") for k in keep]
    # a line holding an array of objects is one record per object, as in Spark's reader
    elements = F.from_json(value, "array<string>")
    objects = F.when(F.ltrim(value).startswith("[") & F.forall(
        elements, lambda e: F.ltrim(e).startswith("{")), elements).otherwise(F.array(value))
    df = (text_df.where(F.trim(value) != F.lit(""))
          .select(F.explode(objects).alias(TEXT_COLUMN), *kept)
          .select(value, exact_only.alias(_EXACT), *kept))
    df = df.select(value, F.col(_EXACT), *kept, F.when(~F.col(_EXACT), F.from_json(
        value, "map<string, variant>")).alias(_KEYS))
    m = F.col(_KEYS)

    def pick(name: str):
        other_case = F.filter(F.map_entries(m), lambda e: F.lower(e["key"]) == F.lit(name.lower()))
        return F.when(F.map_contains_key(m, F.lit(name)), m[name]).otherwise(
            F.get(other_case, 0)["value"]).alias(name)

    respelt = F.to_json(F.struct(*[pick(n) for n in names]))
    df = df.select(F.from_json(F.when(F.col(_EXACT), value).otherwise(respelt),
                               schema).alias(_RECORD), *kept)
    return df.select(*[F.col(_RECORD)[n].alias(n) for n in names], *kept)
