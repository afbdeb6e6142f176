"""Strands Agents: the SDK's real agent loop (``Agent.__call__`` / ``invoke_async``), driven by a scripted model
written against its ``Model`` interface, with looptrap attached as the ``LoopGuard`` plugin."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from conftest import need
from listening import Listening

need("strands-agents (pip install 'looptrap[strands]')", importlib.util.find_spec("strands") is not None, "strands")

from strands import Agent, tool  # noqa: E402
from strands.models.model import Model  # noqa: E402

from looptrap import Budgets, Guard, GuardPool  # noqa: E402
from looptrap.integrations.strands import LoopGuard  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
REFUND = {"query": "refund policy"}
Reply = list[Any]  # text blocks (str) and tool calls (name, arguments, id)

ran: Counter[str] = Counter()


class ScriptedModel(Model):
    """Streams one scripted reply per model call and keeps every conversation it was sent."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.inputs: list[list[dict[str, Any]]] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        raise NotImplementedError
        yield {}

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.inputs.append(json.loads(json.dumps(messages, default=str)))
        reply = self.replies.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        for block in reply:
            if isinstance(block, str):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": block}}}
            else:
                name, arguments, call_id = block
                yield {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": call_id}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}}
            yield {"contentBlockStop": {}}
        stop = "tool_use" if any(not isinstance(b, str) for b in reply) else "end_turn"
        yield {"messageStop": {"stopReason": stop}}
        usage = {"inputTokens": 40, "outputTokens": 20, "totalTokens": 60}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}


@tool
def search_docs(query: str) -> str:
    """Search the documentation."""
    ran["search_docs"] += 1
    return "0 results" if query == "refund policy" else f"1 result: '{query}' is in the handbook, section 4"


@tool
def edit_file(path: str, change: str) -> str:
    """Edit a file."""
    ran["edit_file"] += 1
    return f"edited {path}: {change}"


@tool
def run_tests() -> str:
    """Run the test suite."""
    ran["run_tests"] += 1
    return f"{3 - ran['edit_file']} failed" if ran["edit_file"] < 3 else "all passed"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def searches(n: int, args: dict[str, Any] = REFUND, start: int = 1) -> list[Reply]:
    return [[("search_docs", args, f"c{i}")] for i in range(start, start + n)]


def results(model: ScriptedModel, turn: int) -> dict[str, str]:
    """The tool results (id -> text) in the conversation the model received on its ``turn``-th call."""
    out = {}
    for message in model.inputs[turn]:
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                out[result["toolUseId"]] = " ".join(c["text"] for c in result["content"] if "text" in c)
    return out


def run(agent: Agent, asynchronous: bool, prompt: str = "What is the refund policy?", **kwargs: Any) -> Any:
    if asynchronous:
        return asyncio.run(agent.invoke_async(prompt, **kwargs))
    return agent(prompt, **kwargs)


def support_agent(model: ScriptedModel, guard: Guard | GuardPool | None, *tools: Any) -> Agent:
    plugins = [LoopGuard(guard)] if guard is not None else []
    return Agent(model=model, tools=list(tools or [search_docs]), plugins=plugins, callback_handler=None)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["call", "invoke_async"])
def test_a_stuck_agent_gets_advice_then_a_block_then_a_clean_halt(asynchronous: bool) -> None:
    model = ScriptedModel(searches(30))
    agent = support_agent(model, Guard(clock=None))

    result = run(agent, asynchronous, limits={"turns": 20})

    assert result.stop_reason == "end_turn"  # the loop ended as a hook ends it, not at the cap
    assert str(result).startswith("Run halted by looptrap (loop_repeat). tried: search_docs")
    assert len(model.inputs) == 5  # the model was not called after the halting call
    assert ran["search_docs"] == 2  # only the first two calls ran
    assert results(model, 3)["c3"].startswith(ADVICE)  # the model read the advice as the tool's error
    assert results(model, 4)["c4"].startswith(BLOCKED)
    assert agent.messages[-1]["content"][0]["text"] == str(result).strip()


def test_without_the_guard_the_same_script_runs_to_the_cap() -> None:
    model = ScriptedModel(searches(30))
    result = run(support_agent(model, None), False, limits={"turns": 20})
    assert result.stop_reason == "limit_turns"
    assert len(model.inputs) == 20
    assert ran["search_docs"] == 20


@pytest.mark.parametrize("asynchronous", [False, True], ids=["call", "invoke_async"])
def test_parallel_identical_calls_of_one_response_all_get_the_advice(asynchronous: bool) -> None:
    three = [("search_docs", REFUND, f"p{i}") for i in range(3)]
    model = ScriptedModel([*searches(2), three, *searches(2, start=4)])
    result = run(support_agent(model, Guard(clock=None)), asynchronous)

    advised = results(model, 3)
    assert [advised[f"p{i}"] for i in range(3)] == [advised["p0"]] * 3  # one step: the same advice, three times
    assert advised["p0"].startswith(ADVICE)
    assert results(model, 4)["c4"].startswith(BLOCKED)
    assert "loop_repeat" in str(result)
    assert ran["search_docs"] == 2


def edit_test_cycle() -> ScriptedModel:
    steps: list[Reply] = []
    for n in range(3):
        steps.append([("edit_file", {"path": "app.py", "change": f"fix {n}"}, f"e{n}")])
        steps.append([("run_tests", {}, f"t{n}")])
    steps.append([("search_docs", {"query": "changelog"}, "s")])
    steps.append(["Fixed: all tests pass."])
    return ScriptedModel(steps)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["call", "invoke_async"])
def test_a_healthy_agent_is_untouched(asynchronous: bool) -> None:
    runs = []
    for guard in (None, Guard(clock=None)):
        ran.clear()
        model = edit_test_cycle()
        result = run(support_agent(model, guard, edit_file, run_tests, search_docs), asynchronous)
        conversation = [
            [b for b in m["content"] if "toolUse" not in b or b["toolUse"]["name"]] for m in model.inputs[-1]
        ]
        runs.append((str(result), result.stop_reason, conversation, dict(ran)))
    assert runs[0] == runs[1]
    assert runs[1][0].strip() == "Fixed: all tests pass."
    assert runs[1][3] == {"edit_file": 3, "run_tests": 3, "search_docs": 1}


def test_a_model_that_changes_course_after_the_advice_finishes() -> None:
    model = ScriptedModel([*searches(3), *searches(1, {"query": "returns"}, start=4), ["Section 4 of the handbook."]])
    result = run(support_agent(model, Guard(clock=None)), False)
    assert str(result).strip() == "Section 4 of the handbook."
    assert results(model, 3)["c3"].startswith(ADVICE)
    assert ran["search_docs"] == 3


def test_each_invocation_is_a_new_task_and_its_input_the_users_message() -> None:
    guard = Listening()
    model = ScriptedModel([*searches(2), ["no luck"], *searches(2, start=3), ["still no luck"]])
    agent = support_agent(model, guard)
    run(agent, False)
    run(agent, False, prompt="Try again, please.")  # the conversation goes on: the same search is no repeat
    assert guard.heard == ["What is the refund policy?", "Try again, please."]
    assert guard.state.task == 2
    assert ran["search_docs"] == 4
    assert not any(r.startswith(ADVICE) for r in results(model, 5).values())


def test_each_model_response_ends_a_turn_with_its_tokens_and_a_budget_halts_before_the_calls() -> None:
    guard = Guard(clock=None)
    steps = [[("search_docs", {"query": q}, q)] for q in ("a", "b", "c")]
    run(support_agent(ScriptedModel([*steps, ["done"]]), guard), False)
    assert guard.state.turn == 4  # every response, the answer included
    assert guard.state.tokens == 240

    budget = Guard(clock=None, budgets=Budgets(max_tokens=150))
    ran.clear()
    model = ScriptedModel([*steps, ["never reached"]])
    result = run(support_agent(model, budget), True)
    assert "budget_tokens" in str(result)
    assert ran["search_docs"] == 2  # the response that crossed the budget had its call cancelled
    assert len(model.inputs) == 3
    agent = support_agent(model, budget)
    assert str(run(agent, False, prompt="Try again.")).startswith("Run halted by looptrap (budget_tokens)")
    assert len(model.inputs) == 3  # a budget halt outlives the task: the next invocation's model call is cancelled


def test_report_blocked_is_the_honest_way_out() -> None:
    model = ScriptedModel(
        [
            [("report_blocked", {"tried": []}, "r1")],
            [("report_blocked", {"tried": ["search refund policy"], "needed": "the wiki"}, "r2")],
            ["never reached"],
        ]
    )
    plugin = LoopGuard(Guard(clock=None))
    agent = Agent(model=model, tools=[search_docs], plugins=[plugin], callback_handler=None)
    assert agent.tool_names == ["search_docs", "report_blocked"]

    result = run(agent, False)

    assert "'tried' must be a non-empty list" in results(model, 1)["r1"]  # malformed: advice, the run goes on
    assert str(result).startswith("Run halted by looptrap (reported_blocked). tried: search refund policy")
    verdict = plugin.guard_for(agent).halted
    assert verdict is not None
    assert (verdict.reason, plugin.guard_for(agent).needed) == ("reported_blocked", ["the wiki"])
    assert len(model.inputs) == 2


def test_each_agent_has_its_own_session_by_default() -> None:
    plugin = LoopGuard()  # a new GuardPool
    agents = []
    for _ in range(2):
        model = ScriptedModel([*searches(2), ["no luck"]])
        agents.append(Agent(model=model, tools=[search_docs], plugins=[plugin], callback_handler=None))
        assert str(run(agents[-1], False)).strip() == "no luck"  # no advice: a fresh session
        assert plugin.guard_for(agents[-1]).state.task == 1
    assert ran["search_docs"] == 4
    pool = plugin.guard
    assert isinstance(pool, GuardPool)
    assert len(pool) == 2
    agents.clear()
    gc.collect()
    assert len(pool) == 0  # the agents are gone, and so are their guards


def test_stream_async_is_guarded_the_same_way() -> None:
    model = ScriptedModel(searches(30))
    agent = support_agent(model, Guard(clock=None))

    async def stream() -> Any:
        events = [event async for event in agent.stream_async("What is the refund policy?", limits={"turns": 20})]
        return events[-1]["result"]

    result = asyncio.run(stream())
    assert (result.stop_reason, len(model.inputs), ran["search_docs"]) == ("end_turn", 5, 2)
    assert str(result).startswith("Run halted by looptrap (loop_repeat)")
    assert results(model, 3)["c3"].startswith(ADVICE)


def test_as_a_hook_provider_it_guards_without_adding_a_tool() -> None:
    guard = Guard(clock=None)
    model = ScriptedModel(searches(30))
    agent = Agent(model=model, tools=[search_docs], hooks=[LoopGuard(guard)], callback_handler=None)
    assert agent.tool_names == ["search_docs"]

    result = run(agent, False, limits={"turns": 20})

    assert (result.stop_reason, len(model.inputs), ran["search_docs"]) == ("end_turn", 5, 2)
    assert results(model, 4)["c4"].startswith(BLOCKED)
    assert guard.halted is not None
    assert guard.halted.reason == "loop_repeat"


@pytest.mark.parametrize("shared", [True, False], ids=["one-guard", "pool"])
def test_an_agent_stuck_calling_an_agent_tool_is_halted(shared: bool) -> None:
    """A sub-agent used as a tool is invoked inside the caller's tool call: with one guard for both, its input is
    no new task of the caller's session; with a pool, it has a session of its own."""
    plugin = LoopGuard(Guard(clock=None) if shared else None)
    helper_model = ScriptedModel([["nothing found"]] * 30)
    helper = Agent(
        name="helper", description="Looks things up.", model=helper_model, plugins=[plugin], callback_handler=None
    )
    model = ScriptedModel([[("helper", {"input": "refund policy"}, f"h{i}")] for i in range(1, 31)])
    agent = Agent(model=model, tools=[helper.as_tool()], plugins=[plugin], callback_handler=None)

    result = run(agent, False, limits={"turns": 20})

    assert str(result).startswith("Run halted by looptrap (loop_repeat). tried: helper")
    assert len(model.inputs) == 5
    assert len(helper_model.inputs) == 2  # the advised, blocked and halted calls never reached the helper
    assert results(model, 3)["h3"].startswith(ADVICE.replace("search_docs", "helper"))


# -- calls another hook stops: an approval that interrupts, a cancel -----------------------------------------------
class Approval:
    """The user's approval of every ``edit_file`` call, as Strands documents it: an interrupt, then on resume the
    answer; anything but "yes" cancels the call."""

    def register_hooks(self, registry: Any, **kwargs: Any) -> None:
        from strands.hooks import BeforeToolCallEvent

        registry.add_callback(BeforeToolCallEvent, self.approve)

    def approve(self, event: Any) -> None:
        if event.tool_use["name"] == "edit_file" and event.interrupt("approve_edit", reason="edit?") != "yes":
            event.cancel_tool = "approval was not granted"


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_a_call_an_interrupt_stops_is_checked_once_and_a_no_is_the_users_refusal(answer: str) -> None:
    """Two empty searches, an edit that waits for the user's approval (an interrupt), then the same search. The
    edit is checked once, not again when it comes back on resume; cancelled by the approval hook on the user's
    "no", it is the user's refusal (the ladder starts over: the search after it runs)."""
    edit = ("edit_file", {"path": "refund.md", "change": "30 days"}, "e1")
    model = ScriptedModel([*searches(2), [edit], *searches(1, start=3), ["Nothing on refunds."]])
    guard = Guard(clock=None)
    agent = Agent(
        model=model,
        tools=[search_docs, edit_file],
        plugins=[LoopGuard(guard)],
        hooks=[Approval()],
        callback_handler=None,
    )
    paused = agent("What is the refund policy?")
    assert paused.stop_reason == "interrupt"
    (asked,) = paused.interrupts
    done = agent([{"interruptResponse": {"interruptId": asked.id, "response": answer}}])

    assert str(done).strip() == "Nothing on refunds."
    expected = "edited refund.md: 30 days" if answer == "yes" else "approval was not granted"
    assert results(model, 3)["e1"] == expected
    assert ran == Counter(search_docs=3, edit_file=1 if answer == "yes" else 0)
    assert guard.state.calls == 4  # the edit counted once
    assert guard.state.pending == []  # every call checked got its answer recorded, the cancelled one too
    assert guard.state.heard == (0 if answer == "yes" else 3)  # the refusal: the user's input, as of the edit
    assert [e.tool for e in guard.state.history].count("edit_file") == (1 if answer == "yes" else 0)
