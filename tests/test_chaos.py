"""looptrap.chaos: the faults on plain tools, seeded schedules, the call log, the runner and its ceiling, the
fault matrix, ``looptrap chaos`` and the matrix of the example agent in docs/chaos.md."""

from __future__ import annotations

import ast
import asyncio
import csv
import io
import json
import subprocess
import sys
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from conftest import need
from looptrap import Budgets, Guard
from looptrap.chaos import (
    ALL,
    FAULTS,
    CallLog,
    CeilingReached,
    Chaos,
    Contradict,
    Empty,
    Error,
    Flaky,
    InjectedError,
    InjectedTimeout,
    Malformed,
    NotFound,
    Oversized,
    Report,
    Retryable,
    RetryInside,
    Slow,
    Timeout,
    after,
    assert_terminates,
    by_name,
    every,
    first,
    matrix,
    run,
)
from looptrap.chaos.faults import MALFORMED
from looptrap.chaos.log import COLUMNS
from looptrap.cli.main import main as looptrap_main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import chaos_agent  # noqa: E402  (examples/chaos_agent.py: the docs' example agent)

ran: Counter[str] = Counter()


def lookup(key: str) -> str:
    """The real tool: it always works."""
    ran["lookup"] += 1
    return f"{key}: found, 3 rows"


async def alookup(key: str) -> str:
    """The real tool, async."""
    ran["alookup"] += 1
    await asyncio.sleep(0)
    return f"{key}: found, 3 rows"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def calls(tool: Any, n: int) -> list[tuple[str, Any]]:
    """``n`` calls of a wrapped tool: ("ok", result) or ("raised", the exception)."""
    out: list[tuple[str, Any]] = []
    for _ in range(n):
        try:
            out.append(("ok", tool(key="k")))
        except InjectedError as exc:
            out.append(("raised", exc))
    return out


def stuck(tools: list[Any], guard: Guard | None) -> str:
    """An agent that calls its first tool again and again, whatever comes back (the guard's advice too)."""
    tool = tools[0]
    while True:
        args = {"key": "k"}
        if guard is not None:
            verdict = guard.check("lookup", args)
            if verdict.action == "halt":
                return "halted"
            if not verdict.allowed:
                guard.end_turn()
                continue
        try:
            result, failed = tool(**args), False
        except InjectedError as exc:
            result, failed = str(exc), True
        if guard is not None:
            guard.record("lookup", args, result, is_error=failed)
            guard.end_turn()


# -- every fault ------------------------------------------------------------------------------------
def test_every_fault_is_named_in_all_and_found_by_name() -> None:
    assert [f.name for f in ALL] == list(FAULTS)
    assert len(FAULTS) == 11
    assert [type(by_name(n)) for n in FAULTS] == list(FAULTS.values())
    both = by_name("slow+empty")
    assert both.label == "slow+empty"
    with pytest.raises(ValueError, match="unknown fault 'nope'"):
        by_name("nope")


def test_replacing_faults_return_their_result_without_running_the_tool() -> None:
    chaos = Chaos()
    for fault, check in (
        (Empty(), lambda r: r == "[]"),
        (NotFound(), lambda r: r == "No matching records found."),
        (NotFound(outcome=True), lambda r: (r["status"], r["retryable"]) == ("not_found", False)),
        (Error(as_result=True), lambda r: (r["status"], r["retryable"]) == ("error", False)),
        (Retryable(as_result=True), lambda r: (r["status"], r["retryable"]) == ("error", True)),
        (Oversized(), lambda r: len(r) == 1 << 20 and r.startswith("row 0000000")),
        (Oversized(size=5000), lambda r: len(r) == 5000),
        (Malformed(), lambda r: r in MALFORMED),
    ):
        chaos = Chaos(fault)
        [(how, result)] = calls(chaos.wrap(lookup), 1)
        assert how == "ok"
        assert check(result), (fault, str(result)[:80])
    assert ran["lookup"] == 0  # none of them ran the real tool
    kinds = [r.result_kind for r in chaos.log]
    assert kinds == ["malformed"]


def test_error_faults_raise_what_they_say() -> None:
    for fault, cls, retryable, kind in (
        (Error(), InjectedError, False, "error"),
        (Retryable(), InjectedError, True, "retryable"),
        (Timeout(), InjectedTimeout, True, "timeout"),
    ):
        chaos = Chaos(fault)
        [(how, exc)] = calls(chaos.wrap(lookup), 1)
        assert how == "raised"
        assert isinstance(exc, cls)
        assert exc.retryable is retryable
        assert exc.fault == fault.label
        [row] = chaos.log
        assert (row.result_kind, row.is_error, row.fault) == (kind, True, fault.label)
        assert row.error_message is not None
        assert row.error_message.startswith(type(exc).__name__)
    assert isinstance(InjectedTimeout("t", retryable=True, fault="timeout"), TimeoutError)
    assert ran["lookup"] == 0


def test_timeout_can_sleep_past_a_deadline_then_answer() -> None:
    chaos = Chaos(Timeout(sleep=0.05, raises=False))
    started = time.perf_counter()
    assert chaos.wrap(lookup)(key="k") == "k: found, 3 rows"
    assert time.perf_counter() - started >= 0.05
    assert [r.result_kind for r in chaos.log] == ["timeout"]


def test_contradict_flips_between_its_answers() -> None:
    chaos = Chaos(Contradict(answers=("yes", "no")))
    tool = chaos.wrap(lookup)
    assert [r for _, r in calls(tool, 4)] == ["yes", "no", "yes", "no"]
    assert {r.result_kind for r in chaos.log} == {"contradiction"}
    with pytest.raises(ValueError, match="at least two"):
        Contradict(answers=("only one",))


def test_flaky_fails_n_times_then_works() -> None:
    chaos = Chaos(Flaky(failures=2))
    got = calls(chaos.wrap(lookup), 4)
    assert [how for how, _ in got] == ["raised", "raised", "ok", "ok"]
    assert all(exc.retryable for how, exc in got if how == "raised")
    assert ran["lookup"] == 2
    assert [r.result_kind for r in chaos.log] == ["retryable", "retryable", "ok", "ok"]


def test_slow_sleeps_then_works() -> None:
    chaos = Chaos(Slow(seconds=0.03))
    started = time.perf_counter()
    assert chaos.wrap(lookup)(key="k") == "k: found, 3 rows"
    assert time.perf_counter() - started >= 0.03
    assert chaos.log.records[0].ms >= 30


def test_retry_inside_multiplies_the_work_behind_one_call() -> None:
    chaos = Chaos(RetryInside(attempts=3))
    tool = chaos.wrap(lookup)
    assert [how for how, _ in calls(tool, 2)] == ["ok", "ok"]
    assert ran["lookup"] == 6  # two agent calls, six runs of the real tool
    assert [(r.call, r.attempts) for r in chaos.log] == [(1, 3), (2, 3)]
    assert (chaos.calls, chaos.attempts) == (2, 6)
    # with an error that never clears, every attempt fails and the last failure is the call's
    chaos = Chaos(RetryInside(attempts=4) + Retryable())
    [(how, exc)] = calls(chaos.wrap(lookup), 1)
    assert how == "raised"
    assert exc.retryable
    assert chaos.log.records[0].attempts == 4


def test_a_fault_keeps_no_state_between_runs() -> None:
    flaky = Flaky(failures=1)
    for _ in range(2):  # the same fault object, two runs: each starts with its failure
        assert [how for how, _ in calls(Chaos(flaky).wrap(lookup), 2)] == ["raised", "ok"]


# -- schedules, composition, targets ---------------------------------------------------------------
def kinds_of(chaos: Chaos, n: int = 30) -> list[str]:
    calls(chaos.wrap(lookup), n)
    return [r.result_kind for r in chaos.log]


def test_a_seeded_schedule_is_the_same_every_run_and_differs_by_seed() -> None:
    fault = Empty(when=0.5)
    one, two, other = (kinds_of(Chaos(fault, seed=s)) for s in (7, 7, 8))
    assert one == two
    assert one != other
    assert 5 < one.count("empty") < 25
    assert fault.schedule(30, tool="lookup", seed=7) == [k == "empty" for k in one]
    beside = kinds_of(Chaos([Slow(seconds=0), fault], seed=7))  # another fault beside it changes nothing
    assert beside == one
    # in another process (another hash seed) too
    code = (
        "from looptrap.chaos import Empty; "
        "print(''.join('x' if f else '.' for f in Empty(when=0.5).schedule(30, tool='lookup', seed=7)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "".join("x" if k == "empty" else "." for k in one)


def test_schedules_by_call_number() -> None:
    assert Empty(when={2, 3}).schedule(5) == [False, True, True, False, False]
    assert Empty(when=every(2)).schedule(5) == [True, False, True, False, True]
    assert Empty(when=after(3)).schedule(5) == [False, False, False, True, True]
    assert Empty(when=first(2)).schedule(5) == [True, True, False, False, False]
    assert kinds_of(Chaos(Empty(when=after(2))), 4) == ["ok", "ok", "empty", "empty"]
    with pytest.raises(ValueError, match="between 0 and 1"):
        Empty(when=1.5)


def test_faults_compose_and_target_tools() -> None:
    def other(key: str) -> str:
        return "other"

    chaos = Chaos([Slow(seconds=0.001) + Empty().on("lookup"), Error().on("other")])
    a, b = chaos.wrap_all([lookup, other])
    assert a(key="k") == "[]"
    with pytest.raises(InjectedError):
        b(key="k")
    assert [(r.tool, r.result_kind, r.fault) for r in chaos.log] == [
        ("lookup", "empty", "slow+empty"),
        ("other", "error", "slow+error"),
    ]
    mapped = Chaos({"other": [NotFound()]})
    a, b = mapped.wrap_all([lookup, other])
    assert (a(key="k"), b(key="k")) == ("k: found, 3 rows", "No matching records found.")
    assert Empty().on("x").describe() == "empty on x"


def test_async_tools_get_the_same_faults() -> None:
    chaos = Chaos([Flaky(failures=1), Slow(seconds=0.001)])
    tool = chaos.wrap(alookup)
    assert asyncio.iscoroutinefunction(tool)

    async def twice() -> list[Any]:
        out: list[Any] = []
        for _ in range(2):
            try:
                out.append(await tool(key="k"))
            except InjectedError as exc:
                out.append(exc)
        return out

    first_call, second = asyncio.run(twice())
    assert isinstance(first_call, InjectedError)
    assert second == "k: found, 3 rows"
    assert ran["alookup"] == 1
    assert [r.result_kind for r in chaos.log] == ["retryable", "ok"]


# -- the call log ---------------------------------------------------------------------------------
def test_the_call_log_has_the_documented_columns(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    chaos = Chaos(Empty(when={2}) + Error(when={3}), log=path, session="s1")
    calls(chaos.wrap(lookup), 3)
    chaos.log.close()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [list(r) for r in rows] == [list(COLUMNS)] * 3
    assert list(COLUMNS[:5]) == ["seq", "ts", "tool", "args", "result_kind"]
    assert [r["seq"] for r in rows] == [1, 2, 3]
    assert all(isinstance(r["ts"], float) and r["ts"] > 1e9 for r in rows)
    assert [(r["tool"], r["args"], r["result_kind"], r["is_error"]) for r in rows] == [
        ("lookup", {"key": "k"}, "ok", False),
        ("lookup", {"key": "k"}, "empty", False),
        ("lookup", {"key": "k"}, "error", True),
    ]
    assert [r["output"] for r in rows[:2]] == ["k: found, 3 rows", "[]"]
    assert {r["session"] for r in rows} == {"s1"}

    csv_path = chaos.log.write(tmp_path / "calls.csv")
    read = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert list(read[0]) == list(COLUMNS)
    assert [(r["seq"], json.loads(r["args"]), r["result_kind"], r["is_error"]) for r in read] == [
        ("1", {"key": "k"}, "ok", "false"),
        ("2", {"key": "k"}, "empty", "false"),
        ("3", {"key": "k"}, "error", "true"),
    ]
    assert (tmp_path / "again.jsonl").write_text(chaos.log.jsonl()) > 0
    assert [json.loads(x)["seq"] for x in (tmp_path / "again.jsonl").read_text().splitlines()] == [1, 2, 3]


def test_looptrap_analyze_reads_the_call_log(tmp_path: Path) -> None:
    """The call log is a call log ``looptrap analyze`` reads as it is, JSON Lines or CSV: every row a call
    (session, seq, time, tool, arguments) and its result (output, whether it failed)."""
    from looptrap.analysis.analyze.importers import ImportOptions, Problems, detect_format, read_records

    path = tmp_path / "calls.jsonl"
    stuck_run = run(stuck, [lookup], Empty(when=after(1)) + Error(when={3}), max_calls=8, log=path, name="stuck")
    healthy = run(chaos_agent.agent, chaos_agent.TOOLS, log=path, name="healthy")
    both = CallLog()
    for row in [*stuck_run.log, *healthy.log]:
        both.add(row)
    csv_path = both.write(tmp_path / "calls.csv")
    expected = [(r.session, r.seq, r.ts, r.tool, r.args, r.is_error) for r in both]
    assert [r[0] for r in expected] == ["stuck"] * 8 + ["healthy"] * 2
    for p, fmt in ((path, "jsonl-calls"), (csv_path, "csv")):
        assert detect_format(p.name, p.read_bytes()[:4096]) == fmt
        problems = Problems(strict=True)
        events = list(read_records(str(p), fmt, p.name, problems, ImportOptions()))
        calls_read = [e for e in events if e["type"] == "tool_call"]
        results = [e for e in events if e["type"] == "tool_result"]
        got = [
            (e["session"], e["seq"], e["ts"], e["tool"], e["args"], r["is_error"])
            for e, r in zip(calls_read, results, strict=True)
        ]
        assert got == [(s, q, pytest.approx(t), tool, a, err) for s, q, t, tool, a, err in expected], fmt
        assert [r["output"] for r in results][:4] == [
            "k: found, 3 rows",
            [],  # the empty result, read back as JSON
            "InjectedError: " + Error().message,
            [],
        ]

    def analyze(*args: str) -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-m", "looptrap", "analyze", *args, "--json", "--no-progress"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout))

    need("looptrap analyze's extra (pip install 'looptrap[analyze]')", _have("duckdb") and _have("rich"))
    for p in (path, csv_path):
        data = analyze(str(p))
        assert not data["errors"], data["errors"]
        sessions = {s["session"]: s for s in data["sessions"]}
        assert {k: s["tool_calls"] for k, s in sessions.items()} == {"stuck": 8, "healthy": 2}, p.name
        assert sessions["stuck"]["replay"]["first_intervention"] is not None  # the guard would have stepped in
        assert sessions["healthy"]["replay"]["first_intervention"] is None


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_the_call_log_can_keep_digests_only() -> None:
    chaos = Chaos(log=CallLog(args="digest"))
    tool = chaos.wrap(lookup)
    tool(key="secret")
    tool(key="secret")
    tool(key="other")
    digests = [r.args for r in chaos.log]
    assert all(d.startswith("xxh3:") for d in digests)
    assert digests[0] == digests[1] != digests[2]
    assert "secret" not in chaos.log.jsonl()
    with pytest.raises(ValueError, match="'value' or 'digest'"):
        CallLog(args="raw")  # type: ignore[arg-type]


# -- the runner and its ceiling --------------------------------------------------------------------
def test_without_a_guard_a_stuck_agent_runs_to_the_ceiling() -> None:
    report = run(stuck, lookup, Empty(), max_calls=12)
    assert (report.outcome, report.reason, report.terminated) == ("ceiling", "max_calls", False)
    assert (report.calls, report.ran, report.refused) == (12, 12, 0)
    assert len(report.log) == 12
    assert report.summary() == "ceiling @12 (max_calls)"
    assert not report.guarded


def test_with_a_guard_it_stops_early_and_says_why() -> None:
    report = run(stuck, [lookup], Empty(), guard=lambda: Guard(clock=None), max_calls=12)
    assert (report.outcome, report.reason, report.terminated) == ("halted", "loop_repeat", True)
    assert report.ran == 2  # the advised, blocked and halted calls never ran
    assert report.refused >= 3
    assert report.interventions[0].action == "advise"
    assert report.interventions[0].after_seq == 2
    assert report.interventions[-1].action == "halt"
    assert report.per_tool == {"lookup": {"calls": report.calls, "ran": 2, "refused": report.refused, "attempts": 2}}
    json.dumps(report.to_dict())  # plain data


def test_the_seconds_ceiling_cuts_a_slow_tool_short() -> None:
    started = time.perf_counter()
    report = run(stuck, [lookup], Slow(seconds=0.05), max_calls=None, max_seconds=0.3)
    assert time.perf_counter() - started < 1.0
    assert (report.outcome, report.reason) == ("ceiling", "max_seconds")
    assert 3 <= report.ran <= 7
    assert report.log[-1].result_kind == "ceiling"


def test_an_async_agent_is_cancelled_at_the_deadline() -> None:
    async def thinks_forever(tools: list[Any], guard: Guard | None) -> None:
        await tools[0](key="k")
        await asyncio.sleep(60)  # no more tool calls: only the deadline can stop it

    started = time.perf_counter()
    report = run(thinks_forever, [alookup], max_seconds=0.2)
    assert time.perf_counter() - started < 2.0
    assert (report.outcome, report.reason, report.ran) == ("ceiling", "max_seconds", 1)

    async def answers(tools: list[Any], guard: Guard | None) -> str:
        return str(await tools[0](key="k"))

    async def from_a_running_loop() -> Report:  # run() inside an event loop runs the agent on its own thread
        return run(answers, [alookup])

    report = asyncio.run(from_a_running_loop())
    assert (report.outcome, report.result) == ("finished", "k: found, 3 rows")


def test_the_ceiling_is_not_an_exception_the_agent_catches() -> None:
    def catches_everything(tools: list[Any], guard: Guard | None) -> None:
        while True:
            try:
                tools[0](key="k")
            except Exception:  # noqa: BLE001 - what a careless agent does
                continue

    report = run(catches_everything, [lookup], Error(), max_calls=5)
    assert (report.outcome, report.calls) == ("ceiling", 5)
    assert not issubclass(CeilingReached, Exception)


def test_an_agent_that_raises_is_reported_as_an_error() -> None:
    def crashes(tools: list[Any], guard: Guard | None) -> None:
        tools[0](key="k")

    report = run(crashes, [lookup], Error("400 Bad Request: no such key"))
    assert (report.outcome, report.reason, report.terminated) == ("error", "InjectedError", True)
    assert report.error == "InjectedError: 400 Bad Request: no such key"


def exits(tools: list[Any], guard: Guard | None) -> None:
    """An agent that gives up the way a script does: ``sys.exit()``, after one call."""
    tools[0](key="k")
    sys.exit(3)


def test_an_agent_that_calls_sys_exit_is_reported_as_an_error_and_the_matrix_goes_on() -> None:
    report = run(exits, [lookup], guard=Guard)
    assert (report.outcome, report.reason, report.calls) == ("error", "SystemExit", 1)
    assert report.error == "SystemExit: exit code 3"

    async def exits_async(tools: list[Any], guard: Guard | None) -> None:
        await tools[0](key="k")
        sys.exit()

    report = run(exits_async, [alookup])
    assert (report.outcome, report.error) == ("error", "SystemExit: exit code None")
    # the event loop ended cleanly (a SystemExit out of a task leaves CPython 3.11's compiler state broken)
    ast.parse((ROOT / "src" / "looptrap" / "chaos" / "runner.py").read_text(encoding="utf-8"))

    async def from_a_running_loop() -> Report:
        return run(exits_async, [alookup])

    assert asyncio.run(from_a_running_loop()).reason == "SystemExit"
    out = io.StringIO()
    m = matrix(exits, [lookup], ["empty", "error"], file=out)
    assert [r.outcome for r in m.reports.values()] == ["error", "error"]  # every cell ran
    assert out.getvalue().splitlines()[-1] == "2 runs with the guard: 2 error"


def test_a_healthy_run_finishes_with_nothing_to_report() -> None:
    report = run(chaos_agent.agent, chaos_agent.TOOLS, guard=chaos_agent.guard)
    assert (report.outcome, report.calls, report.interventions) == ("finished", 2, [])
    assert report.result.startswith("Order A-1042 was delivered")
    assert report.faults == "no fault"


def test_usage_the_guard_counted_is_reported() -> None:
    def pays(tools: list[Any], guard: Guard | None) -> None:
        assert guard is not None
        for _ in range(3):
            guard.check("lookup", {"key": "k"})
            guard.record("lookup", {"key": "k"}, tools[0](key="k"))
            guard.end_turn(usage={"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.01})

    report = run(pays, [lookup], guard=lambda: Guard(clock=None))
    assert report.tokens == 360
    assert report.cost == pytest.approx(0.03)


# -- assert_terminates --------------------------------------------------------------------------
def test_assert_terminates_passes_and_fails_with_the_call_sequence() -> None:
    good = run(stuck, [lookup], Empty(), guard=lambda: Guard(clock=None), max_calls=12)
    assert_terminates(good, within_calls=20, reasons={"loop_repeat"})
    with pytest.raises(AssertionError) as caught:
        assert_terminates(good, within_calls=20, reasons={"reported_blocked"})
    assert "it halted for loop_repeat, not for reported_blocked" in str(caught.value)

    bad = run(stuck, [lookup], Empty(), max_calls=6, name="stuck agent")
    with pytest.raises(AssertionError) as caught:
        assert_terminates(bad, within_calls=5)
    text = str(caught.value)
    assert text.startswith("stuck agent: it did not terminate: the ceiling stopped it (max_calls); it made 6 tool")
    assert "faults: empty on every tool, seed 0" in text
    assert 'call sequence:\n#1   lookup({"key":"k"}) -> empty [empty]\n#2   lookup(' in text
    assert text.count("-> empty [empty]") == 6

    guarded = run(stuck, [lookup], Empty(), guard=lambda: Guard(clock=None), max_calls=12)
    with pytest.raises(AssertionError) as caught:
        assert_terminates(guarded, within_calls=2)
    assert "guard: advise loop_repeat (lookup, call 3)" in str(caught.value)


# -- the matrix and the command --------------------------------------------------------------------
def test_the_matrix_runs_every_fault_against_every_tool() -> None:
    out = io.StringIO()
    m = matrix(
        chaos_agent.agent,
        chaos_agent.TOOLS,
        ["empty", Slow(seconds=0.001)],
        guard=chaos_agent.guard,
        baseline=True,
        file=out,
    )
    assert m.faults == ["empty", "slow"]
    assert m.tools == ["get_order", "search_docs"]
    assert m.cell("empty", "get_order") == "ceiling @30 (max_calls) -> halted @3 (reported_blocked)"
    assert m.cell("slow", "search_docs") == "finished @2 -> finished @2"
    assert out.getvalue() == m.table()
    assert m.table().splitlines()[-1] == "4 runs with the guard: 2 finished, 2 halted"
    data = json.loads(m.json())
    assert [(c["fault"], c["tool"]) for c in data["cells"]] == [
        ("empty", "get_order"),
        ("empty", "search_docs"),
        ("slow", "get_order"),
        ("slow", "search_docs"),
    ]
    assert data["cells"][0]["report"]["reason"] == "reported_blocked"
    assert data["cells"][0]["baseline"]["outcome"] == "ceiling"
    with pytest.raises(TypeError, match="factory"):
        matrix(chaos_agent.agent, chaos_agent.TOOLS, guard=Guard(), output=None)


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = looptrap_main(["chaos", *args])
    return code, out.getvalue()


EXAMPLE = str(ROOT / "examples" / "chaos_agent.py")


def test_docs_show_the_fault_matrix_of_the_example_agent() -> None:
    code, table = cli(f"{EXAMPLE}:agent", "--guard", f"{EXAMPLE}:guard", "--baseline")
    assert code == 0
    page = (ROOT / "docs" / "chaos.md").read_text(encoding="utf-8")
    marker = "<!-- the output of: looptrap chaos examples/chaos_agent.py:agent --guard examples/chaos_agent.py:guard"
    shown = page.split(marker, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert shown == table


def test_the_command_prints_json_exits_1_at_the_ceiling_and_says_what_is_wrong(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    code, out = cli(f"{EXAMPLE}:agent", "--fault", "empty", "--tool", "get_order", "--json", "--log", str(log))
    assert code == 0  # a default guard stops it
    [cell] = json.loads(out)["cells"]
    assert (cell["fault"], cell["tool"], cell["report"]["reason"]) == ("empty", "get_order", "reported_blocked")
    assert [json.loads(line)["result_kind"] for line in log.read_text().splitlines()] == ["empty", "empty"]
    code, out = cli(f"{EXAMPLE}:agent", "--fault", "empty", "--no-guard", "--max-calls", "5")
    assert code == 1  # without it, the ceiling
    assert "ceiling @5 (max_calls)" in out
    bad = tmp_path / "bad.py"
    bad.write_text(
        "NUMBER = 3\n\ndef not_a_guard():\n    return 'guard'\n\n"
        "def fails():\n    raise RuntimeError('no guard today')\n"
    )
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('broken at import')\n")
    for args, says in (
        (["nowhere.py:agent"], "nowhere.py: no such file"),
        ([f"{EXAMPLE}:missing"], "has no 'missing'"),
        ([f"{EXAMPLE}:agent", "--fault", "nope"], "unknown fault 'nope'"),
        ([f"{EXAMPLE}:agent", "--tool", "nope"], "no tool named nope"),
        (["no.such.module:agent"], "no.such.module: cannot import it"),
        ([f"{EXAMPLE}:agent", "--tools", f"{bad}:NUMBER"], "framework tool objects, not int"),
        ([f"{EXAMPLE}:agent", "--guard", f"{bad}:NUMBER"], f"{bad}:NUMBER is not a function"),
        ([f"{EXAMPLE}:agent", "--guard", f"{bad}:not_a_guard"], "not_a_guard returned str, not a Guard"),
        ([f"{EXAMPLE}:agent", "--guard", f"{bad}:fails"], "fails raised RuntimeError: no guard today"),
        ([f"{broken}:agent"], "cannot load it (RuntimeError: broken at import)"),
    ):
        err = io.StringIO()
        with redirect_stderr(err):
            code, out = cli(*args)
        assert (code, out) == (2, ""), args
        assert says in err.getvalue(), (args, err.getvalue())


@pytest.mark.parametrize("ending", ["raise RuntimeError('no model key')", "sys.exit(0)"])
def test_the_command_exits_1_when_every_run_ends_in_an_error(tmp_path: Path, ending: str) -> None:
    agent = tmp_path / "failing_agent.py"
    agent.write_text(
        "import sys\n\n"
        "def lookup(key):\n    return 'found'\n\n"
        "TOOLS = [lookup]\n\n"
        f"def agent(tools, guard):\n    tools[0](key='k')\n    {ending}\n"
    )
    err = io.StringIO()
    with redirect_stderr(err):
        code, out = cli(f"{agent}:agent", "--fault", "empty", "--fault", "slow")
    assert code == 1
    assert out.splitlines()[-1] == "2 runs with the guard: 2 error"  # the table is printed in full
    said = err.getvalue()
    assert said.startswith("looptrap chaos: every run ended in an error, so the matrix shows nothing")
    assert ("RuntimeError: no model key" if "raise" in ending else "SystemExit: exit code 0") in said
    # an error in some runs only is the matrix's news, not a failure of the command
    some = tmp_path / "unguarded_failing_agent.py"
    some.write_text(agent.read_text().replace(f"    {ending}\n", "    if guard is None:\n" + f"        {ending}\n"))
    code, out = cli(f"{some}:agent", "--fault", "empty", "--baseline")
    assert code == 0


def test_a_file_or_guard_factory_that_calls_sys_exit_is_said_in_one_line(tmp_path: Path) -> None:
    quits = tmp_path / "quits.py"
    quits.write_text("import sys\nsys.exit(4)\n")
    factory = tmp_path / "factory.py"
    factory.write_text("import sys\n\ndef guard():\n    sys.exit(5)\n")
    for args, says in (
        ([f"{quits}:agent"], "cannot load it (SystemExit: 4)"),
        ([f"{EXAMPLE}:agent", "--fault", "empty", "--guard", f"{factory}:guard"], "guard raised SystemExit: 5"),
    ):
        err = io.StringIO()
        with redirect_stderr(err):
            code, out = cli(*args)
        assert (code, out) == (2, ""), args
        assert says in err.getvalue(), (args, err.getvalue())


def test_the_plugin_and_the_package_import_nothing_heavy() -> None:
    code = (
        "import sys, looptrap.chaos, looptrap.chaos.plugin\n"
        "heavy = ('langchain', 'langchain_core', 'agents', 'pydantic_ai', 'mcp', 'tenacity', 'stamina',\n"
        "         'looptrap.drivers.guard', 'looptrap.chaos.runner', 'looptrap.chaos.tools')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_the_stuck_agent_under_every_fault_with_and_without_the_guard() -> None:
    """The plain stuck agent: without the guard, the ceiling under every fault; with it, an early stop."""
    expected = {f.name: "loop_repeat" for f in ALL}
    expected["contradict"] = "budget_tool_calls"  # no detector catches a flip-flop: the budget does
    for fault in ALL:
        bare = run(stuck, [lookup], fault, max_calls=12)
        assert bare.outcome == "ceiling", (fault.name, bare.summary())
        guarded = run(stuck, [lookup], fault, guard=lambda: Guard(clock=None, budgets=Budgets(max_tool_calls=8)))
        assert (guarded.outcome, guarded.reason) == ("halted", expected[fault.name]), (fault.name, guarded.summary())
        assert guarded.ran <= 8
