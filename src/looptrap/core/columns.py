"""Text in terminal columns: how wide a text is, a long cell shortened in the middle, aligned tables and
wrapped ``label  value`` lines that fit a width. Every cell is one line (``one_line`` has made it
printable first). The commands' text and the chaos matrix use it.
"""

from __future__ import annotations

import shutil
import unicodedata
from collections.abc import Sequence

__all__ = ["cols", "fit", "table", "width", "wrap"]

_MIN_CELL = 8


def width() -> int:
    """The terminal's width in columns ($COLUMNS, else the terminal's, else 80), at least 40."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def cols(text: str) -> int:
    """How many terminal columns ``text`` takes (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def fit(text: str, room: int) -> str:
    """``text`` in at most ``room`` columns: shortened in the middle with ``…`` when longer."""
    if cols(text) <= room:
        return text
    if room <= 1:
        return "…"[:room]
    head_room = room // 2
    tail_room = room - 1 - head_room
    head = _take(text, head_room)
    tail = _take(text[::-1], tail_room)[::-1]
    return f"{head}…{tail}"


def _take(text: str, room: int) -> str:
    out, used = [], 0
    for c in text:
        w = cols(c)
        if used + w > room:
            break
        out.append(c)
        used += w
    return "".join(out)


def table(rows: Sequence[Sequence[str]], room: int | None = None, shrink: Sequence[int] = (0,)) -> list[str]:
    """Rows (the first is the header) as aligned lines of at most ``room`` columns: when they are too wide,
    the widest of the columns named in ``shrink`` (by index) gives up a column at a time, down to its
    header's width (at least a few characters); their long cells are shortened in the middle."""
    room = width() if room is None else room
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
        cells = [fit(c, w) for c, w in zip(r, widths, strict=True)]
        pads = [c + " " * (w - cols(c)) for c, w in zip(cells, widths, strict=True)]
        lines.append("  ".join(pads).rstrip())
    return lines


def wrap(label: str, text: str, room: int | None = None, indent: int = 10) -> list[str]:
    """``label`` then ``text`` wrapped at spaces into lines of at most ``room`` columns, each line after the
    first indented under the text (a word longer than a line is cut into pieces)."""
    room = width() if room is None else room
    lead = label.ljust(indent)
    avail = max(10, room - indent)
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        while cols(word) > avail:  # an unbreakable run: cut it
            if line:
                lines.append(line)
                line = ""
            piece = _take(word, avail)
            lines.append(piece)
            word = word[len(piece) :]
        if not line:
            line = word
        elif cols(line) + 1 + cols(word) <= avail:
            line = f"{line} {word}"
        else:
            lines.append(line)
            line = word
    if line or not lines:
        lines.append(line)
    return [(lead if i == 0 else " " * indent) + ln for i, ln in enumerate(lines)]
