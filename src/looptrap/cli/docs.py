"""``looptrap docs [TOPIC[#SECTION]]``: the documentation of the installed version, in the terminal.

The Markdown files of ``docs/`` ship inside the package (``setup.py`` copies them into the wheel), so a
``pip install`` has them; a source checkout reads the tree's ``docs/``. Every ``--help`` names its topic
(``looptrap docs hooks``) instead of a file a pip user does not have.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from looptrap.core.printable import one_line

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "folder", "run", "section", "topics"]


def add_parser(sub: Any) -> None:
    """Add the ``docs`` sub-command to the CLI's sub-parsers."""
    p = sub.add_parser(
        "docs",
        help="read the documentation of this version, or one section of it",
        description="Print a documentation topic (Markdown) of the installed version, or one section of it "
        "(TOPIC#SECTION, the section's anchor as in a link: looptrap docs configuration#who-may-set-what). "
        "Without a topic: the list of topics.",
    )
    p.add_argument("topic", nargs="?", metavar="TOPIC[#SECTION]", help="e.g. hooks, integrations/langchain")


def folder() -> Path | None:
    """Where the documentation is: inside the installed package, else the source tree's ``docs/``."""
    here = Path(__file__).resolve().parent.parent  # the looptrap package
    for candidate in (here / "docs", here.parent.parent / "docs"):
        if (candidate / "cli.md").is_file():
            return candidate
    return None


def topics(base: Path) -> dict[str, str]:
    """Each topic (``hooks``, ``integrations/langchain``) and its title."""
    out = {}
    for path in sorted(base.rglob("*.md")):
        name = path.relative_to(base).with_suffix("").as_posix()
        if name.endswith("README"):
            continue
        first = next((ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("# ")), "")
        out[name] = first[2:].strip()
    return out


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())  # markup; an underscore inside a word stays
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def section(text: str, name: str) -> str | None:
    """The section of a Markdown text whose heading's anchor is ``name``: from its heading to the next
    heading of the same or a higher level (``None``: no such section)."""
    lines = text.splitlines()
    fenced = False
    start = level = -1
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^(#{1,6})\s+(.*)$", line)
        if not m:
            continue
        if start >= 0 and len(m.group(1)) <= level:
            return "\n".join(lines[start:i]).rstrip() + "\n"
        if start < 0 and anchor(m.group(2)) == name:
            start, level = i, len(m.group(1))
    return "\n".join(lines[start:]).rstrip() + "\n" if start >= 0 else None


def run(args: argparse.Namespace) -> int:
    """Print a topic, a section, or the list of topics; returns the exit code."""
    base = folder()
    if base is None:
        sys.stderr.write("looptrap: the documentation is not installed with this copy of looptrap\n")
        return 2
    known = topics(base)
    if not args.topic:
        width = max(len(t) for t in known)
        sys.stdout.write("topics (looptrap docs TOPIC, or TOPIC#SECTION for one section):\n")
        for name, title in known.items():
            sys.stdout.write(f"  {name:<{width}}  {title}\n")
        return 0
    topic, _, part = args.topic.removesuffix(".md").partition("#")
    topic = topic.removeprefix("docs/").removesuffix(".md")
    if topic not in known:
        close = [t for t in known if topic in t] or sorted(known)
        sys.stderr.write(f"looptrap: no topic {one_line(topic, 80)!r}; topics: {', '.join(close)}\n")
        return 2
    text = (base / f"{topic}.md").read_text(encoding="utf-8")
    if part:
        got = section(text, part)
        if got is None:
            headings = [anchor(ln.lstrip("#")) for ln in text.splitlines() if re.match(r"^#{2,3}\s", ln)]
            sys.stderr.write(
                f"looptrap: no section {one_line(part, 80)!r} in {topic}; sections: {', '.join(headings)}\n"
            )
            return 2
        text = got
    sys.stdout.write(text)
    return 0
