"""How every command writes a number for people: one format for counts, shares, money and durations.

Counts have thousands separators (``12,345``) and a noun in the right number (``1 session``, ``2
sessions``); shares are whole percents (``67%``, ``<1%`` for a share above 0 that rounds to 0); money is
dollars and cents (``$6.74``, ``$0.0031`` below a cent); durations are seconds below a minute (``1.6 s``),
then minutes and hours (``4 min 12 s``, ``2 h 05 min``). Machine outputs (JSON, CSV) keep raw numbers.
"""

from __future__ import annotations

import math

__all__ = ["count", "duration", "money", "plural", "share"]

_IRREGULAR = {"retry": "retries", "was": "were", "is": "are", "this": "these"}


def count(n: float, noun: str = "") -> str:
    """``n`` with thousands separators, and ``noun`` after it, plural unless ``n`` is 1: ``count(3,
    "session")`` is ``3 sessions``. Nouns ending in ``y`` after a consonant and a few others are known."""
    text = f"{n:,.0f}" if isinstance(n, float) else f"{n:,}"
    if not noun:
        return text
    return f"{text} {noun if n == 1 else plural(noun)}"


def plural(noun: str) -> str:
    """The plural of a (last) English word: ``call`` -> ``calls``, ``retry`` -> ``retries``."""
    head, _, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        word = _IRREGULAR[last]
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u"):
        word = last[:-1] + "ies"
    elif last.endswith(("s", "x", "ch", "sh")):
        word = last + "es"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def share(part: float, whole: float) -> str:
    """``part`` of ``whole`` as a whole percent (``-`` when ``whole`` is 0)."""
    if not whole:
        return "-"
    pct = 100 * part / whole
    if 0 < pct < 0.5:
        return "<1%"
    if 99.5 <= pct < 100:
        return ">99%"
    return f"{pct:.0f}%"


def money(usd: float | None) -> str:
    """Dollars: ``$6.74``, ``$1,234.50``; below a cent, four decimals (``$0.0031``); ``-`` for unknown."""
    if usd is None or not math.isfinite(usd):
        return "-"
    return f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def duration(seconds: float | None) -> str:
    """``0.4 s``, ``12 s``, ``4 min 12 s``, ``2 h 05 min``; ``-`` for unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
