"""The Guard: escalation, budgets, the honest way out, failure modes, logs, state, threads and wrappers."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

import looptrap
from looptrap import (
    AsyncGuard,
    Budgets,
    Detector,
    Escalation,
    Guard,
    GuardConfig,
    LoopHalted,
    SessionState,
    StateVersionError,
    Verdict,
    outcome,
    report_blocked_schema,
    report_blocked_tool,
)
from looptrap.core.state import HISTORY, PREVIEWS, SEEN, TOOLS, Flag
from looptrap.core.types import ALLOW
from looptrap.testing import FakeClock, step

run = step  # one call the way an agent loop makes it


def loop(guard: Guard, tool: str = "search_docs", times: int = 3, result: str = "0 results") -> list[str]:
    return [run(guard, tool, {"query": "refund policy"}, result).action for _ in range(times)]


def fresh(guard: Guard, n: int, prefix: str = "read_file") -> None:
    """n clean calls: each returns something new."""
    for i in range(n):
        assert run(guard, prefix, {"path": f"{prefix}-{i}"}, f"new content {prefix} {i}").action == "allow"


# -- escalation -----------------------------------------------------------------------------------------


def test_advise_then_block_then_halt() -> None:
    guard = Guard(clock=None)
    verdicts = [run(guard, "search_docs", {"query": "refund policy"}, "0 results") for _ in range(6)]
    assert [v.action for v in verdicts] == ["allow", "allow", "advise", "block", "halt", "halt"]
    advise, block, halt = verdicts[2], verdicts[3], verdicts[4]
    assert advise.intervenes
    assert not advise.allowed
    assert "report_blocked" in advise.message
    assert block.message.startswith("Blocked: this call was not run.")
    assert halt.reason == "loop_repeat"
    assert halt.message.startswith("Halted (loop_repeat)")
    assert "search_docs" in halt.summary
    assert "nothing found" in halt.summary
    assert guard.halted is not None
    assert (guard.halted.action, guard.halted.reason) == ("halt", "loop_repeat")


def test_report_tool_name_in_messages() -> None:
    guard = Guard(clock=None, report_tool=None)
    advise = loop(guard)[-1]
    assert advise == "advise"
    guard2 = Guard(clock=None, report_tool="give_up")
    verdicts = [run(guard2, "s", {"q": 1}, "0 results") for _ in range(3)]
    assert "give_up" in verdicts[2].message
    guard3 = Guard(clock=None, report_tool=None)
    verdicts = [run(guard3, "s", {"q": 1}, "0 results") for _ in range(3)]
    assert "say so in your answer" in verdicts[2].message


def test_cooldown_after_clean_calls_brings_the_next_loop_back_to_advice() -> None:
    guard = Guard(clock=None)
    assert loop(guard, "search_a") == ["allow", "allow", "advise"]
    fresh(guard, Escalation().cooldown)
    assert loop(guard, "search_b") == ["allow", "allow", "advise"]


def test_another_loop_after_new_work_starts_again_at_advice() -> None:
    """docs/escalation.md: new work between two signals stops the climb; a signal about another loop
    starts at the first rung."""
    guard = Guard(clock=None)
    assert loop(guard, "search_a") == ["allow", "allow", "advise"]
    fresh(guard, 1)
    assert loop(guard, "search_b") == ["allow", "allow", "advise"]


def test_the_same_loop_after_new_work_climbs() -> None:
    """The model goes back to the very call it was told is a loop: the loop goes on, whatever came in
    between (unless `cooldown` calls brought something new)."""
    guard = Guard(clock=None)
    assert loop(guard, "search_a") == ["allow", "allow", "advise"]
    fresh(guard, Escalation().cooldown - 1)
    assert run(guard, "search_a", {"query": "refund policy"}, "0 results").action == "allow"
    assert run(guard, "search_a", {"query": "refund policy"}, "0 results").action == "allow"
    assert run(guard, "search_a", {"query": "refund policy"}, "0 results").action == "block"


def test_a_loop_that_goes_on_without_new_work_climbs() -> None:
    guard = Guard(clock=None)
    assert loop(guard, "search_a") == ["allow", "allow", "advise"]
    # nothing new in between (an empty search, a stale re-read), then another loop: still the same stall
    assert run(guard, "search_c", {"query": "other"}, "0 results").action == "allow"
    assert loop(guard, "search_b") == ["allow", "allow", "block"]


def test_cooldown_counts_new_work_since_the_intervention() -> None:
    guard = Guard(clock=None)
    assert loop(guard, "search_a") == ["allow", "allow", "advise"]
    fresh(guard, 1, "read_x")
    assert run(guard, "search_c", {"query": "other"}, "0 results").action == "allow"  # not new work
    fresh(guard, Escalation().cooldown - 1, "read_y")
    assert guard.state.level == 0  # the loop is over
    assert loop(guard, "search_a") == ["allow", "allow", "advise"]


def test_the_worked_example_of_docs_escalation() -> None:
    """docs/escalation.md, "A worked example": the table, turn by turn (end_turn after each turn)."""
    guard = Guard(clock=None)
    search = ("search_docs", {"q": "refund policy"}, "0 results")
    web = ("search_web", {"q": "refund"}, "0 results")

    def turn(*calls: tuple[str, Any, Any]) -> list[str]:
        out = [run(guard, *c).action for c in calls]
        guard.end_turn()
        return out

    assert turn(search) == ["allow"]
    assert turn(search) == ["allow"]
    assert turn(search, search, search) == ["advise"] * 3  # one model turn: one step of the ladder
    assert turn(("read_file", {"path": "faq.md"}, "Refunds: see refunds.md")) == ["allow"]
    assert turn(search) == ["allow"]
    assert turn(search) == ["allow"]
    assert turn(search) == ["block"]  # the same loop went on, despite the new read
    assert (
        turn(("get_order", {"id": "A1"}, {"id": "A1"}), ("get_customer", {"id": "C9"}, {"id": "C9"})) == ["allow"] * 2
    )
    assert turn(("read_file", {"path": "refunds.md"}, "30 days, with a receipt")) == ["allow"]
    assert guard.state.level == 0  # cooldown: three calls brought something new
    assert [turn(web) for _ in range(3)] == [["allow"], ["allow"], ["advise"]]  # a new loop: the first rung
    assert turn(web) == ["block"]
    assert turn(web) == ["halt"]
    assert guard.halted is not None
    assert guard.halted.reason == "loop_repeat"
    assert guard.halted.summary == 'tried: search_web {"q":"refund"} (nothing found); all returned nothing'


def test_parallel_calls_without_end_turn_share_a_step_by_time() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock)
    for i in range(3):  # two calls fail three times each: the next of either continues a loop
        for q in ("x", "y"):
            clock.advance(3.0)
            error = ("timed out", "connection reset", "HTTP 502")[i]
            assert run(guard, "search_docs", {"q": q}, f"{error} ({q})", is_error=True).action == "allow"

    def batch() -> list[str]:  # two calls of one model response, checked 5 ms apart
        got = [guard.check("search_docs", {"q": "x"}).action]
        clock.advance(0.005)
        got.append(guard.check("search_docs", {"q": "y"}).action)
        clock.advance(3.0)  # the model reads the answers and replies
        return got

    clock.advance(3.0)
    assert batch() == ["advise", "advise"]  # one step: the second is not a block of the first
    assert batch() == ["block", "block"]
    assert batch() == ["halt", "halt"]


def test_the_same_call_again_after_its_advice_is_a_new_step_whatever_the_clock() -> None:
    """A program calling a guarded tool in a plain loop (check, run, record; no model, no end_turn): the call
    checked again after the guard answered it is the next step, however fast it comes."""
    clock = FakeClock()
    guard = Guard(clock=clock)
    actions = []
    for _ in range(8):
        clock.advance(0.001)
        actions.append(run(guard, "search_docs", {"q": "x"}, "0 results").action)
    assert actions[:5] == ["allow", "allow", "advise", "block", "halt"]


def test_identical_calls_of_one_message_share_a_step() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock)
    for i in range(2):
        clock.advance(3.0)
        guard.check("search_docs", {"q": "x"}, message_id=f"m{i}")
        guard.record("search_docs", {"q": "x"}, "0 results")
    clock.advance(3.0)
    batch = [guard.check("search_docs", {"q": "x"}, message_id="m2").action for _ in range(3)]
    assert batch == ["advise"] * 3  # one model message: one step, whatever the clock says
    assert guard.check("search_docs", {"q": "x"}, message_id="m3").action == "block"
    assert guard.check("search_docs", {"q": "x"}, message_id="m4").action == "halt"


def test_results_between_calls_of_one_message_do_not_end_its_step() -> None:
    guard = Guard(clock=None)
    edits = [{"file_path": "/src/a.py", "old_string": s, "new_string": "y"} for s in ("x1", "x2")]
    for i in range(3):  # two edits fail three times each, in model messages of their own
        for j, edit in enumerate(edits):
            guard.check("Edit", edit, message_id=f"m{i}{j}")
            guard.record("Edit", edit, "String to replace not found in file.", is_error=True)

    def read(path: str) -> str:  # a call that runs and brings something new
        v = guard.check("Read", {"file_path": path}, message_id="m9")
        guard.record("Read", {"file_path": path}, f"contents of {path}")
        return v.action

    # one message, whose calls run one after another (as Claude Code runs edits): results come in between
    actions = [read("/src/b.py"), guard.check("Edit", edits[0], message_id="m9").action]
    actions += [read("/src/c.py"), guard.check("Edit", edits[1], message_id="m9").action]
    assert actions == ["allow", "advise", "allow", "advise"]  # one step: the second is not a block
    assert guard.check("Edit", edits[1], message_id="m10").action == "block"


def test_a_step_holds_a_bounded_number_of_checks() -> None:
    """A code loop that never ends a turn and ignores advice still reaches the halt."""
    clock = FakeClock()
    guard = Guard(clock=clock)
    actions = []
    for _ in range(60):
        clock.advance(0.001)
        actions.append(run(guard, "search_docs", {"q": "x"}, "0 results").action)
    assert actions[:2] == ["allow", "allow"]
    assert "halt" in actions
    assert actions.index("block") > actions.index("advise")


def test_user_message_starts_the_ladder_over_and_breaks_runs_of_identical_calls() -> None:
    guard = Guard(clock=None)
    lookup = ("get_order", {"order_id": "A1"}, {"id": "A1", "status": "shipped"})
    actions = []
    for text in ("Where is my order A1?", "Are you sure? Check again.", "Please check once more."):
        guard.user_message(text)
        actions.append(run(guard, *lookup).action)  # the customer asked again: answering is not a loop
        guard.end_turn(text="Your order A1 has shipped.")
    assert actions == ["allow"] * 3
    alone = []
    for _ in range(3):  # on its own, after the last answer: the 3rd identical call since the user spoke loops
        alone.append(run(guard, *lookup).action)
        guard.end_turn()
    assert alone == ["allow", "advise", "block"]
    guard.user_message("Thanks, and order B2?")
    assert guard.state.level == 0
    assert run(guard, *lookup).action == "allow"


def test_custom_ladder_and_warn_only_escalation() -> None:
    guard = Guard(clock=None, escalation=Escalation(ladder=("advise", "advise", "block", "halt")))
    assert loop(guard, times=7) == ["allow", "allow", "advise", "advise", "block", "halt", "halt"]
    watcher = Guard(clock=None, escalation=Escalation(warn_only=True))
    actions = loop(watcher, times=10)
    assert actions[:2] == ["allow", "allow"]
    assert set(actions[2:]) == {"warn"}
    assert watcher.halted is None
    with pytest.raises(ValueError, match="ladder"):
        Escalation(ladder=())
    with pytest.raises(ValueError, match="ladder"):
        Escalation(ladder=("allow",))


def test_halt_is_sticky_until_new_task() -> None:
    guard = Guard(clock=None)
    loop(guard, times=5)
    assert guard.halted is not None
    for tool in ("search_docs", "read_file", "write_file"):
        v = guard.check(tool, {"x": 1})
        assert (v.action, v.reason) == ("halt", "loop_repeat")
    turn = guard.end_turn()
    assert (turn.action, turn.reason) == ("halt", "loop_repeat")
    guard.new_task()
    assert guard.halted is None
    assert guard.check("search_docs", {"query": "refund policy"}).action == "allow"


def test_new_task_clears_repetition_memory_but_not_budgets() -> None:
    guard = Guard(clock=None, budgets=Budgets(max_tool_calls=100, max_tokens=10_000))
    run(guard, "search_docs", {"query": "refund policy"}, "0 results", usage={"total_tokens": 700})
    run(guard, "search_docs", {"query": "refund policy"}, "0 results")
    guard.end_turn(state={"found": []})
    calls, tokens, turn = guard.state.calls, guard.state.tokens, guard.state.turn
    guard.new_task()
    s = guard.state
    assert (s.calls, s.tokens, s.turn) == (calls, tokens, turn)
    assert s.per_tool == {"search_docs": 2}
    assert len(s.history) == 0
    assert not s.seen
    assert not s.slots
    assert s.level == 0
    assert s.task == 1
    # the same call twice more is not the 3rd and 4th of a loop
    assert loop(guard, times=2) == ["allow", "allow"]


def test_budget_halt_survives_new_task() -> None:
    guard = Guard(clock=None, budgets=Budgets(max_tool_calls=2))
    for i in range(3):
        run(guard, "read_file", {"path": str(i)}, f"content {i}")
    assert guard.halted is not None
    assert guard.halted.reason == "budget_tool_calls"
    guard.new_task()
    v = guard.check("read_file", {"path": "new"})
    assert (v.action, v.reason) == ("halt", "budget_tool_calls")


# -- budgets --------------------------------------------------------------------------------------------


def quiet(**budgets: Any) -> Guard:
    """A guard with budgets only (no detectors), so every verdict is a budget's."""
    return Guard(clock=None, detectors=(), budgets=Budgets(**budgets))


def test_max_turns() -> None:
    guard = quiet(max_turns=10)
    actions = [guard.end_turn().action for _ in range(10)]
    assert actions == ["allow"] * 7 + ["warn", "allow", "halt"]
    assert guard.halted is not None
    assert guard.halted.reason == "budget_turns"
    assert "10" in guard.halted.message


def test_max_tool_calls_counts_every_call_asked_about() -> None:
    guard = quiet(max_tool_calls=5)
    verdicts = [guard.check("read_file", {"path": str(i)}) for i in range(6)]  # never run: still counted
    assert [v.action for v in verdicts] == ["allow", "allow", "allow", "warn", "allow", "halt"]
    assert verdicts[3].reason == "budget_tool_calls"
    assert verdicts[3].signals[0].warn_only
    assert verdicts[5].reason == "budget_tool_calls"
    assert verdicts[5].kind == "budget"


def test_max_calls_per_tool_int_and_mapping() -> None:
    guard = quiet(max_calls_per_tool=2, soft=None)
    assert [run(guard, "a", {"i": i}, f"r{i}").action for i in range(3)] == ["allow", "allow", "halt"]
    guard = quiet(max_calls_per_tool={"web_search": 2, "*": 4}, soft=None)
    assert [run(guard, "read", {"i": i}, f"r{i}").action for i in range(4)] == ["allow"] * 4
    assert [run(guard, "web_search", {"i": i}, f"r{i}").action for i in range(3)] == ["allow", "allow", "halt"]


def test_max_tokens_from_turns_and_records() -> None:
    guard = quiet(max_tokens=1000)
    assert guard.end_turn(usage={"input_tokens": 500, "output_tokens": 100}).action == "allow"
    soft = guard.end_turn(usage={"prompt_tokens": 150, "completion_tokens": 100})
    assert (soft.action, soft.reason) == ("warn", "budget_tokens")
    run(guard, "read_file", {"path": "a"}, "content", usage={"total_tokens": 300})
    assert guard.state.tokens == 1150
    v = guard.check("read_file", {"path": "b"})
    assert (v.action, v.reason) == ("halt", "budget_tokens")


def test_max_cost_usd() -> None:
    guard = quiet(max_cost_usd=1.0)
    assert guard.end_turn(usage={"input_tokens": 10, "cost_usd": 0.5}).action == "allow"
    assert guard.end_turn(usage={"input_tokens": 10, "cost": 0.35}).action == "warn"
    run(guard, "read_file", {"path": "a"}, "content", usage={"cost_usd": 0.2})
    assert guard.state.cost == pytest.approx(1.05)
    v = guard.end_turn()
    assert (v.action, v.reason) == ("halt", "budget_cost")


class UsageObject:
    def __init__(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cost_usd = cost_usd


def test_usage_objects_and_invalid_values() -> None:
    guard = quiet(max_tokens=10_000)
    guard.end_turn(usage=UsageObject(100, 20, 0.01))
    guard.end_turn(usage={"input_tokens": -5, "output_tokens": float("nan"), "cost_usd": "free"})
    guard.end_turn(usage="not a usage report")
    assert guard.state.tokens == 120
    assert guard.state.cost == pytest.approx(0.01)


def test_read_usage_takes_what_a_usage_names_and_nothing_invalid() -> None:
    from looptrap.engine.engine import read_usage

    assert read_usage({"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.01}) == (120, 0.01)
    assert read_usage({"total_tokens": 7, "input_tokens": 100, "cost": 0.5}) == (7, 0.5)
    assert read_usage({"prompt_tokens": 3.9, "completion_tokens": 1, "cost_usd": None, "cost": 2}) == (4, 2.0)
    assert read_usage({"total_tokens": float("inf"), "input_tokens": 5}) == (0, None)
    assert read_usage({"input_tokens": float("inf"), "output_tokens": 5, "cost_usd": -1}) == (5, None)
    assert read_usage({"input_tokens": True, "output_tokens": "9"}) == (0, None)
    assert read_usage(UsageObject(100, 20, 0.01)) == (120, 0.01)
    assert read_usage({}) == (0, None)
    assert read_usage(None) is None


def test_max_seconds_with_a_fake_clock() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, detectors=(), budgets=Budgets(max_seconds=10))
    assert guard.check("a", {"i": 0}).action == "allow"  # the clock starts at the first call
    clock.advance(5)
    assert guard.check("a", {"i": 1}).action == "allow"
    clock.advance(3.5)
    soft = guard.check("a", {"i": 2})
    assert (soft.action, soft.reason) == ("warn", "budget_time")
    clock.advance(1)
    assert guard.check("a", {"i": 3}).action == "allow"
    clock.advance(0.5)
    v = guard.end_turn()
    assert (v.action, v.reason) == ("halt", "budget_time")


def test_soft_threshold_warns_once_per_budget() -> None:
    guard = quiet(max_tool_calls=100, max_turns=100)
    verdicts = [guard.check("read", {"i": i}) for i in range(99)]
    warns = [v for v in verdicts if v.action == "warn"]
    assert len(warns) == 1
    assert warns[0].call_index == 80
    turns = [guard.end_turn() for _ in range(99)]
    assert [v.reason for v in turns if v.action == "warn"] == ["budget_turns"]
    assert all(v.action in ("allow", "warn") for v in turns)


def test_unknown_cost_warns_once_and_never_halts() -> None:
    guard = quiet(max_cost_usd=0.01)
    verdicts = [guard.end_turn(usage={"input_tokens": 1_000_000, "output_tokens": 1000}) for _ in range(50)]
    warns = [v for v in verdicts if v.action == "warn"]
    assert [v.reason for v in warns] == ["budget_cost_unknown"]
    assert all(v.action in ("allow", "warn") for v in verdicts)
    assert guard.halted is None


def test_budgets_halt_even_when_escalation_only_warns() -> None:
    guard = Guard(clock=None, escalation=Escalation(warn_only=True), budgets=Budgets(max_tool_calls=3))
    actions = [run(guard, "read", {"i": i}, f"r{i}").action for i in range(4)]
    assert actions[-1] == "halt"


# -- the honest way out ---------------------------------------------------------------------------------


def test_report_blocked_tool_definition() -> None:
    tool = report_blocked_tool()
    assert set(tool) == {"name", "description", "parameters"}
    assert tool["name"] == "report_blocked"
    assert "not a failure" in tool["description"]
    schema = tool["parameters"]
    assert schema == report_blocked_schema()
    assert schema["type"] == "object"
    assert schema["required"] == ["tried", "needed"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["tried"]["type"] == "array"
    assert schema["properties"]["tried"]["items"] == {"type": "string"}
    assert schema["properties"]["tried"]["minItems"] == 1
    assert schema["properties"]["needed"]["type"] == "string"
    assert report_blocked_tool("give_up")["name"] == "give_up"
    orjson.dumps(tool)


def test_handle_report_blocked_valid() -> None:
    guard = Guard(clock=None)
    run(guard, "search_docs", {"q": "refund"}, "0 results")
    v = guard.handle_report_blocked({"tried": ["search_docs refund", "search_docs returns"], "needed": "the order id"})
    assert (v.action, v.kind, v.reason) == ("halt", "report_blocked", "reported_blocked")
    assert "search_docs refund" in v.summary
    assert "search_docs returns" in v.summary
    assert "the order id" in v.message
    assert guard.needed == ["the order id"]
    assert guard.halted is not None
    assert guard.halted.reason == "reported_blocked"
    assert guard.check("search_docs", {"q": "x"}).reason == "reported_blocked"
    guard.new_task()
    guard.handle_report_blocked({"tried": "one thing", "needed": "  access to billing  "})
    assert guard.needed == ["the order id", "access to billing"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"tried": [], "needed": "x"},
        {"tried": ["a"]},
        {"tried": ["a"], "needed": "   "},
        {"tried": [1, 2], "needed": "x"},
        {"needed": "x"},
        "tried everything",
        None,
    ],
    ids=repr,
)
def test_handle_report_blocked_invalid(arguments: Any) -> None:
    guard = Guard(clock=None)
    v = guard.handle_report_blocked(arguments)
    assert (v.action, v.reason) == ("advise", "invalid_report")
    assert v.message
    assert guard.halted is None
    assert guard.needed == []


def test_report_blocked_from_code() -> None:
    guard = Guard(clock=None)
    v = guard.report_blocked(["a", "b"], "credentials")
    assert v.reason == "reported_blocked"
    assert guard.needed == ["credentials"]


def _attempts(taken: list[int]) -> Iterator[str]:
    """An endless iterable of attempts that fails the test once far more were taken than a report keeps."""
    for i in itertools.count():
        if i > 1000:
            raise AssertionError("report_blocked exhausts the iterable it is given")
        taken.append(i)
        yield f"attempt {i}"


def test_report_blocked_takes_a_bounded_number_of_items_from_an_endless_iterable() -> None:
    taken: list[int] = []
    v = Guard(clock=None).report_blocked(_attempts(taken), "credentials")
    assert (v.action, v.reason) == ("halt", "reported_blocked")
    assert len(taken) == 20
    assert "attempt 0" in v.summary
    assert "attempt 19" in v.summary
    counter = itertools.count()
    assert Guard(clock=None).report_blocked(counter, "credentials").reason == "reported_blocked"
    assert next(counter) == 20  # the rest is left where it was
    taken.clear()
    v = asyncio.run(AsyncGuard(clock=None).report_blocked(_attempts(taken), "credentials"))
    assert (v.reason, len(taken)) == ("reported_blocked", 20)


# -- the outcome protocol -------------------------------------------------------------------------------


def test_outcome_helpers() -> None:
    assert outcome.success({"id": "C-1"}) == {
        "status": "success",
        "retryable": False,
        "message": "ok",
        "data": {"id": "C-1"},
    }
    nf = outcome.not_found("No customer.", next_action_hint="Ask for the id.")
    assert nf == {
        "status": "not_found",
        "retryable": False,
        "message": "No customer.",
        "next_action_hint": "Ask for the id.",
    }
    assert outcome.error("Timed out.", retryable=True)["retryable"] is True
    part = outcome.partial([1, 2], "2 of 9", next_action_hint="page=2")
    assert (part["status"], part["data"], part["retryable"]) == ("partial", [1, 2], False)
    orjson.dumps([nf, part])


def test_outcome_from_verdict() -> None:
    guard = Guard(clock=None)
    verdicts = [run(guard, "s", {"q": 1}, "0 results") for _ in range(5)]
    advice = outcome.from_verdict(verdicts[2])
    assert (advice["status"], advice["retryable"], advice["message"]) == ("error", False, verdicts[2].message)
    assert "Change course" in advice.get("next_action_hint", "")
    halted = outcome.from_verdict(verdicts[4])
    assert "Stop" in halted.get("next_action_hint", "")


def test_outcomes_drive_the_detectors() -> None:
    guard = Guard(clock=None)
    bad = outcome.error("invalid order id", retryable=False)
    assert run(guard, "get_order", {"id": "??"}, bad).action == "allow"
    assert guard.state.history[-1].flags & Flag.ERROR  # status error without is_error
    assert run(guard, "get_order", {"id": "??"}, bad).action == "advise"
    guard = Guard(clock=None)
    actions = [run(guard, "find", {"q": f"q{i}"}, outcome.not_found("none", retryable=True)).action for i in range(6)]
    assert actions[-1] == "advise"  # not_found is empty: drift


# -- failure modes --------------------------------------------------------------------------------------


class Exploding(Detector):
    """A detector that breaks inside the engine's check, record and end of turn (a bug in a custom one)."""

    name = "exploding"

    def check(self, call: Any, state: Any, policy: Any) -> Any:
        raise RuntimeError("engine exploded")

    def observe(self, entry: Any, state: Any, now: float | None) -> None:
        raise RuntimeError("engine exploded")

    def end_turn(self, turn: Any, state: Any) -> Any:
        raise RuntimeError("engine exploded")


def test_fail_open(caplog: pytest.LogCaptureFixture) -> None:
    guard = Guard(GuardConfig(detectors=(Exploding(),)), clock=None)
    with caplog.at_level(logging.ERROR, logger="looptrap"):
        v = guard.check("search_docs", {"q": "x"})
        guard.record("search_docs", {"q": "x"}, "result")
        t = guard.end_turn()
    assert v.action == "allow"
    assert v.allowed
    assert t.action == "allow"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and r.name == "looptrap"]
    assert len(errors) == 3
    assert all(r.exc_info is not None for r in errors)
    assert "internal error in check" in errors[0].getMessage()
    assert "allowing" in errors[0].getMessage()


def test_fail_closed(caplog: pytest.LogCaptureFixture) -> None:
    guard = Guard(GuardConfig(detectors=(Exploding(),)), clock=None, fail_closed=True)
    with caplog.at_level(logging.ERROR, logger="looptrap"):
        v = guard.check("search_docs", {"q": "x"})
    assert (v.action, v.kind, v.reason) == ("halt", "guard", "guard_error")
    assert any("halting" in r.getMessage() for r in caplog.records)


class HostileText(str):
    """Text whose truth value cannot be taken."""

    def __bool__(self) -> bool:
        raise RuntimeError("no truth value")


def test_feed_text_fails_open_on_text_whose_truth_raises(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="looptrap"):
        assert Guard(clock=None).feed_text(HostileText("the same sentence")) is ALLOW
        assert asyncio.run(AsyncGuard(clock=None).feed_text(HostileText("the same sentence"))) is ALLOW
        closed = Guard(clock=None, fail_closed=True).feed_text(HostileText("the same sentence"))
    assert closed.reason == "guard_error"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and r.name == "looptrap"]
    assert [r.getMessage().split(" (")[0] for r in errors] == ["looptrap: internal error in feed_text"] * 3
    assert all(r.exc_info is not None for r in errors)


def test_disabled_guard_allows_everything_and_records_nothing() -> None:
    guard = Guard(clock=None, enabled=False, budgets=Budgets(max_tool_calls=1))
    assert {run(guard, "s", {"q": 1}, "0 results").action for _ in range(10)} == {"allow"}
    assert guard.end_turn().action == "allow"
    assert guard.state.calls == 0


# -- logging --------------------------------------------------------------------------------------------

SECRET = "s3cr3t-Token-7f9c"


def _records_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(repr(vars(r)) + r.getMessage() for r in caplog.records)


def test_turn_log_record(caplog: pytest.LogCaptureFixture) -> None:
    guard = Guard(clock=None, run_id="run-42")
    with caplog.at_level(logging.INFO, logger="looptrap"):
        run(guard, "search_docs", {"q": "a"}, "3 hits", usage={"total_tokens": 40})
        run(guard, "search_docs", {"q": "a"}, "3 hits")
        guard.end_turn(usage={"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.002})
        loop(guard, "search_docs")  # the 3rd identical call in a row: advice
        guard.end_turn()
    turns = [r for r in caplog.records if r.getMessage().startswith("looptrap turn")]
    assert len(turns) == 2
    first = turns[0]
    assert first.levelno == logging.INFO
    assert first.run_id == "run-42"  # type: ignore[attr-defined]
    assert first.turn == 1  # type: ignore[attr-defined]
    assert first.tools_called == ["search_docs", "search_docs"]  # type: ignore[attr-defined]
    assert first.repeat_max == 2  # type: ignore[attr-defined]
    assert first.progressed is True  # type: ignore[attr-defined]
    assert first.signals == []  # type: ignore[attr-defined]
    assert first.usage == {"tokens": 150, "cost_usd": pytest.approx(0.002)}  # type: ignore[attr-defined]
    second = turns[1]
    assert second.turn == 2  # type: ignore[attr-defined]
    assert second.signals == ["loop_repeat"]  # type: ignore[attr-defined]
    assert second.progressed is False  # type: ignore[attr-defined]
    verdicts = [r for r in caplog.records if r.getMessage().startswith("looptrap advise")]
    assert len(verdicts) == 1
    rec = verdicts[0]
    assert rec.levelno == logging.WARNING
    for field in ("run_id", "action", "kind", "reason", "call_index", "tool", "call_digest", "signals"):
        assert hasattr(rec, field), field
    assert rec.reason == "loop_repeat"  # type: ignore[attr-defined]


def test_raw_arguments_never_appear_in_logs_by_default(caplog: pytest.LogCaptureFixture) -> None:
    guard = Guard(clock=None)
    with caplog.at_level(logging.DEBUG, logger="looptrap"):
        for _ in range(5):
            run(guard, "call_api", {"token": SECRET, "q": "x"}, "0 results")
            guard.end_turn(state={"found": []})
        guard.new_task()
        for i in range(8):
            run(guard, "call_api", {"token": SECRET, "q": f"x{i}"}, "0 results")
    assert caplog.records, "expected verdict and turn records"
    assert SECRET not in _records_text(caplog)


def test_log_args_keeps_the_verdict() -> None:
    """log_args only changes what is logged: the 3rd identical call is still advised."""
    guard = Guard(clock=None, log_args=True)
    assert loop(guard, "search_docs") == ["allow", "allow", "advise"]


def test_argument_previews_appear_with_log_args_with_secrets_masked(caplog: pytest.LogCaptureFixture) -> None:
    guard = Guard(clock=None, log_args=True)
    with caplog.at_level(logging.INFO, logger="looptrap"):
        loop(guard, "call_api", times=3, result="0 results")
        for _ in range(3):
            run(guard, "call_api", {"token": SECRET, "page": 2}, "0 results")
    assert SECRET not in _records_text(caplog)  # masked even where arguments are logged (docs/analyze.md#safety)
    advised = [r for r in caplog.records if getattr(r, "args_preview", None)]
    assert any('call_api {"page":2,"token":"[redacted]"}' in r.args_preview for r in advised)  # type: ignore[attr-defined]
    assert all(getattr(r, "message", "") for r in advised)


# -- state ----------------------------------------------------------------------------------------------


def scripted_session(guard: Guard, clock: FakeClock, start: int, stop: int) -> list[tuple[Any, ...]]:
    """A deterministic mixed session (loops, errors, writes, turns); returns what the guard said."""
    out: list[tuple[Any, ...]] = []
    for i in range(start, stop):
        clock.advance(0.3 if i % 7 else 4.0)
        phase = i % 12
        if phase in (0, 1, 2):
            v = run(guard, "search_docs", {"query": f"refund {i // 24}"}, "0 results")
        elif phase in (3, 4):
            v = run(guard, "run_tests", {"path": "t"}, f"AssertionError line {i}", is_error=True)
        elif phase == 5:
            v = run(guard, "write_file", {"path": f"f{i % 3}.py"}, "ok", usage={"total_tokens": 10, "cost_usd": 0.001})
        elif phase in (6, 7, 8):
            v = run(guard, "read_file", {"path": "a.py"}, "def a(): pass")
        else:
            v = run(guard, "grep", {"p": f"x{i % 5}"}, "1 match" if i % 2 else "no matches found")
        out.append((i, v.action, v.kind, v.reason, v.call_index))
        if i % 4 == 3:
            t = guard.end_turn(state={"found": i // 40}, usage={"input_tokens": 100, "cost_usd": 0.01})
            out.append((i, "turn", t.action, t.kind, t.reason))
        if i % 150 == 149:
            guard.new_task()
    return out


def test_state_round_trip_through_json_continues_identically() -> None:
    clock_a, clock_b = FakeClock(), FakeClock()
    a = Guard(clock=clock_a, run_id="r1")
    b = Guard(clock=clock_b, run_id="r1")
    first_a = scripted_session(a, clock_a, 0, 97)
    first_b = scripted_session(b, clock_b, 0, 97)
    assert first_a == first_b
    assert any(x[1] != "allow" for x in first_a), "the script should trigger some verdicts"
    saved = orjson.dumps(b.state.to_dict())
    restored = SessionState.from_dict(orjson.loads(saved))
    c = Guard(clock=clock_b, state=restored)
    assert c.state.run_id == "r1"
    rest_a = scripted_session(a, clock_a, 97, 400)
    rest_c = scripted_session(c, clock_b, 97, 400)
    assert rest_a == rest_c
    assert orjson.dumps(a.state.to_dict()) == orjson.dumps(c.state.to_dict())


def test_halted_state_round_trip() -> None:
    guard = Guard(clock=None)
    loop(guard, times=5)
    restored = Guard(clock=None, state=SessionState.from_dict(orjson.loads(orjson.dumps(guard.state.to_dict()))))
    assert restored.halted is not None
    assert restored.halted.reason == "loop_repeat"
    assert restored.check("x", {}).action == "halt"


@pytest.mark.parametrize("version", [0, 2, 999, None, "1"])
def test_wrong_state_version_raises(version: Any) -> None:
    data = Guard(clock=None).state.to_dict()
    data["version"] = version
    with pytest.raises(StateVersionError, match="version"):
        SessionState.from_dict(data)
    data.pop("version")
    with pytest.raises(StateVersionError):
        SessionState.from_dict(data)
    assert issubclass(StateVersionError, ValueError)


@pytest.mark.slow
def test_state_stays_bounded() -> None:
    guard = Guard(clock=None)
    n = 100_000
    for i in range(n):
        args = {"path": f"file-{i}", "n": i}
        tool = f"tool_{i % 301}"
        run(guard, tool, args, "0 results" if i % 4 == 0 else f"content {i}")
        if i % 10 == 0:
            guard.end_turn(state={"i": i})
    s = guard.state
    assert s.calls == n
    assert guard.halted is None
    assert len(s.history) <= HISTORY
    assert len(s.seen) <= SEEN
    assert len(s.results) <= SEEN
    assert len(s.previews) <= PREVIEWS
    assert len(s.per_tool) <= TOOLS
    for name, slot in s.slots.items():
        assert len(orjson.dumps(slot)) < 64_000, name
    size = len(orjson.dumps(s.to_dict()))
    assert size < 192 * 1024, f"state is {size} bytes after {n} calls"


def test_detector_memory_of_errors_stays_bounded() -> None:
    guard = Guard(clock=None)
    for i in range(3000):
        run(guard, f"tool_{i % 301}", {"n": i}, f"error number {i}", is_error=True)
    slot = guard.state.slots["error_repeat"]
    assert len(slot["calls"]) <= 256
    assert len(slot["errors"]) <= 256
    assert len(orjson.dumps(guard.state.to_dict())) < 192 * 1024


# -- threads --------------------------------------------------------------------------------------------


def test_thread_safety() -> None:
    guard = Guard(clock=None, fail_closed=True)
    threads_n, per_thread = 8, 2000
    errors: list[BaseException] = []
    refused: list[Verdict] = []
    barrier = threading.Barrier(threads_n)

    def worker(t: int) -> None:
        try:
            barrier.wait()
            for i in range(per_thread):
                args = {"thread": t, "i": i}
                v = guard.check(f"tool_{t}", args)
                if v.allowed:
                    guard.record(f"tool_{t}", args, f"result {t}-{i}")
                else:
                    refused.append(v)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert refused == []
    assert guard.state.calls == threads_n * per_thread
    assert sum(guard.state.per_tool.values()) == threads_n * per_thread
    assert len(guard.state.history) == HISTORY
    indices = [e.call_index for e in guard.state.history]
    assert len(set(indices)) == len(indices)


# -- the decorator --------------------------------------------------------------------------------------


def test_tool_decorator_sync() -> None:
    guard = Guard(clock=None)
    ran: list[str] = []

    @guard.tool
    def search_docs(query: str, limit: int = 5) -> str:
        ran.append(query)
        return "0 results"

    assert search_docs.__name__ == "search_docs"
    assert search_docs("refund") == "0 results"
    assert search_docs(query="refund") == "0 results"  # keyword or positional: the same call
    advice = search_docs("refund")
    assert advice != "0 results"
    assert "search_docs" in advice
    block = search_docs("refund")
    assert block.startswith("Blocked")
    assert ran == ["refund", "refund"]
    with pytest.raises(LoopHalted) as info:
        search_docs("refund")
    assert info.value.reason == "loop_repeat"
    assert info.value.verdict.action == "halt"
    assert "search_docs" in info.value.summary
    assert isinstance(info.value, looptrap.LooptrapError)
    assert ran == ["refund", "refund"]


def test_tool_decorator_options() -> None:
    guard = Guard(clock=None)

    @guard.tool(name="orders.search", on_advice=outcome.from_verdict, result_is_error=lambda r: r.startswith("ERR"))
    def search_orders(customer: str) -> str:
        return "ERR upstream down"

    assert search_orders("c1") == "ERR upstream down"
    entry = guard.state.history[-1]
    assert entry.tool == "orders.search"
    assert entry.flags & Flag.ERROR
    search_orders("c1")
    advice = search_orders("c1")
    assert isinstance(advice, dict)
    assert advice["status"] == "error"


def test_tool_decorator_records_and_reraises_exceptions() -> None:
    guard = Guard(clock=None)

    @guard.tool
    def flaky(x: int) -> int:
        raise ValueError(f"bad x {x}")

    with pytest.raises(ValueError, match="bad x 1"):
        flaky(1)
    entry = guard.state.history[-1]
    assert entry.tool == "flaky"
    assert entry.flags & Flag.ERROR
    assert guard.state.calls == 1


def test_tool_decorator_async() -> None:
    guard = Guard(clock=None)
    ran: list[str] = []

    @guard.tool
    async def search_docs(query: str) -> str:
        await asyncio.sleep(0)
        ran.append(query)
        return "0 results"

    @guard.tool
    async def broken(query: str) -> str:
        raise KeyError(query)

    async def main() -> list[str]:
        out = [await search_docs("refund") for _ in range(4)]
        with pytest.raises(LoopHalted):
            await search_docs("refund")
        return out

    results = asyncio.run(main())
    assert results[:2] == ["0 results", "0 results"]
    assert results[3].startswith("Blocked")
    assert ran == ["refund", "refund"]
    guard.new_task()
    with pytest.raises(KeyError):
        asyncio.run(broken("q"))
    assert guard.state.history[-1].flags & Flag.ERROR


@pytest.mark.parametrize("n", [100, 1000])
def test_many_concurrent_async_calls(n: int) -> None:
    guard = Guard(clock=None)

    @guard.tool
    async def fetch_item(i: int) -> str:
        await asyncio.sleep(0)
        return f"item {i}"

    async def main() -> list[str]:
        return await asyncio.gather(*(fetch_item(i) for i in range(n)))

    results = asyncio.run(main())
    assert results == [f"item {i}" for i in range(n)]
    assert guard.state.calls == n  # every call counted once
    assert guard.state.per_tool == {"fetch_item": n}
    indices = [e.call_index for e in guard.state.history]
    assert max(indices) <= n


def test_check_and_record_with_equal_copies_and_without_arguments() -> None:
    guard = Guard(clock=None)
    guard.check("search_docs", {"query": "refund policy"})
    guard.record("search_docs", {"query": "refund policy"}, "3 hits")  # an equal copy
    guard.check("list_files")
    guard.record("list_files", None, "a.py b.py")
    assert guard.state.calls == 2
    assert [e.call_index for e in guard.state.history] == [1, 2]
    guard.record("replayed", {"x": 1}, "r")  # recorded without a check: still a call
    assert guard.state.calls == 3


def test_the_halt_table_of_the_escalation_docs() -> None:
    """docs/escalation.md, "When the guard halts": a halt needs the loop that was advised and blocked."""
    guard = Guard(clock=None)
    invoice = {"id": "A1"}
    actions = []
    for error in ("timed out", "503 Service Unavailable", "connection reset by peer"):
        actions.append(run(guard, "get_invoice", invoice, error, is_error=True).action)
        guard.end_turn()
    for _ in range(2):
        actions.append(run(guard, "get_invoice", invoice, "timed out", is_error=True).action)
        guard.end_turn()
    for _ in range(3):
        actions.append(run(guard, "search_web", {"q": "invoice A1"}, "0 results").action)
        guard.end_turn()
    actions.append(run(guard, "get_invoice", invoice, "timed out", is_error=True).action)
    assert actions == ["allow"] * 3 + ["advise", "block", "allow", "allow", "block", "halt"]


def test_weak_evidence_advises_warns_blocks_and_never_halts() -> None:
    """docs/escalation.md: a click tool answering the same terse error for different targets."""
    guard = Guard(clock=None)
    actions = []
    for i in range(14):
        actions.append(run(guard, "click", {"target": f"Product {i}"}, "Invalid action!", is_error=True).action)
        guard.end_turn()
    assert actions == ["allow"] * 5 + ["advise", "warn", "warn", "warn"] + ["block"] * 5
    assert guard.halted is None
