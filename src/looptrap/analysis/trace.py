"""Trace format v1: JSON Lines, one event per line (see docs/trace-format.md).

Events: ``tool_call``, ``tool_result``, ``turn_end``, ``text``. ``session`` and ``type`` are required,
``seq`` and ``ts`` optional, unknown fields ignored.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson

__all__ = ["EVENT_TYPES", "Event", "TraceError", "iter_events", "parse_event"]

EVENT_TYPES = frozenset({"tool_call", "tool_result", "turn_end", "text"})


class TraceError(ValueError):
    """A malformed trace line: ``where`` is ``file:line``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True, slots=True)
class Event:
    """One parsed trace event (``data`` is the whole JSON object)."""

    session: str
    type: str
    data: dict[str, Any]
    line: int
    seq: int | None
    ts: float | None


def parse_event(raw: bytes | str, where: str, line: int) -> Event:
    """Parse one line; raises :class:`TraceError` with a readable reason."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TraceError(where, f"not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise TraceError(where, f"an event must be a JSON object, got {type(obj).__name__}")
    session = obj.get("session")
    if isinstance(session, (int, float)) and not isinstance(session, bool):
        session = str(session)
    if not isinstance(session, str) or not session:
        raise TraceError(where, "missing 'session' (a non-empty string)")
    etype = obj.get("type")
    if not isinstance(etype, str) or not etype:
        raise TraceError(where, "missing 'type'")
    if etype in ("tool_call", "tool_result"):
        tool = obj.get("tool")
        if not isinstance(tool, str) or not tool:
            raise TraceError(where, f"a {etype} needs 'tool' (a non-empty string)")
    seq = obj.get("seq")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        raise TraceError(where, "'seq' must be an integer")
    ts = obj.get("ts")
    if ts is not None:
        if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
            raise TraceError(where, "'ts' must be a number of seconds (or null)")
        ts = float(ts)
    return Event(session, etype, obj, line, seq, ts)


def iter_events(
    source: str | IO[bytes] | Iterable[bytes | str],
    *,
    name: str | None = None,
    skip_invalid: bool = False,
    errors: list[TraceError] | None = None,
) -> Iterator[Event]:
    """Stream events from a path (``-`` for stdin), a binary file or an iterable of lines.

    Malformed lines raise :class:`TraceError`, or with ``skip_invalid`` are appended to ``errors`` (if given)
    and skipped. Blank lines are ignored.
    """
    close = None
    if isinstance(source, str):
        name = name or source
        if source == "-":
            lines: Iterable[bytes | str] = sys.stdin.buffer
            name = "<stdin>"
        else:
            close = open(source, "rb")  # noqa: SIM115 - closed in the finally below, after streaming
            lines = close
    else:
        lines = source
        name = name or getattr(source, "name", "<trace>")
    try:
        for n, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                yield parse_event(raw, f"{name}:{n}", n)
            except TraceError as exc:
                if not skip_invalid:
                    raise
                if errors is not None:
                    errors.append(exc)
    finally:
        if close is not None:
            close.close()
