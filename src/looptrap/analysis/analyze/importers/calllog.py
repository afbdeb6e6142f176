"""Plain call logs: CSV, TSV or JSON Lines with one tool call per row: a sequence number, a time stamp, the
tool and its arguments, and optionally the session, the result, whether it failed, its cost and the
tool-level attempts behind it (``attempts``, as a chaos call log has: docs/chaos.md#the-call-log). The
columns are named by ``--columns`` (``session=run_id,tool=name,args=input``...); without it, common names
are looked for (below). Rows are read in file order; a row without a session belongs to the file's."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from typing import IO, Any

from looptrap.analysis.analyze.importers.common import (
    ImportOptions,
    Problems,
    Record,
    json_lines,
    maybe_json,
    seconds,
)
from looptrap.analysis.trace import MAX_RECORD, read_errors

__all__ = ["FIELDS", "parse_columns", "read_calllog", "rows_to_events"]

#: Our fields and the column names looked for when ``--columns`` does not name one.
FIELDS: dict[str, tuple[str, ...]] = {
    "session": ("session", "session_id", "sessionId", "run", "run_id", "conversation_id", "trace_id", "agent"),
    "seq": ("seq", "sequence", "seq_no", "n", "index", "step"),
    "ts": ("ts", "timestamp", "time", "created_at", "start_time", "datetime"),
    "tool": ("tool", "tool_name", "name", "function", "function_name", "action"),
    "args": ("args", "arguments", "input", "params", "parameters", "tool_input", "query"),
    "output": ("output", "result", "response", "tool_output", "observation"),
    "is_error": ("is_error", "error", "failed", "ok", "success", "status"),
    "cost": ("cost", "cost_usd", "price"),
    "attempts": ("attempts",),
    "message_id": ("message_id", "turn_id", "response_id"),
}
_TRUE = {"1", "true", "yes", "y", "t", "error", "failed", "failure", "fail"}
_FALSE_WORDS = {"ok", "success"}


def parse_columns(text: str) -> dict[str, str]:
    """``field=column,...`` as a mapping; raises ``ValueError`` on an unknown field or a malformed pair."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not value:
            raise ValueError(f"expected FIELD=COLUMN, got {part!r}")
        if key not in FIELDS:
            raise ValueError(f"unknown field {key!r} (fields: {', '.join(FIELDS)})")
        out[key] = value
    return out


def _resolve(names: list[str], columns: Mapping[str, str]) -> dict[str, str]:
    present = {n.lower(): n for n in names}
    out: dict[str, str] = {}
    for f, candidates in FIELDS.items():
        if f in columns:
            col = columns[f]
            if col in names:
                out[f] = col
            elif col.lower() in present:
                out[f] = present[col.lower()]
            continue
        for c in candidates:
            if c.lower() in present and present[c.lower()] not in out.values():
                out[f] = present[c.lower()]
                break
    return out


def _failed(v: Any, column: str) -> bool:
    if isinstance(v, bool):
        return v if column.lower() not in ("ok", "success") else not v
    text = str(v).strip().lower()
    if column.lower() in ("ok", "success"):
        return text in ("0", "false", "no", "n", "f")
    if column.lower() == "status":
        return text in _TRUE or text.startswith(("err", "fail"))
    return text in _TRUE and text not in _FALSE_WORDS


def _count(v: Any) -> int | None:
    """A positive whole number (an ``int``, or its text), else ``None``."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v >= 1 else None
    try:
        n = int(str(v).strip())
    except ValueError:
        return None
    return n if n >= 1 else None


def rows_to_events(
    rows: Iterator[tuple[int, Mapping[str, Any]]],
    names: list[str],
    name: str,
    problems: Problems,
    options: ImportOptions,
) -> Iterator[Record]:
    """Trace events from rows ``(line, {column: value})`` whose columns are ``names``."""
    cols = _resolve(names, options.columns)
    missing = [f for f in options.columns if f not in cols]
    if missing:
        wanted = ", ".join(options.columns[f] for f in missing)
        problems.add(
            f"{name}:1", f"--columns names columns this file does not have: {wanted} (it has: {', '.join(names)})"
        )
    if "tool" not in cols:
        problems.add(
            f"{name}:1", f"no tool column (looked for {', '.join(FIELDS['tool'])}; name it with --columns tool=COLUMN)"
        )
        return
    default = options.session or name
    for n, row in rows:
        tool = row.get(cols["tool"])
        if tool is None or str(tool).strip() == "":
            problems.add(f"{name}:{n}", f"no tool in column {cols['tool']!r}")
            continue
        session = row.get(cols["session"]) if "session" in cols else None
        session = str(session) if session not in (None, "") else default
        rec: Record = {"session": session, "type": "tool_call", "tool": str(tool), "call_id": f"row-{n}"}
        if "seq" in cols:
            raw_seq = row.get(cols["seq"])
            try:
                rec["seq"] = int(str(raw_seq).strip()) if not isinstance(raw_seq, int) else raw_seq
            except ValueError:
                problems.add(f"{name}:{n}", f"'{cols['seq']}' is not an integer: {str(raw_seq)[:40]!r}")
                continue
        if "ts" in cols and row.get(cols["ts"]) not in (None, ""):
            ts = seconds(row.get(cols["ts"]))
            if ts is None:
                problems.add(f"{name}:{n}", f"'{cols['ts']}' is not a time: {str(row.get(cols['ts']))[:40]!r}")
                continue
            rec["ts"] = ts
        rec["args"] = maybe_json(row.get(cols["args"])) if "args" in cols else None
        if "message_id" in cols and row.get(cols["message_id"]) not in (None, ""):
            rec["message_id"] = str(row.get(cols["message_id"]))  # the calls of one model message: one step
        if "attempts" in cols and row.get(cols["attempts"]) not in (None, ""):
            attempts = _count(row.get(cols["attempts"]))
            if attempts is None:
                problems.add(
                    f"{name}:{n}", f"'{cols['attempts']}' is not a count: {str(row.get(cols['attempts']))[:40]!r}"
                )
            else:
                rec["attempts"] = attempts
        yield rec
        if "output" in cols or "is_error" in cols or "cost" in cols:
            res: Record = {k: rec[k] for k in ("session", "tool", "call_id", "seq", "ts") if k in rec}
            res["type"] = "tool_result"
            res["output"] = maybe_json(row.get(cols["output"])) if "output" in cols else None
            if "is_error" in cols and row.get(cols["is_error"]) not in (None, ""):
                res["is_error"] = _failed(row.get(cols["is_error"]), cols["is_error"])
            if "cost" in cols and row.get(cols["cost"]) not in (None, ""):
                try:
                    res["usage"] = {"cost_usd": float(row[cols["cost"]])}
                except (TypeError, ValueError):
                    problems.add(
                        f"{name}:{n}", f"'{cols['cost']}' is not a number: {str(row.get(cols['cost']))[:40]!r}"
                    )
            yield res


def read_calllog(
    stream: IO[bytes], name: str, problems: Problems, options: ImportOptions, *, dialect: str = "csv"
) -> Iterator[Record]:
    """Trace events from a CSV (``dialect="csv"``), TSV (``"tsv"``) or JSON Lines (``"jsonl"``) call log."""
    if dialect == "jsonl":
        first: list[tuple[int, Mapping[str, Any]]] = []
        it = json_lines(stream, name, problems)
        names: list[str] = []
        for n, obj in it:
            if isinstance(obj, dict):
                first.append((n, obj))
                names = list(obj)
                break
            problems.add(f"{name}:{n}", f"expected a JSON object, got {type(obj).__name__}")

        def rows() -> Iterator[tuple[int, Mapping[str, Any]]]:
            yield from first
            for n, obj in it:
                if isinstance(obj, dict):
                    yield n, obj
                else:
                    problems.add(f"{name}:{n}", f"expected a JSON object, got {type(obj).__name__}")

        yield from rows_to_events(rows(), names, name, problems, options)
        return
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")
    limit = csv.field_size_limit(MAX_RECORD)  # a call's output may be long; a field past a record's bound is not
    try:
        yield from _csv_events(text, name, problems, options, dialect)
    finally:
        csv.field_size_limit(limit)
        text.detach()  # the stream belongs to the caller, who closes it


def _csv_events(text: IO[str], name: str, problems: Problems, options: ImportOptions, dialect: str) -> Iterator[Record]:
    reader = csv.reader(text, delimiter="\t" if dialect == "tsv" else ",")
    try:
        header = next(reader, None)
    except read_errors() as exc:
        problems.add(f"{name}:1", f"cannot read on from here ({exc})")
        return
    if header is None:
        return
    header = [h.strip() for h in header]

    def csv_rows() -> Iterator[tuple[int, Mapping[str, Any]]]:
        n = 1
        while True:
            try:
                row = next(reader, None)
            except csv.Error as exc:  # this record: skipped, and the reader goes on from the next line
                if reader.line_num == n:  # no progress: the rest cannot be read as records
                    problems.add(f"{name}:{n}", f"not valid {dialect.upper()} ({exc})")
                    return
                n = reader.line_num
                problems.add(f"{name}:{n}", f"not valid {dialect.upper()} ({exc})")
                continue
            except read_errors() as exc:
                problems.add(f"{name}:{n + 1}", f"cannot read on from here ({str(exc) or type(exc).__name__})")
                return
            if row is None:
                return
            n = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                problems.add(f"{name}:{n}", f"{len(row)} fields where the header has {len(header)}")
                continue
            yield n, dict(zip(header, row, strict=True))

    yield from rows_to_events(csv_rows(), header, name, problems, options)
