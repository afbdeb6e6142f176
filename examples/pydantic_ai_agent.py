"""looptrap in Pydantic AI, with Pydantic AI's FunctionModel playing the model (no network).
Run: python examples/pydantic_ai_agent.py (needs pip install "looptrap[pydantic-ai]")"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from looptrap import LoopHalted
from looptrap.integrations.pydantic_ai import LoopGuard


def search_docs(query: str) -> str:
    """Search the documentation."""
    return "0 results" if query == "refund policy" else "Refunds: within 30 days, see section 4."


def stubborn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that searches for the same thing forever."""
    return ModelResponse(parts=[ToolCallPart("search_docs", {"query": "refund policy"})])


def listens(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that takes the advice: it tries another query, then answers."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart) and last.outcome == "failed":  # looptrap's advice
        print("advice to the model:", str(last.content)[:90], "...")
        return ModelResponse(parts=[ToolCallPart("search_docs", {"query": "refunds"})])
    if isinstance(last, ToolReturnPart) and last.content != "0 results":
        return ModelResponse(parts=[TextPart("Refunds are accepted within 30 days.")])
    return ModelResponse(parts=[ToolCallPart("search_docs", {"query": "refund policy"})])


# 1. A model that changes course after the advice finishes normally.
agent = Agent(FunctionModel(listens), tools=[search_docs], capabilities=[LoopGuard()])
result = agent.run_sync("What is the refund policy?")
print("final answer:", result.output)
assert result.output == "Refunds are accepted within 30 days."

# 2. A model that keeps going: advice, a block, then the run halts with a reason.
agent = Agent(FunctionModel(stubborn), tools=[search_docs], capabilities=[LoopGuard()])
try:
    agent.run_sync("What is the refund policy?")
except LoopHalted as halt:
    reason, summary = halt.reason, halt.summary  # also halt.verdict, looptrap's Verdict
else:
    raise AssertionError("the loop was not halted")
print(f"halted: {reason} ({summary})")
assert reason == "loop_repeat"
