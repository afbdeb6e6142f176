"""The inputs of ``looptrap analyze``: files, folders, globs and stdin found, each format guessed, and every
input that is not a plain trace file imported (or decompressed, or read from stdin) into a trace-format copy.
One session stored in several files (a CLI that writes a copy of the transcript at each checkpoint) is read
once: the longest copy."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from looptrap.analysis.analyze.importers import (
    FORMATS,
    ImportOptions,
    Problems,
    default_sessions,
    detect_format,
    read_records,
)
from looptrap.analysis.trace import MAX_RECORD, TraceError, lines_of, open_trace, read_errors

__all__ = ["Source", "copy_trace_source", "drop_copies", "expand_inputs", "head", "prepare_sources"]

EXTENSIONS = (".jsonl", ".json", ".ndjson", ".traj", ".csv", ".tsv", ".parquet", ".gz", ".zst", ".zstd", ".log")
_DUMP = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_IDS_KEPT = 64  # the first call ids of a session in one file: copies of one session share them


@dataclass(slots=True)
class _Copy:
    """What one imported file holds of one session: its calls and the ids of its first calls."""

    calls: int = 0
    ids: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Source:
    """One input as the analysis reads it: ``path`` (the file, or its plain trace-format copy when it had to
    be imported, decompressed or read from stdin), ``name`` (as messages show it) and its format."""

    path: str
    name: str
    fmt: str
    copied: bool = False
    calls: bool = True  # whether it holds a tool call at all
    held: dict[str, _Copy] = field(default_factory=dict)  # imported: what it holds of each session


def expand_inputs(specs: list[str]) -> list[str]:
    """Files, directories (every log file under them), globs and ``-`` (stdin) as a list of paths, each
    directory's and glob's in sorted order. Raises ``FileNotFoundError`` for an input that matches nothing."""
    out: list[str] = []
    for spec in specs:
        if spec == "-":
            out.append(spec)
        elif os.path.isdir(spec):
            found = sorted(_walk(spec))
            if not found:
                raise FileNotFoundError(f"{spec}: a directory with no log files in it")
            out += found
        elif os.path.exists(spec):
            out.append(spec)
        elif glob.has_magic(spec):
            found = sorted(_glob(spec))
            if not found:
                raise FileNotFoundError(f"{spec}: no file matches")
            out += found
        else:
            raise FileNotFoundError(f"{spec}: no such file or directory")
    seen: set[tuple[int, int]] = set()
    unique = []
    for path in out:  # one file reached by several names (links, overlapping inputs) is read once
        key = _identity(path)
        if key is None or key not in seen:
            unique.append(path)
            if key is not None:
                seen.add(key)
    return unique


def _identity(path: str) -> tuple[int, int] | None:
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _walk(top: str, keep: Callable[[str], bool] | None = None) -> Iterator[str]:
    """The log files under a folder (or those ``keep`` accepts), following links to folders, each folder
    entered once: a link loop ends."""
    visited: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(top, followlinks=True):
        st = os.stat(root)
        if (st.st_dev, st.st_ino) in visited:
            dirs[:] = []
            continue
        visited.add((st.st_dev, st.st_ino))
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            full = os.path.join(root, f)
            wanted = keep(full) if keep is not None else not f.startswith(".") and f.lower().endswith(EXTENSIONS)
            if wanted and os.path.isfile(full):
                yield full


def _glob(spec: str) -> Iterator[str]:
    """A glob's files. ``**`` is walked here, each folder entered once (the standard glob goes round a
    link loop until names grow too long, and with two loops it does not end)."""
    if "**" not in spec:
        yield from (p for p in glob.iglob(spec) if os.path.isfile(p))
        return
    parts = spec.split(os.sep)
    fixed = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    root = os.sep.join(parts[:fixed]) or (os.sep if spec.startswith(os.sep) else os.curdir)
    pattern = re.compile(_glob_regex(spec))
    here = os.curdir + os.sep
    for path in _walk(root, lambda p: pattern.fullmatch(p.removeprefix(here) if not fixed else p) is not None):
        yield path.removeprefix(here) if not fixed else path


def _glob_regex(spec: str) -> str:
    """A regular expression for a glob pattern: ``**/`` any folders, ``*`` and ``?`` within a name."""
    out, i = [], 0
    while i < len(spec):
        if spec.startswith("**" + os.sep, i):
            out.append(f"(?:[^{re.escape(os.sep)}]*{re.escape(os.sep)})*")
            i += 3
        elif spec.startswith("**", i):
            out.append(".*")
            i += 2
        elif spec[i] == "*":
            out.append(f"[^{re.escape(os.sep)}]*")
            i += 1
        elif spec[i] == "?":
            out.append(f"[^{re.escape(os.sep)}]")
            i += 1
        elif spec[i] == "[":
            end = spec.find("]", i + 2)
            if end < 0:
                out.append(re.escape("["))
                i += 1
            else:
                body = spec[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end + 1
        else:
            out.append(re.escape(spec[i]))
            i += 1
    return "".join(out)


def head(path: str) -> bytes:
    """The first (decompressed) bytes of a file, as many as can be read up to 64 KiB."""
    got = b""
    with open_trace(path) as (stream, _):
        try:
            while len(got) < 1 << 16 and (chunk := stream.read(4096)):
                got += chunk
        except read_errors():
            pass
    return got


def _plain(path: str) -> bool:
    with open(path, "rb") as f:
        magic = f.read(4)
    return magic[:2] != b"\x1f\x8b" and magic != b"\x28\xb5\x2f\xfd" and stat.S_ISREG(os.stat(path).st_mode)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # let the read say what is wrong


def _copy_stream(path: str, copy: str) -> str:
    """stdin, a pipe (``<(cat log)``) or a FIFO copied to a file once, as it comes: guessing its format and
    reading it must not each take from it (the guess would eat the data, and a FIFO opened twice waits)."""
    if path == "-" and sys.stdin is None:
        raise OSError(9, "stdin is closed")
    opened = contextlib.nullcontext(sys.stdin.buffer) if path == "-" else open(path, "rb")  # noqa: SIM115
    with opened as src, open(copy, "wb") as out:
        run = 0  # bytes since the last line end: a stream that never ends a line (/dev/zero) is no log
        while chunk := src.read(1 << 20):
            out.write(chunk)
            end = chunk.rfind(b"\n")
            run = len(chunk) - end - 1 if end >= 0 else run + len(chunk)
            if run > 4 * MAX_RECORD:
                raise OSError(f"no line end in {run >> 20:,} MiB: not a log")
    return copy


def _default(v: Any) -> Any:
    return str(v)


def prepare_sources(
    paths: list[str], fmt: str, columns: dict[str, str], problems: Problems, workdir: str
) -> list[Source]:
    """Each input as a plain trace-format file: a plain trace as it is; anything else imported (or
    decompressed, or read from stdin) into a copy under ``workdir``. Unreadable inputs are noted. One
    session in several files: see :func:`drop_copies`."""
    sources: list[Source] = []
    sessions = default_sessions(["<stdin>" if p == "-" else p for p in paths])
    for i, path in enumerate(paths):
        name = "<stdin>" if path == "-" else path
        if path == "-" or not _regular(path):  # a pipe is read once: its copy is sniffed and imported
            try:
                path = _copy_stream(path, os.path.join(workdir, f"stream-{i}"))
            except OSError as exc:
                problems.add(f"{name}:1", f"cannot read: {exc.strerror or exc}")
                continue
        try:
            found = fmt if fmt != "auto" else detect_format(name, head(path))
        except TraceError as exc:  # zstd without the zstandard package
            problems.error(exc)
            continue
        except OSError as exc:
            problems.add(f"{name}:1", f"cannot read: {exc.strerror or exc}")
            continue
        if found is None:
            problems.add(f"{name}:1", "cannot tell the format of this file (name it with --format)")
            continue
        if found not in FORMATS:
            raise ValueError(f"unknown format {found!r}")
        if found == "trace" and path == name and _plain(path):
            sources.append(Source(path, name, found, calls=_names_a_call(path)))
            continue
        copy = os.path.join(workdir, f"input-{i}.jsonl")
        held: dict[str, _Copy] = {}
        with open(copy, "wb", buffering=1 << 20) as out:
            if found == "trace":
                _copy_trace(path, name, out, problems)
            else:
                options = ImportOptions(dict(columns), sessions[i])
                for n, rec in enumerate(read_records(path, found, name, problems, options), 1):
                    rec["_n"] = n
                    if rec.get("type") == "tool_call":
                        _note_call(held, rec)
                    out.write(orjson.dumps(rec, default=_default, option=_DUMP) + b"\n")
        calls = bool(held) or (found == "trace" and _names_a_call(copy))
        sources.append(Source(copy, name, found, copied=True, calls=calls, held=held))
    return sources


def _note_call(held: dict[str, _Copy], rec: dict[str, Any]) -> None:
    copy = held.get(rec["session"])
    if copy is None:
        copy = held[rec["session"]] = _Copy()
    copy.calls += 1
    cid = rec.get("call_id")
    if isinstance(cid, str) and len(copy.ids) < _IDS_KEPT:
        copy.ids.add(cid)


def drop_copies(sources: list[Source]) -> list[str]:
    """One session found in several imported files whose first calls are the same (copies written at each
    checkpoint of a transcript): only the longest copy is read; the others are taken out of their files.
    Files that hold parts of a session with no call in common are kept whole (a log split by day). Returns a
    warning for each session read from one copy of several."""
    owners: dict[str, list[Source]] = {}
    for src in sources:
        for session in src.held:
            owners.setdefault(session, []).append(src)
    dropped: dict[int, set[str]] = {}
    warnings = []
    for session, srcs in owners.items():
        if len(srcs) < 2:
            continue
        srcs = sorted(srcs, key=lambda s: -s.held[session].calls)
        kept = [srcs[0]]
        for src in srcs[1:]:
            if any(src.held[session].ids & k.held[session].ids for k in kept):
                dropped.setdefault(id(src), set()).add(session)
            else:
                kept.append(src)
        copies = len(srcs) - len(kept)
        if copies:
            warnings.append(
                f"session {session!r} is in {copies + 1} files that copy one another: its longest copy "
                f"({srcs[0].name}, {srcs[0].held[session].calls:,} calls) is read, the others are not counted"
            )
    for src in sources:
        gone = dropped.get(id(src))
        if gone:
            _rewrite_without(src.path, gone)
            src.calls = any(s not in gone for s in src.held)
    return warnings


def _rewrite_without(path: str, sessions: set[str]) -> None:
    """An imported copy without the events of ``sessions`` (each line is one event written by us)."""
    kept = path + ".kept"
    with open(path, "rb") as src, open(kept, "wb", buffering=1 << 20) as out:
        for line in src:
            if orjson.loads(line).get("session") not in sessions:
                out.write(line)
    os.replace(kept, path)


def _names_a_call(path: str) -> bool:
    """Whether a trace file has a ``tool_call`` event at all (a byte search: it stops at the first)."""
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            if b"tool_call" in tail + chunk[:16] or b"tool_call" in chunk:
                return True
            tail = chunk[-16:]
    return False


def copy_trace_source(src: Source, copy: str, problems: Problems) -> Source:
    """A plain trace read where it lies, copied (records longer than a record may be are skipped there)."""
    with open(copy, "wb", buffering=1 << 20) as out:
        _copy_trace(src.path, src.name, out, problems)
    return Source(copy, src.name, src.fmt, copied=True, calls=src.calls)


def _copy_trace(path: str, name: str, out: IO[bytes], problems: Problems) -> None:
    """A compressed trace or stdin, decompressed line for line (line numbers stay the same; a record longer
    than a record may be stands as a marker line, named when the copy is read)."""
    n = 0
    try:
        with open_trace(path) as (stream, _):
            for n, line in enumerate(lines_of(stream), 1):  # noqa: B007 - n is read after the loop
                out.write(line if line.endswith(b"\n") else line + b"\n")
    except TraceError as exc:
        problems.error(exc)
    except read_errors() as exc:
        problems.add(f"{name}:{n + 1}", f"cannot read on from here ({str(exc) or type(exc).__name__})")
