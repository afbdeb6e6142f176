"""What every importer shares: the record of skipped input, time stamps, JSON lines and documents."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

import orjson

from looptrap.analysis.trace import TraceError, is_oversize, lines_of, oversize_reason, read_errors
from looptrap.core.printable import one_line

__all__ = [
    "SHAPE_ERRORS",
    "ImportOptions",
    "Problems",
    "Record",
    "content_text",
    "each",
    "json_document",
    "json_lines",
    "looks_like_lines",
    "maybe_json",
    "obj",
    "seconds",
]

#: One imported event, in trace format v1 (a JSON object with ``session`` and ``type``).
Record = dict[str, Any]
#: The largest JSON document read whole (a trajectory, a conversation): a larger one is skipped.
MAX_DOCUMENT = 1 << 30


class Problems:
    """Malformed input met on the way: ``file:line: reason`` each, counted; with ``strict`` the first one
    raises :class:`~looptrap.analysis.trace.TraceError` instead."""

    def __init__(self, strict: bool = False, keep: int = 20) -> None:
        self.strict = strict
        self.keep = keep
        self.count = 0
        self.first: list[TraceError] = []

    def add(self, where: str, reason: str) -> None:
        """Note one skipped record (or raise, when strict)."""
        self.error(TraceError(where, reason))

    def error(self, err: TraceError) -> None:
        """Note one skipped record given as an error (or raise it, when strict)."""
        if self.strict:
            raise err
        self.count += 1
        if len(self.first) < self.keep:
            self.first.append(err)

    def merge(self, errors: Iterable[TraceError], count: int | None = None) -> None:
        """Add errors found elsewhere (another process); ``count`` if more were counted than listed."""
        listed = 0
        for e in errors:
            listed += 1
            self.error(e)
        if count is not None and count > listed:
            self.count += count - listed


@dataclass(slots=True)
class ImportOptions:
    """How to read the input: ``columns`` (call logs: our field -> the log's column) and the session of
    records that name none (default: the file's name without its extensions)."""

    columns: dict[str, str] = field(default_factory=dict)
    session: str | None = None


#: What a record of an unexpected shape makes an importer raise (a number where a list was, a dict as a
#: type...): that record is skipped and noted, and the rest of the input is read.
SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError, RecursionError)


def each(
    records: Iterable[tuple[int, Any]],
    name: str,
    problems: Problems,
    handle: Callable[[int, Any], list[Record]],
) -> Iterator[Record]:
    """The events of each record, ``handle(line, record)``; a record ``handle`` cannot read (it raises one
    of :data:`SHAPE_ERRORS`) is skipped with ``file:line: reason``, never the whole input."""
    for n, rec in records:
        try:
            got = handle(n, rec)
        except SHAPE_ERRORS as exc:
            why = one_line(f"{type(exc).__name__}: {exc}", 160)
            problems.add(f"{name}:{n}", f"a record of an unexpected shape: skipped ({why})")
            continue
        yield from got


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def seconds(value: Any) -> float | None:
    """A time as seconds since the epoch: a number (seconds; milliseconds, microseconds or nanoseconds when
    it is too large to be seconds), a numeric string, or an ISO 8601 time (UTC without a zone). ``None``
    when it is none of these."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
            except ValueError:
                return None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            return moment.timestamp()
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    v = float(value)
    for scale in (1e17, 1e14, 1e11):  # ns, µs, ms since the epoch
        if abs(v) > scale:
            return v / (scale / 1e8)
    return v


_JSONISH = re.compile(r"\s*[\[{]")


def maybe_json(value: Any) -> Any:
    """A string that holds a JSON object or array, parsed; anything else as it is."""
    if isinstance(value, str) and _JSONISH.match(value):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


def json_lines(stream: IO[bytes], name: str, problems: Problems) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each JSON line; a line that is not JSON is noted and skipped. A file that
    cannot be read to its end is noted (``cannot read on from here``) and ends there."""
    n = 0
    try:
        for n, raw in enumerate(lines_of(stream), 1):
            if not raw or raw.isspace():
                continue
            try:
                yield n, orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                problems.add(f"{name}:{n}", oversize_reason(raw) if is_oversize(raw) else f"not valid JSON ({exc.msg})")
    except read_errors() as exc:
        problems.add(f"{name}:{n + 1}", f"cannot read on from here ({str(exc) or type(exc).__name__})")


def json_document(stream: IO[bytes], name: str, problems: Problems) -> Any:
    """The whole file as one JSON value, or ``None`` (noted) when it is not one or cannot be read."""
    try:
        data = stream.read(MAX_DOCUMENT + 1)
        if len(data) > MAX_DOCUMENT:
            problems.add(f"{name}:1", f"a JSON document larger than {MAX_DOCUMENT >> 20:,} MiB: skipped")
            return None
    except read_errors() as exc:
        problems.add(f"{name}:1", f"cannot read on from here ({str(exc) or type(exc).__name__})")
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        line = data[: exc.pos].count(b"\n") + 1 if exc.pos is not None else 1
        problems.add(f"{name}:{line}", f"not valid JSON ({exc.msg}; cut short?)")
        return None


def looks_like_lines(head: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` is JSON Lines (one value per line) rather than one JSON
    document spread over lines (a document on a single line reads as one line). Read from the first few
    whole lines: most of them are JSON objects (a first line cut short or not UTF-8 is passed over)."""
    text = head.lstrip()
    first, newline, rest = text.partition(b"\n")
    if not newline:
        return text.startswith(b"{")  # one line, or a first line longer than what was looked at
    lines = [ln for ln in [first, *rest.split(b"\n", 8)[:8]] if ln.strip()]
    if rest.count(b"\n") < 8 and not head.endswith(b"\n") and len(lines) > 1:
        lines.pop()  # the last line of the head may be cut
    objects = 0
    for ln in lines:
        try:
            objects += isinstance(orjson.loads(ln), dict)
        except orjson.JSONDecodeError:
            continue
    return objects > 0 and 2 * objects >= len(lines)
