"""Guard a DSPy ReAct agent. Run: python examples/dspy_agent.py (needs: pip install "looptrap[dspy]")

DSPy's DummyLM plays the model (no network): it searches the same thing again and again. dspy.ReAct runs to its
cap (20 steps, then the answer); GuardedReAct advises, blocks, then ends the trajectory with finish.
"""

from __future__ import annotations

import dspy
from dspy.utils import DummyLM

from looptrap.integrations.dspy import GuardedReAct

searches: list[str] = []


def search_docs(query: str) -> str:
    """Search the documentation."""
    searches.append(query)
    return "0 results"


stuck = {
    "next_thought": "Let me search again.",
    "next_tool_name": "search_docs",
    "next_tool_args": {"query": "refund policy"},
    "reasoning": "Nothing was found.",
    "answer": "I could not find the refund policy.",
}

for agent in (
    dspy.ReAct("question -> answer", tools=[search_docs]),
    GuardedReAct("question -> answer", tools=[search_docs]),
):
    searches.clear()
    lm = DummyLM([stuck] * 21)
    with dspy.context(lm=lm):
        prediction = agent(question="What is the refund policy?")
    print(f"{type(agent).__name__}: {len(lm.history)} model calls, {len(searches)} searches -> {prediction.answer}")
    halted = prediction.get("looptrap")
    if halted is not None:
        print(f"  halted ({halted['reason']}): {halted['summary']}")

assert halted is not None
assert halted["reason"] == "loop_repeat"
assert len(lm.history) == 6
assert len(searches) == 2
