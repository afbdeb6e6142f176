"""Guard a Haystack Agent. Run: python examples/haystack_agent.py (needs: pip install "looptrap[haystack]")

Haystack's MockChatGenerator plays the model (no network): it searches the same thing again and again. Without
looptrap the Agent runs to max_agent_steps; with its hooks it is advised, blocked, then stopped (stop_run).
"""

from __future__ import annotations

from haystack.components.agents import Agent
from haystack.components.generators.chat import MockChatGenerator
from haystack.dataclasses import ChatMessage, ToolCall
from haystack.tools import tool

from looptrap.integrations.haystack import LoopGuard


@tool
def search_docs(query: str) -> str:
    """Search the documentation."""
    return "0 results"


stuck = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="search_docs", arguments={"query": "refund policy"})])
question = [ChatMessage.from_user("What is the refund policy?")]

plain = Agent(chat_generator=MockChatGenerator(responses=stuck), tools=[search_docs], max_agent_steps=20)
out = plain.run(messages=question)
print(f"without looptrap: exit_reason={out['exit_reason']} after {out['step_count']} steps")

loop = LoopGuard()
agent = Agent(chat_generator=MockChatGenerator(responses=stuck), tools=[search_docs], hooks=loop.hooks())
out = agent.run(messages=question)
advice = next(m for m in out["messages"] if m.tool_call_result and m.tool_call_result.error)
print("the model read:", advice.tool_call_result.result[:80], "...")
print(f"with looptrap: exit_reason={out['exit_reason']} after {out['step_count']} steps")
print("last message:", out["last_message"].text)
assert out["exit_reason"] == "looptrap:loop_repeat"
