"""The OpenAI SDK integration: real ``OpenAI`` / ``AsyncOpenAI`` clients talking to a scripted model through an
``httpx2.MockTransport`` (no network). Hand-written Chat Completions and Responses loops, and the SDK's own
``ResponsesToolRunner``; the assertions read the request bodies the clients sent."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Callable
from typing import Any

import pytest

from conftest import need
from listening import Listening
from scripted_steps import ADVICE, BLOCK, QUESTION, Call, Script, Tools, adapting, healthy, reporting, stubborn

need("openai (pip install 'looptrap[openai]')", importlib.util.find_spec("openai") is not None)

import httpx2  # noqa: E402
import openai  # noqa: E402
from openai.lib.responses_tool_runner import AsyncRegisteredFunction, RegisteredFunction, ResponsesToolRunner  # noqa: E402
from openai.types.chat import ChatCompletionToolMessageParam  # noqa: E402
from openai.types.responses import ResponseCustomToolCallOutputParam  # noqa: E402
from openai.types.responses.response_input_item_param import FunctionCallOutput  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from looptrap import Budgets, Guard, GuardPool, LoopHalted  # noqa: E402
from looptrap.integrations.openai import (  # noqa: E402
    AsyncGuardedResponsesToolRunner,
    GuardedResponsesToolRunner,
    GuardedTools,
    report_blocked_chat_tool,
    report_blocked_response_tool,
)


# -- the scripted model: decides its next call from the request it gets -----------------------------------
class FakeOpenAI:
    """The OpenAI API for one scripted model: Chat Completions and Responses, recording every request body."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        n = len(self.requests)
        if request.url.path.endswith("/chat/completions"):
            last = body["messages"][-1]
            step = self.script(n, last["content"] if last["role"] == "tool" else "")
            return httpx2.Response(200, json=_completion(n, step))
        items = body["input"] if isinstance(body["input"], list) else []
        last = items[-1].get("output", "") if items and items[-1].get("type") == "function_call_output" else ""
        return httpx2.Response(200, json=_response(n, self.script(n, last)))

    def client(self) -> openai.OpenAI:
        transport = httpx2.MockTransport(self.handle)
        return openai.OpenAI(api_key="test", max_retries=0, http_client=httpx2.Client(transport=transport))

    def async_client(self) -> openai.AsyncOpenAI:
        transport = httpx2.MockTransport(self.handle)
        return openai.AsyncOpenAI(api_key="test", max_retries=0, http_client=httpx2.AsyncClient(transport=transport))


def _completion(n: int, step: Call | str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step if isinstance(step, str) else None}
    if not isinstance(step, str):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": step[0], "arguments": json.dumps(step[1])}}
        message["tool_calls"] = [call]
    choice = {"index": 0, "message": message, "finish_reason": "stop" if isinstance(step, str) else "tool_calls"}
    usage = {"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60}
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [choice],
        "usage": usage,
    }


def _response(n: int, step: Call | str) -> dict[str, Any]:
    if isinstance(step, str):
        text = {"type": "output_text", "text": step, "annotations": []}
        item: dict[str, Any] = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed"}
        item["content"] = [text]
    else:
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": step[0]}
        item.update(arguments=json.dumps(step[1]), status="completed")
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "status": "completed",
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 40,
            "output_tokens": 20,
            "total_tokens": 60,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _tool_defs(tools: Tools) -> Any:
    return [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in tools.functions()
    ]


def assert_param(typed_dict: Any, value: dict[str, Any]) -> None:
    """``value`` is a valid instance of the SDK's request type (no unknown keys, the right types)."""
    assert set(value) <= typed_dict.__required_keys__ | typed_dict.__optional_keys__
    assert typed_dict.__required_keys__ <= set(value)
    TypeAdapter(typed_dict).validate_python(value)


# -- hand-written loops --------------------------------------------------------------------------------------
def chat_loop(client: openai.OpenAI, tools: Tools, guarded: GuardedTools | None, turns: int = 10) -> str:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(turns):
        completion = client.chat.completions.create(model="gpt-test", messages=messages, tools=_tool_defs(tools))
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.to_dict())
        if guarded is not None:
            messages.extend(guarded.tool_messages(message.tool_calls))
        else:  # the same loop without looptrap
            fns = tools.functions()
            for tc in message.tool_calls:
                assert tc.type == "function"
                content = fns[tc.function.name](**json.loads(tc.function.arguments))
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
    raise AssertionError("the loop did not end")


async def achat_loop(client: openai.AsyncOpenAI, tools: Tools, guarded: GuardedTools) -> str:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(10):
        completion = await client.chat.completions.create(model="gpt-test", messages=messages, tools=_tool_defs(tools))
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.to_dict())
        messages.extend(await guarded.atool_messages(message))  # the message itself works too
    raise AssertionError("the loop did not end")


def responses_loop(client: openai.OpenAI, guarded: GuardedTools, turns: int = 10) -> str:
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    tools: Any = [report_blocked_response_tool()]
    for _ in range(turns):
        response = client.responses.create(model="gpt-test", input=items, tools=tools)
        outputs = guarded.function_call_outputs(response)
        if not outputs:
            return response.output_text
        items += [item.to_dict() for item in response.output]
        items += outputs
    raise AssertionError("the loop did not end")


async def aresponses_loop(client: openai.AsyncOpenAI, guarded: GuardedTools) -> str:
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(10):
        response = await client.responses.create(model="gpt-test", input=items)
        outputs = await guarded.afunction_call_outputs(response.output)
        if not outputs:
            return response.output_text
        items += [item.to_dict() for item in response.output]
        items += outputs
    raise AssertionError("the loop did not end")


def _chat_tool_messages(api: FakeOpenAI) -> list[dict[str, Any]]:
    """The tool message each request ended with (the first request has none)."""
    return [r["messages"][-1] for r in api.requests[1:]]


def test_chat_loop_advice_block_halt() -> None:
    api, tools = FakeOpenAI(stubborn), Tools()
    guarded = GuardedTools(tools.functions(), guard=Guard(clock=None))
    with pytest.raises(LoopHalted) as halted:
        chat_loop(api.client(), tools, guarded)
    assert halted.value.reason == "loop_repeat"
    assert "search_docs" in halted.value.summary
    assert tools.ran == {"search_docs": 2}  # the advised, blocked and halted calls never ran
    assert len(api.requests) == 5  # the halt ended the run before a 6th request
    assert _chat_tool_messages(api) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "0 results"},
        {"role": "tool", "tool_call_id": "call_2", "content": "0 results"},
        {"role": "tool", "tool_call_id": "call_3", "content": ADVICE},
        {"role": "tool", "tool_call_id": "call_4", "content": BLOCK},
    ]
    for message in _chat_tool_messages(api):
        assert_param(ChatCompletionToolMessageParam, message)


def test_chat_loop_changes_course_after_advice() -> None:
    api, tools = FakeOpenAI(adapting), Tools()
    answer = chat_loop(api.client(), tools, GuardedTools(tools.functions(), guard=Guard(clock=None)))
    assert answer == "Refunds are accepted within 30 days."
    assert [m["content"] for m in _chat_tool_messages(api)] == [
        "0 results",
        "0 results",
        ADVICE,
        "Refunds within 30 days.",
    ]
    assert tools.ran == {"search_docs": 3}


def test_chat_loop_healthy_run_is_untouched() -> None:
    plain_api, plain_tools = FakeOpenAI(healthy), Tools()
    plain = chat_loop(plain_api.client(), plain_tools, None)
    api, tools = FakeOpenAI(healthy), Tools()
    guarded = chat_loop(api.client(), tools, GuardedTools(tools.functions(), guard=Guard(clock=None)))
    assert guarded == plain == "Fixed: the tests pass."
    assert api.requests == plain_api.requests
    assert tools.ran == plain_tools.ran == {"edit_file": 3, "run_tests": 3}


def test_chat_loop_async_like_sync() -> None:
    sync_api, sync_tools = FakeOpenAI(stubborn), Tools()
    with pytest.raises(LoopHalted):
        chat_loop(sync_api.client(), sync_tools, GuardedTools(sync_tools.functions(), guard=Guard(clock=None)))
    api, tools = FakeOpenAI(stubborn), Tools()
    guarded = GuardedTools({"search_docs": tools.asearch_docs}, guard=Guard(clock=None))
    with pytest.raises(LoopHalted) as halted:
        asyncio.run(achat_loop(api.async_client(), tools, guarded))
    assert halted.value.reason == "loop_repeat"
    assert api.requests == sync_api.requests
    assert tools.ran == {"search_docs": 2}


def test_responses_loop_advice_block_halt() -> None:
    api, tools = FakeOpenAI(stubborn), Tools()
    guarded = GuardedTools(tools.functions(), guard=Guard(clock=None))
    with pytest.raises(LoopHalted) as halted:
        responses_loop(api.client(), guarded)
    assert halted.value.reason == "loop_repeat"
    assert tools.ran == {"search_docs": 2}
    assert len(api.requests) == 5
    outputs = [r["input"][-1] for r in api.requests[1:]]
    assert outputs == [
        {"type": "function_call_output", "call_id": "call_1", "output": "0 results"},
        {"type": "function_call_output", "call_id": "call_2", "output": "0 results"},
        {"type": "function_call_output", "call_id": "call_3", "output": ADVICE},
        {"type": "function_call_output", "call_id": "call_4", "output": BLOCK},
    ]
    for item in outputs:
        assert_param(FunctionCallOutput, item)
    assert api.requests[0]["tools"] == [report_blocked_response_tool()]


def test_responses_loop_changes_course_and_async_like_sync() -> None:
    api, tools = FakeOpenAI(adapting), Tools()
    answer = responses_loop(api.client(), GuardedTools(tools.functions(), guard=Guard(clock=None)))
    assert answer == "Refunds are accepted within 30 days."
    async_api, async_tools = FakeOpenAI(adapting), Tools()
    guarded = GuardedTools({"search_docs": async_tools.asearch_docs}, guard=Guard(clock=None))
    assert asyncio.run(aresponses_loop(async_api.async_client(), guarded)) == answer
    assert [r["input"] for r in async_api.requests] == [r["input"] for r in api.requests]
    assert api.requests[3]["input"][-1]["output"] == ADVICE
    assert tools.ran == async_tools.ran == {"search_docs": 3}


def search_calls(n: int, start: int = 1) -> list[dict[str, Any]]:
    """``n`` identical refund searches, as one assistant message's ``tool_calls``."""
    fn = {"name": "search_docs", "arguments": json.dumps({"query": "refund policy"})}
    return [{"id": f"call_{i}", "type": "function", "function": fn} for i in range(start, start + n)]


def test_the_calls_of_one_reply_share_one_step() -> None:
    tools = Tools()
    guarded = GuardedTools(tools.functions(), guard=Guard(clock=None))
    first = [guarded.tool_messages(search_calls(1, start))[0]["content"] for start in (1, 2)]
    assert first == ["0 results", "0 results"]
    three = guarded.tool_messages(search_calls(3, 3))  # one reply, three identical calls: one turn
    assert [m["content"] for m in three] == [ADVICE] * 3
    assert guarded.tool_messages(search_calls(1, 6))[0]["content"] == BLOCK  # the next reply
    with pytest.raises(LoopHalted) as halted:
        guarded.tool_messages(search_calls(1, 7))
    assert halted.value.reason == "loop_repeat"
    assert tools.ran == {"search_docs": 2}
    assert guarded.guard().state.turn == 4  # each call of tool_messages ended its turn (not the halted one)


def test_each_reply_ends_its_turn_with_its_usage_and_words() -> None:
    api, tools = FakeOpenAI(healthy), Tools()
    guard = Guard(clock=None, budgets=Budgets(max_tokens=150))
    guarded = GuardedTools(tools.functions(), guard=guard)

    def loop() -> None:  # the whole completion goes to tool_messages: its usage with its calls
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        for _ in range(10):
            completion = api.client().chat.completions.create(model="gpt-test", messages=messages)
            messages += [completion.choices[0].message.to_dict(), *guarded.tool_messages(completion)]

    with pytest.raises(LoopHalted) as halted:
        loop()
    assert halted.value.reason == "budget_tokens"  # 3 replies of 60 tokens: over 150 once the third's calls ran
    assert tools.ran == {"edit_file": 2, "run_tests": 1}
    assert (guard.state.turn, guard.state.tokens) == (3, 180)

    api, guard = FakeOpenAI(adapting), Guard(clock=None)
    answer = responses_loop(api.client(), GuardedTools(Tools().functions(), guard=guard))
    assert answer == "Refunds are accepted within 30 days."
    assert (guard.state.turn, guard.state.tokens) == (5, 300)  # the answer, passed in too, is a turn


def test_what_the_user_says_starts_the_ladder_over() -> None:
    tools = Tools()
    guarded = GuardedTools(tools.functions(), guard=Guard(clock=None))
    for start in (1, 2):
        guarded.tool_messages(search_calls(1, start))
    guarded.user_message("I just published the policy, please search again.")
    again = [guarded.tool_messages(search_calls(1, start))[0]["content"] for start in (3, 4, 5)]
    assert again == ["0 results", "0 results", ADVICE]  # the searches before the user spoke are not repeated
    assert tools.ran == {"search_docs": 4}


def test_report_blocked_halts_with_the_models_report() -> None:
    api, tools = FakeOpenAI(reporting), Tools()
    guard = Guard(clock=None)
    with pytest.raises(LoopHalted) as halted:
        responses_loop(api.client(), GuardedTools(tools.functions(), guard=guard))
    assert halted.value.reason == "reported_blocked"
    assert guard.needed == ["the refund policy"]
    assert report_blocked_chat_tool()["function"]["name"] == "report_blocked"


def test_errors_unknown_tools_and_custom_tools_reach_the_model() -> None:
    def broken(query: str) -> str:
        raise RuntimeError("index offline")

    guarded = GuardedTools({"search_docs": broken, "shell": lambda text: f"ran {text}"}, guard=Guard(clock=None))
    calls: list[dict[str, Any]] = [
        {"id": "a", "type": "function", "function": {"name": "search_docs", "arguments": '{"query": "x"}'}},
        {"id": "b", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
        {"id": "c", "type": "function", "function": {"name": "search_docs", "arguments": "{not json"}},
        {"id": "d", "type": "custom", "custom": {"name": "shell", "input": "ls"}},
    ]
    messages = guarded.tool_messages(calls)
    assert [m["content"] for m in messages[:2]] == [
        "Error: RuntimeError: index offline",
        "Error: unknown tool 'nope'",
    ]
    assert str(messages[2]["content"]).startswith("Error: the arguments are not valid JSON")
    assert messages[3] == {"role": "tool", "tool_call_id": "d", "content": "ran ls"}
    items = guarded.function_call_outputs(
        [{"type": "custom_tool_call", "call_id": "e", "name": "shell", "input": "pwd"}]
    )
    assert items == [{"type": "custom_tool_call_output", "call_id": "e", "output": "ran pwd"}]
    assert_param(ResponseCustomToolCallOutputParam, dict(items[0]))
    assert guarded.tool_messages(None) == []
    values = GuardedTools({"ids": lambda: ["A1", "B2"], "parts": lambda: [{"type": "text", "text": "hi"}]})
    calls = [{"id": n, "type": "function", "function": {"name": n, "arguments": ""}} for n in ("ids", "parts")]
    assert [m["content"] for m in values.tool_messages(calls)] == ['["A1", "B2"]', [{"type": "text", "text": "hi"}]]


def test_a_pool_keeps_sessions_apart() -> None:
    pool = GuardPool(guard_options={"clock": None})
    tools = Tools()
    guarded = GuardedTools(tools.functions(), guard=pool)
    call = [{"id": "a", "type": "function", "function": {"name": "search_docs", "arguments": '{"query": "x"}'}}]
    assert [guarded.tool_messages(call, session="one")[0]["content"] for _ in range(3)][-1] != "0 results"
    assert guarded.tool_messages(call, session="two")[0]["content"] == "0 results"
    assert "one" in pool
    assert "two" in pool
    item = {"type": "function_call", "call_id": "c", "name": "search_docs", "arguments": '{"query": "y"}'}
    guarded.function_call_outputs({"output": [item], "conversation": {"id": "conv_9"}})
    assert "conv_9" in pool  # a Responses conversation is its own session


def test_sync_method_refuses_async_tools() -> None:
    tools = Tools()
    guarded = GuardedTools({"search_docs": tools.asearch_docs}, guard=Guard(clock=None))
    call = [{"id": "a", "type": "function", "function": {"name": "search_docs", "arguments": '{"query": "x"}'}}]
    with pytest.raises(TypeError, match="async"):
        guarded.tool_messages(call)


# -- the SDK's Responses tool runner ------------------------------------------------------------------------
SEARCH_TOOL: Any = {
    "type": "function",
    "name": "search_docs",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    },
    "strict": True,
}


def test_responses_tool_runner_advice_block_halt() -> None:
    api, tools = FakeOpenAI(stubborn), Tools()
    fn = RegisteredFunction(tool=SEARCH_TOOL, execute=lambda args: tools.search_docs(str(args["query"])))
    runner = GuardedResponsesToolRunner(functions=[fn], guard=Guard(clock=None))
    with pytest.raises(LoopHalted) as halted:
        runner.run(api.client(), {"model": "gpt-test", "input": QUESTION})
    assert halted.value.reason == "loop_repeat"
    assert isinstance(halted.value.__cause__, openai.lib.responses_tool_runner.ToolRunnerError)
    assert tools.ran == {"search_docs": 2}
    assert len(api.requests) == 5
    assert [r["input"][-1]["output"] for r in api.requests[1:]] == ["0 results", "0 results", ADVICE, BLOCK]
    assert [t["name"] for t in api.requests[0]["tools"]] == ["search_docs", "report_blocked"]


def test_responses_tool_runner_changes_course() -> None:
    api, tools = FakeOpenAI(adapting), Tools()
    stop_flags: list[Any] = []

    def search(args: dict[str, Any], cancelled: Callable[[], bool] | None = None) -> str:
        stop_flags.append(cancelled)  # the runner's own cancellation callback still reaches the function
        return tools.search_docs(str(args["query"]))

    def never() -> bool:
        return False

    runner = GuardedResponsesToolRunner(functions=[RegisteredFunction(tool=SEARCH_TOOL, execute=search)])
    response = runner.run(api.client(), {"model": "gpt-test", "input": QUESTION}, cancelled=never)
    assert response.output_text == "Refunds are accepted within 30 days."
    assert stop_flags == [never, never, never]
    assert [r["input"][-1]["output"] for r in api.requests[1:]] == [
        "0 results",
        "0 results",
        ADVICE,
        "Refunds within 30 days.",
    ]


def _coding_functions(tools: Tools) -> list[RegisteredFunction]:
    def spec(name: str) -> Any:
        return {"type": "function", "name": name, "parameters": {"type": "object"}, "strict": False}

    return [
        RegisteredFunction(
            tool=spec("edit_file"), execute=lambda args: tools.edit_file(str(args["path"]), str(args["content"]))
        ),
        RegisteredFunction(tool=spec("run_tests"), execute=lambda args: tools.run_tests()),
    ]


def test_responses_tool_runner_healthy_run_is_untouched() -> None:
    plain_api, plain_tools = FakeOpenAI(healthy), Tools()
    plain = ResponsesToolRunner(functions=_coding_functions(plain_tools)).run(
        plain_api.client(), {"model": "gpt-test", "input": "fix it"}
    )
    api, tools = FakeOpenAI(healthy), Tools()
    # with report_blocked off, the requests are byte for byte the plain runner's
    runner = GuardedResponsesToolRunner(functions=_coding_functions(tools), guard=Guard(clock=None, report_tool=None))
    guarded = runner.run(api.client(), {"model": "gpt-test", "input": "fix it"})
    assert guarded.output_text == plain.output_text == "Fixed: the tests pass."
    assert api.requests == plain_api.requests
    assert tools.ran == plain_tools.ran == {"edit_file": 3, "run_tests": 3}


def test_async_responses_tool_runner_halts_like_sync() -> None:
    api, tools = FakeOpenAI(stubborn), Tools()

    async def search(args: dict[str, Any]) -> str:
        return await tools.asearch_docs(**args)

    runner = AsyncGuardedResponsesToolRunner(
        functions=[AsyncRegisteredFunction(tool=SEARCH_TOOL, execute=search)], guard=Guard(clock=None)
    )
    with pytest.raises(LoopHalted) as halted:
        asyncio.run(runner.run(api.async_client(), {"model": "gpt-test", "input": QUESTION}))
    assert halted.value.reason == "loop_repeat"
    assert tools.ran == {"search_docs": 2}
    assert [r["input"][-1]["output"] for r in api.requests[1:]] == ["0 results", "0 results", ADVICE, BLOCK]


def test_responses_tool_runner_hears_the_user() -> None:
    api, tools = FakeOpenAI(stubborn), Tools()
    fn = RegisteredFunction(tool=SEARCH_TOOL, execute=lambda args: tools.search_docs(str(args["query"])))
    guard = Listening()
    runner = GuardedResponsesToolRunner(functions=[fn], guard=guard)

    def loop() -> None:
        for turn in runner.iterate(api.client(), {"model": "gpt-test", "input": QUESTION}):
            if turn.step == 2:  # the user adds a message after this turn's call
                turn.append_user_text("I just published the policy, search again.")

    with pytest.raises(LoopHalted) as halted:
        loop()
    assert halted.value.reason == "loop_repeat"
    assert guard.heard == [QUESTION, "I just published the policy, search again."]
    outputs = [r["input"][-1].get("output", r["input"][-1].get("content")) for r in api.requests[1:]]
    said = "I just published the policy, search again."
    assert outputs == ["0 results", said, "0 results", "0 results", ADVICE, BLOCK]
    assert tools.ran == {"search_docs": 4}  # the two searches after the user spoke ran: they answer the user
    assert guard.state.turn == 6  # a turn ended for each response whose calls ran


def test_responses_tool_runner_report_blocked() -> None:
    api = FakeOpenAI(reporting)
    fn = RegisteredFunction(tool=SEARCH_TOOL, execute=lambda args: Tools().search_docs(str(args["query"])))
    guard = Guard(clock=None)
    with pytest.raises(LoopHalted) as halted:
        GuardedResponsesToolRunner(functions=[fn], guard=guard).run(
            api.client(), {"model": "gpt-test", "input": QUESTION}
        )
    assert halted.value.reason == "reported_blocked"
    assert guard.needed == ["the refund policy"]
