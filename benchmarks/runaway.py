"""One runaway session through ``looptrap analyze --no-detectors``: the shape of the machine-speed post-mortem
(the same call again and again at a regular interval, on the order of 10^8 times), whose call order must
stay within DuckDB's memory budget. Prints a Markdown table.

    .venv/bin/python benchmarks/runaway.py [--calls 100000000] [--keep DIR]

The log (trace format v1, written by DuckDB): one session of N calls of one tool 100 ms apart, the same
arguments every time but at the last call. The command runs in a fresh process whose peak memory is read by a
small launcher (as in benchmarks/analyze.py); the script checks the figures it reports: every call counted,
two distinct calls, one new in the second half, N - 1 intervals with a median of 0.1 s.

This is a benchmark, not a test: tests/test_analyze_runaway.py proves the bound on two million calls.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analyze import PY, timed


def write_log(path: Path, calls: int) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"""COPY (
          SELECT 'runaway' AS session, 'tool_call' AS type, 'search' AS tool,
                 CASE WHEN i = {calls} THEN {{'q': 'new'}} ELSE {{'q': 'no results, try again'}} END AS args,
                 i AS seq, 1764000000 + i * 0.1 AS ts
          FROM range(1, {calls} + 1) t(i)) TO '{path}' (FORMAT json)"""
    )
    con.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=100_000_000)
    p.add_argument("--keep", type=Path, help="a folder to keep the log in (and to take it from next time)")
    args = p.parse_args()
    import duckdb

    from looptrap import __version__
    from looptrap.analysis.analyze.sql import MEMORY_LIMIT

    with tempfile.TemporaryDirectory(prefix="looptrap-runaway-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / f"runaway-{args.calls}.jsonl"
        if not log.exists():
            write_log(log, args.calls)
        size = log.stat().st_size
        cli = [PY, "-m", "looptrap", "analyze", str(log), "--no-detectors", "--json", "--no-progress"]
        seconds, rss, out = timed(cli, Path(tmp) / "out.json")
    (s,) = orjson.loads(out)["sessions"]
    wanted = {"tool_calls": args.calls, "distinct_calls": 2, "new_in_second_half": 1}
    if {k: s[k] for k in wanted} != wanted or s["intervals"]["n"] != args.calls - 1:
        raise SystemExit(f"the figures are wrong: {s}")
    if abs(s["intervals"]["median_s"] - 0.1) > 1e-6:
        raise SystemExit(f"the median interval is wrong: {s['intervals']}")
    print(
        f"looptrap {__version__}, Python {platform.python_version()}, DuckDB {duckdb.__version__} "
        f"(memory budget {MEMORY_LIMIT}), {platform.system()} {platform.machine()}\n"
    )
    print("| calls in one session | log | `analyze --no-detectors` | calls/s | peak memory |")
    print("|---|---|---|---|---|")
    print(
        f"| {args.calls:,} | {size / (1 << 30):.1f} GiB | {seconds:.1f} s | {args.calls / seconds:,.0f} "
        f"| {rss:,.0f} MiB |"
    )


if __name__ == "__main__":
    main()
