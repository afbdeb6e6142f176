"""A hand-written Anthropic Messages tool loop, guarded. Run: python examples/anthropic_loop.py

The "model" is a stand-in served by httpx2.MockTransport (no network, no API key): it keeps asking for the
same search until it is advised otherwise, then searches differently and answers.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
from anthropic import Anthropic

from looptrap.integrations.anthropic import GuardedTools, report_blocked_tool_param


def search_docs(query: str) -> str:
    return "Refunds within 30 days of purchase." if query == "refunds" else "0 results"


def fake_model(request: httpx2.Request) -> httpx2.Response:
    """Repeats its search until the tool result says it is looping; then changes course."""
    messages = json.loads(request.content)["messages"]
    last = messages[-1]["content"]
    seen = last[-1] if isinstance(last, list) else {}
    query = "refunds" if seen.get("is_error") else "refund policy"  # is_error: the guard's advice
    content: list[dict[str, Any]] = [
        {"type": "tool_use", "id": f"toolu_{len(messages)}", "name": "search_docs", "input": {"query": query}}
    ]
    if str(seen.get("content", "")).startswith("Refunds"):
        content = [{"type": "text", "text": "Refunds are accepted within 30 days of purchase."}]
    stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
    reply: dict[str, Any] = {"id": "m", "type": "message", "role": "assistant", "model": "fake", "content": content}
    reply |= {"stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
    return httpx2.Response(200, json=reply)


client = Anthropic(api_key="unused", http_client=httpx2.Client(transport=httpx2.MockTransport(fake_model)))
tools = GuardedTools({"search_docs": search_docs})  # the one line: tool calls now go through the guard
definitions: Any = [
    {"name": "search_docs", "description": "Search the docs.", "input_schema": {"type": "object"}},
    report_blocked_tool_param(),  # the honest way out the advice points to
]

messages: list[Any] = [{"role": "user", "content": "What is our refund policy?"}]
for _ in range(10):
    reply = client.messages.create(model="fake", max_tokens=1024, messages=messages, tools=definitions)
    if reply.stop_reason != "tool_use":
        break
    results = tools.tool_results(reply)
    for r in results:
        print(f"tool_result (is_error={r['is_error']}): {str(r['content'])[:80]}")
    messages += [{"role": "assistant", "content": reply.content}, {"role": "user", "content": results}]

answer = reply.content[0].text if reply.content[0].type == "text" else ""
print("answer:", answer)
assert answer.startswith("Refunds are accepted")
results_sent = [r for m in messages[2::2] for r in m["content"]]
assert [r["is_error"] for r in results_sent] == [False, False, True, False]  # the 3rd search was advised, not run
