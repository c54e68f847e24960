"""The README and the docs cannot disagree with the property registry (issue 29): every
property name they quote in backquotes exists, and a default they quote beside it is the
registry's.

docs/properties.md is generated from the registry (tests/unit/test_properties.py keeps it
so) and is the only property table; the other pages name properties in prose, often with
their default in parentheses — "`morphling.checkpoint.retained` (5)",
"`streamjob.trigger.interval` (default 500 ms: ...)". Those are the facts checked here:

- a backquoted name of a property family (``morphling.*``, ``streamjob.*``,
  ``streamsql.*``, ``spark.morphling.*``) is a job, engine or connector property; a name
  ending in ``.*`` must prefix at least one. Module paths (``streamjob.connectors...``)
  and the file, topic and group names of :data:`NOT_PROPERTIES` are not properties.
- such a name followed by ``(`` and a number, a boolean or a backquoted value (after an
  optional ``default``) must quote the default: ``(60 s; ...)``, ``(60,000 ms)``,
  ``(`local[*]`)``. Other parentheses (``(docs/reliability.md)``) are not defaults.
- a hand-written Markdown table with a ``default`` column and a property in its first
  column must give that property's default.

Relative links and their anchors are checked by tests/unit/test_docs_links.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streamjob.properties import CONNECTOR, ENGINE, JOB
from streamjob.properties.registry import Property

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
REGISTRIES = (JOB, ENGINE, CONNECTOR)

#: Names of a property family's shape that are not properties, each with what it is.
NOT_PROPERTIES = {
    "streamjob.conf": "the home's file of engine properties",
    "streamjob.json": "a checkpoint directory's identity file",
    "streamjob.fingerprint": "a checkpoint directory's fingerprint file",
    "streamjob.fingerprint.next": "the fingerprint of a planned query change (docs/upgrades.md)",
    "streamjob.checkpoints": "the kafka checkpoint backend's topic",
    "streamsql.lark": "the grammar file",
}

_SPAN = re.compile(r"(`+)(.+?)\1")
_FAMILY = re.compile(r"^(?:morphling|streamjob|streamsql|spark\.morphling)\.[A-Za-z0-9_.*]+$")
_NUMBER = r"-?\d{1,3}(?:,\d{3})+|-?\d+"
#: `name` (default 60,000 ms; ...) / (5) / (true) / (`local[*]`)
_DEFAULT = re.compile(
    r"`(?P<name>[a-z][a-z0-9_.]+)`\s*\(\s*(?:default\s+)?"
    r"(?:`(?P<quoted>[^`]+)`|(?P<value>(?:" + _NUMBER + r")(?:\s*[a-z]+)?|true|false)(?=[\s;,):=]))")


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """``text`` without fenced code blocks (examples and outputs are not claims)."""
    out, fence = [], None
    for line in text.splitlines():
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


def registered(name: str) -> Property | None:
    """The property called ``name`` in any registry, or None."""
    for reg in REGISTRIES:
        if (p := reg.get(name)) is not None:
            return p
    return None


def _all_names() -> list[str]:
    return [n for reg in REGISTRIES for n in reg.names()] + [
        p for reg in REGISTRIES for p in reg.prefixes]


def _is_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "streamjob" and len(parts) > 1 and (
        (ROOT / "streamjob" / parts[1]).is_dir() or (ROOT / "streamjob" / f"{parts[1]}.py").exists())


def unknown_names(text: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every backquoted property-family name that is no property."""
    names = _all_names()
    out = []
    for number, line in enumerate(prose(text).splitlines(), 1):
        for m in _SPAN.finditer(line):
            name = m.group(2).strip().split("=")[0].strip().rstrip(".").lower()
            if not _FAMILY.match(name) or name in NOT_PROPERTIES or _is_module(name):
                continue
            if name.endswith(".*"):
                if not any(n.startswith(name[:-1]) for n in names):
                    out.append((number, name))
            elif registered(name) is None:
                out.append((number, name))
    return out


def _parsed(prop: Property, written: str):
    try:
        return prop.parse(written.replace(",", "") if written[:1].isdigit() or written[:1] == "-" else written)
    except Exception:  # noqa: BLE001 - a value the property cannot hold is a wrong default too
        return ("unparsable", written)


def wrong_defaults(text: str) -> list[str]:
    """Quoted defaults that are not the registry's, as ``line: name (written) != default``."""
    body = prose(text)
    out = []
    for m in _DEFAULT.finditer(body):
        prop = registered(m.group("name"))
        if prop is None:
            continue
        written = m.group("quoted") or m.group("value")
        if m.group("quoted") is None and prop.kind not in ("int", "duration", "bool"):
            continue  # (any Hadoop URI): words, not a value
        if m.group("quoted") is not None:
            written = written.removeprefix("<home>/").rstrip("/")  # paths in the home
            if "<" in written:
                continue  # (`streamjob.<db>.<job>`): a pattern, not a value
            if isinstance(prop.default, str) and written in prop.default.split(","):
                continue  # (default `<home>/data`, `<home>/warehouse`): a list, item by item
        if _parsed(prop, written) != prop.default:
            line = body.count("\n", 0, m.start()) + 1
            out.append(f"{line}: `{prop.name}` ({written}) but the default is {prop.default!r}")
    out.extend(_table_defaults(body))
    return out


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _table_defaults(body: str) -> list[str]:
    out, column = [], None
    for number, line in enumerate(body.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            column = None
            continue
        cells = _cells(line)
        if column is None:
            column = cells.index("default") if "default" in cells else -1
            continue
        if column < 0 or column >= len(cells) or set(cells[0]) <= set("-: "):
            continue
        prop = registered(cells[0].strip("`"))
        if prop is None:
            continue
        written = cells[column].strip("`").split(" (")[0].strip()
        expected = prop.default
        if (written == "" and expected is None) or _parsed(prop, written) == expected:
            continue
        out.append(f"{number}: table row `{prop.name}` default {written!r} but the default is {expected!r}")
    return out


def test_the_checks_find_a_wrong_name_and_a_wrong_default():
    text = (
        "`morphling.checkpoint.retained` (5) and `streamjob.trigger.interval` (default 500 ms: x);\n"
        "`morphling.task.failure.window` (60,000 ms) and `spark.master` (`local[*]`).\n"
        "`streamjob.security.secret.dirs` (default `<home>/secrets/`).\n"
        "`streamjob.json`, `streamjob.connectors.files.table.read_table`, `streamjob.alert.*`.\n"
        "`morphling.task.max.failures` (docs/reliability.md) is no default.\n"
        "```\n`morphling.no.such` (9) in an example\n```\n"
    )
    assert unknown_names(text) == [] and wrong_defaults(text) == []
    bad = ("`morphling.checkpoint.retaned` and `streamjob.nothing.*`;\n"
           "`morphling.checkpoint.retained` (7), `streamjob.trigger.interval` (1 s)\n"
           "| property | default |\n|---|---|\n| `morphling.job.enable.checkpoint` | false |\n")
    assert unknown_names(bad) == [(1, "morphling.checkpoint.retaned"), (1, "streamjob.nothing.*")]
    assert len(wrong_defaults(bad)) == 3


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_property_exists(page: Path):
    unknown = unknown_names(page.read_text(encoding="utf-8"))
    assert not unknown, f"{page.name}: not in the property registry: " + ", ".join(
        f"line {n}: {name}" for n, name in unknown)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_default_is_the_registrys(page: Path):
    wrong = wrong_defaults(page.read_text(encoding="utf-8"))
    assert not wrong, f"{page.name}:\n" + "\n".join(wrong)
