"""Collapse a run of failed searches in a chat history into one summary. Run: python examples/compaction.py"""

from __future__ import annotations

import json

from looptrap.integrations.compaction import compact_anthropic, compact_openai

QUERIES = ["refund policy", "refunds policy", "refund-policy", "return policy", "money back"]

# An OpenAI Chat Completions history: a question, five searches that found nothing, and the call just made.
messages: list[dict[str, object]] = [
    {"role": "system", "content": "Answer from the documentation."},
    {"role": "user", "content": "What is the refund policy?"},
]
for i, query in enumerate(QUERIES):
    function = {"name": "search_docs", "arguments": json.dumps({"query": query})}
    call = {"id": f"call_{i}", "type": "function", "function": function}
    messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "0 results"})

compacted = compact_openai(messages, keep_last=2)  # before the next model call; the last 2 turns stay as they are
for message in compacted.messages:
    print(message)
print(f"{compacted.removed_messages} messages and {compacted.removed_attempts} attempts removed")

assert len(compacted.messages) == len(messages) - 4
assert compacted.messages[3]["content"] == (
    "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (0 results), "
    "'refund-policy' (0 results); none worked."
)
assert compacted.messages[-4:] == messages[-4:]  # the last two turns, untouched
assert len(messages) == 12  # the input list is not changed

# The same history in the Anthropic Messages format: tool_use blocks, tool_result blocks in the next user message.
history: list[dict[str, object]] = [{"role": "user", "content": "What is the refund policy?"}]
for i, query in enumerate(QUERIES):
    use = {"type": "tool_use", "id": f"toolu_{i}", "name": "search_docs", "input": {"query": query}}
    history.append({"role": "assistant", "content": [{"type": "text", "text": "Let me search."}, use]})
    result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "0 results"}
    history.append({"role": "user", "content": [result]})

short = compact_anthropic(history, keep_last=2).messages
assert [m["role"] for m in short] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
print(short[2])
