"""The call log every chaos-wrapped tool writes: one row per agent-level call.

Columns (JSON Lines, or CSV with a header row): ``seq`` (1-based, across the tools of a run), ``ts``
(seconds since the epoch), ``tool``, ``args`` (the arguments as JSON, or ``"xxh3:<hex>"`` when only
digests are kept), ``result_kind``, then ``session``, ``is_error``, ``output`` (the start of what came
back, or the error), ``call`` (the tool's own call number), ``attempts`` (tool-level attempts behind the
call), ``fault`` (the faults that fired, joined by ``+``), ``ms`` and ``error_message``. See docs/chaos.md.
"""

from __future__ import annotations

import csv
import io
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Literal

import orjson
import xxhash

__all__ = ["COLUMNS", "OUTPUT_CHARS", "RESULT_KINDS", "CallLog", "CallRecord", "args_digest", "preview"]

#: The columns of a call log, in order (the first five are the minimal log).
COLUMNS = (
    "seq",
    "ts",
    "tool",
    "args",
    "result_kind",
    "session",
    "is_error",
    "output",
    "call",
    "attempts",
    "fault",
    "ms",
    "error_message",
)
#: How much of a result the ``output`` column keeps.
OUTPUT_CHARS = 1000

#: What ``result_kind`` can be.
RESULT_KINDS = (
    "ok",
    "empty",
    "not_found",
    "error",
    "retryable",
    "timeout",
    "oversized",
    "malformed",
    "contradiction",
    "ceiling",
)

ArgsMode = Literal["value", "digest"]


def _default(value: Any) -> Any:
    return repr(value)


def args_digest(args: Any) -> str:
    """A stable digest of a call's arguments (sorted keys), as the log writes it in digest mode."""
    data = orjson.dumps(args, default=_default, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return f"xxh3:{xxhash.xxh3_64_hexdigest(data)}"


@dataclass
class CallRecord:
    """One agent-level call of a wrapped tool."""

    seq: int
    ts: float
    tool: str
    args: Any
    result_kind: str = "ok"
    session: str = ""
    is_error: bool = False
    output: str = ""
    call: int = 0
    attempts: int = 1
    fault: str = ""
    ms: float = 0.0
    error_message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row as plain data, in column order."""
        return asdict(self)

    def line(self) -> str:
        """The row as one JSON line (no newline)."""
        return orjson.dumps(self.to_dict(), default=_default, option=orjson.OPT_NON_STR_KEYS).decode()


class CallLog:
    """The rows of one or more runs, in call order; thread-safe. ``path``: also append each row to this
    JSON Lines file as it is written (flushed, so a run that is killed keeps its log). ``args``:
    ``"value"`` keeps the arguments, ``"digest"`` only their digest."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, args: ArgsMode = "value") -> None:
        if args not in ("value", "digest"):
            raise ValueError(f"args must be 'value' or 'digest', got {args!r}")
        self.path = Path(path) if path is not None else None
        self.args_mode: ArgsMode = args
        self.records: list[CallRecord] = []
        self._lock = threading.Lock()
        self._file: IO[str] | None = None

    def add(self, record: CallRecord) -> None:
        """Add a finished row (and write it to ``path``)."""
        if self.args_mode == "digest" and not (isinstance(record.args, str) and record.args.startswith("xxh3:")):
            record.args = args_digest(record.args)
            record.output = args_digest(record.output)
        with self._lock:
            self.records.append(record)
            if self.path is not None:
                if self._file is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._file = self.path.open("a", encoding="utf-8")
                self._file.write(record.line() + "\n")
                self._file.flush()

    def close(self) -> None:
        """Close the file rows are appended to (the next row opens it again)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __iter__(self) -> Iterator[CallRecord]:
        with self._lock:
            return iter(list(self.records))

    def __len__(self) -> int:
        return len(self.records)

    def rows(self) -> list[dict[str, Any]]:
        """Every row as plain data."""
        return [r.to_dict() for r in self]

    def jsonl(self) -> str:
        """The log as JSON Lines."""
        return "".join(r.line() + "\n" for r in self)

    def csv(self) -> str:
        """The log as CSV with a header row (``args`` as JSON text, ``is_error`` as ``true``/``false``,
        ``error_message`` empty when there is none)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for r in self:
            row = r.to_dict()
            args = row["args"]
            row["args"] = args if isinstance(args, str) and args.startswith("xxh3:") else _json(args)
            row["error_message"] = row["error_message"] or ""
            row["is_error"] = "true" if row["is_error"] else "false"
            writer.writerow([row[c] for c in COLUMNS])
        return out.getvalue()

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the whole log to ``path``: CSV when it ends with ``.csv``, else JSON Lines."""
        p = Path(path)
        p.write_text(self.csv() if p.suffix.lower() == ".csv" else self.jsonl(), encoding="utf-8")
        return p


def preview(result: Any) -> str:
    """The start of a result as text (what the ``output`` column keeps)."""
    text = result if isinstance(result, str) else _json(result)
    return text[:OUTPUT_CHARS]


def _json(value: Any) -> str:
    return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS).decode()
