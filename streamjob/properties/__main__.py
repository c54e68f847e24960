"""``python -m streamjob.properties > docs/properties.md``: the property reference,
generated from the registry so that it cannot drift from the code.

``python -m streamjob.properties --connectors docs/connectors.md`` refreshes the property
tables inside the connector reference: each block between
``<!-- properties: <scope> -->`` and ``<!-- /properties -->`` is replaced by the table of
that connector scope (``kafka stream``, ``sql table`` ...)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from . import CONNECTOR, ENGINE, JOB, SHADOW
from .registry import Registry

_BLOCK = re.compile(r"(<!-- properties: ([a-z ]+) -->\n).*?(<!-- /properties -->)", re.S)


def _table(reg: Registry, with_scope: bool = False) -> list[str]:
    head = "| property | type | default | allowed | meaning |"
    if with_scope:
        head = "| property | where | type | default | allowed | meaning |"
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for p in reg:
        default = "" if p.default is None else f"`{str(p.default).lower() if isinstance(p.default, bool) else p.default}`"
        kind = p.kind + (f" ({p.unit})" if p.unit else "")
        cells = [f"`{p.name}`"] + ([", ".join(p.scopes)] if with_scope else []) + [
            kind, default, p.describe_range().replace("|", "\\|"), p.description]
        rows.append("| " + " | ".join(cells) + " |")
    for prefix, meaning in reg.prefixes.items():
        cells = [f"`{prefix}*`"] + (["job"] if with_scope else []) + ["string", "", "", meaning]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _slipstream_table() -> list[str]:
    rows = ["| property | in streamjob | where it comes from (description, default there) |",
            "|---|---|---|"]
    for p in JOB:
        if not p.slipstream:
            continue
        if p.ignored:
            what = f"accepted, no effect: {p.ignored}"
        elif p.maps_to:
            what = f"mapped to `{p.maps_to}`: {p.description}"
        else:
            what = p.description
        rows.append(f"| `{p.name}` | {what.replace('|', chr(92) + '|')} | {p.slipstream} |")
    return rows


def render() -> str:
    """The whole reference as Markdown."""
    out = [
        "# Property reference",
        "",
        "Generated from `streamjob/properties/definitions.py` by "
        "`python -m streamjob.properties`; do not edit by hand.",
        "",
        "Names are case-insensitive. Values parse as written: `true`/`TRUE`; a duration is "
        "milliseconds (`60000`) or a number with a unit (`60 s`, `1 min`, `2 hours`). An "
        "unknown name is an error suggesting the nearest known one; a bad value names the "
        "property, the value and what is allowed.",
        "",
        "## Job properties (JOBPROPERTIES, SET)",
        "",
        "Effective values layer default < `SET` (captured when the job is created) < "
        "JOBPROPERTIES; `DESCRIBE STREAMJOB` shows each value's origin. `ALTER STREAMJOB j "
        "SET JOBPROPERTIES(...)` changes them for the next start.",
        "",
        *_table(JOB),
        "",
        "### Contradictions",
        "",
        "Every value is range-checked (a duration at most 7 days unless its row says "
        "otherwise, a Spark interval at most 30 days, a count within Java's int, a port "
        "1-65535), a key given twice in one TBLPROPERTIES, JOBPROPERTIES or WITH "
        "SERDEPROPERTIES list is an error at the second one, and these combinations are "
        "refused at CREATE and ALTER STREAMJOB, at the later of the two in the statement "
        "(a value only counts when it was given, in JOBPROPERTIES or SET, unless the row "
        "says a default counts too):",
        "",
        "| combination | why |",
        "|---|---|",
        *[f"| {c.rule}{'' if c.all_given else ' (either given)'} | {c.why} |"
          for c in JOB.contradictions],
        "",
        "## Slipstream's job properties",
        "",
        "Every job property of Slipstream 5.2.2's own catalogue "
        "(`slipstream_confdesc.properties`, in github.com/transwarpio/application-metainfo) "
        "and of its documentation is known: it runs as in Slipstream, is mapped to its Spark "
        "meaning, or is accepted with a one-line notice (`note: ...`, shown by `check`, "
        "`submit` and the shell) saying why it has no effect here. None stops a script; "
        "`streamjob check --compat FILE` lists what a script's properties and clauses do.",
        "",
        *_slipstream_table(),
        "",
        "## Shadow-run properties (ALTER STREAMJOB ... WITH SHADOW JOBPROPERTIES)",
        "",
        "How long the new query of a shadow run runs beside the live job "
        "(docs/upgrades.md, \"Shadow runs\"); it ends at whichever bound comes first.",
        "",
        *_table(SHADOW),
        "",
        "## Engine properties (streamjob.conf, --conf)",
        "",
        *_table(ENGINE),
        "",
        "## Connector properties (TBLPROPERTIES)",
        "",
        "Checked per connector: a property of another connector is named as such.",
        "",
        *_table(CONNECTOR, with_scope=True),
        "",
    ]
    return "\n".join(out)


def render_connectors(text: str) -> str:
    """``text`` (the connector reference) with every properties block regenerated."""
    def block(m: re.Match) -> str:
        reg = Registry([p for p in CONNECTOR if m.group(2) in p.scopes])
        return m.group(1) + "\n".join(_table(reg)) + "\n" + m.group(3)

    return _BLOCK.sub(block, text)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--connectors"]:
        doc = Path(sys.argv[2])
        doc.write_text(render_connectors(doc.read_text()))
    else:
        print(render(), end="")
