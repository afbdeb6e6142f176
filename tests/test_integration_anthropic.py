"""The Anthropic SDK integration: real ``Anthropic`` / ``AsyncAnthropic`` clients talking to a scripted model
through an ``httpx2.MockTransport`` (no network). A hand-written Messages loop and the SDK's own tool runner
(``client.beta.messages.tool_runner`` with ``@beta_tool``); the assertions read the request bodies sent."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

from conftest import need
from listening import Listening
from scripted_steps import ADVICE, BLOCK, QUESTION, Script, adapting, healthy, reporting, stubborn
from scripted_steps import Tools as ScriptedTools

need("anthropic (pip install 'looptrap[anthropic]')", importlib.util.find_spec("anthropic") is not None)

import anthropic  # noqa: E402
import httpx2  # noqa: E402
from anthropic import beta_async_tool, beta_tool  # noqa: E402
from anthropic.types import ToolResultBlockParam  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from looptrap import Budgets, Guard, GuardPool, LoopHalted  # noqa: E402
from looptrap.integrations.anthropic import GuardedTools, report_blocked_tool_param, tool_runner  # noqa: E402


class Tools(ScriptedTools):
    """The shared tools, also as the SDK's ``@beta_tool`` functions."""

    def beta_tools(self) -> list[Any]:
        """The same tools as the SDK's ``@beta_tool`` functions."""

        @beta_tool
        def search_docs(query: str) -> str:
            """Search the documentation."""
            return self.search_docs(query)

        @beta_tool
        def edit_file(path: str, content: str) -> str:
            """Write a file."""
            return self.edit_file(path, content)

        @beta_tool
        def run_tests() -> str:
            """Run the test suite."""
            return self.run_tests()

        return [search_docs, edit_file, run_tests]


# -- the scripted model ------------------------------------------------------------------------------------
class FakeAnthropic:
    """The Messages API for one scripted model, recording every request body."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        n = len(self.requests)
        step = self.script(n, _last_result(body))
        if isinstance(step, str):
            content: list[dict[str, Any]] = [{"type": "text", "text": step}]
        else:
            content = [{"type": "tool_use", "id": f"toolu_{n}", "name": step[0], "input": step[1]}]
        reply = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": "end_turn" if isinstance(step, str) else "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return httpx2.Response(200, json=reply)

    def client(self) -> anthropic.Anthropic:
        transport = httpx2.MockTransport(self.handle)
        return anthropic.Anthropic(api_key="test", max_retries=0, http_client=httpx2.Client(transport=transport))

    def async_client(self) -> anthropic.AsyncAnthropic:
        transport = httpx2.MockTransport(self.handle)
        http = httpx2.AsyncClient(transport=transport)
        return anthropic.AsyncAnthropic(api_key="test", max_retries=0, http_client=http)

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result block each request ended with (the first request has none)."""
        return [r["messages"][-1]["content"][-1] for r in self.requests[1:]]


def _last_result(body: dict[str, Any]) -> str:
    last = body["messages"][-1]
    if last["role"] == "user" and isinstance(last["content"], list) and last["content"]:
        block = last["content"][-1]
        if block.get("type") == "tool_result":
            return str(block.get("content"))
    return ""


TOOL_DEFS: Any = [
    {"name": name, "description": name, "input_schema": {"type": "object"}}
    for name in ("search_docs", "edit_file", "run_tests")
] + [report_blocked_tool_param()]


def assert_param(typed_dict: Any, value: dict[str, Any]) -> None:
    """``value`` is a valid instance of the SDK's request type (no unknown keys, the right types)."""
    assert set(value) <= typed_dict.__required_keys__ | typed_dict.__optional_keys__
    assert typed_dict.__required_keys__ <= set(value)
    TypeAdapter(typed_dict).validate_python(value)


# -- a hand-written loop -------------------------------------------------------------------------------------
def messages_loop(client: anthropic.Anthropic, tools: Tools, guarded: GuardedTools | None) -> str:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(10):
        reply = client.messages.create(model="claude-test", max_tokens=1024, messages=messages, tools=TOOL_DEFS)
        if reply.stop_reason != "tool_use":
            return "".join(b.text for b in reply.content if b.type == "text")
        messages.append({"role": "assistant", "content": reply.content})
        if guarded is not None:
            messages.append({"role": "user", "content": guarded.tool_results(reply)})
        else:  # the same loop without looptrap
            fns = tools.functions()
            results = [
                {"type": "tool_result", "tool_use_id": b.id, "content": fns[b.name](**b.input), "is_error": False}
                for b in reply.content
                if b.type == "tool_use"
            ]
            messages.append({"role": "user", "content": results})
    raise AssertionError("the loop did not end")


async def amessages_loop(client: anthropic.AsyncAnthropic, guarded: GuardedTools) -> str:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(10):
        reply = await client.messages.create(model="claude-test", max_tokens=1024, messages=messages, tools=TOOL_DEFS)
        if reply.stop_reason != "tool_use":
            return "".join(b.text for b in reply.content if b.type == "text")
        messages.append({"role": "assistant", "content": reply.content})
        messages.append({"role": "user", "content": await guarded.atool_results(reply.content)})
    raise AssertionError("the loop did not end")


def test_messages_loop_advice_block_halt() -> None:
    api, tools = FakeAnthropic(stubborn), Tools()
    with pytest.raises(LoopHalted) as halted:
        messages_loop(api.client(), tools, GuardedTools(tools.functions(), guard=Guard(clock=None)))
    assert halted.value.reason == "loop_repeat"
    assert "search_docs" in halted.value.summary
    assert tools.ran == {"search_docs": 2}
    assert len(api.requests) == 5  # the halt ended the run before a 6th request
    assert api.tool_results() == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "0 results", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "0 results", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": ADVICE, "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_4", "content": BLOCK, "is_error": True},
    ]
    for block in api.tool_results():
        assert_param(ToolResultBlockParam, block)


def test_messages_loop_changes_course_after_advice() -> None:
    api, tools = FakeAnthropic(adapting), Tools()
    answer = messages_loop(api.client(), tools, GuardedTools(tools.functions(), guard=Guard(clock=None)))
    assert answer == "Refunds are accepted within 30 days."
    assert [(b["content"], b["is_error"]) for b in api.tool_results()] == [
        ("0 results", False),
        ("0 results", False),
        (ADVICE, True),
        ("Refunds within 30 days.", False),
    ]
    assert tools.ran == {"search_docs": 3}


def test_messages_loop_healthy_run_is_untouched() -> None:
    plain_api, plain_tools = FakeAnthropic(healthy), Tools()
    plain = messages_loop(plain_api.client(), plain_tools, None)
    api, tools = FakeAnthropic(healthy), Tools()
    guarded = messages_loop(api.client(), tools, GuardedTools(tools.functions(), guard=Guard(clock=None)))
    assert guarded == plain == "Fixed: the tests pass."
    assert api.requests == plain_api.requests
    assert tools.ran == plain_tools.ran == {"edit_file": 3, "run_tests": 3}


def test_messages_loop_async_like_sync() -> None:
    sync_api, sync_tools = FakeAnthropic(stubborn), Tools()
    with pytest.raises(LoopHalted):
        messages_loop(sync_api.client(), sync_tools, GuardedTools(sync_tools.functions(), guard=Guard(clock=None)))
    api, tools = FakeAnthropic(stubborn), Tools()
    guarded = GuardedTools({"search_docs": tools.asearch_docs}, guard=Guard(clock=None))
    with pytest.raises(LoopHalted) as halted:
        asyncio.run(amessages_loop(api.async_client(), guarded))
    assert halted.value.reason == "loop_repeat"
    assert api.requests == sync_api.requests
    assert tools.ran == {"search_docs": 2}


def test_each_reply_ends_its_turn_with_its_usage() -> None:
    api, tools = FakeAnthropic(healthy), Tools()
    guard = Guard(clock=None, budgets=Budgets(max_tokens=40))
    with pytest.raises(LoopHalted) as halted:
        messages_loop(api.client(), tools, GuardedTools(tools.functions(), guard=guard))
    assert halted.value.reason == "budget_tokens"  # 15 tokens a reply: over 40 once the third reply's call ran
    assert tools.ran == {"edit_file": 2, "run_tests": 1}
    assert (guard.state.turn, guard.state.tokens) == (3, 45)


def test_the_calls_of_one_reply_share_one_step() -> None:
    tools = Tools()
    guarded = GuardedTools(tools.functions(), guard=Guard(clock=None))

    def reply(n: int, start: int) -> dict[str, Any]:
        uses = [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "search_docs", "input": {"query": "refund policy"}}
            for i in range(start, start + n)
        ]
        return {"role": "assistant", "content": [{"type": "text", "text": "Searching."}, *uses]}

    assert [guarded.tool_results(reply(1, i))[0]["content"] for i in (1, 2)] == ["0 results", "0 results"]
    assert [(b["content"], b["is_error"]) for b in guarded.tool_results(reply(3, 3))] == [(ADVICE, True)] * 3
    assert guarded.tool_results(reply(1, 6))[0]["content"] == BLOCK
    with pytest.raises(LoopHalted):
        guarded.tool_results(reply(1, 7))
    assert tools.ran == {"search_docs": 2}


def test_tool_runner_hears_the_user() -> None:
    api, tools = FakeAnthropic(adapting), Tools()
    guard = Listening()
    runner = tool_runner(
        api.client(),
        guard=guard,
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": QUESTION}],
        tools=tools.beta_tools(),
    )
    runner.append_messages(
        {"role": "assistant", "content": "Which region?"},
        {"role": "user", "content": [{"type": "text", "text": "The EU, please."}]},
    )
    assert runner.until_done().content[0].text == "Refunds are accepted within 30 days."
    assert guard.heard == [QUESTION, "The EU, please."]  # what the user wrote; not the tool results
    assert guard.state.turn == 5  # every reply ended its turn, the answer too


def test_report_blocked_errors_and_sessions() -> None:
    api, tools = FakeAnthropic(reporting), Tools()
    guard = Guard(clock=None)
    with pytest.raises(LoopHalted) as halted:
        messages_loop(api.client(), tools, GuardedTools(tools.functions(), guard=guard))
    assert halted.value.reason == "reported_blocked"
    assert guard.needed == ["the refund policy"]

    def broken(query: str) -> str:
        raise RuntimeError("index offline")

    pool = GuardPool(guard_options={"clock": None})
    guarded = GuardedTools({"search_docs": broken}, guard=pool, session="conversation-1")
    blocks = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "a", "name": "search_docs", "input": {"query": "x"}},
        {"type": "tool_use", "id": "b", "name": "nope", "input": {}},
    ]
    assert guarded.tool_results({"role": "assistant", "content": blocks}) == [
        {"type": "tool_result", "tool_use_id": "a", "content": "Error: RuntimeError: index offline", "is_error": True},
        {"type": "tool_result", "tool_use_id": "b", "content": "Error: unknown tool 'nope'", "is_error": True},
    ]
    assert "conversation-1" in pool


# -- the SDK's tool runner ----------------------------------------------------------------------------------
def test_tool_runner_advice_block_halt() -> None:
    api, tools = FakeAnthropic(stubborn), Tools()
    runner = tool_runner(
        api.client(),
        guard=Guard(clock=None),
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": QUESTION}],
        tools=tools.beta_tools(),
    )
    with pytest.raises(LoopHalted) as halted:
        runner.until_done()
    assert halted.value.reason == "loop_repeat"
    assert tools.ran == {"search_docs": 2}
    assert len(api.requests) == 5  # the runner stopped before sending the halted call's result
    assert [(b["content"], b.get("is_error", False)) for b in api.tool_results()] == [
        ("0 results", False),
        ("0 results", False),
        (ADVICE, True),
        (BLOCK, True),
    ]
    assert [t["name"] for t in api.requests[0]["tools"]] == ["search_docs", "edit_file", "run_tests", "report_blocked"]


def test_tool_runner_changes_course_and_iterates() -> None:
    api, tools = FakeAnthropic(adapting), Tools()
    runner = tool_runner(
        api.client(),
        guard=Guard(clock=None),
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": QUESTION}],
        tools=tools.beta_tools(),
    )
    replies = list(runner)
    assert replies[-1].content[0].text == "Refunds are accepted within 30 days."
    assert [b["content"] for b in api.tool_results()] == [
        "0 results",
        "0 results",
        ADVICE,
        "Refunds within 30 days.",
    ]


def test_tool_runner_healthy_run_is_untouched() -> None:
    def run(guarded: bool) -> tuple[FakeAnthropic, Tools, Any]:
        api, tools = FakeAnthropic(healthy), Tools()
        params: dict[str, Any] = {
            "model": "claude-test",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Fix the refund bug."}],
            "tools": tools.beta_tools(),
        }
        client = api.client()
        if guarded:  # report_blocked off: the requests are then byte for byte the plain runner's
            final = tool_runner(client, guard=Guard(clock=None, report_tool=None), **params).until_done()
        else:
            final = client.beta.messages.tool_runner(**params).until_done()
        return api, tools, final

    plain_api, plain_tools, plain = run(guarded=False)
    api, tools, final = run(guarded=True)
    assert final.content[0].text == plain.content[0].text == "Fixed: the tests pass."
    assert api.requests == plain_api.requests
    assert tools.ran == plain_tools.ran == {"edit_file": 3, "run_tests": 3}


def test_async_tool_runner_halts_like_sync() -> None:
    api, tools = FakeAnthropic(stubborn), Tools()

    @beta_async_tool
    async def search_docs(query: str) -> str:
        """Search the documentation."""
        return await tools.asearch_docs(query)

    async def main() -> list[Any]:
        runner = tool_runner(
            api.async_client(),
            guard=Guard(clock=None),
            model="claude-test",
            max_tokens=1024,
            messages=[{"role": "user", "content": QUESTION}],
            tools=[search_docs],
        )
        return [reply async for reply in runner]

    with pytest.raises(LoopHalted) as halted:
        asyncio.run(main())
    assert halted.value.reason == "loop_repeat"
    assert tools.ran == {"search_docs": 2}
    assert len(api.requests) == 5
    assert [b["content"] for b in api.tool_results()] == ["0 results", "0 results", ADVICE, BLOCK]


def test_tool_runner_report_blocked() -> None:
    api, tools = FakeAnthropic(reporting), Tools()
    guard = Guard(clock=None)
    runner = tool_runner(
        api.client(),
        guard=guard,
        model="claude-test",
        max_tokens=1024,
        messages=[{"role": "user", "content": QUESTION}],
        tools=tools.beta_tools(),
    )
    with pytest.raises(LoopHalted) as halted:
        runner.until_done()
    assert halted.value.reason == "reported_blocked"
    assert guard.needed == ["the refund policy"]
    assert len(api.requests) == 4
