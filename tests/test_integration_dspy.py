"""DSPy: the real ``dspy.ReAct`` loop, driven by DSPy's own ``DummyLM`` (scripted answers, no network), with the
guard (``GuardedReAct``) and without it."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from typing import Any

import pytest

from agent_tools import ADVICE, BLOCKED, QUESTION, REFUND, Tools
from conftest import need
from listening import Listening

need("dspy (pip install 'looptrap[dspy]')", importlib.util.find_spec("dspy") is not None)

import dspy  # noqa: E402
from dspy.utils import DummyLM  # noqa: E402

from looptrap import Budgets, Guard, GuardPool, LoopHalted  # noqa: E402
from looptrap.integrations.dspy import GuardedReAct  # noqa: E402
from looptrap.testing import step as guard_step  # noqa: E402


def act(tool: str, **args: Any) -> dict[str, Any]:
    """One scripted answer: a ReAct step, and the answer fields in case the program asks for the extraction."""
    return {
        "next_thought": f"call {tool}",
        "next_tool_name": tool,
        "next_tool_args": args,
        "reasoning": "r",
        "answer": "?",
    }


def answer(text: str) -> dict[str, Any]:
    return {"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}, "reasoning": "r", "answer": text}


def prompts(lm: DummyLM) -> list[str]:
    """What the model was sent on each call (its last message)."""
    return [str(h["messages"][-1]["content"]) for h in lm.history]


def observations(prediction: Any) -> list[str]:
    return [str(v) for k, v in prediction.trajectory.items() if k.startswith("observation_")]


@pytest.fixture(params=["sync", "async"])
def call(request: pytest.FixtureRequest) -> Any:
    """``agent(question=...)`` or ``await agent.acall(question=...)``: these tests run both ways."""

    def go(agent: Any, lm: DummyLM, **inputs: Any) -> Any:
        with dspy.context(lm=lm):
            if request.param == "sync":
                return agent(**inputs)
            return asyncio.run(agent.acall(**inputs))

    return go


def test_stuck_agent_is_advised_blocked_and_finished_well_before_the_cap(call: Any) -> None:
    tools, lm = Tools(), DummyLM([act("search_docs", **REFUND)] * 21)
    guard = Guard(clock=None)
    prediction = call(GuardedReAct("question -> answer", tools=tools.all(), guard=guard), lm, question=QUESTION)

    assert tools.ran == ["search_docs refund policy"] * 2  # the advised, blocked and halted calls never ran
    bare = Guard(clock=None)  # what a bare guard says to the same five searches: passed on verbatim
    expected = [guard_step(bare, "search_docs", REFUND, "0 results").message for _ in range(5)]
    seen = observations(prediction)
    assert seen[:5] == ["0 results", "0 results", *expected[2:]]  # the guard's own messages, verbatim
    assert seen[2].startswith(ADVICE)
    assert seen[3].startswith(BLOCKED)
    assert seen[4].startswith("Halted (loop_repeat)")
    assert seen[5] == "Completed."  # ReAct's own finish: the trajectory ended there
    assert len(lm.history) == 6  # five steps and the extraction, instead of 21 calls
    assert ADVICE in prompts(lm)[3]  # the model read the advice on its next step
    assert prediction.answer == "?"  # the answer was extracted as usual
    assert prediction.looptrap["reason"] == "loop_repeat"
    assert "refund policy" in prediction.looptrap["summary"]
    assert guard.halted is not None


def test_without_the_guard_the_same_script_runs_to_the_cap(call: Any) -> None:
    tools, lm = Tools(), DummyLM([act("search_docs", **REFUND)] * 21)
    prediction = call(dspy.ReAct("question -> answer", tools=tools.all()), lm, question=QUESTION)
    assert len(tools.ran) == 20  # max_iters
    assert len(lm.history) == 21
    assert prediction.get("looptrap") is None


def test_on_halt_raise(call: Any) -> None:
    tools, lm = Tools(), DummyLM([act("search_docs", **REFUND)] * 21)
    agent = GuardedReAct("question -> answer", tools=tools.all(), guard=Guard(clock=None), on_halt="raise")
    with pytest.raises(LoopHalted) as halted:
        call(agent, lm, question=QUESTION)
    assert halted.value.reason == "loop_repeat"
    assert len(lm.history) == 5  # not asked again after the halted step
    with pytest.raises(ValueError, match="on_halt"):
        GuardedReAct("question -> answer", tools=[], on_halt="stop")  # type: ignore[arg-type]


def test_model_that_changes_course_after_advice_finishes(call: Any) -> None:
    script = [act("search_docs", **REFUND)] * 3 + [act("search_docs", query="refunds"), answer("30 days")]
    tools, lm = Tools(), DummyLM([*script, answer("30 days")])
    prediction = call(GuardedReAct("question -> answer", tools=tools.all()), lm, question=QUESTION)
    assert prediction.answer == "30 days"
    assert prediction.get("looptrap") is None
    assert ADVICE in prompts(lm)[3]
    assert tools.ran == ["search_docs refund policy"] * 2 + ["search_docs refunds"]


HEALTHY = [
    act("search_docs", query="test setup"),
    act("edit_file", path="app.py", content="v1"),
    act("run_tests"),
    act("edit_file", path="app.py", content="v2"),
    act("run_tests"),
    act("edit_file", path="app.py", content="v3"),
    act("run_tests"),
    answer("fixed"),
    answer("fixed"),
]


def test_healthy_agent_is_untouched(call: Any) -> None:
    def run(make: Any) -> tuple[Any, ...]:
        tools, lm = Tools(), DummyLM(list(HEALTHY))
        prediction = call(make("question -> answer", tools=tools.all()), lm, question="Make the tests pass.")
        return prediction.answer, prediction.trajectory, tools.ran, prediction.get("looptrap")

    plain = run(dspy.ReAct)
    assert plain[0] == "fixed"
    assert plain[2][-1] == "run_tests"
    guarded = run(lambda sig, tools: GuardedReAct(sig, tools=tools, guard=Guard(clock=None, report_tool=None)))
    assert guarded == plain  # the same answer, trajectory and tool runs


def test_each_call_is_a_new_task_and_its_inputs_are_the_users(call: Any) -> None:
    guard = Listening()
    agent = GuardedReAct("question -> answer", tools=Tools().all(), guard=guard)
    call(agent, DummyLM([answer("30 days")] * 2), question=QUESTION)
    call(agent, DummyLM([answer("no")] * 2), question="And exchanges?")
    assert guard.heard == [QUESTION, "And exchanges?"]
    assert guard.state.task == 2


def test_report_blocked_ends_the_run(call: Any) -> None:
    script = [act("report_blocked", tried=[]), act("report_blocked", tried=["search"], needed="the billing wiki")]
    tools, lm = Tools(), DummyLM(script + [answer("blocked")] * 2)
    guard = Guard(clock=None)
    prediction = call(GuardedReAct("question -> answer", tools=tools.all(), guard=guard), lm, question=QUESTION)
    assert "report_blocked" in str(lm.history[0]["messages"][0]["content"])  # offered to the model
    assert "'tried' must be a non-empty list" in observations(prediction)[0]  # malformed: advice, the run goes on
    assert prediction.looptrap["reason"] == "reported_blocked"
    assert guard.needed == ["the billing wiki"]
    assert len(lm.history) == 3  # two steps and the extraction


def test_turns_feed_budgets(call: Any) -> None:
    tools = Tools()
    lm = DummyLM([act("search_docs", query=f"q{i}") for i in range(21)])
    agent = GuardedReAct("question -> answer", tools=tools.all(), guard=Guard(clock=None, budgets=Budgets(max_turns=3)))
    prediction = call(agent, lm, question=QUESTION)
    assert prediction.looptrap["reason"] == "budget_turns"
    assert len(tools.ran) == 2  # the third step reached the budget as it came: its call did not run


def test_parallel_calls_of_one_module_keep_their_own_sessions() -> None:
    """dspy.Parallel / Evaluate run one module in many threads: each call has its own session in the pool."""
    pool = GuardPool(guard_options={"clock": None})
    tools = Tools()
    agent = GuardedReAct("question -> answer", tools=tools.all(), guard=pool)
    barrier, results = threading.Barrier(2), []

    def one() -> None:
        script = [act("search_docs", **REFUND)] * 2 + [answer("none")] * 2
        barrier.wait()
        with dspy.context(lm=DummyLM(script)):
            results.append(agent(question=QUESTION))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tools.ran) == 4  # two searches each, never advised: one shared session would advise the third
    assert all(observations(r)[:2] == ["0 results", "0 results"] for r in results)
    assert len(pool) == 0  # sessions of their own are dropped after the call
