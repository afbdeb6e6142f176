"""Cost of keeping guard state in a store, measured in one run and printed as a Markdown table.

    .venv/bin/python benchmarks/stores.py [--quick]

1. One process: ``check`` + ``record`` pairs per second and p50/p99 latency of ``check`` and of ``record``,
   for a ``Guard()`` without a store (the in-memory default, the baseline of the same run), ``MemoryStore``,
   ``SQLiteStore`` (a real file) and ``RedisStore`` (a real ``redis-server`` started on a free loopback port).
2. Several processes: 4 processes with a session each (a fleet), and 4 and 8 processes on one shared
   session (the worst case: every write contends for it), total pairs per second. Each run starts its own
   session.
3. The Claude Code hook: wall time per event of ``looptrap hook claude-code`` as a fresh process (as Claude
   Code runs it), beside ``python -c pass`` from the same run.

This is a benchmark, not a test: it only asserts what would make its numbers meaningless.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from looptrap import Guard
from looptrap.stores import open_store

ROOT = Path(__file__).resolve().parents[1]
HOOK_DATA = ROOT / "tests" / "data" / "hooks" / "claude-code"


def workload(n: int, tag: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """A healthy agent's calls: reads and greps of distinct files, an edit now and then, the tests re-run."""
    for i in range(n):
        k = i % 10
        if k == 9:
            yield "edit_file", {"path": f"src/{tag}/m{i % 50}.py", "old": "a", "new": f"b{i}"}, "ok"
        elif k == 4:
            yield "bash", {"command": "pytest -q tests/"}, f"{i % 7} failed, 40 passed"
        elif k % 2:
            yield "read_file", {"path": f"src/{tag}/m{i}.py"}, f"def f{i}():\n    return {i}\n" * 20
        else:
            yield "grep", {"pattern": f"f{i}\\(", "path": "src"}, f"src/{tag}/m{i}.py:1:def f{i}():"


def run_session(make_guard: Callable[[], Guard], n: int, tag: str) -> tuple[list[float], list[float], float]:
    guard = make_guard()
    checks: list[float] = []
    records: list[float] = []
    clock = time.perf_counter
    start = clock()
    for tool, args, result in workload(n, tag):
        t0 = clock()
        verdict = guard.check(tool, args)
        t1 = clock()
        if verdict.allowed:
            guard.record(tool, args, result)
        t2 = clock()
        checks.append(t1 - t0)
        records.append(t2 - t1)
    elapsed = clock() - start
    assert guard.store_errors == 0, f"the store failed during the benchmark: {guard.last_store_error}"
    return checks, records, elapsed


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def us(x: float) -> str:
    return f"{x * 1e6:,.0f} µs"


@contextmanager
def redis_server() -> Iterator[str | None]:
    if shutil.which("redis-server") is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", tmp],
            stdout=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.kill()
            proc.wait()


def _worker(url: str | None, session: str, n: int, tag: str, out: Any) -> None:
    store = open_store(url) if url else None
    _, _, elapsed = run_session(lambda: Guard(store=store, session=session, clock=None), n, tag)
    if store is not None:
        store.close()
    out.put(elapsed)


def several(url: str | None, n: int, shared: bool, procs: int = 4) -> float:
    """Total pairs per second of ``procs`` processes (a session each, or one shared session)."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(url, f"shared-{procs}" if shared else f"s{i}", n, f"w{i}", q))
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
        assert w.exitcode == 0
    busy = max(q.get() for _ in workers)  # the slowest worker's own run time: without process start-up
    return procs * n / busy


def hook_times(events: int, tmp: str) -> dict[str, list[float]]:
    """Wall time per hook event, with the resident hook server (the default) and without it
    (``LOOPTRAP_HOOK_SERVER=0``: every event imports and runs the engine), beside ``python -c pass`` and
    ``python -c 'import looptrap'``, all interleaved."""
    # An installed package has its bytecode compiled (pip does it); an editable checkout may not, and
    # PYTHONDONTWRITEBYTECODE would make every hook process compile the sources again.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "looptrap")], check=True)
    runtime = Path(tmp) / "run"
    runtime.mkdir(mode=0o700)
    base = {**os.environ, "LOOPTRAP_STORE": f"sqlite:///{tmp}/hook.db", "XDG_RUNTIME_DIR": str(runtime)}
    envs = {
        "resident": {**base, "LOOPTRAP_HOOK_SERVER": "1", "LOOPTRAP_HOOK_SERVER_IDLE": "5"},
        "in-process": {**base, "LOOPTRAP_HOOK_SERVER": "0"},
    }
    pre = (HOOK_DATA / "pre_read.json").read_bytes()
    post = (HOOK_DATA / "post_read.json").read_bytes()
    times: dict[str, list[float]] = {"resident": [], "in-process": [], "bare": [], "imports": []}
    cmd = [sys.executable, "-m", "looptrap", "hook", "claude-code"]
    for i in range(events + 2):  # the first two events start the resident server: not counted
        data = json.loads(pre if i % 2 == 0 else post)
        data["tool_input"]["file_path"] += f".{i // 2}"  # distinct reads of distinct files: a healthy session
        if "tool_response" in data:
            data["tool_response"]["file"]["content"] += f"# file {i // 2}\n"
        for mode, env in envs.items():
            data["session_id"] = f"bench-{mode}"
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, input=json.dumps(data).encode(), capture_output=True, env=env)
            if i >= 2:
                times[mode].append(time.perf_counter() - t0)
            assert proc.returncode == 0, proc
            assert not proc.stdout, proc
        for name, code in (("bare", "pass"), ("imports", "import looptrap")):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            if i >= 2:
                times[name].append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls and hook events")
    opts = ap.parse_args()
    n = 500 if opts.quick else 3000
    events = 20 if opts.quick else 60

    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as tmp, redis_server() as redis_url:
        backends: list[tuple[str, str | None]] = [
            ("no store (in-memory default)", None),
            ("`MemoryStore`", "memory://"),
            ("`SQLiteStore` (file, WAL)", f"sqlite:///{tmp}/bench.db"),
        ]
        if redis_url:
            backends.append(("`RedisStore` (loopback)", redis_url))
        base_rate = 0.0
        for name, url in backends:
            store = open_store(url) if url else None

            def make(session: str, store: Any = store) -> Callable[[], Guard]:
                return lambda: Guard(store=store, session=session, clock=None)

            run_session(make("warm"), 200, "warm")
            checks, records, elapsed = run_session(make("one"), n, "p")
            rate = n / elapsed
            base_rate = base_rate or rate
            multi = url is not None and not url.startswith("memory")
            fleet = several(url, n // 2, shared=False) if multi else None
            shared = several(url, n // 2, shared=True) if multi else None
            shared8 = several(url, n // 2, shared=True, procs=8) if multi else None
            rows.append(
                (
                    name,
                    f"{rate:,.0f}/s ({rate / base_rate:.2f}x)",
                    f"{us(pct(checks, 0.5))} / {us(pct(checks, 0.99))}",
                    f"{us(pct(records, 0.5))} / {us(pct(records, 0.99))}",
                    f"{fleet:,.0f}/s" if fleet else "-",
                    f"{shared:,.0f}/s" if shared else "-",
                    f"{shared8:,.0f}/s" if shared8 else "-",
                )
            )
        hook = hook_times(events, tmp)

    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; {n} pairs per run")
    print()
    print(
        "| backend | check+record pairs, 1 process (vs no store) | check p50 / p99 | record p50 / p99 |"
        " 4 processes, a session each | 4 processes, one session | 8 processes, one session |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    bare = statistics.median(hook["bare"])
    print("| per event (fresh process, SQLite store) | median | p90 | median / `python -c pass` |")
    print("|---|---|---|---|")
    for label, key in (
        ("`looptrap hook claude-code` (resident server, the default)", "resident"),
        ("`looptrap hook claude-code`, `LOOPTRAP_HOOK_SERVER=0`", "in-process"),
        ("`python -c 'import looptrap'`", "imports"),
        ("`python -c pass`", "bare"),
    ):
        t = hook[key]
        med = statistics.median(t)
        print(f"| {label} | {med * 1e3:.0f} ms | {pct(t, 0.9) * 1e3:.0f} ms | {med / bare:.1f}x |")
    if not redis_url:
        print("\n(redis-server not found: no Redis row)")


if __name__ == "__main__":
    main()
