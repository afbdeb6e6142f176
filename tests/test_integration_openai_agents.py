"""OpenAI Agents SDK: the SDK's real Runner loop, driven by its own ScriptedModel (agents.testing), with
looptrap attached as tool guardrails by ``guard_agent``."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
from collections import Counter
from typing import Any, cast

import pytest

from conftest import need
from listening import Listening

need("openai-agents (pip install 'looptrap[openai-agents]')", importlib.util.find_spec("agents") is not None)

from agents import (  # noqa: E402
    Agent,
    AgentHooks,
    FunctionTool,
    RunConfig,
    Runner,
    ToolInputGuardrailTripwireTriggered,
    Usage,
    function_tool,
)
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from looptrap import Budgets, Guard, GuardPool, Verdict  # noqa: E402
from looptrap.core.state import Flag  # noqa: E402
from looptrap.integrations.openai_agents import LoopGuardrails, guard_agent  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
NO_TRACES = RunConfig(tracing_disabled=True)
REFUND = {"query": "refund policy"}

ran: Counter[str] = Counter()


@function_tool
def search_docs(query: str) -> str:
    """Search the documentation."""
    ran["search_docs"] += 1
    return "0 results" if query == "refund policy" else f"1 result: '{query}' is in the handbook, section 4"


@function_tool
def edit_file(path: str, change: str) -> str:
    """Edit a file."""
    ran["edit_file"] += 1
    return f"edited {path}: {change}"


@function_tool
def run_tests() -> str:
    """Run the test suite."""
    ran["run_tests"] += 1
    return f"{3 - ran['edit_file']} failed" if ran["edit_file"] < 3 else "all passed"


@function_tool
def flaky() -> str:
    """Always fails."""
    ran["flaky"] += 1
    raise RuntimeError("backend down")


@pytest.fixture(autouse=True)
def _reset(own_event_loop: None) -> None:  # run_sync's event loop: see conftest
    ran.clear()


def calls(name: str, args: dict[str, Any], n: int, start: int = 1) -> list[Any]:
    return [[function_call(name, args, call_id=f"c{i}")] for i in range(start, start + n)]


def tool_outputs(model: ScriptedModel, turn: int) -> dict[str, str]:
    """The function call outputs in the input the model received on its ``turn``-th call (0-based)."""
    items = model.calls[turn].input
    return {i["call_id"]: i["output"] for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"}


def bare_guard_messages(n: int) -> list[str]:
    """What a bare Guard answers to ``n`` identical failing searches (the text the model must receive)."""
    guard, out = Guard(clock=None), []
    for _ in range(n):
        verdict = guard.check("search_docs", REFUND)
        if verdict.allowed:
            guard.record("search_docs", REFUND, "0 results")
        out.append(verdict.message or "0 results")
    return out


def run(agent: Agent[Any], asynchronous: bool, context: Any = None) -> Any:
    if asynchronous:
        return asyncio.run(Runner.run(agent, "What is the refund policy?", context=context, run_config=NO_TRACES))
    return Runner.run_sync(agent, "What is the refund policy?", context=context, run_config=NO_TRACES)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run_sync", "run"])
def test_repeated_failing_call_is_advised_blocked_then_halted(asynchronous: bool) -> None:
    model = ScriptedModel([*calls("search_docs", REFUND, 6), [assistant_message("never reached")]])
    agent = guard_agent(Agent(name="support", model=model, tools=[search_docs]), Guard(clock=None))

    with pytest.raises(ToolInputGuardrailTripwireTriggered) as caught:
        run(agent, asynchronous)

    verdict = caught.value.output.output_info
    assert isinstance(verdict, Verdict)
    assert (verdict.action, verdict.reason) == ("halt", "loop_repeat")
    assert caught.value.output.behavior == {"type": "raise_exception"}
    assert len(model.calls) == 5  # the 5th call halted the run: the model was not asked again
    assert ran["search_docs"] == 2  # only the first two calls ran the tool
    assert tool_outputs(model, 2) == {"c1": "0 results", "c2": "0 results"}
    expected = bare_guard_messages(5)
    assert tool_outputs(model, 4) == {"c1": "0 results", "c2": "0 results", "c3": expected[2], "c4": expected[3]}
    assert expected[2].startswith(ADVICE)
    assert expected[3].startswith(BLOCKED)
    assert verdict.message == expected[4]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run_sync", "run"])
def test_identical_parallel_calls_of_one_response_share_one_step(asynchronous: bool) -> None:
    """One model response with three identical calls, after two single ones: all three get the advice; the block
    comes with the next response, the halt with the one after."""
    three = [function_call("search_docs", REFUND, call_id=f"p{i}") for i in range(3)]
    model = ScriptedModel([*calls("search_docs", REFUND, 2), three, *calls("search_docs", REFUND, 2, start=4)])
    agent = guard_agent(Agent(name="support", model=model, tools=[search_docs]), Guard(clock=None))

    with pytest.raises(ToolInputGuardrailTripwireTriggered) as caught:
        run(agent, asynchronous)

    advised = tool_outputs(model, 3)
    assert [advised[f"p{i}"] for i in range(3)] == [bare_guard_messages(3)[2]] * 3  # the same advice, three times
    assert advised["p0"].startswith(ADVICE)
    assert tool_outputs(model, 4)["c4"].startswith(BLOCKED)
    verdict = caught.value.output.output_info
    assert (verdict.action, verdict.reason) == ("halt", "loop_repeat")
    assert len(model.calls) == 5
    assert ran["search_docs"] == 2


def test_the_input_of_each_run_is_the_users_input() -> None:
    guard = Listening()
    agent = guard_agent(Agent(name="support", tools=[search_docs]), guard)
    first = Runner.run_sync(
        agent.clone(model=ScriptedModel([[assistant_message("Within 30 days.")]])),
        "What is the refund policy?",
        run_config=NO_TRACES,
    )
    follow_up = [{"role": "user", "content": [{"type": "input_text", "text": "And for exchanges?"}]}]
    Runner.run_sync(
        agent.clone(model=ScriptedModel([[assistant_message("Also 30 days.")]])),
        [*first.to_input_list(), *follow_up],  # the conversation so far, and what the user says now
        run_config=NO_TRACES,
    )
    assert guard.heard == ["What is the refund policy?", "And for exchanges?"]
    assert guard.state.task == 2  # each run is a new task too


def test_each_model_request_ends_a_turn_with_the_tokens_it_used() -> None:
    used = Usage(requests=1, input_tokens=40, output_tokens=20, total_tokens=60)
    steps = [[function_call("search_docs", {"query": q}, call_id=q)] for q in ("a", "b", "c")]
    guard = Guard(clock=None)
    model = ScriptedModel([*steps, [assistant_message("done")]], default_usage=used)
    result = run(guard_agent(Agent(name="support", model=model, tools=[search_docs]), guard), False)
    assert result.final_output == "done"
    assert result.context_wrapper.usage.total_tokens == 240
    assert guard.state.turn == 3  # the requests that asked for calls: the last one answered
    assert guard.state.tokens == 180  # what each of them used, not the run's running total

    budget = Guard(clock=None, budgets=Budgets(max_tokens=150))
    model = ScriptedModel([*steps, [assistant_message("never reached")]], default_usage=used)
    ran.clear()
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as caught:
        run(guard_agent(Agent(name="support", model=model, tools=[search_docs]), budget), True)
    assert caught.value.output.output_info.reason == "budget_tokens"
    assert ran["search_docs"] == 2  # the request that crossed the budget had its call stopped


def test_model_that_changes_course_after_the_advice_finishes() -> None:
    model = ScriptedModel(
        [
            *calls("search_docs", REFUND, 3),
            [function_call("search_docs", {"query": "returns"}, call_id="c4")],
            [assistant_message("Returns are covered in section 4 of the handbook.")],
        ]
    )
    agent = guard_agent(Agent(name="support", model=model, tools=[search_docs]), Guard(clock=None))

    result = Runner.run_sync(agent, "What is the refund policy?", run_config=NO_TRACES)

    assert result.final_output == "Returns are covered in section 4 of the handbook."
    assert tool_outputs(model, 3)["c3"].startswith(ADVICE)
    assert tool_outputs(model, 4)["c4"] == "1 result: 'returns' is in the handbook, section 4"
    assert ran["search_docs"] == 3
    advised = [r.output.output_info for r in result.tool_input_guardrail_results if r.output.output_info]
    assert [(v.action, v.reason) for v in advised] == [("advise", "loop_repeat")]


def edit_test_cycle() -> ScriptedModel:
    steps: list[Any] = []
    for n in range(3):
        steps.append([function_call("edit_file", {"path": "app.py", "change": f"fix {n}"}, call_id=f"e{n}")])
        steps.append([function_call("run_tests", {}, call_id=f"t{n}")])
    steps.append([function_call("search_docs", {"query": "changelog"}, call_id="s")])
    steps.append([assistant_message("Fixed: all tests pass.")])
    return ScriptedModel(steps)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run_sync", "run"])
def test_healthy_run_is_untouched(asynchronous: bool) -> None:
    runs = []
    for guarded in (False, True):
        ran.clear()
        model = edit_test_cycle()
        agent = Agent(name="dev", model=model, tools=[edit_file, run_tests, search_docs])
        result = run(guard_agent(agent, Guard(clock=None)) if guarded else agent, asynchronous)
        runs.append((result.final_output, [c.input for c in model.calls], dict(ran)))
    assert runs[0] == runs[1]
    assert runs[1][0] == "Fixed: all tests pass."
    assert runs[1][2] == {"edit_file": 3, "run_tests": 3, "search_docs": 1}


def test_each_run_has_its_own_guard_by_default() -> None:
    rails = LoopGuardrails()  # a new GuardPool: one guard per run
    guarded = rails.apply(Agent(name="support", tools=[search_docs]))
    for _ in range(2):
        model = ScriptedModel([*calls("search_docs", REFUND, 2), [assistant_message("no luck")]])
        assert run(guarded.clone(model=model), False).final_output == "no luck"
        assert tool_outputs(model, 2) == {"c1": "0 results", "c2": "0 results"}  # no advice: a fresh guard
    assert ran["search_docs"] == 4
    gc.collect()
    assert len(cast(GuardPool, rails.guard)) == 0  # the runs are gone, and so are their guards


def test_a_session_key_spans_runs_each_run_a_new_task() -> None:
    pool = GuardPool(budgets=Budgets(max_tool_calls=3), guard_options={"clock": None})
    agent = guard_agent(Agent(name="support", tools=[search_docs]), pool, session=lambda ctx: ctx.context["chat"])
    first = ScriptedModel([*calls("search_docs", REFUND, 2), [assistant_message("no luck")]])
    run(agent.clone(model=first), False, context={"chat": "c-1"})
    # the same search in the next run of the conversation is a new task: no advice; the budget carries over
    second = ScriptedModel([*calls("search_docs", REFUND, 2, start=3), [assistant_message("never reached")]])
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as caught:
        run(agent.clone(model=second), False, context={"chat": "c-1"})
    assert tool_outputs(second, 1) == {"c3": "0 results"}
    assert caught.value.output.output_info.reason == "budget_tool_calls"
    assert ran["search_docs"] == 3
    assert "c-1" in pool


def test_a_shared_guard_starts_a_new_task_with_each_run() -> None:
    guard = Guard(clock=None)
    agent = guard_agent(Agent(name="support", tools=[search_docs]), guard)
    looping = ScriptedModel(calls("search_docs", REFUND, 5))
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        run(agent.clone(model=looping), False)
    # the next run is a new task: repetition memory starts over and the loop halt is lifted
    model = ScriptedModel([*calls("search_docs", REFUND, 2), [assistant_message("no luck")]])
    assert run(agent.clone(model=model), False).final_output == "no luck"
    assert tool_outputs(model, 2) == {"c1": "0 results", "c2": "0 results"}
    assert (guard.state.task, guard.halted) == (2, None)
    assert ran["search_docs"] == 4


def test_report_blocked_is_the_honest_way_out() -> None:
    model = ScriptedModel(
        [
            [function_call("report_blocked", {"tried": []}, call_id="r1")],
            [function_call("report_blocked", {"tried": ["search refund policy"], "needed": "the wiki"}, call_id="r2")],
        ]
    )
    agent = guard_agent(Agent(name="support", model=model, tools=[search_docs]), Guard(clock=None))
    assert [t.name for t in agent.tools] == ["search_docs", "report_blocked"]

    with pytest.raises(ToolInputGuardrailTripwireTriggered) as caught:
        run(agent, False)

    assert "'tried' must be a non-empty list" in tool_outputs(model, 1)["r1"]  # malformed: advice, run goes on
    verdict = caught.value.output.output_info
    assert (verdict.reason, verdict.summary) == ("reported_blocked", "tried: search refund policy")
    assert guard_agent(Agent(name="plain"), Guard(report_tool=None)).tools == []


def test_agents_reached_by_handoff_are_guarded_too() -> None:
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="h")],
            *calls("search_docs", REFUND, 3),
            [assistant_message("I could not find it.")],
        ]
    )
    billing = Agent(name="billing", model=model, tools=[search_docs])
    triage = Agent(name="triage", model=model, handoffs=[billing])
    billing.handoffs = [triage]  # they hand off to each other

    result = run(guard_agent(triage, GuardPool(guard_options={"clock": None})), False)

    assert result.final_output == "I could not find it."
    assert result.last_agent.name == "billing"
    assert result.last_agent is not billing  # a guarded copy
    assert tool_outputs(model, 4)["c3"].startswith(ADVICE)
    assert ran["search_docs"] == 2
    assert not search_docs.tool_input_guardrails


def test_a_failing_tool_is_recorded_as_an_error() -> None:
    guard = Guard(clock=None)
    model = ScriptedModel([*calls("flaky", {}, 1), [assistant_message("backend is down")]])
    run(guard_agent(Agent(name="ops", model=model, tools=[flaky]), guard), False)
    assert ran["flaky"] == 1
    assert [bool(e.flags & Flag.ERROR) for e in guard.state.history] == [True]


def test_original_agent_is_left_as_it_is_and_guarding_twice_attaches_once() -> None:
    agent = Agent(name="support", tools=[search_docs])
    twice = guard_agent(guard_agent(agent))
    assert agent.tools[0] is search_docs
    assert not search_docs.tool_input_guardrails
    tool = twice.tools[0]
    assert isinstance(tool, FunctionTool)
    assert (tool.name, tool.params_json_schema) == (search_docs.name, search_docs.params_json_schema)
    assert len(tool.tool_input_guardrails or ()) == 1
    assert len(tool.tool_output_guardrails or ()) == 1
    assert [t.name for t in twice.tools] == ["search_docs", "report_blocked"]
    rails = LoopGuardrails()
    guarded = rails.apply(agent).tools[0]
    assert isinstance(guarded, FunctionTool)
    assert guarded.tool_input_guardrails == [rails.input]
    assert guarded.tool_output_guardrails == [rails.output]


# -- a model whose responses report no usage ---------------------------------------------------------------------
class Hooks(AgentHooks[Any]):
    """The agent's own hooks: they must still run on the guarded copy."""

    def __init__(self) -> None:
        self.responses = 0
        self.tools = 0

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        self.responses += 1

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
        self.tools += 1


async def streamed(agent: Agent[Any]) -> None:
    result = Runner.run_streamed(agent, "What is the refund policy?", run_config=NO_TRACES)
    async for _ in result.stream_events():
        pass


@pytest.mark.parametrize("how", ["run_sync", "run", "run_streamed"])
def test_responses_without_usage_are_still_steps_of_the_ladder(how: str) -> None:
    """A model (a proxy, a local server) whose responses carry ``Usage()``: the run's ``usage.requests`` stays 0,
    yet each response is a step: advice, a block, then a halt, long before ``max_turns``."""
    three = [function_call("search_docs", REFUND, call_id=f"p{i}") for i in range(3)]
    script = [*calls("search_docs", REFUND, 2), three, *calls("search_docs", REFUND, 6, start=4)]
    model = ScriptedModel(script, default_usage=Usage())
    hooks = Hooks()
    agent = guard_agent(Agent(name="support", model=model, tools=[search_docs], hooks=hooks), Guard())

    with pytest.raises(ToolInputGuardrailTripwireTriggered) as caught:
        asyncio.run(streamed(agent)) if how == "run_streamed" else run(agent, how == "run")

    assert caught.value.output.output_info.reason == "loop_repeat"
    assert len(model.calls) == 5  # halted at the 5th response: max_turns (10) never reached
    advised = tool_outputs(model, 3)
    assert [advised[f"p{i}"].startswith(ADVICE) for i in range(3)] == [True] * 3
    assert len({advised[f"p{i}"] for i in range(3)}) == 1  # one response, one step: the same advice
    assert tool_outputs(model, 4)["c4"].startswith(BLOCKED)
    assert ran["search_docs"] == 2
    assert (hooks.responses, hooks.tools) == (5, 2)  # the agent's own hooks ran for every event
