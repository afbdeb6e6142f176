"""Haystack: the real ``Agent`` loop, driven by Haystack's own ``MockChatGenerator`` (a scripted reply per call, no
network), with looptrap's hooks and without them."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

import agent_tools
from agent_tools import ADVICE, BLOCKED, QUESTION, REFUND
from conftest import need
from listening import Listening

need("haystack (pip install 'looptrap[haystack]')", importlib.util.find_spec("haystack") is not None)

from haystack.components.agents import Agent  # noqa: E402
from haystack.components.generators.chat import MockChatGenerator  # noqa: E402
from haystack.dataclasses import ChatMessage, ChatRole, ToolCall  # noqa: E402
from haystack.tools import Tool  # noqa: E402

from looptrap import Budgets, Guard, GuardPool  # noqa: E402
from looptrap.integrations.haystack import LoopGuard  # noqa: E402
from looptrap.testing import step  # noqa: E402


class Tools(agent_tools.Tools):
    """The shared tools, as Haystack ``Tool`` objects."""

    def all(self) -> list[Tool]:
        text = {"type": "string"}
        params = {
            "search_docs": {"query": text},
            "edit_file": {"path": text, "content": text},
            "run_tests": {},
        }
        return [
            Tool(
                name=name,
                description=name.replace("_", " "),
                parameters={"type": "object", "properties": props, "required": list(props)},
                function=getattr(self, name),
            )
            for name, props in params.items()
        ]


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(tool_name=name, arguments=args)


def reply(*calls: ToolCall) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=list(calls), meta={"usage": {"total_tokens": 10}})


class Script:
    """A ``MockChatGenerator`` ``response_fn``: ``respond(turn)`` gives each reply; keeps what the model was sent."""

    def __init__(self, respond: Callable[[int], ChatMessage | str]) -> None:
        self.respond = respond
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: list[ChatMessage]) -> ChatMessage | str:
        self.seen.append(list(messages))
        return self.respond(len(self.seen) - 1)

    def results(self, turn: int) -> list[tuple[str, bool]]:
        """The tool results the model read on its ``turn``-th call (0-based): those new since its previous call."""
        new = self.seen[turn][len(self.seen[turn - 1]) :]
        return [(m.tool_call_result.result, m.tool_call_result.error) for m in new if m.tool_call_result]


@pytest.fixture(params=["run", "run_async"])
def run(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """``agent.run(...)`` or ``await agent.run_async(...)``: these tests run both ways."""

    def go(agent: Agent, text: str = QUESTION, **options: Any) -> dict[str, Any]:
        messages = [ChatMessage.from_user(text)]
        if request.param == "run":
            return agent.run(messages=messages, **options)
        return asyncio.run(agent.run_async(messages=messages, **options))

    return go


def make(tools: Tools, script: Script, loop: LoopGuard | None, **options: Any) -> Agent:
    return Agent(
        chat_generator=MockChatGenerator(response_fn=script),
        tools=tools.all(),
        hooks=None if loop is None else loop.hooks(),
        **options,
    )


def test_stuck_agent_is_advised_blocked_and_halted_well_before_the_cap(run: Callable[..., dict[str, Any]]) -> None:
    tools, script = Tools(), Script(lambda turn: reply(call("search_docs", **REFUND)))
    guard = Guard(clock=None)
    out = run(make(tools, script, LoopGuard(guard)))

    assert tools.ran == ["search_docs refund policy"] * 2  # the advised, blocked and halted calls never ran
    bare = Guard(clock=None)
    expected = [step(bare, "search_docs", REFUND, "0 results").message for _ in range(5)]
    assert script.results(3) == [(expected[2], True)]  # the guard's advice, verbatim, as an error tool result
    assert expected[2].startswith(ADVICE)
    assert script.results(4) == [(expected[3], True)]
    assert expected[3].startswith(BLOCKED)
    assert len(script.seen) == 5  # not asked again after the halted call
    assert out["exit_reason"] == "looptrap:loop_repeat"  # the run stopped through the stop_run state key
    assert out["last_message"].meta["looptrap"]["reason"] == "loop_repeat"
    assert "refund policy" in out["last_message"].text
    assert out["messages"][-2].tool_call_result.result.startswith("Halted (loop_repeat)")
    assert guard.halted is not None


def test_without_the_guard_the_same_script_runs_to_the_cap(run: Callable[..., dict[str, Any]]) -> None:
    tools, script = Tools(), Script(lambda turn: reply(call("search_docs", **REFUND)))
    out = run(make(tools, script, None, max_agent_steps=30))
    assert out["exit_reason"] == "max_agent_steps"
    assert len(tools.ran) == 30
    assert len(script.seen) == 30


def test_identical_parallel_calls_of_one_reply_all_get_the_advice(run: Callable[..., dict[str, Any]]) -> None:
    """After two single searches, a reply with three identical ones: all three get the advice (none runs); the
    block comes with the next reply, the halt with the one after."""
    three = reply(*(call("search_docs", **REFUND) for _ in range(3)))
    tools = Tools()
    script = Script(lambda turn: three if turn == 2 else reply(call("search_docs", **REFUND)))
    out = run(make(tools, script, LoopGuard(Guard(clock=None))))

    advice = script.results(3)
    assert len(advice) == 3
    assert len({a for a, _ in advice}) == 1  # the same advice for each call of the turn
    assert advice[0][0].startswith(ADVICE)
    assert all(error for _, error in advice)
    assert script.results(4)[0][0].startswith(BLOCKED)
    assert out["exit_reason"] == "looptrap:loop_repeat"
    assert len(script.seen) == 5
    assert tools.ran == ["search_docs refund policy"] * 2


def test_allowed_calls_of_a_reply_run_beside_refused_ones(run: Callable[..., dict[str, Any]]) -> None:
    mixed = reply(call("search_docs", **REFUND), call("run_tests"))
    tools = Tools()
    script = Script(lambda turn: mixed if turn == 2 else reply(call("search_docs", **REFUND)) if turn < 2 else "ok")
    out = run(make(tools, script, LoopGuard(Guard(clock=None))))
    assert out["exit_reason"] == "text"
    assert tools.ran == ["search_docs refund policy"] * 2 + ["run_tests"]
    results = script.results(3)
    assert results[0][0].startswith(ADVICE)
    assert results[1] == ("3 failed", False)
    # every call the model made is in the history, each followed by its result (as ConfirmationHook leaves it)
    calls = [c.id or c.tool_name for m in out["messages"] for c in m.tool_calls]
    answered = [
        m.tool_call_result.origin.id or m.tool_call_result.origin.tool_name
        for m in out["messages"]
        if m.tool_call_result
    ]
    assert calls == answered


HEALTHY = [
    reply(call("search_docs", query="test setup")),
    reply(call("edit_file", path="app.py", content="v1")),
    reply(call("run_tests")),
    reply(call("edit_file", path="app.py", content="v2")),
    reply(call("run_tests")),
    reply(call("edit_file", path="app.py", content="v3")),
    reply(call("run_tests")),
    ChatMessage.from_assistant("Fixed: all tests pass."),
]


def test_healthy_agent_is_untouched(run: Callable[..., dict[str, Any]]) -> None:
    def go(loop: LoopGuard | None) -> tuple[Any, ...]:
        tools, script = Tools(), Script(lambda turn: HEALTHY[turn])
        out = run(make(tools, script, loop), "Make the tests pass.")
        flat = [
            (m.role, m.text, [c.tool_name for c in m.tool_calls], m.tool_call_result and m.tool_call_result.result)
            for m in out["messages"]
        ]
        return out["exit_reason"], out["step_count"], flat, tools.ran

    plain = go(None)
    assert plain[0] == "text"
    assert plain[3][-1] == "run_tests"
    assert go(LoopGuard(Guard(clock=None))) == plain


def test_each_run_is_a_new_task_and_its_user_messages_the_users(run: Callable[..., dict[str, Any]]) -> None:
    guard = Listening()
    agent = make(Tools(), Script(lambda turn: "30 days."), LoopGuard(guard))
    run(agent, QUESTION)
    run(agent, "And exchanges?")
    assert guard.heard == [QUESTION, "And exchanges?"]
    assert guard.state.task == 2


def test_a_pool_gives_each_run_its_own_session_or_the_one_named(run: Callable[..., dict[str, Any]]) -> None:
    pool = GuardPool(guard_options={"clock": None})
    tools = Tools()
    script = Script(lambda turn: reply(call("search_docs", **REFUND)) if turn % 3 < 2 else "none found")
    agent = make(tools, script, LoopGuard(pool))
    for _ in range(2):  # two runs of two searches: never advised, each run is its own session
        assert run(agent)["exit_reason"] == "text"
    assert tools.ran == ["search_docs refund policy"] * 4
    run(agent, hook_context={"looptrap_session": "conversation-42"})
    assert "conversation-42" in pool
    assert pool.get("conversation-42").state.task == 1


def test_report_blocked_halts_the_run(run: Callable[..., dict[str, Any]]) -> None:
    loop, guard = None, Guard(clock=None)
    loop = LoopGuard(guard)
    script = Script(
        lambda turn: (
            reply(call("report_blocked", tried=[]))
            if turn == 0
            else reply(call("report_blocked", tried=["search_docs"], needed="the billing wiki"))
        )
    )
    tools = Tools()
    assert loop.report_tool is not None
    agent = Agent(
        chat_generator=MockChatGenerator(response_fn=script), tools=[*tools.all(), loop.report_tool], hooks=loop.hooks()
    )
    out = run(agent)
    assert "'tried' must be a non-empty list" in script.results(1)[0][0]  # malformed: advice, the run goes on
    assert out["exit_reason"] == "looptrap:reported_blocked"
    assert guard.needed == ["the billing wiki"]
    assert LoopGuard(Guard(report_tool=None)).report_tool is None


def test_turns_feed_budgets(run: Callable[..., dict[str, Any]]) -> None:
    tools = Tools()
    script = Script(lambda turn: reply(call("search_docs", query=f"q{turn}")))
    guard = Guard(clock=None, budgets=Budgets(max_turns=3, max_tokens=1_000))
    out = run(make(tools, script, LoopGuard(guard, final_message=False)))
    assert out["exit_reason"] == "looptrap:budget_turns"
    assert len(tools.ran) == 2  # the third reply reached the budget as it came: its call did not run
    assert guard.state.tokens == 30  # each reply's usage
    assert out["last_message"].role == ChatRole.TOOL  # no final message asked for


# -- a call the user rejects (Haystack's ConfirmationHook, after looptrap's hooks) ------------------------------
class Reviewer:
    """The confirmation UI's human: rejects every call it is asked about (without feedback)."""

    def get_user_confirmation(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> Any:
        from haystack.hooks.human_in_the_loop import ConfirmationUIResult

        return ConfirmationUIResult(action="reject")

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tests.Reviewer", "init_parameters": {}}


def test_a_call_the_user_rejects_is_their_say_not_a_tool_error(run: Callable[..., dict[str, Any]]) -> None:
    """Two empty searches, an edit the user rejects, the same search again: the rejection is the user's input (the
    ladder starts over), so the third search runs."""
    from haystack.hooks.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy, ConfirmationHook

    review = ConfirmationHook(
        confirmation_strategies={
            "edit_file": BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=Reviewer())
        }
    )
    replies = [call("search_docs", **REFUND)] * 2 + [call("edit_file", path="refund.md", content="30 days")]
    replies += [call("search_docs", **REFUND)]
    tools = Tools()
    script = Script(lambda turn: reply(replies[turn]) if turn < len(replies) else "Nothing on refunds.")
    guard = Guard(clock=None)
    loop = LoopGuard(guard)
    agent = Agent(
        chat_generator=MockChatGenerator(response_fn=script),
        tools=tools.all(),
        hooks=loop.hooks({"before_tool": [review]}),
    )
    out = run(agent)

    assert out["messages"][-1].text == "Nothing on refunds."
    assert script.results(3) == [("Tool execution for 'edit_file' was rejected by the user.", True)]
    assert script.results(4) == [("0 results", False)]
    assert tools.ran == ["search_docs refund policy"] * 3
    assert guard.state.heard == 3  # the rejection: the user's input, as of the edit
    assert [e.tool for e in guard.state.history] == ["search_docs"] * 3  # the edit did not run: no result
