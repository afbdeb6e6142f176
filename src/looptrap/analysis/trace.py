"""Trace format v1: JSON Lines, one event per line (see docs/trace-format.md), plain, gzip or zstd.

Events: ``tool_call``, ``tool_result``, ``turn_end``, ``text``, ``user_message``. ``session`` and ``type`` are required,
``seq`` and ``ts`` optional, unknown fields ignored.
"""

from __future__ import annotations

import io
import math
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Any, cast

import orjson

__all__ = [
    "EVENT_TYPES",
    "MAX_RECORD",
    "Event",
    "SessionRouter",
    "TraceError",
    "event_from",
    "is_oversize",
    "iter_events",
    "lines_of",
    "open_trace",
    "oversize_reason",
    "parse_event",
    "read_errors",
    "routed_session",
    "session_of",
]

EVENT_TYPES = frozenset({"tool_call", "tool_result", "turn_end", "text", "user_message"})
#: The longest record (line) read: a longer one is skipped, as a malformed record, without being held in
#: memory; a "line" that runs on for many times this without a line end ends the input (not lines at all).
MAX_RECORD = 64 << 20
_OVERSIZE = b"\x00looptrap-oversize:"  # stands for a skipped record: never a line of JSON
_RUN_ON = 4  # records' worth of bytes without a line end that end the input


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
        if type(raw) is bytes and raw.startswith(_OVERSIZE):
            raise TraceError(where, oversize_reason(raw)) from None
        raise TraceError(where, f"not valid JSON ({exc.msg})") from None
    return event_from(obj, where, line)


def oversize_reason(marker: bytes) -> str:
    """Why a record that :func:`lines_of` skipped was skipped."""
    size = int(marker[len(_OVERSIZE) :] or 0)
    return f"a record of {size:,} bytes, longer than the {MAX_RECORD / (1 << 20):g} MiB a record may have: skipped"


def is_oversize(line: bytes) -> bool:
    """Whether a line from :func:`lines_of` stands for a skipped record."""
    return line.startswith(_OVERSIZE)


def lines_of(stream: IO[bytes], limit: int | None = None) -> Iterator[bytes]:
    """The lines of a stream, each read whole only up to ``limit`` bytes: a longer line is passed over without
    being held in memory, and stands as a marker line (:func:`is_oversize`; parsing it says why), so line
    numbers stay right. A line that runs on for ``4 * limit`` bytes without ending ends the input with
    ``OSError`` (``/dev/zero``, a binary file)."""
    if limit is None:
        limit = MAX_RECORD
    readline = stream.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while True:  # the rest of the long line, read and dropped a chunk at a time
            chunk = readline(1 << 20)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
            if size > _RUN_ON * limit:
                raise OSError(f"no line end in {size >> 20:,} MiB: not a log of lines")
        yield _OVERSIZE + str(size).encode() + b"\n"


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
#: An escape that spells a letter of "session" (``\u0073``...): a key written so is found only by parsing.
_SESSION_ESCAPE = re.compile(rb"\\u00(?:73|65|69|6[eEfF])")


def routed_session(raw: bytes) -> str | None:
    """The session of a raw JSON line, read without parsing the line, or ``None`` when that is not certain.

    Only a line in which ``"session"`` occurs once, as a key whose value is a plain string, and in which no
    escape could spell that key another way (``"\\u0073ession"``), qualifies: then that key is the event's
    own, if the line is valid at all (if it is not, the reader that keeps the session it names reports it).
    """
    key = _routed_key(raw)
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _routed_key(raw: bytes) -> bytes | None:
    """:func:`routed_session`'s value as the line's bytes (not decoded)."""
    i = raw.find(_SESSION_KEY)
    if i < 0 or raw.rfind(_SESSION_KEY) != i:
        return None
    if raw.find(b"\\") >= 0:  # an escape somewhere: the careful way
        if raw.find(b"\\u") >= 0 and _SESSION_ESCAPE.search(raw) is not None:
            return None
    elif raw[i + 9 : i + 11] == b':"':  # the common spelling, read without the regex (it costs more)
        end = raw.find(b'"', i + 11)
        return raw[i + 11 : end] if end > i + 11 else None
    m = _SESSION_VALUE.match(raw, i + 9)
    return None if m is None else m.group(1)


class SessionRouter:
    """``route(session)`` remembered per session as a line spells it, so that a line of a session already
    seen costs one dict lookup (the memory is emptied past ``limit`` sessions, so it stays bounded)."""

    __slots__ = ("decided", "limit", "route_session")

    def __init__(self, route: Callable[[str], int], limit: int = 1 << 16) -> None:
        self.route_session = route
        self.limit = limit
        self.decided: dict[bytes, int] = {}  # -1: the line must be parsed to know

    def route(self, raw: bytes) -> int:
        """``route`` of the line's session (a number from 0), or -1 when the line must be parsed to know."""
        key = _routed_key(raw)
        if key is None:
            return -1
        got = self.decided.get(key)
        if got is None:
            try:
                got = self.route_session(key.decode("utf-8"))
            except UnicodeDecodeError:
                got = -1
            if len(self.decided) >= self.limit:
                self.decided.clear()
            self.decided[key] = got
        return got


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


_GZIP = b"\x1f\x8b"
_ZSTD = b"\x28\xb5\x2f\xfd"


@contextmanager
def open_trace(path: str) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """Open a trace (``-``: stdin) as ``(lines, raw)``: ``lines`` to read, decompressed when the data is gzip
    or zstd (found by its first bytes; zstd needs the ``zstandard`` package, or Python 3.14); ``raw``, the
    data as stored (its position says how much was read). Raises ``OSError``, or :class:`TraceError` when
    zstd cannot be read here."""
    if path == "-":
        if sys.stdin is None:
            raise OSError(9, "stdin is closed")
        raw: IO[bytes] = sys.stdin.buffer
        own = False
    else:
        raw = open(path, "rb")  # noqa: SIM115 - closed below, after streaming
        own = True
    stream: IO[bytes] = raw
    try:
        head = raw.peek(4)[:4] if isinstance(raw, io.BufferedReader) else b""
        if head[:2] == _GZIP:
            import gzip

            stream = cast("IO[bytes]", gzip.GzipFile(fileobj=raw, mode="rb"))
        elif head == _ZSTD:
            stream = _zstd(raw, "<stdin>" if path == "-" else path)
        yield stream, raw
    finally:
        if stream is not raw:
            stream.close()
        if own:
            raw.close()


def _zstd(raw: IO[bytes], name: str) -> IO[bytes]:
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]  # Python 3.14

        return zstd.ZstdFile(raw)  # type: ignore[no-any-return,unused-ignore]
    except ImportError:
        pass
    try:
        import zstandard  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise TraceError(
            name, "zstd-compressed: reading it needs the zstandard package (pip install zstandard), or run zstd -d"
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return io.BufferedReader(reader, 1 << 16)  # type: ignore[no-any-return,unused-ignore]


def read_errors() -> tuple[type[BaseException], ...]:
    """What reading (and decompressing) a trace raises on a damaged or cut file."""
    extra = [getattr(sys.modules.get(m), "ZstdError", None) for m in ("zstandard", "compression.zstd")]
    return (OSError, EOFError, zlib.error, *(e for e in extra if isinstance(e, type)))


def iter_events(
    source: str | IO[bytes] | Iterable[bytes | str],
    *,
    name: str | None = None,
    skip_invalid: bool = False,
    errors: list[TraceError] | None = None,
) -> Iterator[Event]:
    """Stream events from a path (``-`` for stdin; gzip and zstd are read as such, see :func:`open_trace`), a
    binary file or an iterable of lines.

    Malformed lines raise :class:`TraceError`, or with ``skip_invalid`` are appended to ``errors`` (if given)
    and skipped; a file that cannot be read to its end (a cut gzip file) raises :class:`TraceError` either
    way. Blank lines are ignored. (Several processes on one input: :mod:`looptrap.analysis.deal`.)
    """
    if isinstance(source, str):
        with open_trace(source) as (stream, _):
            yield from iter_events(
                stream,
                name=name or ("<stdin>" if source == "-" else source),
                skip_invalid=skip_invalid,
                errors=errors,
            )
        return
    lines: Iterable[bytes | str] = lines_of(cast("IO[bytes]", source)) if isinstance(source, io.IOBase) else source
    name = name or getattr(source, "name", "<trace>")
    n = 0
    try:
        for n, raw in enumerate(lines, 1):
            if not raw or raw.isspace():  # not raw.strip(): that copies every line
                continue
            try:
                yield parse_event(raw, f"{name}:{n}", n)
            except TraceError as exc:
                if not skip_invalid:
                    raise
                if errors is not None:
                    errors.append(exc)
    except read_errors() as cut:  # not ``exc``: compiled, a name has one type, and that one is a TraceError
        why = str(cut) or type(cut).__name__
        raise TraceError(f"{name}:{n + 1}", f"cannot read on from here ({why})") from None
