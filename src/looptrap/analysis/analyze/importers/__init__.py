"""Importers: agent logs of many kinds read as trace format v1 events (see docs/analyze.md#inputs).

Each importer is a function ``(stream, name, problems, options) -> Iterator[dict]`` that yields trace events
(``session``, ``type``, ``tool``, ``args``, ``call_id``, ``output``, ``is_error``, ``ts``, ``seq``,
``usage``...) and notes malformed records in ``problems`` (``file:line: reason``) instead of stopping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import IO

import orjson

from looptrap.analysis.analyze.importers.agents import read_claude_code, read_codex, read_gemini
from looptrap.analysis.analyze.importers.calllog import parse_columns, read_calllog
from looptrap.analysis.analyze.importers.common import ImportOptions, Problems, Record, looks_like_lines
from looptrap.analysis.analyze.importers.conversation import read_conversation
from looptrap.analysis.analyze.importers.otel import read_otlp
from looptrap.analysis.analyze.importers.swe import read_mini_swe_agent, read_swe_agent
from looptrap.analysis.trace import EVENT_TYPES, open_trace

__all__ = [
    "FORMATS",
    "ImportOptions",
    "Importer",
    "Problems",
    "Record",
    "default_sessions",
    "detect_format",
    "parse_columns",
    "read_parquet",
    "read_records",
]

Importer = Callable[[IO[bytes], str, Problems, ImportOptions], Iterator[Record]]


def _csv(dialect: str) -> Importer:
    def read(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
        return read_calllog(stream, name, problems, options, dialect=dialect)

    return read


#: Every ``--format`` and what reads it (``trace`` and ``parquet`` are read by the analysis itself).
FORMATS: dict[str, Importer | None] = {
    "trace": None,
    "parquet": None,
    "csv": _csv("csv"),
    "tsv": _csv("tsv"),
    "jsonl-calls": _csv("jsonl"),
    "claude-code": read_claude_code,
    "codex": read_codex,
    "gemini-cli": read_gemini,
    "openai-chat": read_conversation,
    "openai-responses": read_conversation,
    "anthropic": read_conversation,
    "otel": read_otlp,
    "swe-agent": read_swe_agent,
    "mini-swe-agent": read_mini_swe_agent,
}

_CLAUDE_TYPES = {
    "user",
    "assistant",
    "summary",
    "system",
    "attachment",
    "progress",
    "queue-operation",
    "permission-mode",
}
#: Claude Code records that carry neither a session id nor a message: recognised by their own fields.
_CLAUDE_BOOKKEEPING = {"file-history-snapshot": "snapshot"}
_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}


def detect_format(name: str, head: bytes) -> str | None:
    """The format of a file, from its name and its first (decompressed) bytes; ``None`` if unknown."""
    lower = name.lower()
    for suffix in (".gz", ".zst", ".zstd"):
        lower = lower.removesuffix(suffix)
    if head.startswith(b"PAR1") or lower.endswith(".parquet"):
        return "parquet"
    if lower.endswith(".traj.json"):
        return "mini-swe-agent"
    if lower.endswith(".traj"):
        return "swe-agent"
    if lower.endswith(".tsv"):
        return "tsv"
    if lower.endswith(".csv"):
        return "csv"
    text = head.lstrip()
    if looks_like_lines(head):
        found = _detect_lines(text)
        if found is not None or b"\n" in text.rstrip():
            return found
        # one line longer than what was read (a JSON document on one line): read it as a document
    if text.startswith((b"{", b"[")):
        if text.startswith(b"{") and b'"session"' in head and b'"type"' in head:
            return "trace"  # a trace whose first event is longer than what was read
        if b'"resourceSpans"' in head:
            return "otel"
        if b'"trajectory_format"' in head or b'"mini_version"' in head:
            return "mini-swe-agent"
        if b'"trajectory"' in head:
            return "swe-agent"
        if b'"projectHash"' in head or (b'"sessionId"' in head and b'"messages"' in head):
            return "gemini-cli"
        return "openai-chat"  # a list of messages or items, a request or a response body
    first_line = text.partition(b"\n")[0]
    if b"\t" in first_line:
        return "tsv"
    if b"," in first_line:
        return "csv"
    return None


_SNIFF_LINES = 16  # records looked at: a log often opens with bookkeeping (a snapshot, a settings line)


def _detect_lines(text: bytes) -> str | None:
    """JSON Lines: the format the first records say, reading past bookkeeping records and lines that cannot
    be read (a line cut short, bytes that are not UTF-8)."""
    lines = text.split(b"\n", _SNIFF_LINES)[:_SNIFF_LINES]
    generic = None
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        found = _detect_object(obj)
        if found is not None and found != "jsonl-calls":
            return found
        generic = generic or found
    return generic


def _detect_object(obj: dict[str, object]) -> str | None:
    kind = obj.get("type")
    if not isinstance(kind, str):
        kind = None
    if "resourceSpans" in obj:
        return "otel"
    if "session" in obj and isinstance(kind, str) and (kind in EVENT_TYPES or "tool" in obj or kind):
        return "trace"
    if kind in _CLAUDE_TYPES and ("sessionId" in obj or "uuid" in obj or "leafUuid" in obj or "message" in obj):
        return "claude-code"
    if kind in _CLAUDE_BOOKKEEPING and _CLAUDE_BOOKKEEPING[kind] in obj:
        return None  # says nothing alone: the next records tell
    if kind in _CODEX_TYPES or ("instructions" in obj and "id" in obj and "timestamp" in obj):
        return "codex"
    if ("sessionId" in obj and "projectHash" in obj) or "$set" in obj or (kind == "init" and "session_id" in obj):
        return "gemini-cli"
    if "trajectory_format" in obj:
        return "mini-swe-agent"
    if "trajectory" in obj:
        return "swe-agent"
    if any(k in obj for k in ("messages", "input", "request", "role", "choices")) or isinstance(
        obj.get("output"), list
    ):
        return "openai-chat"
    return "jsonl-calls"


_SUFFIXES = (".gz", ".zst", ".zstd", ".json", ".jsonl", ".ndjson", ".traj", ".csv", ".tsv", ".log")


def default_sessions(names: list[str]) -> list[str]:
    """The session of records that name none, for each input: the file's name without its extensions, with
    as many of its folders before it as make it unique among the inputs (SWE-agent writes
    ``<run>/<instance>/<instance>.traj``: the same instance in two runs is two sessions, ``run1/x/x``)."""
    parts = [PurePath(n).parts or (n,) for n in names]

    def stem(p: tuple[str, ...], depth: int) -> str:
        last = p[-1]
        for suffix in _SUFFIXES:
            last = last.removesuffix(suffix)
        return "/".join([*p[max(0, len(p) - depth) : -1], last or p[-1]])

    depth = [1] * len(names)
    while True:
        got = [stem(p, d) for p, d in zip(parts, depth, strict=True)]
        seen: dict[str, list[int]] = {}
        for i, g in enumerate(got):
            seen.setdefault(g, []).append(i)
        clash = [i for ix in seen.values() if len(ix) > 1 for i in ix if depth[i] < len(parts[i])]
        if not clash:
            return got
        for i in clash:
            depth[i] += 1


def read_records(path: str, fmt: str, name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """The trace events of one file (gzip and zstd read as such) in format ``fmt`` (any but ``trace``)."""
    if fmt == "parquet":
        yield from read_parquet(path, name, problems, options)
        return
    importer = FORMATS.get(fmt)
    if importer is None:
        raise ValueError(f"no importer for format {fmt!r}")
    opts = options
    if opts.session is None:
        opts = ImportOptions(options.columns, default_sessions([name])[0])
    with open_trace(path) as (stream, _):
        yield from importer(stream, name, problems, opts)


def read_parquet(path: str, name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from a Parquet file: trace events as rows (columns ``session``, ``type``, ``tool``, ``args``
    ...; ``args`` and ``output`` may hold JSON text), or a call log (columns as for CSV). Needs pyarrow."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        problems.add(f"{name}:1", "reading Parquet needs pyarrow (pip install 'looptrap[analyze]')")
        return
    from looptrap.analysis.analyze.importers.calllog import rows_to_events
    from looptrap.analysis.analyze.importers.common import maybe_json

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a file that is not Parquet
        problems.add(f"{name}:1", f"not a readable Parquet file ({exc})")
        return
    names = [str(n) for n in pf.schema_arrow.names]

    def rows() -> Iterator[tuple[int, dict[str, object]]]:
        n = 0
        for batch in pf.iter_batches(batch_size=8192):
            for row in batch.to_pylist():
                n += 1
                yield n, row

    if "session" in names and "type" in names:
        for n, row in rows():
            rec = {k: v for k, v in row.items() if v is not None}
            for key in ("args", "output", "usage", "state"):
                if key in rec:
                    rec[key] = maybe_json(rec[key])
            rec.setdefault("seq", n)
            yield rec
        return
    yield from rows_to_events(rows(), names, name, problems, options)
