"""Every relative link of the project's Markdown (README.md, docs/*.md) points to a file
of this repository (issue 16): a clone has nothing outside it, so a link such as
``../shared/DESIGN.md`` is broken even where the file happens to exist beside the clone.
Images (``![alt](path)``) and reference definitions (``[id]: path``) count as links; links
inside code (fenced blocks, inline code spans) do not; URLs with a scheme and pure
``#anchors`` are not files. An anchor (``page.md#heading``, ``#heading``) must name a
heading of its page, slugged as GitHub does (issue 29: sections moved out of the README
must leave no link pointing at their old place)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) and ![alt](target); the target may be <...> and be followed by a title
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str):
    """``(line number, line)`` of every line outside fenced code blocks."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield number, line


def links(text: str) -> list[tuple[int, str]]:
    """``(line number, target)`` of every link and image outside code."""
    out: list[tuple[int, str]] = []
    for number, line in prose(text):
        line = _CODE_SPAN.sub("", line)
        targets = [t.group(1) for t in _INLINE.finditer(line)]
        ref = _REFERENCE.match(line)
        if ref:
            targets.append(ref.group(1))
        out.extend((number, t.strip("<>")) for t in targets)
    return out


def relative_file(target: str) -> str | None:
    """The file part of a relative link, or None for a URL or an anchor in this page."""
    if _SCHEME.match(target) or target.startswith(("#", "//")):
        return None
    path = target.split("#", 1)[0].split("?", 1)[0]
    return path or None


def test_the_link_finder_sees_links_images_and_references_but_not_code():
    text = (
        "See [a](docs/a.md#x) and ![img](console/x.png \"t\") and [u](https://e.org/y).\n"
        "`[not](code.md)` [anchor](#here)\n"
        "```\n[inside](fence.md)\n```\n"
        "[ref]: ../shared/DESIGN.md\n"
    )
    found = [relative_file(t) for _, t in links(text)]
    assert [f for f in found if f] == ["docs/a.md", "console/x.png", "../shared/DESIGN.md"]


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file_of_the_repository(page: Path):
    broken = []
    for number, target in links(page.read_text(encoding="utf-8")):
        path = relative_file(target)
        if path is None:
            continue
        resolved = (page.parent / path).resolve()
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{page.name}:{number}: {target} leaves the repository")
        elif not resolved.exists():
            broken.append(f"{page.name}:{number}: {target} does not exist")
    assert not broken, "broken links:\n" + "\n".join(broken)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, code marks and punctuation dropped (word
    characters, ``-`` and spaces kept), spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().replace("`", "").lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a Markdown page's headings (outside code), duplicates numbered."""
    out: set[str] = set()
    for _number, line in prose(page.read_text(encoding="utf-8")):
        h = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if h:
            base = slug(h.group(1))
            name, n = base, 0
            while name in out:
                n += 1
                name = f"{base}-{n}"
            out.add(name)
    return out


def test_slugs_follow_github():
    assert slug("5. Failover") == "5-failover"
    assert slug("Old Slipstream scripts: `check --compat`") == "old-slipstream-scripts-check---compat"
    assert slug("Predicate sessions (Slipstream 5.1)") == "predicate-sessions-slipstream-51"


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_anchor_names_a_heading(page: Path):
    broken = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if _SCHEME.match(target) or "#" not in target:
            continue
        path, anchor = target.split("#", 1)
        resolved = (page.parent / path).resolve() if path else page
        if resolved.suffix != ".md" or not resolved.exists():
            continue  # a missing file is the other test's finding
        if anchor not in anchors(resolved):
            broken.append(f"{page.name}:{number}: {target}: no such heading")
    assert not broken, "broken anchors:\n" + "\n".join(broken)
