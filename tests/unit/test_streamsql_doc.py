"""docs/streamsql.md, the StreamSQL reference, cannot drift from the code (issue 18).

Every fenced ```sql block of the page is checked as ``streamjob check --offline`` checks
a script (:func:`streamjob.client.check.check_script` on a scratch catalog, no Spark):

* a block whose first line is ``-- error: <words>`` must fail, with ``<words>`` in the
  error, on a fresh scratch catalog (so it must declare what it needs);
* every other block must pass, on one scratch catalog shared by the page's blocks in
  order (a later block may use the streams and tables of an earlier one).

And the passing blocks together use every statement the executor handles
(:data:`streamjob.executor.HANDLERS`): a statement added to the grammar needs its
section in the reference.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streamjob.client.check import check_script, scratch_catalog
from streamjob.exceptions import StreamJobError
from streamjob.executor import HANDLERS
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.script import substitute

from . import example_functions

pytestmark = pytest.mark.unit

PAGE = Path(__file__).resolve().parents[2] / "docs" / "streamsql.md"
_FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
_ERROR = re.compile(r"^-- error: (.+)$")


def sql_blocks(text: str) -> list[tuple[int, str]]:
    """``(line of the block's first line, text)`` of every ```sql fenced block."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2), i + 1
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            i += 1
        if info.lower() == "sql":
            blocks.append((start + 1, "\n".join(lines[start:i]) + "\n"))
        i += 1
    return blocks


BLOCKS = sql_blocks(PAGE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def home(tmp_path_factory):  # with the example functions in its functions/
    return example_functions.install(Home.open(tmp_path_factory.mktemp("home")))


def _text(block: str, home: Home) -> str:
    return substitute(block, {"STREAMJOB_HOME": str(home.root)}, source=str(PAGE))


def test_the_block_finder_sees_only_sql_fences():
    text = "x\n```sql\nSHOW STREAMS;\n```\n```text\nSHOW TABLES;\n```\n````sql\nA;\n````\n"
    assert sql_blocks(text) == [(3, "SHOW STREAMS;\n"), (9, "A;\n")]


def test_every_example_checks_as_the_page_says(home):
    assert len(BLOCKS) >= 20, "docs/streamsql.md lost its examples"
    shared = scratch_catalog(None)
    failures = []
    for line, block in BLOCKS:
        first = block.splitlines()[0] if block.strip() else ""
        expected = _ERROR.match(first)
        source = f"docs/streamsql.md:{line}"
        try:
            check_script(_text(block, home), source,
                         scratch_catalog(None) if expected else shared, home)
        except StreamJobError as exc:
            if not expected:
                failures.append(f"{source}: example fails: {exc.message.splitlines()[0]} "
                                f"(block line {exc.line})")
            elif expected.group(1) not in exc.message:
                failures.append(f"{source}: expected an error with {expected.group(1)!r}, "
                                f"got: {exc.message.splitlines()[0]}")
            continue
        if expected:
            failures.append(f"{source}: expected an error with {expected.group(1)!r}; it passed")
    assert not failures, "\n".join(failures)


def test_the_examples_use_every_statement_the_executor_handles(home):
    used = set()
    for _, block in BLOCKS:
        if _ERROR.match(block.splitlines()[0] if block.strip() else ""):
            continue
        used |= {type(stmt) for stmt in parse_script(_text(block, home))}
    missing = sorted(t.__name__ for t in set(HANDLERS) - used)
    assert not missing, f"docs/streamsql.md has no checked example of: {', '.join(missing)}"
