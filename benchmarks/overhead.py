"""Overhead of looptrap, measured in one run and printed as a Markdown table for the README.

    .venv/bin/python benchmarks/overhead.py [--quick]

1. ns per ``Guard().check`` + ``record`` on a healthy agent's mix of calls, beside the bare minimum of
   hashing the same argument dicts (orjson + xxh3, and stdlib json + sha256), measured interleaved.
2. The same calls split into ``engine.call`` (canonicalisation), ``engine.check`` and ``engine.record``.
3. Memory: one session fed a pathological loop (state size and traced memory must plateau), and many
   short sessions side by side.
4. ``looptrap replay FILE --json --jobs 2`` on a synthetic trace (real CLI, as a subprocess): events/s, peak RSS.
5. Huge payloads: arguments and results of 1 MiB and 5 MiB through ``Guard()`` (a file written, read back,
   searched for twice, a failed fetch), and a shell command of 5 MiB classified, beside the floor of
   encoding and hashing the same payloads once each (orjson + xxh3): the cost must stay linear in the size.

``--quick`` scales the memory runs and the trace down 10x and takes fewer timing repeats.
This is a benchmark, not a test: it only asserts what would make its numbers meaningless.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import itertools
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import xxhash

import looptrap
from looptrap import Guard, SessionState
from looptrap.engine.engine import Engine

Step = tuple[str, dict[str, Any], Any, bool]  # tool, args, result, is_error
Row = tuple[str, str, str]

T0 = 1_764_460_800.0  # 2025-11-30, the timestamps of the simulated sessions start here
SECONDS_PER_CALL = 2.0  # the simulated agent's pace: far below the rate detector's 10 calls/s

_WORDS = (
    "refund policy invoice shipping delay warranty return label customs address discount coupon subscription "
    "cancel upgrade tax receipt payment card declined tracking parcel courier exchange damaged voucher"
)
WORDS = tuple(_WORDS.split())
PACKAGES = ("app", "api", "core", "db", "jobs", "auth", "billing", "search", "utils", "cli")
MODULES = ("engine", "models", "views", "handlers", "schema", "client", "cache", "tasks", "config", "errors")
STATUSES = ("processing", "shipped", "delivered", "cancelled", "refunded")


# -- a healthy agent ------------------------------------------------------------------------------------
def _code_text(rng: random.Random, path: str, offset: int, size: int) -> str:
    """A file excerpt of about ``size`` characters, numbered like an editor tool shows it."""
    lines: list[str] = []
    n = offset + 1
    total = 0
    while total < size:
        w1, w2, w3 = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
        line = rng.choice(
            (
                f"{n:6d}\tdef {w1}_{w2}(self, {w3}: str) -> bool:",
                f"{n:6d}\t    {w1} = self._{w2}.get({w3!r}, None)",
                f"{n:6d}\t    if {w1} is None or not {w2}:",
                f"{n:6d}\t        raise ValueError(f'{w1} {w2}: {{{w3}}}')",
                f"{n:6d}\t    return {w1}_{w3}({w2}, limit={rng.randint(1, 500)})",
                f"{n:6d}\t# {w1} {w2} {w3}: see {path}",
            )
        )
        lines.append(line)
        total += len(line) + 1
        n += 1
    return "\n".join(lines)


class HealthyAgent:
    """A healthy agent's calls: mostly new calls, some re-reads (never two in a row), an occasional edit.

    It keeps clear of every detector: no identical call three times in a row, no run of stale calls, never
    three calls of a tool in a row without a new result, errors that are never retried. Repeated calls return
    what they returned the first time, as real read-only tools do.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.recent: list[Step] = []
        self.used: set[str] = set()
        self.dull: dict[str, int] = {}  # per tool: calls since its last new result (drift's count)
        self.last_repeat = False
        self.n = 0

    def next(self) -> Step:
        rng = self.rng
        self.n += 1
        if self.recent and not self.last_repeat and rng.random() < 0.2:
            pick = rng.choice(self.recent[-30:])
            if self.dull.get(pick[0], 0) < 2:
                self.last_repeat = True
                self.dull[pick[0]] = self.dull.get(pick[0], 0) + 1
                tool, args, result, is_error = pick
                return tool, dict(args), result, is_error  # a fresh dict with the same content, as a model emits
        self.last_repeat = False
        r = rng.random()
        if r < 0.30:
            step = self._new(self._search)
        elif r < 0.55:
            step = self._new(self._get_order)
        elif r < 0.75:
            step = self._new(self._read_file)
        elif r < 0.97:
            step = self._new(self._shell)
        else:
            step = self._new(self._edit)
        tool, _, result, is_error = step
        if tool == "edit_file":
            self.dull.clear()  # a state change: drift and staleness start over
        elif is_error or result == "0 results":
            self.dull[tool] = self.dull.get(tool, 0) + 1
        else:
            self.dull[tool] = 0
            self.recent.append(step)
            del self.recent[:-60]
        return step

    def _new(self, make: Callable[[], Step]) -> Step:
        while True:
            step = make()
            key = step[0] + orjson.dumps(step[1], option=orjson.OPT_SORT_KEYS).decode()
            if key not in self.used:
                self.used.add(key)
                return step

    def _search(self) -> Step:
        rng = self.rng
        query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        args: dict[str, Any] = {"query": query, "limit": rng.choice((5, 10, 20))}
        if rng.random() < 0.3:
            args["lang"] = rng.choice(("en", "de", "fr"))
        if rng.random() < 0.15:
            args["filters"] = {"category": rng.choice(WORDS), "after": "2025-01-01"}
        if rng.random() < 0.2 and self.dull.get("search_docs", 0) < 1:
            return "search_docs", args, "0 results", False
        hits = [
            {"id": f"doc-{rng.randint(1, 99999)}", "title": f"{w.title()} {query}", "score": round(rng.random(), 3)}
            for w in rng.sample(WORDS, rng.randint(1, 3))
        ]
        if rng.random() < 0.35:
            return "search_docs", args, "; ".join(f"{h['id']}: {h['title']}" for h in hits), False
        return "search_docs", args, {"results": hits, "total": len(hits), "took_ms": rng.randint(3, 90)}, False

    def _get_order(self) -> Step:
        rng = self.rng
        oid = f"ORD-{rng.randint(100000, 999999)}"
        args: dict[str, Any] = {"order_id": oid}
        if rng.random() < 0.5:
            args["include_items"] = rng.random() < 0.5
        if rng.random() < 0.04 and self.dull.get("get_order", 0) < 1:
            return "get_order", args, {"error": f"order {oid} not found", "code": 404}, True
        result = {
            "order_id": oid,
            "status": rng.choice(STATUSES),
            "total": round(rng.uniform(5, 500), 2),
            "currency": "EUR",
            "updated_at": f"2025-11-{rng.randint(1, 29):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:12Z",
        }
        if args.get("include_items"):
            result["items"] = [{"sku": f"SKU-{rng.randint(1000, 9999)}", "qty": rng.randint(1, 3)}]
        return "get_order", args, result, False

    def _read_file(self) -> Step:
        rng = self.rng
        path = f"src/{rng.choice(PACKAGES)}/{rng.choice(MODULES)}.py"
        offset = rng.randrange(0, 2000, 50)
        args = {"path": path, "offset": offset, "limit": 50}
        if rng.random() < 0.5:
            return "read_file", args, _code_text(rng, path, offset, rng.randint(1024, 2048)), False
        return "read_file", args, _code_text(rng, path, offset, rng.randint(80, 250)), False

    def _shell(self) -> Step:
        rng = self.rng
        w = rng.choice(WORDS)
        pkg = rng.choice(PACKAGES)
        cmd = rng.choice(
            (
                f"grep -rn {w} src",
                f"grep -rn '{w}_{rng.choice(WORDS)}' src/{pkg}",
                f"ls -la src/{pkg}",
                f"cat src/{pkg}/{rng.choice(MODULES)}.py | head -{rng.randint(2, 8) * 10}",
                f"git log --oneline -{rng.randint(3, 30)} -- src/{pkg}",
                f"python -m pytest -q tests/test_{pkg}.py -k {w}",
                f"find src -name '*{w}*'",
            )
        )
        if cmd.startswith("python"):
            n = rng.randint(1, 40)
            out = f"{'.' * n}\n{n} passed in {rng.uniform(0.1, 9):.2f}s"
        else:
            out = "\n".join(
                f"src/{pkg}/{rng.choice(MODULES)}.py:{rng.randint(1, 900)}: {w} = {rng.choice(WORDS)}"
                for _ in range(rng.randint(1, 6))
            )
        return "bash", {"command": cmd}, out, False

    def _edit(self) -> Step:
        rng = self.rng
        path = f"src/{rng.choice(PACKAGES)}/{rng.choice(MODULES)}.py"
        old = f"{rng.choice(WORDS)} = {rng.randint(0, 99)}"
        new = f"{rng.choice(WORDS)} = {rng.randint(0, 99)}"
        args = {"path": path, "old_str": old, "new_str": new}
        return "edit_file", args, f"The file {path} has been edited.", False


def healthy_workload(n: int, seed: int) -> list[Step]:
    agent = HealthyAgent(random.Random(seed))
    return [agent.next() for _ in range(n)]


# -- a pathological loop --------------------------------------------------------------------------------
_LOOP_TEXTS = tuple(_code_text(random.Random(i), f"src/app/{c}.py", 0, 300) for i, c in enumerate("abc"))


def loop_step(i: int) -> Step:
    """Call ``i`` of an agent stuck in every loop shape in turn (blocks of 50 calls), producing as many
    distinct digests as it can: the worst case for every bounded map in the state and the engine."""
    shape = (i // 50) % 6
    if shape == 0:  # the identical call, again and again
        return "search_docs", {"query": "refund policy", "limit": 5}, "0 results", False
    if shape == 1:  # reworded queries, nothing found (drift), every one a new digest
        return "search_docs", {"query": f"refund policy {WORDS[i % len(WORDS)]} {i}", "limit": 5}, "No results", False
    if shape == 2:  # an A,B,C re-read cycle of long results
        return "read_file", {"path": f"src/app/{'abc'[i % 3]}.py", "offset": 0}, _LOOP_TEXTS[i % 3], False
    if shape == 3:  # the same failing call, a different error text every time
        return "get_order", {"order_id": "ORD-1"}, {"error": f"upstream timeout on attempt {i}"}, True
    if shape == 4:  # hallucinated tool names, each one new
        return f"lookup_v{i}", {"id": i, "verbose": True}, "Error: unknown tool", True
    return "bash", {"command": f"grep -rn needle{i} src"}, "", False  # unique shell commands, empty output


# -- timing ---------------------------------------------------------------------------------------------
def fake_clock() -> Callable[[], float]:
    """Seconds advancing by SECONDS_PER_CALL per reading (the guard reads its clock once per check and
    once per record), so the rate detector sees an agent that thinks between calls, as real ones do."""
    return itertools.count(T0, SECONDS_PER_CALL / 2).__next__


def time_orjson_xxh3(work: list[Step]) -> int:
    dumps, opt, h = orjson.dumps, orjson.OPT_SORT_KEYS, xxhash.xxh3_64_intdigest
    t0 = time.perf_counter_ns()
    for _, args, _, _ in work:
        h(dumps(args, option=opt))
    return time.perf_counter_ns() - t0


def time_json_sha256(work: list[Step]) -> int:
    dumps, sha = json.dumps, hashlib.sha256
    t0 = time.perf_counter_ns()
    for _, args, _, _ in work:
        sha(dumps(args, sort_keys=True, separators=(",", ":")).encode()).digest()
    return time.perf_counter_ns() - t0


def time_guard(work: list[Step], intercepted: list[int]) -> int:
    guard = Guard(clock=fake_clock())
    check, record = guard.check, guard.record
    blocked = 0
    t0 = time.perf_counter_ns()
    for tool, args, result, is_error in work:
        if check(tool, args).allowed:
            record(tool, args, result, is_error=is_error)
        else:
            blocked += 1
    elapsed = time.perf_counter_ns() - t0
    intercepted.append(blocked)
    return elapsed


def time_engine(work: list[Step]) -> int:
    """check + record through the engine directly (no Guard, no per-phase timers)."""
    engine = Guard(clock=None).engine
    state = SessionState()
    ecall, echeck, erecord = engine.call, engine.check, engine.record
    now = T0
    t0 = time.perf_counter_ns()
    for tool, args, result, is_error in work:
        now += SECONDS_PER_CALL
        call, verdict = echeck(state, ecall(tool, args, at=now), now)
        if verdict.allowed:
            erecord(state, call, result, is_error=is_error, now=now)
    return time.perf_counter_ns() - t0


def timer_overhead() -> int:
    """ns that one perf_counter_ns() reading adds to a measured interval."""
    pc = time.perf_counter_ns
    samples = []
    for _ in range(20):
        acc = 0
        for _ in range(2000):
            a = pc()
            acc += pc() - a
        samples.append(acc / 2000)
    return round(min(samples))


def time_phases(work: list[Step], overhead: int) -> tuple[float, float, float]:
    """Total ns in engine.call, engine.check and engine.record (each reading's own cost taken out)."""
    engine = Guard(clock=None).engine
    state = SessionState()
    ecall, echeck, erecord = engine.call, engine.check, engine.record
    pc = time.perf_counter_ns
    tc = tk = tr = 0
    now = T0
    for tool, args, result, is_error in work:
        now += SECONDS_PER_CALL
        t0 = pc()
        call = ecall(tool, args, at=now)
        t1 = pc()
        call, verdict = echeck(state, call, now)
        t2 = pc()
        if verdict.allowed:
            erecord(state, call, result, is_error=is_error, now=now)
        t3 = pc()
        tc += t1 - t0
        tk += t2 - t1
        tr += t3 - t2
    n = len(work)
    return tc - n * overhead, tk - n * overhead, tr - n * overhead


def bench_overhead(work: list[Step], repeats: int) -> list[Row]:
    n = len(work)
    overhead = timer_overhead()
    intercepted: list[int] = []
    runners: dict[str, Callable[[], Any]] = {
        "orjson": lambda: time_orjson_xxh3(work),
        "stdlib": lambda: time_json_sha256(work),
        "guard": lambda: time_guard(work, intercepted),
        "engine": lambda: time_engine(work),
        "phases": lambda: time_phases(work, overhead),
    }
    for run in runners.values():  # warm-up: imports, caches, the allocator
        run()
    samples: dict[str, list[Any]] = {k: [] for k in runners}
    names = list(runners)
    for r in range(repeats):
        # interleaved, and in a rotating order, so drift of a noisy machine hits every measurement alike
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            samples[name].append(runners[name]())
    if any(intercepted):
        raise SystemExit(f"the healthy workload was intercepted ({max(intercepted)} calls): fix the workload")

    def per_call(values: list[float]) -> tuple[float, float, float]:
        q = statistics.quantiles([v / n for v in values], n=4) if len(values) > 1 else [values[0] / n] * 3
        return statistics.median(v / n for v in values), q[0], q[2]

    g, g_lo, g_hi = per_call(samples["guard"])
    a, a_lo, a_hi = per_call(samples["orjson"])
    b, b_lo, b_hi = per_call(samples["stdlib"])
    e = per_call(samples["engine"])[0]
    # Per-call timers inflate every phase a little; their shares are steadier, so the phases are shown as
    # shares of the engine's untimed cost. The wrapper is the median of paired (guard - engine) runs.
    timed = [statistics.median(s[i] for s in samples["phases"]) / n for i in range(3)]
    shares = [statistics.median(s[i] / sum(s) for s in samples["phases"]) for i in range(3)]
    wrapper = statistics.median((gr - er) / n for gr, er in zip(samples["guard"], samples["engine"], strict=True))
    spread = f"median of {repeats} interleaved runs of {n:,} calls (p25-p75 in brackets)"
    mix = _mix(work)
    return [
        ("**1. Per-call overhead**", "", spread),
        ("`Guard()` check + record, healthy agent", f"**{g:,.0f} ns** ({g_lo:,.0f}-{g_hi:,.0f})", mix),
        (
            "bare minimum (a): `orjson` sorted keys + `xxh3_64`",
            f"{a:,.0f} ns ({a_lo:,.0f}-{a_hi:,.0f})",
            f"same argument dicts; guard = **{g / a:.1f}x** this",
        ),
        (
            "bare minimum (b): `json.dumps` sorted + `sha256`",
            f"{b:,.0f} ns ({b_lo:,.0f}-{b_hi:,.0f})",
            f"same argument dicts; guard = **{g / b:.1f}x** this",
        ),
        (
            "**2. Where the time goes**",
            "",
            f"engine driven directly, same calls; shares from per-phase timers ({overhead} ns/reading taken out)",
        ),
        (
            "`engine.call` (canonical args, digest, preview)",
            f"{shares[0] * e:,.0f} ns",
            f"{shares[0]:.0%} ({timed[0]:,.0f} ns with per-call timers)",
        ),
        (
            "`engine.check` (count, detectors)",
            f"{shares[1] * e:,.0f} ns",
            f"{shares[1]:.0%} ({timed[1]:,.0f} ns with per-call timers)",
        ),
        (
            "`engine.record` (result facts, result digest, detectors)",
            f"{shares[2] * e:,.0f} ns",
            f"{shares[2]:.0%} ({timed[2]:,.0f} ns with per-call timers)",
        ),
        ("engine check + record, no `Guard`", f"{e:,.0f} ns", "same calls, untimed phases, median"),
        (
            "`Guard` wrapper (clock, locks, pending calls)",
            f"{wrapper:,.0f} ns",
            f"median of paired (`Guard` - engine) runs: {wrapper / g:.0%} of the guard's cost",
        ),
    ]


def _mix(work: list[Step]) -> str:
    n = len(work)
    tools: dict[str, int] = {}
    for t, *_ in work:
        tools[t] = tools.get(t, 0) + 1
    seen: set[str] = set()
    repeats = 0
    for tool, args, _, _ in work:
        key = tool + orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
        repeats += key in seen
        seen.add(key)
    long = sum(1 for *_, res, _ in work if isinstance(res, str) and len(res) >= 1024)
    parts = ", ".join(f"{t} {c / n:.0%}" for t, c in sorted(tools.items(), key=lambda kv: -kv[1]))
    return f"{parts}; {repeats / n:.0%} repeats; {long / n:.0%} results of 1-2 KB; 0 intercepted"


# -- memory ---------------------------------------------------------------------------------------------
def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def bench_loop_memory(total: int) -> list[Row]:
    checkpoints = [c for c in (100, 1_000, 10_000, 100_000, 1_000_000) if c <= total][-4:]
    last_decade = set(range(total // 10, total + 1, total // 10))  # 10 samples: a plateau, a sawtooth or a slope
    gc.collect()
    tracemalloc.start()
    engine = Engine()
    state = SessionState(run_id="pathological")
    points: list[tuple[int, int, int]] = []
    samples: list[tuple[int, int, int]] = []
    halted_at = 0
    t0 = time.perf_counter()
    for i in range(total):
        tool, args, result, is_error = loop_step(i)
        now = T0 + i * 0.05  # a retry storm: 20 calls/s
        call, _ = engine.check(state, engine.call(tool, args, at=now), now)
        engine.record(state, call, result, is_error=is_error, now=now)
        if not halted_at and state.halted is not None:
            halted_at = i + 1
        if i + 1 in last_decade or i + 1 in checkpoints:
            gc.collect()
            point = (i + 1, len(orjson.dumps(state.to_dict())), tracemalloc.get_traced_memory()[0])
            if i + 1 in checkpoints:
                points.append(point)
            if i + 1 in last_decade:
                samples.append(point)
    elapsed = time.perf_counter() - t0
    tracemalloc.stop()
    halted = state.halted or {}
    first, last = samples[0], samples[-1]
    per_call = (last[2] - first[2]) / (last[0] - first[0])
    low, high = min(m for *_, m in samples), max(m for *_, m in samples)
    flat = per_call < 1.0 and abs(last[1] - first[1]) < 0.05 * first[1]
    rows: list[Row] = [
        (
            "**3a. One session, pathological loop**",
            "",
            "engine driven directly; check + record on every call, intercepted or not; "
            f"halted ({halted.get('reason')}) at call {halted_at:,}, recorded on; {elapsed:.0f} s under tracemalloc",
        )
    ]
    for calls, size, mem in points:
        rows.append((f"after {calls:,} calls", f"state {size / 1024:,.1f} KiB", f"traced memory {_mib(mem)}"))
    rows.append(
        (
            "plateau",
            "yes" if flat else "**NO**",
            f"{first[0]:,} -> {last[0]:,} calls: state {first[1]:,} -> {last[1]:,} B; traced memory "
            f"{_mib(low)}-{_mib(high)} over {len(samples)} samples, {per_call:+.2f} B per call (engine caches "
            f"included: {len(engine._plans):,} tool plans, cap 1,024; mutation cache {len(engine._mutating_cache):,}, "
            "cap 8,192)",
        )
    )
    return rows


def bench_many_sessions(sessions: int, calls: int, pool: list[Step]) -> list[Row]:
    engine = Engine()
    warm = SessionState()
    for tool, args, result, is_error in pool:  # fill the engine's shared caches first: they are not per session
        call, _ = engine.check(warm, engine.call(tool, args))
        engine.record(warm, call, result, is_error=is_error)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    states: list[SessionState] = []
    span = len(pool) - calls
    for k in range(sessions):
        state = SessionState(run_id=f"session-{k:05d}")
        start = (k * 7919) % span
        now = T0 + k
        for tool, args, result, is_error in pool[start : start + calls]:
            now += SECONDS_PER_CALL
            call, verdict = engine.check(state, engine.call(tool, args, at=now), now)
            if verdict.allowed:
                engine.record(state, call, result, is_error=is_error, now=now)
        states.append(state)
    gc.collect()
    mem = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    sizes = [len(orjson.dumps(s.to_dict())) for s in states]
    return [
        (f"**3b. {sessions:,} sessions x {calls} calls**", "", "healthy agents, one shared engine, all states alive"),
        (
            "state per session (`to_dict` JSON)",
            f"{statistics.mean(sizes) / 1024:.1f} KiB",
            f"max {max(sizes) / 1024:.1f} KiB; total {sum(sizes) / 2**20:.1f} MiB",
        ),
        ("traced memory, all sessions", _mib(mem), f"{mem / sessions / 1024:.1f} KiB per session in memory"),
    ]


def bench_guard_without_end_turn(total: int) -> list[Row]:
    """The Guard driver around the engine, never given end_turn (it is optional)."""
    guard = Guard(clock=None)
    points: list[tuple[int, int]] = []
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for i in range(total):
        tool, args, result, is_error = loop_step(i)
        if guard.check(tool, args).allowed:
            guard.record(tool, args, result, is_error=is_error)
        if i + 1 in (total // 10, total):
            gc.collect()
            points.append((i + 1, tracemalloc.get_traced_memory()[0] - base))
    tracemalloc.stop()
    (c1, m1), (c2, m2) = points
    per_call = (m2 - m1) / (c2 - c1)
    return [
        (
            "**3c. `Guard()` on the same loop, no `end_turn`**",
            f"{_mib(m1)} -> {_mib(m2)}",
            f"{c1:,} -> {c2:,} calls: {per_call:.1f} B per call, "
            + (
                "**still growing** (bounded caches may still be filling: compare with the full run)"
                if per_call > 1
                else "flat"
            ),
        )
    ]


# -- replay ---------------------------------------------------------------------------------------------
class TraceSession:
    """One session of the synthetic trace: a healthy agent; one in 8 falls into loops (60 calls in every 300,
    cycling through the loop shapes of ``loop_step``)."""

    def __init__(self, index: int, rng: random.Random) -> None:
        self.name = f"run-{index:04d}"
        self.rng = rng
        self.agent = HealthyAgent(random.Random(rng.random()))
        self.loops = index % 8 == 5
        self.loop_from = rng.randint(10, 60)
        self.queue: list[dict[str, Any]] = []
        self.ts = T0 + index * 3.0
        self.calls = 0

    def next_event(self) -> dict[str, Any]:
        if not self.queue:
            self._turn()
        ev = self.queue.pop()
        if "ts" in ev:
            self.ts += self.rng.uniform(0.5, 6.0)
            ev["ts"] = round(self.ts, 3)
        return ev

    def _turn(self) -> None:
        rng = self.rng
        events: list[dict[str, Any]] = []
        if rng.random() < 0.05:
            events.append({"session": self.name, "type": "text", "text": "Let me look into this."})
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            self.calls += 1
            if self.loops and self.calls >= self.loop_from and (self.calls - self.loop_from) % 300 < 60:
                tool, args, result, is_error = loop_step(self.calls)
            else:
                tool, args, result, is_error = self.agent.next()
            cid = f"call_{self.calls}"
            events.append(
                {"session": self.name, "type": "tool_call", "tool": tool, "args": args, "call_id": cid, "ts": 0}
            )
            events.append(
                {
                    "session": self.name,
                    "type": "tool_result",
                    "tool": tool,
                    "call_id": cid,
                    "output": result,
                    "is_error": is_error,
                    "ts": 0,
                }
            )
        usage = {"input_tokens": rng.randint(800, 30000), "output_tokens": rng.randint(20, 800), "cost_usd": 0.004}
        events.append({"session": self.name, "type": "turn_end", "state": None, "usage": usage, "error": None})
        events.reverse()
        self.queue = events


def write_trace(path: Path, events: int, sessions: int, seed: int = 7) -> int:
    """An interleaved trace of ``events`` events; returns its size in bytes."""
    rng = random.Random(seed)
    pool = [TraceSession(i, random.Random(rng.random())) for i in range(sessions)]
    dumps = orjson.dumps
    with path.open("wb", buffering=1 << 20) as fh:
        chunk: list[bytes] = []
        for n in range(events):
            chunk.append(dumps(pool[rng.randrange(sessions)].next_event()))
            if len(chunk) == 10_000 or n == events - 1:
                fh.write(b"\n".join(chunk) + b"\n")
                chunk.clear()
    return path.stat().st_size


def replay_command(trace: Path) -> list[str]:
    cli = Path(sys.executable).with_name("looptrap")
    head = [str(cli)] if cli.exists() else [sys.executable, "-m", "looptrap.cli.main"]
    return [*head, "replay", str(trace), "--json", "--jobs", "2"]


# Peak RSS is read by a small launcher process: a child spawned from this (large) benchmark process would be
# charged with this process's own high-water mark (Linux records the parent's peak RSS in the child at exec).
_LAUNCHER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
seconds = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "maxrss_kib": rss, "rc": done.returncode, "err": done.stderr.decode()[-2000:]}))
"""


#: Seconds to replay 1,000,000 events with two processes (``--jobs 2``).
REPLAY_TARGET = 6.0


def bench_replay(events: int, sessions: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="looptrap-bench-") as tmp:
        trace = Path(tmp) / "trace.jsonl"
        t0 = time.perf_counter()
        size = write_trace(trace, events, sessions)
        made = time.perf_counter() - t0
        gc.collect()
        out = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *replay_command(trace)], capture_output=True, text=True, check=True
        )
    got = json.loads(out.stdout)
    if got["rc"] != 0:
        raise SystemExit(f"looptrap replay failed ({got['rc']}): {got['err']}")
    elapsed: float = got["seconds"]
    target = f"{'under' if elapsed <= REPLAY_TARGET else '**over**'} the {REPLAY_TARGET:.0f} s target, two processes"
    return [
        (
            "**4. `looptrap replay FILE --json --jobs 2 > /dev/null`**",
            "",
            f"{events:,} events, {sessions:,} interleaved sessions (1 in 8 looping), {size / 2**20:.0f} MiB "
            f"(written in {made:.1f} s); the real CLI in a subprocess",
        ),
        ("replay time", f"**{elapsed:.1f} s**", target),
        ("replay throughput", f"**{events / elapsed:,.0f} events/s**", f"{size / 2**20 / elapsed:.1f} MiB/s"),
        (
            "peak RSS of the replay process",
            f"{got['maxrss_kib'] / 1024:.0f} MiB",
            "`ru_maxrss` of `RUSAGE_CHILDREN`, read in a small launcher process",
        ),
    ]


# -- output ---------------------------------------------------------------------------------------------
def _huge_calls(size: int) -> list[tuple[str, dict[str, Any], Any, bool]]:
    payload = "A" * size
    return [
        ("write_file", {"path": "big.txt", "content": payload}, "ok", False),
        ("read_file", {"path": "big.txt"}, payload, False),
        ("read_file", {"path": "big.txt", "raw": True}, {"content": payload}, False),
        ("search", {"q": payload}, payload, False),
        ("search", {"q": payload}, payload, False),
        ("fetch", {"url": "x"}, payload, True),
    ]


def _time_huge_guard(calls: list[tuple[str, dict[str, Any], Any, bool]]) -> int:
    from looptrap import Guard

    guard = Guard(clock=None)
    t0 = time.perf_counter_ns()
    for tool, args, result, failed in calls:
        if guard.check(tool, args).allowed:
            guard.record(tool, args, result, is_error=failed)
    return time.perf_counter_ns() - t0


def _time_huge_floor(calls: list[tuple[str, dict[str, Any], Any, bool]]) -> int:
    t0 = time.perf_counter_ns()
    for _, args, result, _ in calls:
        xxhash.xxh3_64_intdigest(orjson.dumps(args, option=orjson.OPT_SORT_KEYS))
        xxhash.xxh3_64_intdigest(orjson.dumps(result))
    return time.perf_counter_ns() - t0


def bench_huge_payloads(repeats: int) -> list[Row]:
    """Check + record of payloads of 1 and 5 MiB, interleaved with the floor; medians of ``repeats`` runs."""
    rows: list[Row] = [("**5. Huge payloads**", "", f"6 guarded calls of each size; median of {repeats} runs")]
    medians = {}
    for size in (1 << 20, 5 << 20):
        calls = _huge_calls(size)
        guard_ns, floor_ns = [], []
        for _ in range(repeats):
            guard_ns.append(_time_huge_guard(calls))
            floor_ns.append(_time_huge_floor(calls))
        g, f = statistics.median(guard_ns), statistics.median(floor_ns)
        medians[size] = g
        rows.append(
            (
                f"{size >> 20} MiB arguments and results",
                f"{g / 1e6:.1f} ms",
                f"{g / f:.1f}x the floor ({f / 1e6:.1f} ms)",
            )
        )
    rows.append(("5 MiB / 1 MiB", f"{medians[5 << 20] / medians[1 << 20]:.1f}x", "5.0x is linear"))
    command = {"command": "echo " + "x" * (5 << 20)}
    shell = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        Engine().call("bash", command)
        shell.append(time.perf_counter_ns() - t0)
    rows.append(("a 5 MiB shell command classified (`engine.call`)", f"{statistics.median(shell) / 1e6:.1f} ms", ""))
    return rows


def git_revision() -> str:
    """The checkout measured (``git describe --dirty``), or "" outside a git checkout."""
    try:
        return subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment(rev: str) -> str:
    return (
        f"looptrap {looptrap.__version__}{f' ({rev})' if rev else ''}, Python {platform.python_version()}, "
        f"orjson {orjson.__version__}, xxhash {xxhash.VERSION}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )


def command_line() -> str:
    exe = sys.executable
    with contextlib.suppress(ValueError):
        exe = os.path.relpath(exe)
    return shlex.join([exe, *sys.argv])


def table(rows: list[Row]) -> Iterator[str]:
    yield "| measurement | result | notes |"
    yield "|---|---|---|"
    for what, result, notes in rows:
        yield f"| {what} | {result} | {notes} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10x smaller memory runs and trace, fewer repeats")
    opts = parser.parse_args()
    scale = 10 if opts.quick else 1
    started = time.perf_counter()
    rev = git_revision()

    work = healthy_workload(2_000, seed=1)
    rows = bench_overhead(work, repeats=7 if opts.quick else 25)
    rows += bench_loop_memory(1_000_000 // scale)
    rows += bench_many_sessions(10_000 // scale, 50, healthy_workload(5_000, seed=2))
    rows += bench_guard_without_end_turn(200_000 // scale)
    rows += bench_replay(1_000_000 // scale, 1_000)
    rows += bench_huge_payloads(3 if opts.quick else 9)

    print(f"Command: `{command_line()}` ({time.perf_counter() - started:.0f} s in all)")
    print(f"Environment: {environment(rev)}")
    if git_revision() != rev:
        print(f"Warning: the checkout changed during the run ({rev} -> {git_revision()}); run again.")
    print()
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
