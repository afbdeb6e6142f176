"""Every relative link in the README and docs/ reaches a file that exists, and every #anchor a heading of it
(as GitHub makes anchors: the same rule `looptrap docs TOPIC#SECTION` reads)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from looptrap.cli.docs import anchor

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings (outside code blocks; a repeated heading gets -1, -2...)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*$", line)
        if m:
            name = anchor(m.group(1))
            n = seen.get(name, 0)
            seen[name] = n + 1
            out.add(name if n == 0 else f"{name}-{n}")
    return out


def links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        where, _, part = target.partition("#")
        goal = (page.parent / where).resolve() if where else page
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif part and goal.suffix == ".md" and part not in anchors(goal):
            broken.append(f"{target}: no heading #{part}")
    assert not broken, broken
