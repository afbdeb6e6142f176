"""Text in terminal columns: the width to lay text out for, how many columns a text takes, a long text
shortened in the middle or at its end, aligned tables and wrapped lines that fit a width. Every text is one
line (``one_line`` has made it printable first). The commands' text, the chaos matrix and the ``analyze``
report use it; standard library only, as the plain CLI does not have rich.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import IO

__all__ = [
    "MIN_WIDTH",
    "cols",
    "ellipsis",
    "fit",
    "fit_end",
    "head",
    "table",
    "tail",
    "width",
    "wrap",
    "writable",
]

#: The narrowest text is laid out for; a narrower width is taken as this. Below it a width is not honoured,
#: so the terminal breaks every longer line, and a table row broken over two lines is harder to read than
#: one whose cells are cut shorter: the floor is as low as a row can still say something (an id cut to ten
#: columns shows a few characters of each end, beside a count).
MIN_WIDTH = 20
_MIN_CELL = 8

# Widths that differ from what unicodedata says, so that a text never takes more columns than counted
# (rich's cell_len, which draws the ``analyze`` report, included):
# Unicode 16 made these wide; older tables (this Python's, perhaps) call them neutral.
_NEWLY_WIDE = ((0x2630, 0x2637), (0x268A, 0x268F), (0x4DC0, 0x4DFF), (0x1D300, 0x1D356), (0x1D360, 0x1D376))
# The blocks kept for ideographs and emoji: what a later Unicode assigns in them is wide.
_WIDE_BLOCKS = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x1F000, 0x1FAFF), (0x20000, 0x3FFFD))
# Format characters that are drawn: the soft hyphen and the prepended concatenation marks (Arabic number signs).
_SHOWN_FORMAT = frozenset(
    "\u00ad\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd"
)
_VS16 = "\ufe0f"  # variation selector 16: the character before it in its emoji presentation


def width(out: IO[str] | None = None, given: int | None = None) -> int:
    """The width to lay text out for: ``given``, else ``$COLUMNS``, else the terminal's when ``out``
    (standard output by default) is one, else 80; never under :data:`MIN_WIDTH`."""
    if given is None:
        env = os.environ.get("COLUMNS", "").strip()
        given = int(env) if env.isdigit() and int(env) > 0 else _terminal(sys.stdout if out is None else out) or 80
    return max(given, MIN_WIDTH)


def _terminal(out: IO[str] | None) -> int:
    try:
        return os.get_terminal_size(out.fileno()).columns if out is not None and out.isatty() else 0
    except (OSError, ValueError, AttributeError):  # closed, or a stream without a file descriptor
        return 0


def writable(text: str, out: IO[str] | None = None) -> bool:
    """Whether ``out`` (standard output by default) can encode ``text``."""
    out = sys.stdout if out is None else out
    try:
        text.encode(getattr(out, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def ellipsis(out: IO[str] | None = None) -> str:
    """The mark of a cut text: ``…``, or ``...`` when ``out`` (standard output by default) cannot encode it."""
    return "…" if writable("…", out) else "..."


@lru_cache(maxsize=4096)
def _char(c: str) -> int:
    cat = unicodedata.category(c)
    if cat in ("Mn", "Me", "Cc") or (cat == "Cf" and c not in _SHOWN_FORMAT):
        return 0
    n = ord(c)
    if cat == "Cn":
        return _unassigned(n)
    if unicodedata.east_asian_width(c) in ("W", "F") or any(lo <= n <= hi for lo, hi in _NEWLY_WIDE):
        return 2
    return 1


def _unassigned(n: int) -> int:
    """A character this Python's tables do not have yet (east_asian_width() says "F" for all of them): as
    wide as the last one they have at most 256 before it, as a later Unicode fills a block with characters
    like those already in it."""
    if any(lo <= n <= hi for lo, hi in _WIDE_BLOCKS):
        return 2
    if n >= 0x40000:  # nothing wide past the ideographic planes: tags, selectors, private use
        return 1
    for k in range(n - 1, max(n - 256, -1), -1):
        c = chr(k)
        if unicodedata.category(c) != "Cn":
            return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return 1


def _widths(text: str) -> Iterator[int]:
    """The columns of each character of ``text`` where it stands."""
    last = 0  # the columns of the last character that took any, until a VS16 has widened it
    for c in text:
        if c == _VS16:
            # An emoji drawn from a narrow character (❤️) takes two, as rich counts it; any narrow
            # character is taken as one, which counts a meaningless selector one column too many.
            yield 1 if last == 1 else 0
            last = 0
            continue
        w = _char(c)
        last = w or last
        yield w


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable()


def cols(text: str) -> int:
    """How many terminal columns ``text`` takes: East Asian wide and full-width characters two, combining
    marks, format characters (zero-width joiners) and control characters none, others one. Never fewer than
    rich counts; more where a terminal may draw a sequence joined or apart (a zero-width joiner sequence, a
    skin tone, a spacing mark, conjoining jamo), so that the text fits either way."""
    return len(text) if _plain(text) else sum(_widths(text))


def head(text: str, room: int) -> str:
    """The longest start of ``text`` at most ``room`` columns wide."""
    if _plain(text):
        return text[: max(room, 0)]
    used = 0
    for i, w in enumerate(_widths(text)):
        used += w
        if used > room:
            return text[:i]
    return text


def tail(text: str, room: int) -> str:
    """The longest end of ``text`` at most ``room`` columns wide that does not start with a character of no
    width (a combining mark would land on whatever is put before the end)."""
    if _plain(text):
        return text[len(text) - room :] if room > 0 else ""
    widths = list(_widths(text))
    start, used = len(text), 0
    while start and used + widths[start - 1] <= room:
        start -= 1
        used += widths[start]
    while start < len(text) and _char(text[start]) == 0:
        start += 1
    return text[start:]


def fit(text: str, room: int, mark: str | None = None) -> str:
    """``text`` in at most ``room`` columns: shortened in the middle, where ``mark`` (by default
    :func:`ellipsis` for standard output) stands for what was cut. Both ends are kept: an id's or a path's
    distinctive part is often at its end, its kind at its start."""
    if cols(text) <= room:
        return text
    mark = ellipsis() if mark is None else mark
    space = room - cols(mark)
    if space < 4:  # too little for two ends to tell anything
        return fit_end(text, room, mark)
    start = head(text, (space + 1) // 2)
    return start + mark + tail(text, space - cols(start))


def fit_end(text: str, room: int, mark: str | None = None) -> str:
    """``text`` in at most ``room`` columns: cut at its end, then ``mark`` (as for :func:`fit`) when there is
    room for it."""
    if cols(text) <= room:
        return text
    mark = ellipsis() if mark is None else mark
    if room <= cols(mark):
        return head(text, room)
    return head(text, room - cols(mark)) + mark


def table(
    rows: Sequence[Sequence[str]], room: int | None = None, shrink: Sequence[int] = (0,), mark: str | None = None
) -> list[str]:
    """Rows (the first is the header) as aligned lines of at most ``room`` columns: when they are too wide,
    the widest of the columns named in ``shrink`` (by index) gives up a column at a time, down to its
    header's width (at least a few characters); their long cells are shortened in the middle (:func:`fit`)."""
    room = width() if room is None else room
    mark = ellipsis() if mark is None else mark
    n = len(rows[0])
    widths = [max(cols(r[i]) for r in rows) for i in range(n)]
    over = sum(widths) + 2 * (n - 1) - room
    floors = {i: max(_MIN_CELL, cols(rows[0][i])) for i in shrink}
    while over > 0:  # the widest of the shrinkable columns gives a column, until the table fits or none can
        i = max((i for i in shrink if widths[i] > floors[i]), key=lambda i: widths[i], default=None)
        if i is None:
            break
        widths[i] -= 1
        over -= 1
    lines = []
    for r in rows:
        cells = [fit(c, w, mark) for c, w in zip(r, widths, strict=True)]
        pads = [c + " " * (w - cols(c)) for c, w in zip(cells, widths, strict=True)]
        lines.append("  ".join(pads).rstrip())
    return lines


def wrap(label: str, text: str, room: int | None = None, indent: int = 10, hang: int = 0) -> list[str]:
    """``label`` then ``text`` in lines of at most ``room`` columns, broken at spaces: the text starts
    ``indent`` columns in (the label padded to it) and the lines after the first ``hang`` columns further.
    A word longer than a line fills the line it starts on and is broken where it must."""
    room = width() if room is None else room
    line = label.ljust(indent)
    lead, pad = len(line), " " * (indent + hang)
    lines: list[str] = []
    words = False  # whether ``line`` has a word yet
    for word in text.split(" "):
        if not word:
            continue
        gap = " " if words else ""
        if cols(line) + len(gap) + cols(word) <= room:
            line, words = line + gap + word, True
            continue
        if words and cols(pad) + cols(word) <= room:
            lines.append(line)
            line, lead = pad + word, len(pad)
            continue
        line, words = line + gap + word, True
        while cols(line) > room:
            part = head(line, room)
            if len(part) <= lead:  # not even one character fits: one a line all the same
                part = line[: lead + 1]
            lines.append(part)
            line, lead = pad + line[len(part) :], len(pad)
    if words or not lines:
        lines.append(line)
    return lines
