"""looptrap.chaos with real framework agents driven by their own scripted models: LangChain's ``create_agent``
(LangChain's fake chat model), the OpenAI Agents SDK's ``Runner`` (its ``agents.testing.ScriptedModel``),
and an MCP server behind the chaos relay (Pydantic AI: tests/test_chaos_pydantic_ai.py). Under each fault
the stuck agent hits the ceiling without the guard and stops early with the right reason with it."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import need
from looptrap import Budgets, Guard
from looptrap.chaos import ALL, Chaos, Empty, Error, Fault, Report, Retryable, RetryInside, Slow, Timeout, run

ran: Counter[str] = Counter()
CEILING = 12


def guard() -> Guard:
    """The guard of these runs: the defaults, and a tool-call budget as the last line."""
    return Guard(clock=None, budgets=Budgets(max_tool_calls=8))


#: The stop reason each fault gets with the guard, for an agent that repeats one call whatever comes back.
REASON = {f.name: "loop_repeat" for f in ALL}
REASON["contradict"] = "budget_tool_calls"  # no detector catches a flip-flop between two answers: the budget does
REASON["malformed"] = "budget_tool_calls"  # the garbage differs from call to call: a plain repeat comes late


def check_pair(bare: Report, guarded: Report, fault: Fault) -> None:
    assert (bare.outcome, bare.reason, bare.ran) == ("ceiling", "max_calls", CEILING), (fault.name, bare.summary())
    assert (guarded.outcome, guarded.reason) == ("halted", REASON[fault.name]), (fault.name, guarded.summary())
    assert guarded.ran <= 8 < CEILING


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


# -- LangChain ---------------------------------------------------------------------------------------
def langchain_parts() -> Any:
    need("langchain (pip install 'looptrap[langchain]')", importlib.util.find_spec("langchain") is not None)
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.tools import BaseTool, tool
    from pydantic import Field

    from looptrap.integrations.langchain import LooptrapMiddleware

    class ScriptedModel(GenericFakeChatModel):
        """LangChain's fake chat model, scripted with AIMessages; it keeps every input it got."""

        seen: list[list[BaseMessage]] = Field(default_factory=list)

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
            return self

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            self.seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    @tool
    def search_docs(query: str) -> str:
        """Search the documentation."""
        ran["search_docs"] += 1
        return "3 results: refunds within 30 days"

    @tool
    async def asearch_docs(query: str) -> str:
        """Search the documentation."""
        ran["asearch_docs"] += 1
        return "3 results: refunds within 30 days"

    class Lookup(BaseTool):  # a hand-written BaseTool, not a function
        name: str = "lookup"
        description: str = "Look a record up."

        def _run(self, key: str, run_manager: Any = None) -> str:
            ran["lookup"] += 1
            return f"{key}: found"

    def stuck(name: str, args: dict[str, Any], n: int = 60) -> ScriptedModel:
        replies = [
            AIMessage("", tool_calls=[{"name": name, "args": dict(args), "id": f"c{i}", "type": "tool_call"}])
            for i in range(n)
        ]
        return ScriptedModel(messages=iter(replies))

    def agent(tools: list[Any], guard: Guard | None, mode: str = "sync") -> Any:
        name = tools[0].name
        model = stuck(name, {"key": "k"} if name == "lookup" else {"query": "refund policy"})
        graph = create_agent(model, tools, middleware=[LooptrapMiddleware(guard)] if guard else [])
        inp = {"messages": [("user", "What is the refund policy?")]}
        if mode == "async":
            return asyncio.run(graph.ainvoke(inp))
        return graph.invoke(inp)

    return agent, search_docs, asearch_docs, Lookup(), ToolMessage, stuck, create_agent


@pytest.mark.parametrize("fault", ALL, ids=lambda f: f.name)
def test_langchain_agent_under_each_fault(fault: Fault) -> None:
    agent, search_docs, *_ = langchain_parts()
    bare = run(agent, [search_docs], fault, max_calls=CEILING)
    guarded = run(agent, [search_docs], fault, guard=guard, max_calls=CEILING)
    check_pair(bare, guarded, fault)
    assert guarded.first_intervention is not None


@pytest.mark.parametrize("fault", [Empty(), Slow(seconds=0.001), RetryInside()], ids=lambda f: f.name)
def test_langchain_async_agent_and_async_tool(fault: Fault) -> None:
    agent, _, asearch_docs, *_ = langchain_parts()

    def async_agent(tools: list[Any], guard: Guard | None) -> Any:
        return agent(tools, guard, mode="async")

    bare = run(async_agent, [asearch_docs], fault, max_calls=CEILING)
    guarded = run(async_agent, [asearch_docs], fault, guard=guard, max_calls=CEILING)
    check_pair(bare, guarded, fault)
    assert ran["asearch_docs"] == (0 if fault.name == "empty" else (bare.attempts + guarded.attempts))


def test_langchain_errors_reach_the_model_as_error_tool_messages() -> None:
    _, search_docs, _, _, ToolMessage, stuck, create_agent = langchain_parts()
    tool = Chaos(Error("400 Bad Request: unknown index")).wrap(search_docs)
    assert tool is not search_docs
    assert search_docs.handle_tool_error in (None, False)  # the original is left as it is
    model = stuck("search_docs", {"query": "refund policy"}, n=2)
    from langchain_core.messages import AIMessage

    model.messages = iter([*model.messages, AIMessage("It failed.")])
    out = create_agent(model, [tool]).invoke({"messages": [("user", "refunds?")]})
    answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [(m.status, m.content) for m in answers] == [("error", "400 Bad Request: unknown index")] * 2
    assert out["messages"][-1].content == "It failed."
    assert ran["search_docs"] == 0


def test_langchain_hand_written_base_tool() -> None:
    agent, _, _, lookup, *_ = langchain_parts()
    chaos = Chaos(Retryable(when={2}))
    wrapped = chaos.wrap(lookup)
    assert (wrapped.name, type(wrapped).__mro__[1]) == ("lookup", type(lookup))
    assert wrapped.invoke({"key": "a"}) == "a: found"
    assert wrapped.invoke({"key": "a"}).startswith("503 Service Unavailable")  # a handled ToolException
    assert [(r.args, r.result_kind) for r in chaos.log] == [({"key": "a"}, "ok"), ({"key": "a"}, "retryable")]
    bare = run(agent, [lookup], Empty(), max_calls=CEILING)
    guarded = run(agent, [lookup], Empty(), guard=guard, max_calls=CEILING)
    check_pair(bare, guarded, Empty())


def test_seeded_schedules_reproduce_a_langchain_run() -> None:
    agent, search_docs, *_ = langchain_parts()
    runs = [run(agent, [search_docs], Retryable(when=0.5), seed=s, max_calls=CEILING) for s in (3, 3, 4)]
    kinds = [[r.result_kind for r in rep.log] for rep in runs]
    assert kinds[0] == kinds[1] != kinds[2]
    assert "retryable" in kinds[0]
    assert "ok" in kinds[0]


# -- OpenAI Agents SDK --------------------------------------------------------------------------------
def openai_agents_parts() -> Any:
    need("openai-agents (pip install 'looptrap[openai-agents]')", importlib.util.find_spec("agents") is not None)
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from looptrap.integrations.openai_agents import guard_agent

    @function_tool
    def search_docs(query: str) -> str:
        """Search the documentation."""
        ran["search_docs"] += 1
        return "3 results: refunds within 30 days"

    def script(n: int = 60, then: str | None = None) -> ScriptedModel:
        steps: list[Any] = [
            [function_call("search_docs", {"query": "refund policy"}, call_id=f"c{i}")] for i in range(n)
        ]
        if then is not None:
            steps.append([assistant_message(then)])
        return ScriptedModel(steps)

    def make(tools: list[Any], guard: Guard | None, model: ScriptedModel) -> Any:
        agent = Agent(name="support", model=model, tools=tools)
        return guard_agent(agent, guard) if guard is not None else agent

    config = RunConfig(tracing_disabled=True)

    def agent(tools: list[Any], guard: Guard | None) -> Any:
        return Runner.run_sync(
            make(tools, guard, script()), "What is the refund policy?", run_config=config, max_turns=100
        )

    async def async_agent(tools: list[Any], guard: Guard | None) -> Any:
        return await Runner.run(make(tools, guard, script()), "Refunds?", run_config=config, max_turns=100)

    return agent, async_agent, search_docs, script, make, Runner, config


@pytest.mark.parametrize("fault", ALL, ids=lambda f: f.name)
def test_openai_agents_agent_under_each_fault(fault: Fault, own_event_loop: None) -> None:
    agent, _, search_docs, *_ = openai_agents_parts()
    bare = run(agent, [search_docs], fault, max_calls=CEILING)
    guarded = run(agent, [search_docs], fault, guard=guard, max_calls=CEILING)
    check_pair(bare, guarded, fault)


@pytest.mark.parametrize("fault", [Empty(), Retryable(), RetryInside()], ids=lambda f: f.name)
def test_openai_agents_async_runner(fault: Fault) -> None:
    _, async_agent, search_docs, *_ = openai_agents_parts()
    bare = run(async_agent, [search_docs], fault, max_calls=CEILING)
    guarded = run(async_agent, [search_docs], fault, guard=guard, max_calls=CEILING)
    check_pair(bare, guarded, fault)


def test_openai_agents_errors_reach_the_model_through_the_failure_function(own_event_loop: None) -> None:
    _, _, search_docs, script, make, Runner, config = openai_agents_parts()
    model = script(n=2, then="It failed.")
    tool = Chaos(Retryable()).wrap(search_docs)
    assert tool is not search_docs
    result = Runner.run_sync(make([tool], None, model), "Refunds?", run_config=config)
    assert result.final_output == "It failed."
    outputs = [
        i["output"] for i in model.calls[2].input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert outputs == ["An error occurred while running the tool. Please try again."] * 2  # the SDK's fixed text
    assert ran["search_docs"] == 0


# -- MCP, behind the chaos relay -----------------------------------------------------------------------
def test_mcp_tools_behind_the_chaos_relay(tmp_path: Path) -> None:
    need("the mcp package (pip install 'looptrap[mcp]')", importlib.util.find_spec("mcp") is not None)
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    upstream = [sys.executable, str(Path(__file__).parent / "mcp_upstream.py")]
    log = tmp_path / "calls.jsonl"
    relay = [sys.executable, "-m", "looptrap.chaos.mcp", "--fault", "empty@search_docs", "--fault", "flaky@echo"]
    proxy = [sys.executable, "-m", "looptrap", "mcp-proxy", "--", *relay, "--log", str(log), "--", *upstream]

    async def session() -> list[Any]:
        params = StdioServerParameters(command=proxy[0], args=proxy[1:], env=dict(os.environ))
        out: list[Any] = []
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                for text in ("a", "b", "c"):  # flaky fails twice, then works
                    r = await s.call_tool("echo", {"text": text})
                    out.append((r.is_error, r.content[0].text))
                for _ in range(3):
                    r = await s.call_tool("search_docs", {"query": "refund policy"})
                    out.append((r.is_error, r.content[0].text))
        return out

    got = anyio.run(session)
    assert got[:3] == [
        (True, "502 Bad Gateway: the backend did not answer, try again."),
        (True, "502 Bad Gateway: the backend did not answer, try again."),
        (False, "c"),  # the third call reaches the real server
    ]
    assert got[3:5] == [(False, "[]")] * 2  # the relay's empty result, through looptrap's guard
    assert got[5][0] is True
    assert got[5][1].startswith("You have called search_docs with these exact arguments 3 times")
    import json

    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["tool"], r["result_kind"], r["fault"]) for r in rows] == [
        ("echo", "retryable", "flaky"),
        ("echo", "retryable", "flaky"),
        ("echo", "ok", "flaky"),
        ("search_docs", "empty", "empty"),
        ("search_docs", "empty", "empty"),  # the third never reached the relay: the guard advised it
    ]


def test_openai_agents_tool_deadline_cuts_a_sleeping_timeout(own_event_loop: None) -> None:
    """``Timeout(sleep=...)`` sleeps past the tool's own deadline (``timeout=`` of ``function_tool``): the SDK
    cancels the call and tells the model it timed out; the log row says ``timeout``."""
    need("openai-agents (pip install 'looptrap[openai-agents]')", importlib.util.find_spec("agents") is not None)
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    @function_tool(timeout=0.05)
    async def search_docs(query: str) -> str:
        """Search the documentation."""
        ran["search_docs"] += 1
        return "3 results"

    model = ScriptedModel([[function_call("search_docs", {"query": "q"}, call_id="c1")], [assistant_message("ok")]])
    chaos = Chaos(Timeout(sleep=5.0, raises=False))
    agent = Agent(name="support", model=model, tools=[chaos.wrap(search_docs)])
    started = time.perf_counter()
    Runner.run_sync(agent, "q?", run_config=RunConfig(tracing_disabled=True))
    assert time.perf_counter() - started < 3
    outputs = [
        i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert outputs == ["Tool 'search_docs' timed out after 0.05 seconds."]
    assert [r.result_kind for r in chaos.log] == ["timeout"]
    assert ran["search_docs"] == 0
