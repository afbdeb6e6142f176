"""AG2 (``ag2`` 1.x): the real ``Agent`` loop, driven by AG2's own ``TestConfig`` (a scripted model, no network),
with looptrap's plugin (``LoopGuard``) and without it."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterable
from typing import Any

import pytest

from conftest import need
from listening import Listening

need("ag2 (pip install 'looptrap[ag2]')", importlib.util.find_spec("ag2") is not None)

from ag2 import Agent  # noqa: E402
from ag2.events import ToolCallEvent, ToolErrorEvent, ToolResultsEvent  # noqa: E402
from ag2.testing import TestConfig, TrackingConfig  # noqa: E402

from looptrap import Budgets, Guard, GuardPool  # noqa: E402
from looptrap.integrations.ag2 import LoopGuard  # noqa: E402
from looptrap.testing import step  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
REFUND = {"query": "refund policy"}
QUESTION = "What is the refund policy?"


class Tools:
    """The tools of these tests, counting how often their bodies ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.edits = 0

        def search_docs(query: str) -> str:
            """Search the documentation."""
            self.ran.append(f"search_docs {query}")
            return "1 result: refunds within 30 days" if query == "refunds" else "0 results"

        def edit_file(path: str, content: str) -> str:
            """Write a file."""
            self.ran.append(f"edit_file {path}")
            self.edits += 1
            return f"wrote {len(content)} bytes to {path}"

        def run_tests() -> str:
            """Run the test suite."""
            self.ran.append("run_tests")
            return "all passed" if self.edits >= 3 else f"{3 - self.edits} failed"

        self.all = [search_docs, edit_file, run_tests]


def call(name: str, **args: Any) -> ToolCallEvent:
    return ToolCallEvent(name, arguments=json.dumps(args))


def search(**args: Any) -> ToolCallEvent:
    return call("search_docs", **(args or REFUND))


def scripted(*turns: Any) -> TrackingConfig:
    """AG2's scripted model, as a real provider behaves (a failed call is a result the model reads), tracked."""
    return TrackingConfig(TestConfig(*turns, raise_tool_errors=False))


def results(config: TrackingConfig, turn: int) -> list[tuple[str, bool]]:
    """The tool results the model read on its ``turn``-th call (0-based)."""
    last = config.mock.call_args_list[turn].args[0]
    assert isinstance(last, ToolResultsEvent)
    return [("".join(str(p.content) for p in r.result.parts), isinstance(r, ToolErrorEvent)) for r in last.results]


def ask(agent: Agent, text: str = QUESTION, **options: Any) -> Any:
    async def go() -> Any:
        reply = await agent.ask(text, **options)
        return reply, await reply.content()

    return asyncio.run(go())


def agent_with(tools: Tools, config: TrackingConfig, plugins: Iterable[Any] = ()) -> Agent:
    return Agent("support", config=config, tools=tools.all, plugins=list(plugins))


def test_stuck_agent_is_advised_blocked_and_halted() -> None:
    tools, config = Tools(), scripted(*[search() for _ in range(50)])
    guard = Guard(clock=None)
    reply, text = ask(agent_with(tools, config, [LoopGuard(guard)]))

    assert tools.ran == ["search_docs refund policy"] * 2  # the advised, blocked and halted calls never ran
    bare = Guard(clock=None)
    expected = [step(bare, "search_docs", REFUND, "0 results").message for _ in range(5)]
    assert results(config, 3) == [(expected[2], True)]  # the guard's advice, verbatim, as the call's error result
    assert expected[2].startswith(ADVICE)
    assert results(config, 4) == [(expected[3], True)]
    assert expected[3].startswith(BLOCKED)
    assert len(config.calls) == 5  # not asked again after the halted call: the turn ended with looptrap's reply
    assert text.startswith("Run halted by looptrap (loop_repeat)")
    assert reply.response.metadata["looptrap"]["reason"] == "loop_repeat"
    assert guard.halted is not None


def test_without_the_guard_the_same_script_runs_until_the_model_stops() -> None:
    """AG2's agent loop has no cap: a stuck model is called as long as it asks for tools."""
    tools, config = Tools(), scripted(*[search() for _ in range(50)], "I could not find it.")
    _, text = ask(agent_with(tools, config))
    assert text == "I could not find it."
    assert len(tools.ran) == 50
    assert len(config.calls) == 51


def test_identical_parallel_calls_of_one_response_all_get_the_advice() -> None:
    """After two single searches, a response with three identical ones (AG2 runs them in parallel): all three get
    the advice (none runs); the block comes with the next response, the halt with the one after."""
    tools = Tools()
    config = scripted(search(), search(), [search(), search(), search()], search(), search(), search())
    reply, _ = ask(agent_with(tools, config, [LoopGuard(Guard(clock=None))]))

    advice = results(config, 3)
    assert len(advice) == 3
    assert len(set(advice)) == 1  # the same advice for each call of the turn
    assert advice[0][0].startswith(ADVICE)
    assert advice[0][1]  # an error result
    assert results(config, 4)[0][0].startswith(BLOCKED)
    assert reply.response.metadata["looptrap"]["reason"] == "loop_repeat"
    assert len(config.calls) == 5
    assert tools.ran == ["search_docs refund policy"] * 2


HEALTHY = [
    search(query="test setup"),
    call("edit_file", path="app.py", content="v1"),
    call("run_tests"),
    call("edit_file", path="app.py", content="v2"),
    [search(query="auth"), search(query="tokens"), call("run_tests")],  # parallel calls, in any order
    call("edit_file", path="app.py", content="v3"),
    call("run_tests"),
    "Fixed: all tests pass.",
]


def test_healthy_agent_is_untouched() -> None:
    def go(plugins: list[Any]) -> tuple[Any, ...]:
        tools, config = Tools(), scripted(*HEALTHY)
        _, text = ask(agent_with(tools, config, plugins), "Make the tests pass.")
        seen = [
            [
                ("".join(str(p.content) for p in r.result.parts), isinstance(r, ToolErrorEvent))
                for r in c.args[0].results
            ]
            for c in config.mock.call_args_list[1:]
        ]
        return text, sorted(tools.ran), seen

    plain = go([])
    assert plain[0] == "Fixed: all tests pass."
    assert plain[1].count("run_tests") == 3
    assert go([LoopGuard(Guard(clock=None))]) == plain  # the same answer, tool runs and results the model read


def test_each_ask_is_a_new_task_and_its_message_the_users() -> None:
    guard = Listening()
    agent = agent_with(Tools(), scripted("30 days.", "No exchanges."), [LoopGuard(guard)])

    async def conversation() -> None:
        reply = await agent.ask(QUESTION)
        await reply.ask("And exchanges?")

    asyncio.run(conversation())
    assert guard.heard == [QUESTION, "And exchanges?"]
    assert guard.state.task == 2


def test_a_pool_keeps_one_session_per_conversation() -> None:
    pool = GuardPool(guard_options={"clock": None})
    tools = Tools()
    agent = agent_with(tools, scripted(search(), search(), "none", search(), search(), "none"), [LoopGuard(pool)])

    async def two() -> list[Any]:
        first = await agent.ask(QUESTION)
        second = await agent.ask(QUESTION)
        return [first.context.stream.id, second.context.stream.id]

    ids = asyncio.run(two())
    assert ids[0] != ids[1]
    assert all(str(i) in pool for i in ids)
    assert tools.ran == ["search_docs refund policy"] * 4  # never advised: one shared session would advise


def test_report_blocked_halts_the_run() -> None:
    config = scripted(call("report_blocked", tried=[]), call("report_blocked", tried=["search"], needed="the wiki"))
    guard = Guard(clock=None)
    reply, _ = ask(agent_with(Tools(), config, [LoopGuard(guard)]))
    assert "report_blocked" in [t.function.name for t in config.calls[0].tools]  # the plugin offers it to the model
    assert "'tried' must be a non-empty list" in results(config, 1)[0][0]  # malformed: advice, the run goes on
    assert reply.response.metadata["looptrap"]["reason"] == "reported_blocked"
    assert guard.needed == ["the wiki"]
    plain = scripted("hi")
    ask(agent_with(Tools(), plain, [LoopGuard(Guard(report_tool=None))]))
    assert "report_blocked" not in [t.function.name for t in plain.calls[0].tools]


def test_turns_feed_budgets() -> None:
    tools = Tools()
    config = scripted(*[search(query=f"q{i}") for i in range(10)])
    reply, _ = ask(agent_with(tools, config, [LoopGuard(Guard(clock=None, budgets=Budgets(max_turns=3)))]))
    assert reply.response.metadata["looptrap"]["reason"] == "budget_turns"
    assert len(tools.ran) == 2  # the third response reached the budget as it came: its call did not run


@pytest.mark.parametrize("per_request", [False, True], ids=["agent", "ask"])
def test_the_plugin_on_the_agent_or_on_one_request(per_request: bool) -> None:
    tools, config = Tools(), scripted(*[search() for _ in range(10)])
    loop = LoopGuard(Guard(clock=None))
    agent = agent_with(tools, config, [] if per_request else [loop])
    reply, _ = ask(agent, plugins=[loop] if per_request else [])
    assert reply.response.metadata["looptrap"]["reason"] == "loop_repeat"
    assert len(tools.ran) == 2


# -- a call the user denies (a tool's approval_required middleware) ---------------------------------------------
def test_a_call_the_user_denies_is_their_say_not_a_tool_result() -> None:
    """Two empty searches, an edit the user denies, the same search again: the denial is the user's input (the
    ladder starts over), not a result of the edit tool."""
    from ag2.middleware import approval_required
    from ag2.tools import tool

    tools = Tools()
    search_docs, edit_file, _ = tools.all
    gated = tool(edit_file, middleware=[approval_required()])
    config = scripted(search(), search(), call("edit_file", path="refund.md", content="30 days"), search(), "None.")
    guard = Guard(clock=None)
    agent = Agent("support", config=config, tools=[search_docs, gated], plugins=[LoopGuard(guard)])
    _, text = ask(agent, hitl_hook=lambda event: "n")

    assert text == "None."
    assert results(config, 3) == [("User denied the tool call request", False)]
    assert results(config, 4) == [("0 results", False)]
    assert tools.ran == ["search_docs refund policy"] * 3
    assert guard.state.heard == 3  # the denial: the user's input, as of the edit
    assert [e.tool for e in guard.state.history] == ["search_docs"] * 3  # the edit did not run: no result
