"""Trace format v1: JSON Lines, one event per line (see docs/trace-format.md).

Events: ``tool_call``, ``tool_result``, ``turn_end``, ``text``, ``user_message``. ``session`` and ``type`` are required,
``seq`` and ``ts`` optional, unknown fields ignored.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Any

import orjson

__all__ = [
    "EVENT_TYPES",
    "Event",
    "TraceError",
    "event_from",
    "iter_events",
    "parse_event",
    "routed_session",
    "session_of",
]

EVENT_TYPES = frozenset({"tool_call", "tool_result", "turn_end", "text", "user_message"})


class TraceError(ValueError):
    """A malformed trace line: ``where`` is ``file:line``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[type[TraceError], tuple[str, str]]:
        return (TraceError, (self.where, self.reason))


@dataclass(slots=True)  # not frozen: one is built per event, and frozen dataclasses are slow to build
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
    return event_from(obj, where, line)


def session_of(obj: Any) -> str | None:
    """The session of a decoded event, as the reader normalises it (``None`` if it has none)."""
    if not isinstance(obj, dict):
        return None
    session = obj.get("session")
    if type(session) is str:  # the common case, first: this runs once per line
        return session if session else None
    if isinstance(session, (int, float)) and not isinstance(session, bool):
        return str(session)
    return session if isinstance(session, str) and session else None


_SESSION_KEY = b'"session"'
_SESSION_VALUE = re.compile(rb'\s*:\s*"([^"\\]+)"')


def routed_session(raw: bytes) -> str | None:
    """The session of a raw JSON line, read without parsing the line, or ``None`` when that is not certain.

    Only a line in which ``"session"`` occurs once, as a key whose value is a plain string, qualifies: then
    that key is the event's own, if the line is valid at all (if it is not, the reader that keeps the
    session it names reports it).
    """
    i = raw.find(_SESSION_KEY)
    if i < 0 or raw.find(_SESSION_KEY, i + 9) >= 0:
        return None
    m = _SESSION_VALUE.match(raw, i + 9)
    if m is None:
        return None
    try:
        return m.group(1).decode("utf-8")
    except UnicodeDecodeError:
        return None


def event_from(obj: Any, where: str, line: int) -> Event:
    """Validate a decoded JSON value as an event; raises :class:`TraceError` with a readable reason."""
    if not isinstance(obj, dict):
        raise TraceError(where, f"an event must be a JSON object, got {type(obj).__name__}")
    session = session_of(obj)
    if session is None:
        raise TraceError(where, "missing 'session' (a non-empty string)")
    etype = obj.get("type")
    if not etype or (type(etype) is not str and not isinstance(etype, str)):
        raise TraceError(where, "missing 'type'")
    if etype == "tool_call" or etype == "tool_result":
        tool = obj.get("tool")
        if not tool or (type(tool) is not str and not isinstance(tool, str)):
            raise TraceError(where, f"a {etype} needs 'tool' (a non-empty string)")
    seq = obj.get("seq")
    if seq is not None and type(seq) is not int and (not isinstance(seq, int) or isinstance(seq, bool)):
        raise TraceError(where, "'seq' must be an integer")
    ts = obj.get("ts")
    if ts is not None and (type(ts) is not float or not math.isfinite(ts)):  # a float: the common case
        if isinstance(ts, str):
            ts = _iso_seconds(ts, where)
        elif isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
            raise TraceError(where, "'ts' must be a number of seconds, an ISO 8601 time, or null")
        ts = float(ts)
    return Event(session, etype, obj, line, seq, ts)


def _iso_seconds(text: str, where: str) -> float:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise TraceError(where, f"'ts' is not a number of seconds nor an ISO 8601 time: {text[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)  # a time without a zone is read as UTC
    return moment.timestamp()


def iter_events(
    source: str | IO[bytes] | Iterable[bytes | str],
    *,
    name: str | None = None,
    skip_invalid: bool = False,
    errors: list[TraceError] | None = None,
    keep: Callable[[str], bool] | None = None,
) -> Iterator[Event]:
    """Stream events from a path (``-`` for stdin), a binary file or an iterable of lines.

    Malformed lines raise :class:`TraceError`, or with ``skip_invalid`` are appended to ``errors`` (if given)
    and skipped. Blank lines are ignored. ``keep(session)``, if given, skips the events of other sessions:
    a line whose session can be read without parsing it (see :func:`routed_session`) is skipped unread, so
    only a reader that keeps it reports it if it is malformed; any other line is parsed, and reported if
    malformed.
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
            if not raw or raw.isspace():  # not raw.strip(): that copies every line
                continue
            try:
                if keep is None:
                    yield parse_event(raw, f"{name}:{n}", n)
                    continue
                if type(raw) is bytes:
                    routed = routed_session(raw)
                    if routed is not None and not keep(routed):
                        continue  # another reader's session: it validates the line
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise TraceError(f"{name}:{n}", f"not valid JSON ({exc.msg})") from None
                session = session_of(obj)
                if session is not None and not keep(session):
                    continue
                yield event_from(obj, f"{name}:{n}", n)
            except TraceError as exc:
                if not skip_invalid:
                    raise
                if errors is not None:
                    errors.append(exc)
    finally:
        if close is not None:
            close.close()
