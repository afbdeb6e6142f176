"""Every detector at its boundary: N-1 passes, N is intercepted (docs/detectors.md).

Each loop shape is a *step* function that makes one more call (or turn) of the pattern and returns the
guard's verdict for it; ``fire_at(threshold)`` is the 0-based index of the step that must be intercepted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from looptrap import (
    Cycle,
    Detector,
    Drift,
    ErrorRepeat,
    Guard,
    NoAction,
    NoProgress,
    Rate,
    Repeat,
    ToolPolicy,
    Verdict,
    default_detectors,
    outcome,
)
from looptrap.testing import FakeClock, step

DOCS = Path(__file__).resolve().parents[1] / "docs"


run = step  # one call the way an agent loop makes it


def actions(verdicts: list[Verdict]) -> list[str]:
    return [v.action for v in verdicts]


# -- the loop shapes ------------------------------------------------------------------------------------

Step = Callable[[Guard, FakeClock, int], Verdict]


def repeat_step(g: Guard, c: FakeClock, i: int) -> Verdict:
    c.advance(2.0)
    return run(g, "search_docs", {"query": "refund policy"}, "3 hits: refunds, returns, exchanges")


def error_step(g: Guard, c: FakeClock, i: int) -> Verdict:
    c.advance(2.0)  # the same call, failing with a different error each time (a moving line number)
    return run(g, "run_tests", {"path": "tests/"}, f"AssertionError in test_x.py line {10 + i}", is_error=True)


def cycle_step(g: Guard, c: FakeClock, i: int) -> Verdict:
    c.advance(2.0)  # a cycle of four reads that return the same each time (longer than a short cycle)
    if i % 4 == 0:
        return run(g, "read_file", {"path": "app.py"}, "def app(): pass")
    if i % 4 == 1:
        return run(g, "grep", {"pattern": "app"}, "app.py:1: def app(): pass")
    if i % 4 == 2:
        return run(g, "read_file", {"path": "test_app.py"}, "def test_app(): assert app()")
    return run(g, "list_dir", {"path": "."}, "app.py test_app.py")


def drift_step(g: Guard, c: FakeClock, i: int) -> Verdict:
    c.advance(2.0)
    return run(g, "search_docs", {"query": f"refund policy, take {i}"}, "0 results")


def rate_step(g: Guard, c: FakeClock, i: int) -> Verdict:
    c.advance(0.01)  # 100 distinct calls a second, each failing (a different error each time)
    return run(g, "fetch_item", {"n": i}, f"HTTP 503 from shard {i}", is_error=True)


def no_progress_step(g: Guard, c: FakeClock, i: int) -> Verdict:
    c.advance(2.0)
    run(g, "search_docs", {"query": f"q{i}"}, f"hit {i}")
    return g.end_turn(state={"found": [], "answer": None})


def no_action_step(g: Guard, c: FakeClock, i: int) -> Verdict:
    c.advance(2.0)
    return g.end_turn()


@dataclass(frozen=True)
class Shape:
    name: str
    cls: type[Detector]
    step: Step
    fire_at: Callable[[int], int]
    custom: int
    tool: str | None  # the tool of the intercepted call (None: a turn-level detector)

    def __str__(self) -> str:
        return self.name


SHAPES = [
    Shape("repeat", Repeat, repeat_step, lambda n: n - 1, 5, "search_docs"),
    Shape("error_repeat", ErrorRepeat, error_step, lambda n: n, 2, "run_tests"),
    Shape("cycle", Cycle, cycle_step, lambda n: n + 3, 3, "read_file"),
    Shape("drift", Drift, drift_step, lambda n: n, 2, "search_docs"),
    Shape("rate", Rate, rate_step, lambda n: n - 1, 6, "fetch_item"),
    Shape("no_progress", NoProgress, no_progress_step, lambda n: n - 1, 5, None),
    Shape("no_action", NoAction, no_action_step, lambda n: n - 1, 2, None),
]
CALL_SHAPES = [s for s in SHAPES if s.tool is not None]
BY_NAME = {s.name: s for s in SHAPES}


def default_threshold(shape: Shape) -> int:
    return next(d.threshold for d in default_detectors() if d.name == shape.name)


def drive(guard: Guard, shape: Shape, steps: int, clock: FakeClock, start: int = 0) -> list[Verdict]:
    return [shape.step(guard, clock, i) for i in range(start, start + steps)]


def assert_boundary(verdicts: list[Verdict], fire: int, kind: str, action: str = "advise") -> None:
    before = verdicts[:fire]
    assert all(v.action == "allow" for v in before), [(v.action, v.kind) for v in before]
    hit = verdicts[fire]
    assert hit.action == action, (hit.action, hit.kind, hit.message)
    assert hit.kind == kind
    assert hit.signals
    assert hit.signals[0].kind == kind


# -- defaults, as documented ----------------------------------------------------------------------------


def test_documented_defaults_match_the_code() -> None:
    text = (DOCS / "detectors.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| ([^|]+) \|", text, re.MULTILINE)
    documented = {name: (reason, dict(re.findall(r"`(\w+)=([\d.]+)`", defaults))) for name, reason, defaults in rows}
    detectors = {type(d).__name__: d for d in default_detectors()}
    assert set(documented) == set(detectors)
    for name, (reason, values) in documented.items():
        d = detectors[name]
        assert d.reason == reason, name
        assert values, f"{name}: no defaults documented"
        for field, value in values.items():
            assert float(getattr(d, field)) == float(value), f"{name}.{field}: code {getattr(d, field)}, docs {value}"


def test_default_detector_order_is_the_documented_priority() -> None:
    assert [d.name for d in default_detectors()] == [
        "repeat",
        "error_repeat",
        "cycle",
        "edit_loop",
        "drift",
        "rate",
        "no_progress",
        "no_action",
        "repeated_text",
    ]


# -- the boundary, with the default configuration ------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_default_guard_boundary(shape: Shape) -> None:
    clock = FakeClock()
    guard = Guard(clock=clock)
    fire = shape.fire_at(default_threshold(shape))
    verdicts = drive(guard, shape, fire + 1, clock)
    assert_boundary(verdicts, fire, shape.name)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_custom_threshold_via_constructor(shape: Shape) -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, detectors=[shape.cls(threshold=shape.custom)])  # type: ignore[call-arg]
    fire = shape.fire_at(shape.custom)
    verdicts = drive(guard, shape, fire + 1, clock)
    assert_boundary(verdicts, fire, shape.name)


@pytest.mark.parametrize("shape", CALL_SHAPES, ids=str)
def test_custom_threshold_via_tool_policy(shape: Shape) -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, tools={"*": ToolPolicy(limits={shape.name: shape.custom})})
    fire = shape.fire_at(shape.custom)
    verdicts = drive(guard, shape, fire + 1, clock)
    assert_boundary(verdicts, fire, shape.name)


@pytest.mark.parametrize("shape", CALL_SHAPES, ids=str)
def test_tool_policy_limit_applies_to_its_tool_only(shape: Shape) -> None:
    clock = FakeClock()
    higher = default_threshold(shape) + 3
    guard = Guard(clock=clock, tools={"other_tool": ToolPolicy(limits={shape.name: higher})})
    fire = shape.fire_at(default_threshold(shape))
    assert_boundary(drive(guard, shape, fire + 1, clock), fire, shape.name)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_warn_only_detector_warns_and_lets_the_call_run(shape: Shape) -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, detectors=[shape.cls(warn_only=True)])  # type: ignore[call-arg]
    fire = shape.fire_at(default_threshold(shape))
    verdicts = drive(guard, shape, fire + 2, clock)
    assert_boundary(verdicts, fire, shape.name, action="warn")
    assert verdicts[fire].allowed
    assert verdicts[fire].signals[0].warn_only
    assert verdicts[fire + 1].action in ("allow", "warn")  # never escalates
    assert guard.state.level == 0
    assert guard.halted is None


@pytest.mark.parametrize("shape", CALL_SHAPES, ids=str)
def test_exempt_tool_is_never_intercepted(shape: Shape) -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, tools={"*": ToolPolicy(exempt=True)})
    verdicts = drive(guard, shape, shape.fire_at(default_threshold(shape)) + 6, clock)
    assert set(actions(verdicts)) == {"allow"}
    assert guard.state.calls >= len(verdicts)  # budgets still count exempt calls


@pytest.mark.parametrize("shape", CALL_SHAPES, ids=str)
def test_detector_disabled_for_one_tool(shape: Shape) -> None:
    clock = FakeClock()
    assert shape.tool is not None
    guard = Guard(clock=clock, detectors=[shape.cls()], tools={shape.tool: ToolPolicy(disable=frozenset({shape.name}))})
    fire = shape.fire_at(default_threshold(shape))
    verdicts = drive(guard, shape, fire + 1, clock)
    if shape.name == "cycle":
        # the cycle's other calls are still watched: only read_file calls pass
        assert all(v.action == "allow" for i, v in enumerate(verdicts) if i % 2 == 0)
    else:
        assert set(actions(verdicts)) == {"allow"}


def test_disable_accepts_a_plain_set() -> None:
    guard = Guard(clock=None, detectors=[Repeat()], tools={"poll_job": ToolPolicy(disable={"repeat"})})  # type: ignore[arg-type]
    verdicts = [run(guard, "poll_job", {"job": "j"}, "done: 3 rows") for _ in range(6)]
    assert set(actions(verdicts)) == {"allow"}
    other = [run(guard, "search_docs", {"q": "x"}, "3 hits") for _ in range(3)]
    assert actions(other) == ["allow", "allow", "advise"]


# -- epochs: a successful mutating call starts the count over ---------------------------------------------


def write(guard: Guard, path: str = "app.py", *, ok: bool = True) -> Verdict:
    return run(guard, "write_file", {"path": path, "content": "x = 1"}, "ok" if ok else "EACCES", is_error=not ok)


@pytest.mark.parametrize("name", ["repeat", "error_repeat", "cycle", "drift"])
def test_successful_write_resets_the_loop(name: str) -> None:
    shape = BY_NAME[name]
    clock = FakeClock()
    guard = Guard(clock=clock)
    fire = shape.fire_at(default_threshold(shape))
    before = drive(guard, shape, fire, clock)
    assert set(actions(before)) == {"allow"}
    assert write(guard).action == "allow"
    epoch = guard.state.epoch
    after = drive(guard, shape, fire, clock, start=fire)
    assert set(actions(after)) == {"allow"}, [(v.action, v.kind) for v in after]
    assert guard.state.epoch == epoch


@pytest.mark.parametrize("name", ["error_repeat", "drift"])
def test_failed_write_does_not_reset_the_loop(name: str) -> None:
    shape = BY_NAME[name]
    clock = FakeClock()
    guard = Guard(clock=clock)
    fire = shape.fire_at(default_threshold(shape))
    drive(guard, shape, fire, clock)
    write(guard, ok=False)
    after = drive(guard, shape, 1, clock, start=fire)
    assert after[0].action == "advise"
    assert after[0].kind == name


def test_turn_level_detectors_ignore_writes() -> None:
    """docs: no_progress is judged by the caller's state only; a write does not reset its count."""
    guard = Guard(clock=None)
    state: dict[str, list[str]] = {"found": []}
    assert guard.end_turn(state=state).action == "allow"
    run(guard, "write_file", {"path": "a"}, "ok")
    assert guard.end_turn(state=state).action == "allow"
    run(guard, "write_file", {"path": "b"}, "ok")
    verdict = guard.end_turn(state=state)
    assert (verdict.action, verdict.kind) == ("advise", "no_progress")


# -- repeat -------------------------------------------------------------------------------------------------


def test_repeat_needs_the_same_result() -> None:
    guard = Guard(clock=None)
    verdicts = [run(guard, "job_progress", {"job": "j"}, f"{i} of 9 done") for i in range(6)]
    assert set(actions(verdicts)) == {"allow"}


def test_repeat_needs_calls_in_a_row() -> None:
    guard = Guard(clock=None, detectors=[Repeat()])
    verdicts = []
    for i in range(6):
        verdicts.append(run(guard, "search_docs", {"q": "x"}, "3 hits"))
        verdicts.append(run(guard, "read_file", {"path": f"f{i}"}, f"content {i}"))
    assert set(actions(verdicts)) == {"allow"}


def test_repeat_pending_threshold_for_polling() -> None:
    guard = Guard(clock=None, detectors=[Repeat()])
    verdicts = [run(guard, "job_status", {"job": "j1"}, "running") for _ in range(13)]
    assert_boundary(verdicts, Repeat().pending_threshold - 1, "repeat")


def test_polling_a_pending_job_is_left_alone_by_the_default_guard() -> None:
    """docs/detectors.md (repeat): while the result says the work is still going, the threshold is
    pending_threshold (12), "polling that ends is left alone"."""
    guard = Guard(clock=None)
    verdicts = [run(guard, "job_status", {"job": "j1"}, "running") for _ in range(12)]
    assert actions(verdicts[:11]) == ["allow"] * 11, [(v.action, v.kind) for v in verdicts]
    assert verdicts[11].action == "advise"


def test_repeat_non_retryable_result_is_intercepted_on_the_first_retry() -> None:
    guard = Guard(clock=None, detectors=[Repeat()])
    first = run(guard, "get_customer", {"email": "a@b.c"}, outcome.not_found("No customer with that email."))
    second = run(guard, "get_customer", {"email": "a@b.c"}, outcome.not_found("No customer with that email."))
    assert (first.action, second.action, second.kind) == ("allow", "advise", "repeat")


def test_repeat_signal_evidence() -> None:
    guard = Guard(clock=None)
    verdicts = [repeat_step(guard, FakeClock(), i) for i in range(3)]
    signal = verdicts[2].signals[0]
    assert signal.evidence == (1, 2, 3)
    assert signal.tool == "search_docs"
    assert signal.count == 3
    assert verdicts[2].call_index == 3


# -- error_repeat -------------------------------------------------------------------------------------------


def test_error_repeat_same_error_from_different_arguments() -> None:
    guard = Guard(clock=None, detectors=[ErrorRepeat()])
    verdicts = [
        run(guard, "run_sql", {"q": f"select {i} form t"}, "syntax error near 'form'", is_error=True) for i in range(4)
    ]
    assert_boundary(verdicts, ErrorRepeat().same_error, "error_repeat")


def test_error_repeat_same_error_with_volatile_parts_is_the_same() -> None:
    guard = Guard(clock=None, detectors=[ErrorRepeat()])
    errors = [
        "Timeout after 1.52s at 2026-11-30T05:19:53Z (request 3f2a9c1e-1d2b-4c3d-8e9f-0a1b2c3d4e5f)",
        "Timeout after 2.08s at 2026-11-30T05:20:11Z (request 9b1c2d3e-4f5a-4b6c-8d7e-1f2a3b4c5d6e)",
        "Timeout after 0.97s at 2026-11-30T05:21:40Z (request 0c9b8a7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d)",
    ]
    args = [{"url": "https://x/", "attempt": i} for i in range(4)]
    verdicts = [run(guard, "fetch", args[i], errors[i % 3], is_error=True) for i in range(4)]
    assert_boundary(verdicts, 3, "error_repeat")


def test_error_repeat_non_retryable() -> None:
    guard = Guard(clock=None, detectors=[ErrorRepeat()])
    bad = outcome.error("invalid order id", retryable=False)
    verdicts = [run(guard, "get_order", {"id": "??"}, bad) for _ in range(2)]
    assert_boundary(verdicts, ErrorRepeat().non_retryable, "error_repeat")
    # the same non-retryable error from different arguments: same_error_non_retryable (2)
    guard = Guard(clock=None, detectors=[ErrorRepeat()])
    verdicts = [run(guard, "get_order", {"id": f"?{i}"}, bad) for i in range(3)]
    assert_boundary(verdicts, ErrorRepeat().same_error_non_retryable, "error_repeat")


def test_error_repeat_success_resets_that_call() -> None:
    guard = Guard(clock=None, detectors=[ErrorRepeat()])
    for i in range(2):
        run(guard, "run_tests", {"path": "t"}, f"fail line {i}", is_error=True)
    run(guard, "run_tests", {"path": "t"}, "12 passed")
    verdicts = [run(guard, "run_tests", {"path": "t"}, f"fail line {i}", is_error=True) for i in range(2, 5)]
    assert set(actions(verdicts)) == {"allow"}


def test_error_without_a_message_is_not_the_same_error() -> None:
    guard = Guard(clock=None, detectors=[ErrorRepeat()])
    verdicts = [run(guard, "bash", {"command": f"ls dir{i}"}, "", is_error=True) for i in range(6)]
    assert set(actions(verdicts)) == {"allow"}


# -- cycle --------------------------------------------------------------------------------------------------


def test_cycle_of_three_and_its_period() -> None:
    guard = Guard(clock=None)
    calls = [("read_file", {"path": "a"}, "A"), ("read_file", {"path": "b"}, "B"), ("grep", {"p": "c"}, "C")]
    verdicts = [run(guard, *calls[i % 3]) for i in range(12)]
    fire = 6  # a short cycle: three novel calls, a stale second pass, and the third pass starts
    assert_boundary(verdicts, fire, "cycle")
    assert verdicts[fire].signals[0].details["period"] == 3


@pytest.mark.parametrize("period", [2, 3])
def test_a_short_cycle_is_caught_at_the_start_of_its_third_pass(period: int) -> None:
    guard = Guard(clock=None)
    calls = [("read_file", {"path": f"f{i}"}, f"content {i}") for i in range(period)]
    verdicts = [run(guard, *calls[i % period]) for i in range(3 * period)]
    assert_boundary(verdicts, 2 * period, "cycle")
    assert verdicts[2 * period].signals[0].details["period"] == period
    assert verdicts[2 * period].signals[0].evidence == (*range(period + 1, 2 * period + 1), 2 * period + 1)


def test_a_short_cycle_needs_its_whole_second_pass_stale() -> None:
    guard = Guard(clock=None)
    verdicts = [run(guard, "read_file", {"path": "a"}, "A"), run(guard, "read_file", {"path": "b"}, "B")]
    verdicts.append(run(guard, "read_file", {"path": "a"}, "A"))
    verdicts.append(run(guard, "read_file", {"path": "b"}, "B, changed"))  # the second pass brought news
    verdicts += [run(guard, "read_file", {"path": "a"}, "A"), run(guard, "read_file", {"path": "b"}, "B, changed")]
    assert set(actions(verdicts)) == {"allow"}


def test_cycle_ignores_repetition_with_new_results() -> None:
    guard = Guard(clock=None)
    verdicts = []
    for i in range(10):
        verdicts.append(run(guard, "read_file", {"path": "a"}, f"version {i}"))
        verdicts.append(run(guard, "run_tests", {"path": "t"}, f"{i} failed"))
    assert set(actions(verdicts)) == {"allow"}


def test_cycle_exempt_tool_breaks_the_stale_run() -> None:
    guard = Guard(clock=None, tools={"read_output": ToolPolicy(exempt=True)})
    verdicts = [run(guard, "read_output", {"id": 1}, "same line") for _ in range(15)]
    assert set(actions(verdicts)) == {"allow"}
    assert guard.state.stale_run == 0


# -- drift --------------------------------------------------------------------------------------------------


def test_drift_reset_by_something_new() -> None:
    guard = Guard(clock=None)
    n = Drift().threshold
    verdicts = [run(guard, "search_docs", {"q": f"a{i}"}, "0 results") for i in range(n - 1)]
    verdicts.append(run(guard, "search_docs", {"q": "b"}, "1 result: refund policy v2"))
    verdicts += [run(guard, "search_docs", {"q": f"c{i}"}, "no matches found") for i in range(n)]
    assert set(actions(verdicts)) == {"allow"}
    assert_boundary([run(guard, "search_docs", {"q": "d"}, "0 results")], 0, "drift")


def test_drift_counts_a_long_result_already_returned() -> None:
    guard = Guard(clock=None)
    hits = "Top results: " + ", ".join(f"Generic article number {i}" for i in range(8))
    n = Drift().threshold
    verdicts = [run(guard, "search_docs", {"q": f"variant {i}"}, hits) for i in range(n + 2)]
    assert_boundary(verdicts, n + 1, "drift")  # the first one was new


def test_drift_ignores_short_identical_acknowledgements() -> None:
    guard = Guard(clock=None)
    verdicts = [run(guard, "check_stock", {"sku": f"S{i}"}, "in stock") for i in range(20)]
    assert set(actions(verdicts)) == {"allow"}


def test_drift_other_tools_are_counted_separately() -> None:
    guard = Guard(clock=None)
    verdicts = []
    for i in range(Drift().threshold):
        verdicts.append(run(guard, "search_docs", {"q": f"a{i}"}, "0 results"))
        verdicts.append(run(guard, "search_web", {"q": f"a{i}"}, "0 results"))
    assert set(actions(verdicts)) == {"allow"}
    assert run(guard, "search_docs", {"q": "z"}, "0 results").kind == "drift"


# -- rate ---------------------------------------------------------------------------------------------------


def test_rate_slow_calls_never_fire() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock)
    verdicts = []
    for i in range(100):
        clock.advance(0.5)  # 2 calls a second
        verdicts.append(run(guard, "fetch_item", {"n": i}, f"item {i}"))
    assert set(actions(verdicts)) == {"allow"}


def test_rate_needs_a_clock() -> None:
    guard = Guard(clock=None)
    verdicts = [run(guard, "fetch_item", {"n": i}, f"item {i}") for i in range(100)]
    assert set(actions(verdicts)) == {"allow"}


def test_rate_max_per_second_and_statistics() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, detectors=[Rate(threshold=10, max_per_second=2.0)])
    verdicts = []
    for i in range(10):
        clock.advance(0.4)  # 2.5 a second: over the limit of 2, and each call fails
        verdicts.append(run(guard, "fetch_item", {"n": i}, f"HTTP 503 from shard {i}", is_error=True))
    assert_boundary(verdicts, 9, "rate")
    details = verdicts[9].signals[0].details
    assert details["calls"] == 10
    assert details["interval_median_s"] == pytest.approx(0.4)
    assert details["rate_per_s"] == pytest.approx(2.5)
    assert details["fruitless"] == 9
    clock2 = FakeClock()
    guard2 = Guard(clock=clock2, detectors=[Rate(threshold=10, max_per_second=2.0)])
    for i in range(30):
        clock2.advance(0.6)  # under the limit
        assert run(guard2, "fetch_item", {"n": i}, f"item {i}").action == "allow"


def test_rate_is_evidence_fast_calls_that_bring_something_new_only_warn() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock)
    verdicts = []
    for i in range(60):  # a program paging through results at machine speed
        clock.advance(0.01)
        verdicts.append(run(guard, "list_orders", {"page": i}, {"orders": [f"o{i}a", f"o{i}b"], "page": i}))
    assert {v.action for v in verdicts} == {"allow", "warn"}
    warned = [v for v in verdicts if v.action == "warn"]
    assert warned[0].call_index == 30
    assert warned[0].kind == "rate"
    assert warned[0].signals[0].warn_only
    assert warned[0].signals[0].details["fruitless"] == 0
    assert "each bringing something new" in warned[0].signals[0].message


@pytest.mark.parametrize(("share", "action"), [(0.4, "advise"), (0.5, "warn")])
def test_rate_intervenes_when_at_least_the_share_of_fast_calls_brought_nothing(share: float, action: str) -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, detectors=[Rate(fruitless_share=share)])
    verdicts = []
    for i in range(29):  # every other call fails
        clock.advance(0.01)
        if i % 2:
            verdicts.append(run(guard, "fetch", {"n": i}, f"HTTP 503 from shard {i}", is_error=True))
        else:
            verdicts.append(run(guard, "fetch", {"n": i}, f"item {i}"))
    clock.advance(0.01)
    last = guard.check("fetch", {"n": 29})
    fruitless = last.signals[0].details["fruitless"]
    assert fruitless == 14  # of the 29 recorded calls in the window: 48%
    assert last.action == action


def test_rate_catches_a_machine_speed_loop_of_successful_writes() -> None:
    """docs/detectors.md (rate): "a `while True` around a tool" is what the rate detector is for; a loop
    sending a message 100 times a second must be caught even though each send succeeds."""
    clock = FakeClock()
    guard = Guard(clock=clock)
    verdicts = []
    for i in range(100):
        clock.advance(0.01)
        verdicts.append(run(guard, "send_email", {"to": f"user{i}@example.com"}, "sent"))
    assert any(v.kind == "rate" for v in verdicts), "no rate signal in 100 sends within a second"


# -- turn-level ---------------------------------------------------------------------------------------------


def test_no_progress_state_changes_reset_and_turns_without_state_are_ignored() -> None:
    guard = Guard(clock=None)
    verdicts: list[Verdict] = []
    states: list[dict[str, list[str]]] = [{"found": []}, {"found": []}, {"found": ["a"]}, {"found": ["a"]}]
    for state in states:
        run(guard, "search_docs", {"q": str(len(verdicts))}, f"hit {len(verdicts)}")
        verdicts.append(guard.end_turn(state=state))
    assert set(actions(verdicts)) == {"allow"}
    run(guard, "search_docs", {"q": "x"}, "hit x")
    assert guard.end_turn().action == "allow"  # no state: ignored, not a reset
    run(guard, "search_docs", {"q": "y"}, "hit y")
    verdict = guard.end_turn(state={"found": ["a"]})
    assert (verdict.action, verdict.kind) == ("advise", "no_progress")


def test_no_progress_volatile_fields_of_the_state_do_not_count_as_progress() -> None:
    guard = Guard(clock=None)
    verdicts = []
    for i in range(3):
        run(guard, "search_docs", {"q": str(i)}, f"hit {i}")
        verdicts.append(guard.end_turn(state={"found": [], "updated_at": f"2026-11-30T05:2{i}:00Z"}))
    assert actions(verdicts) == ["allow", "allow", "advise"]


def test_no_action_a_tool_call_resets_and_an_error_counts() -> None:
    guard = Guard(clock=None)
    assert guard.end_turn().action == "allow"
    assert guard.end_turn().action == "allow"
    run(guard, "search_docs", {"q": "x"}, "hit")
    assert guard.end_turn().action == "allow"  # reset by the tool call
    assert guard.end_turn().action == "allow"
    assert guard.end_turn().action == "allow"
    run(guard, "search_docs", {"q": "y"}, "hit y")
    verdict = guard.end_turn(error="no valid tool call")  # a call, but the turn ended with an invalid one
    assert (verdict.action, verdict.kind) == ("advise", "no_action")
    assert "no valid tool call" in verdict.message


def test_turn_level_escalation() -> None:
    guard = Guard(clock=None, detectors=[NoAction()])
    verdicts = [guard.end_turn() for _ in range(6)]
    assert actions(verdicts) == ["allow", "allow", "advise", "block", "halt", "halt"]
    assert guard.halted is not None
    assert guard.halted.reason == "no_action"


def test_rate_ignores_one_turn_of_parallel_calls_but_not_a_sequential_code_loop() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock)
    batch = [{"path": f"src/m{i}.py"} for i in range(50)]
    verdicts = []
    for args in batch:  # the model asked for 50 reads at once: all are checked before any result is back
        verdicts.append(guard.check("read_file", args))
        clock.advance(0.001)
    for i, args in enumerate(batch):
        guard.record("read_file", args, f"contents of m{i}")
    assert all(v.action == "allow" for v in verdicts)
    guard.end_turn()

    clock.advance(5.0)
    seen = []
    for i in range(40):  # a code loop: call, result, call, result... at machine speed
        seen.append(step(guard, "get_quote", {"symbol": f"S{i}"}, f"S{i}: {100 + i}").kind)
        clock.advance(0.01)
    assert "rate" in seen
    assert seen.index("rate") == 29  # the 30th sequential call
