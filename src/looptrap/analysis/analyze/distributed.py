"""Beyond one machine: the per-session analysis on Dask, sessions partitioned by id.

The analysis of a session is a function of that session's events alone, so a cluster can do it: read the
inputs in blocks (byte ranges of plain trace files, row groups of Parquet files) on the workers, shuffle
the events by session id, sort each session's events back into file order, and run
:class:`~looptrap.analysis.analyze.session.SessionAnalyzer` on each session. The verdicts are replay's,
as in a local run; the fleet summary is built on the client from the per-session results.

    from dask.distributed import Client
    from looptrap.analysis.analyze.distributed import analyze_on_dask
    report = analyze_on_dask(["s3-mounted/fleet-*.jsonl"], client=Client("scheduler:8786"))
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import orjson

from looptrap.analysis.analyze.fleet import build_fleet
from looptrap.analysis.analyze.run import Report
from looptrap.analysis.analyze.session import BURST_SECONDS, SessionAnalysis, SessionAnalyzer
from looptrap.analysis.analyze.sources import expand_inputs
from looptrap.analysis.trace import Event, TraceError, event_from
from looptrap.engine.config import GuardConfig

__all__ = ["analyze_on_dask", "blocks", "read_block"]

#: One unit of reading: (file index, path, kind, start, end, first line number) where kind is "jsonl"
#: (start/end: byte offsets) or "parquet" (start/end: row group range).
Block = tuple[int, str, str, int, int, int]
#: One event on its way to its session: (session, (file index, line), line, raw JSON or row)
Item = tuple[str, tuple[int, int], str, Any]


def blocks(paths: list[str], block_bytes: int = 64 << 20) -> list[Block]:
    """The inputs cut into blocks at line boundaries (plain JSONL) or row groups (Parquet), each with the
    line number it starts at (counted here: the client reads each file once, fast)."""
    out: list[Block] = []
    for i, path in enumerate(paths):
        with open(path, "rb") as f:
            magic = f.read(4)
        if magic == b"PAR1" or path.endswith(".parquet"):
            import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]

            meta = pq.ParquetFile(path).metadata
            row = 1
            for g in range(meta.num_row_groups):
                out.append((i, path, "parquet", g, g + 1, row))
                row += meta.row_group(g).num_rows
            continue
        if magic[:2] == b"\x1f\x8b" or magic == b"\x28\xb5\x2f\xfd":
            raise ValueError(f"{path}: compressed; decompress it first (blocks must be read at byte offsets)")
        size = os.path.getsize(path)
        start, line = 0, 1
        with open(path, "rb") as f:
            while start < size:
                f.seek(start + block_bytes)
                f.readline()  # to the end of the line the cut falls in
                end = min(f.tell(), size) if start + block_bytes < size else size
                out.append((i, path, "jsonl", start, end, line))
                f.seek(start)
                line += f.read(end - start).count(b"\n")
                start = end
    return out


def read_block(block: Block) -> Iterator[Item]:
    """The events of one block, keyed by session (lines that name no session are skipped here; a local
    run reports them)."""
    index, path, kind, start, end, line = block
    if kind == "parquet":
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]

        from looptrap.analysis.analyze.importers.common import maybe_json

        table = pq.ParquetFile(path).read_row_groups(list(range(start, end)))
        for n, row in enumerate(table.to_pylist(), line):
            rec = {k: (maybe_json(v) if k in ("args", "output", "usage", "state") else v) for k, v in row.items()}
            rec = {k: v for k, v in rec.items() if v is not None}
            rec.setdefault("seq", n)
            session = rec.get("session")
            if session is not None:
                yield str(session), (index, n), path, orjson.dumps(rec, default=str)
        return
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    for n, raw in enumerate(data.split(b"\n"), line):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and obj.get("session") not in (None, ""):
            yield str(obj["session"]), (index, n), path, raw


def _analyze_session(
    group: tuple[str, list[Item]], config: GuardConfig | None, burst: float
) -> tuple[SessionAnalysis | None, dict[str, list[int]], int]:
    session, items = group
    items = sorted(items, key=lambda it: it[1])
    an = SessionAnalyzer(config, burst_seconds=burst)
    for _, (_, n), path, raw in items:
        an.source = path
        try:
            ev: Event = event_from(orjson.loads(raw), f"{path}:{n}", n)
        except TraceError:
            continue
        an.feed(ev)
    return an.finish(session), an.tool_results, len(items)


def analyze_on_dask(
    inputs: list[str],
    *,
    client: Any = None,
    partitions: int | None = None,
    config: GuardConfig | None = None,
    burst_seconds: float = BURST_SECONDS,
    block_bytes: int = 64 << 20,
) -> Report:
    """Analyse plain trace files (JSONL) or Parquet files of trace events on a Dask cluster (``client``:
    a ``dask.distributed.Client``; ``None``: Dask's current scheduler). The detector verdicts and the
    per-session statistics are those of a local run; the fleet's top signatures are not computed (run
    ``--no-detectors`` locally, or DuckDB on the cluster, for those)."""
    import dask.bag as db

    paths = expand_inputs(inputs)
    parts = blocks(paths, block_bytes)
    seq = db.from_sequence(parts, npartitions=max(len(parts), 1))  # type: ignore[no-untyped-call,unused-ignore]
    bag = seq.map(lambda b: list(read_block(b))).flatten()
    grouped = bag.groupby(lambda item: item[0], npartitions=partitions or max(len(parts), 2), shuffle="tasks")
    results = grouped.map(lambda g: _analyze_session(g, config, burst_seconds))
    computed = results.compute() if client is None else client.compute(results).result()
    sessions = [a for a, _, _ in computed if a is not None]
    tool_results: dict[str, list[int]] = {}
    for _, tr, _ in computed:
        for tool, counts in tr.items():
            acc = tool_results.setdefault(tool, [0, 0, 0])
            for i, v in enumerate(counts):
                acc[i] += v
    order = {p: i for i, p in enumerate(paths)}
    sessions.sort(key=lambda a: (order.get(a.source, 0), a.first_line, a.session))
    events = sum(n for _, _, n in computed)
    fleet = build_fleet(sessions, tool_results=tool_results, top_signatures=[], events=events)
    inputs_ = [{"name": p, "format": "parquet" if p.endswith(".parquet") else "trace"} for p in paths]
    return Report(sessions, fleet, inputs_, detectors=True)
