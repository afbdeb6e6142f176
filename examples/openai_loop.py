"""A hand-written OpenAI Chat Completions tool loop, guarded. Run: python examples/openai_loop.py

The "model" is a stand-in served by httpx2.MockTransport (no network, no API key): it keeps asking for the
same search. looptrap answers the 3rd call with advice, blocks the 4th and halts the run at the 5th.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
from openai import OpenAI

from looptrap import LoopHalted
from looptrap.integrations.openai import GuardedTools, report_blocked_chat_tool


def search_docs(query: str) -> str:
    return "0 results"


def fake_model(request: httpx2.Request) -> httpx2.Response:
    """Always the same tool call: a model stuck in a loop."""
    turn = len(json.loads(request.content)["messages"])
    function = {"name": "search_docs", "arguments": '{"query": "refund policy"}'}
    call = {"id": f"call_{turn}", "type": "function", "function": function}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    return httpx2.Response(
        200, json={"id": "x", "object": "chat.completion", "created": 0, "model": "fake", "choices": [choice]}
    )


client = OpenAI(api_key="unused", http_client=httpx2.Client(transport=httpx2.MockTransport(fake_model)))
tools = GuardedTools({"search_docs": search_docs})  # the one line: tool calls now go through the guard
definitions: Any = [
    {"type": "function", "function": {"name": "search_docs", "parameters": {"type": "object"}}},
    report_blocked_chat_tool(),  # the honest way out the advice points to
]

messages: list[Any] = [{"role": "user", "content": "What is our refund policy?"}]
reason = None
try:
    for _ in range(10):
        message = client.chat.completions.create(model="fake", messages=messages, tools=definitions).choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.to_dict())
        for result in tools.tool_messages(message.tool_calls):
            print(f"tool -> model: {str(result['content'])[:90]}")
            messages.append(result)
except LoopHalted as halt:
    print(f"halted: {halt.reason} | {halt.summary}")
    reason = halt.reason
assert reason == "loop_repeat"
sent = [m["content"] for m in messages if m["role"] == "tool"]  # what the model read
assert sent[:2] == ["0 results", "0 results"]
assert sent[2].startswith("You have called search_docs")  # advice: the call was not run
assert sent[3].startswith("Blocked: this call was not run.")
