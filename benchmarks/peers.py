"""looptrap beside the peer packages, on the same healthy streams, in the same run.

    .venv/bin/python benchmarks/peers.py [--calls N] [--rounds R]
    pip install agentguard47 agentbelt-loop   # the peers; each is measured only when installed

Every package is fed the same calls of a healthy agent (benchmarks/overhead.py's mix of searches, order
lookups, file reads, shell commands and edits), once with short results (at most 80 characters) and once
with results of about 2 KB, and the script prints CPU microseconds per check+record (process time, so a
busy neighbour on a shared machine slows the wall clock, not the figure) and looptrap's ratio to each
peer. Rounds are interleaved (looptrap, peer, peer, looptrap, ...), each with a fresh guard, and the median
round counts. looptrap runs with an agent-speed clock (a call every 2 seconds): a healthy stream fed at
machine speed is halted by the ``rate`` detector within 30 calls, and later calls take the short path.

What each package does per call:
* looptrap ``Guard()``: ``check`` before the call, ``record`` after it, every default detector on.
* agentguard47 ``LoopGuard``: ``check(tool, args)`` (exact repeats of the last calls only).
* agentbelt-loop ``LoopDetector``: ``record(session, tool, args, result)`` then ``check(session)``.
A package that raises on a call (a loop it saw) is counted; on a healthy stream none should.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from looptrap import Guard
from overhead import SECONDS_PER_CALL, T0, Step, healthy_workload

Runner = Callable[[list[Step]], int]  # runs a stream once with a fresh guard; returns the calls it objected to


def short_results(work: list[Step]) -> list[Step]:
    """The stream with every result cut to at most 80 characters of its text."""
    return [(t, a, (r if isinstance(r, str) else str(r))[:80], e) for t, a, r, e in work]


def long_results(work: list[Step]) -> list[Step]:
    """The stream with every successful result about 2 KB: its text repeated (a file excerpt, a page of
    hits); errors stay as they are (a 2 KB error text repeated is the same error again, rightly flagged)."""
    out: list[Step] = []
    for t, a, r, e in work:
        text = r if isinstance(r, str) else str(r)
        out.append((t, a, r if e or not text else (text + "\n") * (2048 // (len(text) + 1) + 1), e))
    return out


def run_looptrap(work: list[Step]) -> int:
    guard = Guard(clock=itertools.count(T0, SECONDS_PER_CALL / 2).__next__)
    check, record = guard.check, guard.record
    objected = 0
    for tool, args, result, is_error in work:
        v = check(tool, args)
        if not v.allowed:
            objected += 1
            continue
        record(tool, args, result, is_error=is_error)
    return objected


def run_agentguard(work: list[Step]) -> int:
    from agentguard import LoopDetected, LoopGuard

    guard = LoopGuard()
    objected = 0
    for tool, args, _, _ in work:
        try:
            guard.check(tool, args)
        except LoopDetected:
            objected += 1
    return objected


def run_agentbelt(work: list[Step]) -> int:
    from agentbelt_loop import LoopDetected, LoopDetector

    detector = LoopDetector()
    objected = 0
    for tool, args, result, _ in work:
        detector.record("s", tool=tool, args=args, result=result)
        try:
            detector.check("s")
        except LoopDetected:
            objected += 1
    return objected


PACKAGES: tuple[tuple[str, str | None, Runner], ...] = (
    ("looptrap `Guard()`", None, run_looptrap),
    ("agentguard47 `LoopGuard`", "agentguard", run_agentguard),
    ("agentbelt-loop `LoopDetector`", "agentbelt_loop", run_agentbelt),
)


def cpu_us_per_call(runners: list[tuple[str, Runner]], work: list[Step], rounds: int) -> dict[str, tuple[float, int]]:
    """Median CPU microseconds per call of each runner over interleaved rounds, and the calls it objected to."""
    times: dict[str, list[float]] = {name: [] for name, _ in runners}
    objected: dict[str, int] = {}
    for name, run in runners:  # warm-up: imports, caches, compiled patterns
        objected[name] = run(work[:200])
    for r in range(rounds):
        order = runners if r % 2 == 0 else runners[::-1]
        for name, run in order:
            t0 = time.process_time_ns()
            objected[name] = run(work)
            times[name].append((time.process_time_ns() - t0) / 1e3 / len(work))
    return {name: (statistics.median(t), objected[name]) for name, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls per stream (default 2000)")
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds per package (default 9)")
    opts = ap.parse_args()
    runners = [(name, run) for name, module, run in PACKAGES if module is None or importlib.util.find_spec(module)]
    missing = [name for name, module, _ in PACKAGES if module is not None and not importlib.util.find_spec(module)]
    work = healthy_workload(opts.calls, 7)
    streams = {"short results": short_results(work), "~2 KB results": long_results(work)}
    got = {label: cpu_us_per_call(runners, stream, opts.rounds) for label, stream in streams.items()}

    print(
        f"Python {platform.python_version()} on {platform.machine()}; {opts.calls} calls per stream, "
        f"median of {opts.rounds} interleaved rounds, CPU time per check+record"
    )
    print()
    print("| package | " + " | ".join(streams) + " | calls objected to (healthy stream) |")
    print("|---|" + "---|" * len(streams) + "---|")
    for name, _ in runners:
        cells = [f"{got[label][name][0]:.1f} µs" for label in streams]
        print(f"| {name} | " + " | ".join(cells) + f" | {max(got[label][name][1] for label in streams)} |")
    ours = runners[0][0]
    for name, _ in runners[1:]:
        ratios = ", ".join(f"{got[label][ours][0] / got[label][name][0]:.2f}x on {label}" for label in streams)
        print(f"\nlooptrap / {name.split()[0]}: {ratios}")
    if missing:
        print(f"\nnot installed (pip install agentguard47 agentbelt-loop): {', '.join(missing)}")


if __name__ == "__main__":
    main()
