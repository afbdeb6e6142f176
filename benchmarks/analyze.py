"""Scale of ``looptrap analyze``: a synthetic fleet log, analysed with and without the detectors, beside this
machine's floors measured in the same run. Prints a Markdown table.

    .venv/bin/python benchmarks/analyze.py [--sizes 1000000,10000000] [--seed 7] [--keep DIR] [--html FILE]
        [--compiled SRC]

For each size (events), the script writes a seeded fleet log in trace format v1 (JSON Lines): healthy
sessions, loops of each shape (the same call again, reworded searches, a ping-pong, the same error, a retry
storm at machine speed) and one pathological session of identical calls (1,000,000 of them at 10,000,000
events; a tenth of the events at smaller sizes), interleaved as a fleet writes them. Then, each in a fresh
process whose peak memory is read by a small launcher:

* floor (read): reading the file line by line, nothing else;
* floor (DuckDB): ``SELECT session, tool, args, count(*) ... GROUP BY session, tool, args`` over the file;
* ``looptrap analyze FILE --no-detectors --json``: the statistics (DuckDB);
* ``looptrap analyze FILE --json``: statistics and the detectors (both cores);
* with ``--compiled SRC`` (the ``src`` folder of a tree built with ``LOOPTRAP_COMPILE=1 python setup.py
  build_ext --inplace``, docs/evaluation.md#compiled-build), the same command run on that build, which must
  report the same sessions.

With ``--keep DIR`` a log already written there for the same size and seed is used again.

This is a benchmark, not a test: it asserts only what would make its numbers meaningless (the loops found).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SHAPES = ("healthy", "repeat", "drift", "cycle", "error", "storm")
WEIGHTS = (80, 4, 4, 4, 4, 4)


class _Session:
    """One synthetic session: a generator of (tool, args, output, is_error, interval, turn_end, cost)."""

    __slots__ = ("calls", "clock", "kind", "left", "name", "rng", "step")

    def __init__(self, name: str, kind: str, calls: int, rng: random.Random, start: float) -> None:
        self.name = name
        self.kind = kind
        self.left = calls
        self.calls = calls
        self.rng = rng
        self.clock = start
        self.step = 0


def _call(s: _Session) -> tuple[str, Any, Any, bool, float, bool]:
    """The session's next call: tool, args, output, is_error, interval before it, whether a turn ends."""
    i = s.step
    s.step += 1
    r = s.rng
    k = s.kind
    if k == "healthy":
        gap = r.lognormvariate(1.0, 0.6)
        m = i % 10
        if m == 9:
            return (
                "edit_file",
                {"path": f"src/m{i % 40}.py", "old": "return a", "new": f"return a + {i}"},
                "ok",
                False,
                gap,
                True,
            )
        if m == 4:
            return (
                "bash",
                {"command": "pytest -q tests/"},
                f"{i % 7} failed, {40 + i % 3} passed in 1.{i % 9}s",
                False,
                gap,
                True,
            )
        if m % 2:
            body = (
                f"def handler_{i}(request):\n    context = load_context(request, page={i})\n"
                f"    return render(request, 'page_{i}.html', context)\n" * 4
            )
            return "read_file", {"path": f"src/{s.name[-4:]}/views_{i}.py"}, body, False, gap, True
        return (
            "search_docs",
            {"query": f"how to configure option {i} for {s.name[-3:]}"},
            f"3 results: guide/{i}, faq/{i}, api/{i}",
            False,
            gap,
            True,
        )
    if k == "repeat":
        return "get_order", {"order_id": "A-1042"}, {"status": "not_found"}, False, r.uniform(2.0, 6.0), True
    if k == "drift":
        words = ("refund", "policy", "return", "money back", "reimbursement", "chargeback", "credit")
        q = f"{words[i % len(words)]} {words[(i * 3 + 1) % len(words)]} rules"
        return "search_docs", {"query": q}, "0 results", False, r.uniform(2.0, 5.0), True
    if k == "cycle":
        if i % 2:
            return (
                "read_file",
                {"path": "config/settings.yaml"},
                "debug: false\nport: 8080\n",
                False,
                r.uniform(1.0, 4.0),
                True,
            )
        return "list_dir", {"path": "config"}, "settings.yaml\nlogging.yaml\n", False, r.uniform(1.0, 4.0), True
    if k == "error":
        return (
            "deploy",
            {"env": "staging", "attempt": i},
            "Error: permission denied for role ci-bot",
            True,
            r.uniform(3.0, 8.0),
            True,
        )
    # storm, and the pathological session: identical calls at machine speed, in a tight band
    return "fetch_status", {"job": "j-77"}, "503 Service Unavailable", True, r.uniform(0.009, 0.011), False


def generate(path: Path, events: int, seed: int) -> dict[str, Any]:
    """Write a fleet log of about ``events`` events; returns what it holds."""
    rng = random.Random(seed)
    patho_calls = 1_000_000 if events >= 10_000_000 else max(events // 20, 10)
    made = {k: 0 for k in SHAPES}
    counter = 0

    def new_session() -> _Session:
        nonlocal counter
        counter += 1
        kind = rng.choices(SHAPES, WEIGHTS)[0]
        made[kind] += 1
        calls = rng.randint(15, 90) if kind == "healthy" else rng.randint(40, 400)
        return _Session(
            f"{kind}-{counter:07d}", kind, calls, random.Random(rng.random()), 1.764e9 + rng.uniform(0, 86400)
        )

    patho = _Session("pathological-0", "storm", patho_calls, random.Random(seed + 1), 1.764e9)
    active = [new_session() for _ in range(64)]
    written = 0
    t0 = time.perf_counter()
    with open(path, "wb", buffering=1 << 20) as out:
        seq = 0
        while written < events:
            if patho.left and rng.random() < 2 * patho.left / max(events - written, 1):
                s = patho
            else:
                j = rng.randrange(len(active))
                s = active[j]
                if s.left == 0:
                    active[j] = s = new_session()
            if s.left == 0:
                continue
            tool, args, output, err, gap, turn = _call(s)
            s.left -= 1
            s.clock += gap
            seq += 1
            cid = f"c{s.step}"
            dump = orjson.dumps
            call = {"session": s.name, "type": "tool_call", "seq": seq, "ts": round(s.clock, 3), "tool": tool}
            lines = [
                dump({**call, "args": args, "call_id": cid}),
                dump(
                    {
                        **call,
                        "type": "tool_result",
                        "seq": seq + 1,
                        "ts": round(s.clock + 0.004, 3),
                        "call_id": cid,
                        "output": output,
                        "is_error": err,
                    }
                ),
            ]
            seq += 1
            if turn:
                seq += 1
                usage = {
                    "input_tokens": 1500 + s.step * 40,
                    "output_tokens": 60,
                    "cost_usd": round(0.002 + s.step * 4e-5, 6),
                }
                lines.append(
                    dump(
                        {
                            "session": s.name,
                            "type": "turn_end",
                            "seq": seq,
                            "ts": round(s.clock + 0.5, 3),
                            "usage": usage,
                        }
                    )
                )
            out.write(b"\n".join(lines) + b"\n")
            written += len(lines)
            if s is not patho and s.left == 0:
                active[active.index(s)] = new_session()
    return {
        "events": written,
        "bytes": path.stat().st_size,
        "sessions": counter + 1,
        "shapes": made,
        "pathological_calls": patho.calls - patho.left,
        "seconds": time.perf_counter() - t0,
    }


_LAUNCHER = """
import resource, subprocess, sys, time
with open(sys.argv[1], "wb") as out:
    t0 = time.perf_counter()
    p = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
if p.returncode not in (0, 3):
    sys.stderr.write(p.stderr.decode()[-2000:])
    raise SystemExit(p.returncode)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stdout.write(f"{dt} {rss}\\n")
"""


def timed(argv: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[float, float, bytes]:
    """Wall time (s) and peak RSS (MiB) of the command's largest process, and its stdout."""
    p = subprocess.run([PY, "-c", _LAUNCHER, str(out), *argv], capture_output=True, text=True, check=True, env=env)
    dt, rss = p.stdout.split()
    data = out.read_bytes()
    out.unlink()
    return float(dt), int(rss) / 1024, data


_READ = (
    "import sys\nn = 0\nwith open(sys.argv[1], 'rb', buffering=1 << 20) as f:\n"
    "    for line in f:\n        n += 1\nprint(n)\n"
)
_DUCK = (
    "import sys, duckdb\n"
    "con = duckdb.connect()\n"
    "con.execute('SET threads=2')\n"
    'print(con.execute("SELECT count(*) FROM (SELECT session, tool, CAST(args AS VARCHAR) a, count(*) n FROM "\n'
    "  \"read_json(?, format='newline_delimited', records=true, \"\n"
    "  \"columns={'session': 'VARCHAR', 'tool': 'VARCHAR', 'args': 'JSON'}) \"\n"
    '  "GROUP BY session, tool, a)", [sys.argv[1]]).fetchone()[0])\n'
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,10000000", help="comma-separated event counts")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", metavar="DIR", help="write the logs here and keep them (default: a temporary folder)")
    ap.add_argument("--html", metavar="FILE", help="also write the HTML report of the smallest size's log")
    ap.add_argument("--compiled", metavar="SRC", help="also run the full analysis on the compiled build in SRC")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="looptrap-analyze-"))
    work.mkdir(parents=True, exist_ok=True)
    import duckdb

    import looptrap

    print(
        f"looptrap {looptrap.__version__}, Python {platform.python_version()}, DuckDB {duckdb.__version__}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; seed {args.seed}\n"
    )
    rows = []
    for size in sizes:
        log = work / f"fleet-{size}.jsonl"
        about = work / f"fleet-{size}-seed{args.seed}.json"
        if args.keep and log.exists() and about.exists():
            info = orjson.loads(about.read_bytes())
        else:
            info = generate(log, size, args.seed)
            if args.keep:
                about.write_bytes(orjson.dumps(info))
        mib = info["bytes"] / (1 << 20)
        print(
            f"# {info['events']:,} events, {mib:,.0f} MiB, {info['sessions']:,} sessions "
            f"({', '.join(f'{k} {v}' for k, v in info['shapes'].items())}; pathological: "
            f"{info['pathological_calls']:,} identical calls); written in {info['seconds']:.1f} s",
            file=sys.stderr,
        )
        cli = [PY, "-m", "looptrap", "analyze", str(log), "--no-progress"]
        out = work / "out.json"
        read_s, read_mb, _ = timed([PY, "-c", _READ, str(log)], out)
        duck_s, duck_mb, _ = timed([PY, "-c", _DUCK, str(log)], out)
        stats_s, stats_mb, stats_out = timed([*cli, "--no-detectors", "--json"], out)
        full_s, full_mb, full_out = timed([*cli, "--json"], out)
        report = orjson.loads(full_out)
        compiled = None
        if args.compiled:
            env = {**os.environ, "PYTHONPATH": str(Path(args.compiled).resolve())}
            c_s, c_mb, c_out = timed([*cli, "--json"], out, env=env)
            same = orjson.loads(c_out)["sessions"] == report["sessions"]
            assert same, "the compiled build reports other sessions than the interpreted one"
            compiled = (c_s, c_mb)
        loops = report["fleet"]["loops"]["sessions"]
        expected = sum(v for k, v in info["shapes"].items() if k != "healthy") + 1
        assert loops >= expected * 0.9, (loops, expected)  # the loops are found, or the numbers mean nothing
        assert orjson.loads(stats_out)["fleet"]["tool_calls"] == report["fleet"]["tool_calls"]
        rows.append((info, mib, read_s, read_mb, duck_s, duck_mb, stats_s, stats_mb, full_s, full_mb, loops, compiled))
        if args.html and size == min(sizes):
            subprocess.run([*cli, "--html", args.html], check=False, stdout=subprocess.DEVNULL)
        if not args.keep:
            log.unlink()
    print("| events | size | measurement | wall time | events/s | peak memory |")
    print("|---|---|---|---|---|---|")
    for info, mib, read_s, read_mb, duck_s, duck_mb, stats_s, stats_mb, full_s, full_mb, loops, compiled in rows:
        n = info["events"]
        measured = [
            ("floor: read the file", read_s, read_mb),
            ("floor: DuckDB `GROUP BY session, tool, args`", duck_s, duck_mb),
            ("`analyze --no-detectors` (statistics)", stats_s, stats_mb),
            (f"`analyze` (statistics and detectors; {loops:,} sessions with a loop)", full_s, full_mb),
        ]
        if compiled is not None:
            measured.append(("`analyze`, compiled build (the same sessions)", *compiled))
        for label, s, mb in measured:
            print(f"| {n:,} | {mib:,.0f} MiB | {label} | {s:.1f} s | {n / s:,.0f} | {mb:,.0f} MiB |")
    print(f"\nmachine: {os.cpu_count()} CPUs; max RSS is of the largest single process", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
