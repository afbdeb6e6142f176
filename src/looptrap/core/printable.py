"""Text that is safe to show: to a terminal, in a table cell, or quoted to the model.

Tool output, session ids, tool names and what the model says are not trusted: they may carry terminal
escape sequences (which recolour, move the cursor, rewrite the title or hide text), other control
characters, bidirectional overrides that reorder what is shown, or megabytes. Everything looptrap shows or
quotes goes through :func:`printable` (or :func:`one_line` for a table cell or a log line).
"""

from __future__ import annotations

import re

__all__ = ["one_line", "printable"]

#: ANSI/VT escape sequences (CSI ... final byte, OSC ... BEL or ST, other two-byte escapes), removed whole.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
#: Other control characters (C0 but tab and newline, DEL, C1) and the invisible or reordering format
#: characters (zero-width, bidirectional embeddings, overrides and isolates).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_BLANKS = re.compile(r"\s+")


def printable(text: str, limit: int = 2000) -> str:
    """``text`` without escape sequences and control characters (tabs and newlines kept), at most
    ``limit`` characters (cut with "...")."""
    if not isinstance(text, str):
        text = str(text)
    if len(text) > 4 * limit:  # bound the work before the patterns run
        text = text[: 4 * limit]
    if not text.isascii() or "\x1b" in text or not text.isprintable():
        text = _CONTROLS.sub("", _ESCAPES.sub("", text.replace("\r\n", "\n")))
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def one_line(text: str, limit: int = 200) -> str:
    """:func:`printable` on one line: every run of whitespace (newlines too) becomes one space."""
    return printable(_BLANKS.sub(" ", printable(text, 4 * limit)).strip(), limit)
