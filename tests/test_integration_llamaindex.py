"""LlamaIndex: the real ``FunctionAgent`` workflow, driven by LlamaIndex's own ``MockFunctionCallingLLM`` (a
scripted response per call, no network), with looptrap (``GuardedFunctionAgent``) and without it."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

from agent_tools import ADVICE, BLOCKED, QUESTION, REFUND, Tools
from conftest import need
from listening import Listening

need("llama-index-core (pip install 'looptrap[llamaindex]')", importlib.util.find_spec("llama_index") is not None)

from llama_index.core.agent.workflow import AgentOutput, FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ToolCallBlock  # noqa: E402
from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.workflow import Context  # noqa: E402
from llama_index.core.workflow.errors import WorkflowRuntimeError  # noqa: E402

from looptrap import Budgets, Guard, GuardPool  # noqa: E402
from looptrap.integrations.llamaindex import GuardedFunctionAgent  # noqa: E402
from looptrap.testing import step  # noqa: E402

T = TypeVar("T")
# LlamaIndex's own warnings, for a FunctionAgent as for ours: the workflows runtime lists an agent's members with
# inspect.getmembers (which reads pydantic's deprecated attributes), and a run on a Context it keeps warns that the
# chat memory is not serializable.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning"),
    pytest.mark.filterwarnings("ignore::workflows.context.state_store.UnserializableKeyWarning"),
]


def calls(*named: tuple[str, dict[str, Any]]) -> ChatMessage:
    """A response with tool calls (several: parallel calls of one turn)."""
    blocks = [ToolCallBlock(tool_call_id=f"call-{i}", tool_name=n, tool_kwargs=a) for i, (n, a) in enumerate(named)]
    return ChatMessage(role="assistant", blocks=blocks)  # type: ignore[arg-type]


def search(**args: Any) -> ChatMessage:
    return calls(("search_docs", args or REFUND))


class Script:
    """The mock LLM's response generator: ``respond(turn)`` gives each response; keeps what the model was sent."""

    def __init__(self, respond: Callable[[int], ChatMessage]) -> None:
        self.respond = respond
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        return self.respond(len(self.seen) - 1)

    def llm(self) -> MockFunctionCallingLLM:
        return MockFunctionCallingLLM(response_generator=self)

    def results(self, turn: int) -> list[tuple[str, bool]]:
        """The tool results the model read on its ``turn``-th call (0-based): those after its last response."""
        out: list[str] = []
        for m in reversed(self.seen[turn]):
            if m.role != "tool":
                break
            out.append(str(m.content))
        return [(text, True) for text in reversed(out)]


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def ask(agent: FunctionAgent, text: str = QUESTION) -> Any:
    """``await agent.run(user_msg=text)`` in an event loop of its own."""

    async def go() -> Any:
        return await agent.run(user_msg=text)

    return run(go())


@pytest.fixture(params=[False, True], ids=["chat", "streaming"])
def streaming(request: pytest.FixtureRequest) -> bool:
    """The agent calls the model with ``achat_with_tools`` or ``astream_chat_with_tools``: both are guarded."""
    return bool(request.param)


def test_stuck_agent_is_advised_blocked_and_halted_well_before_the_cap(streaming: bool) -> None:
    tools, script = Tools(), Script(lambda turn: search())
    guard = Guard(clock=None)
    agent = GuardedFunctionAgent(tools=tools.all(), llm=script.llm(), streaming=streaming, guard=guard)
    out = ask(agent)

    assert isinstance(out, AgentOutput)
    assert tools.ran == ["search_docs refund policy"] * 2  # the advised, blocked and halted calls never ran
    bare = Guard(clock=None)
    expected = [step(bare, "search_docs", REFUND, "0 results").message for _ in range(5)]
    assert [t for t, _ in script.results(3)] == [expected[2]]  # the guard's advice, verbatim, as the tool result
    assert expected[2].startswith(ADVICE)
    assert script.results(4)[0][0].startswith(BLOCKED)
    assert len(script.seen) == 5  # the model was not asked again after the halted call
    assert out.tool_calls[-1].tool_name == "search_docs"  # the run's calls, as after any answer
    meta = out.response.additional_kwargs["looptrap"]
    assert meta["reason"] == "loop_repeat"
    assert "refund policy" in str(out.response.content)
    assert guard.halted is not None


def test_halted_call_results_are_error_tool_outputs() -> None:
    tools, script = Tools(), Script(lambda turn: search())
    agent = GuardedFunctionAgent(tools=tools.all(), llm=script.llm(), streaming=False, guard=Guard(clock=None))

    async def go() -> list[Any]:
        handler = agent.run(user_msg=QUESTION)
        results = [ev.tool_output for ev in [e async for e in handler.stream_events()] if hasattr(ev, "tool_output")]
        await handler
        return results

    outputs = run(go())
    assert [o.is_error for o in outputs] == [False, False, True, True, True]
    assert outputs[4].content.startswith("Halted (loop_repeat)")


def test_without_the_guard_the_same_script_runs_to_the_cap(streaming: bool) -> None:
    tools, script = Tools(), Script(lambda turn: search())
    agent = FunctionAgent(tools=tools.all(), llm=script.llm(), streaming=streaming)
    with pytest.raises(WorkflowRuntimeError, match="Max iterations of 20"):
        ask(agent)
    assert len(script.seen) == 20
    assert len(tools.ran) == 19


def test_identical_parallel_calls_of_one_response_all_get_the_advice(streaming: bool) -> None:
    """After two single searches, a response with three identical ones: all three get the advice (none runs); the
    block comes with the next response, the halt with the one after."""
    three = calls(*[("search_docs", REFUND)] * 3)
    tools, script = Tools(), Script(lambda turn: three if turn == 2 else search())
    agent = GuardedFunctionAgent(tools=tools.all(), llm=script.llm(), streaming=streaming, guard=Guard(clock=None))
    out = ask(agent)

    advice = [t for t, _ in script.results(3)]
    assert len(advice) == 3
    assert len(set(advice)) == 1  # the same advice for each call of the turn
    assert advice[0].startswith(ADVICE)
    assert script.results(4)[0][0].startswith(BLOCKED)
    assert out.response.additional_kwargs["looptrap"]["reason"] == "loop_repeat"
    assert len(script.seen) == 5
    assert tools.ran == ["search_docs refund policy"] * 2


HEALTHY = [
    search(query="test setup"),
    calls(("edit_file", {"path": "app.py", "content": "v1"})),
    calls(("run_tests", {})),
    calls(("edit_file", {"path": "app.py", "content": "v2"}), ("run_tests", {})),
    calls(("edit_file", {"path": "app.py", "content": "v3"})),
    calls(("run_tests", {})),
    ChatMessage(role="assistant", content="Fixed: all tests pass."),
]


def test_healthy_agent_is_untouched(streaming: bool) -> None:
    def go(guarded: bool) -> tuple[Any, ...]:
        tools, script = Tools(), Script(lambda turn: HEALTHY[turn])
        if guarded:
            guard = Guard(clock=None, report_tool=None)
            agent: FunctionAgent = GuardedFunctionAgent(
                tools=tools.all(), llm=script.llm(), streaming=streaming, guard=guard
            )
        else:
            agent = FunctionAgent(tools=tools.all(), llm=script.llm(), streaming=streaming)
        out = ask(agent, "Make the tests pass.")
        sent = [[(m.role, str(m.content)) for m in seen] for seen in script.seen]
        return out.response.content, tools.ran, sent

    plain = go(False)
    assert plain[0] == "Fixed: all tests pass."
    assert plain[1][-1] == "run_tests"
    assert go(True) == plain  # the same answer, tool runs and every model input


def test_runs_on_one_context_are_one_conversation_of_new_tasks() -> None:
    guard = Listening()
    script = Script(lambda turn: ChatMessage(role="assistant", content="30 days."))
    agent = GuardedFunctionAgent(tools=Tools().all(), llm=script.llm(), streaming=False, guard=guard)

    async def conversation() -> None:
        ctx = Context(agent)
        await agent.run(user_msg=QUESTION, ctx=ctx)
        await agent.run(user_msg="And exchanges?", ctx=ctx)

    run(conversation())
    assert guard.heard == [QUESTION, "And exchanges?"]
    assert guard.state.task == 2


def test_a_pool_keeps_one_session_per_context() -> None:
    pool = GuardPool(guard_options={"clock": None})
    tools = Tools()
    script = Script(lambda turn: search() if turn % 3 < 2 else ChatMessage(role="assistant", content="none found"))
    agent = GuardedFunctionAgent(tools=tools.all(), llm=script.llm(), streaming=False, guard=pool)

    async def two() -> list[str]:
        sessions = []
        for _ in range(2):
            ctx = Context(agent)
            await agent.run(user_msg=QUESTION, ctx=ctx)
            sessions.append(await ctx.store.get("looptrap_session"))
        return sessions

    first, second = run(two())
    assert first != second
    assert first in pool
    assert second in pool
    assert tools.ran == ["search_docs refund policy"] * 4  # never advised: one shared session would advise


def test_report_blocked_halts_the_run() -> None:
    script = Script(
        lambda turn: (
            calls(("report_blocked", {"tried": []}))
            if turn == 0
            else calls(("report_blocked", {"tried": ["search_docs"], "needed": "the billing wiki"}))
        )
    )
    guard = Guard(clock=None)
    agent = GuardedFunctionAgent(tools=Tools().all(), llm=script.llm(), streaming=False, guard=guard)
    out = ask(agent)
    assert "report_blocked" in [t.metadata.name for t in agent.tools or []]
    assert "'tried' must be a non-empty list" in script.results(1)[0][0]  # malformed: advice, the run goes on
    assert out.response.additional_kwargs["looptrap"]["reason"] == "reported_blocked"
    assert guard.needed == ["the billing wiki"]
    plain = GuardedFunctionAgent(tools=Tools().all(), llm=script.llm(), guard=Guard(report_tool=None))
    assert "report_blocked" not in [t.metadata.name for t in plain.tools or []]
    with pytest.raises(TypeError, match="Guard or a GuardPool"):
        GuardedFunctionAgent(tools=[], llm=script.llm(), guard="nope")


def test_turns_feed_budgets() -> None:
    tools = Tools()
    script = Script(lambda turn: search(query=f"q{turn}"))
    guard = Guard(clock=None, budgets=Budgets(max_turns=3))
    agent = GuardedFunctionAgent(tools=tools.all(), llm=script.llm(), streaming=False, guard=guard)
    out = ask(agent)
    assert out.response.additional_kwargs["looptrap"]["reason"] == "budget_turns"
    assert len(tools.ran) == 2  # the third response reached the budget as it came: its call did not run


def test_the_model_reads_advice_and_blocks_as_failed_calls(streaming: bool) -> None:
    """``FunctionAgent`` builds the tool message from the output's blocks alone: the agent marks the refused calls'
    messages ``is_error`` (what the LLM adapters read), and only theirs."""
    tools, script = Tools(), Script(lambda turn: search())
    agent = GuardedFunctionAgent(tools=tools.all(), llm=script.llm(), streaming=streaming, guard=Guard(clock=None))
    ask(agent)

    tool_messages = [m for m in script.seen[4] if m.role == "tool"]  # what the model read before its 5th response
    assert [str(m.content)[:8] for m in tool_messages] == ["0 result", "0 result", ADVICE[:8], BLOCKED[:8]]
    assert [m.additional_kwargs.get("is_error") for m in tool_messages] == [None, None, True, True]
    assert [m.additional_kwargs["tool_call_id"] for m in tool_messages] == ["call-0"] * 4
