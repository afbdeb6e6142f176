"""looptrap in the OpenAI Agents SDK, with the SDK's scripted test model (no network).
Run: python examples/openai_agents_agent.py (needs pip install "looptrap[openai-agents]")"""

from __future__ import annotations

from typing import Any

from agents import Agent, RunConfig, Runner, ToolInputGuardrailTripwireTriggered, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from looptrap.integrations.openai_agents import guard_agent


@function_tool
def search_docs(query: str) -> str:
    """Search the documentation."""
    return "0 results" if query == "refund policy" else "Refunds: within 30 days, see section 4."


def support_agent(*replies: Any) -> tuple[Agent[None], ScriptedModel]:
    model = ScriptedModel(list(replies))  # each item is one model reply
    return guard_agent(Agent(name="support", model=model, tools=[search_docs])), model


def search(query: str, n: int) -> list[Any]:
    return [function_call("search_docs", {"query": query}, call_id=f"call-{n}")]


config = RunConfig(tracing_disabled=True)

# 1. A model that changes course after the advice finishes normally.
agent, model = support_agent(
    *(search("refund policy", n) for n in range(3)),
    search("refunds", 3),
    [assistant_message("Refunds are accepted within 30 days.")],
)
result = Runner.run_sync(agent, "What is the refund policy?", run_config=config)
advice = model.calls[3].input[-1]  # the third identical search was not run: its result is the advice
print("advice to the model:", advice["output"][:90], "...")
print("final answer:", result.final_output)
assert advice["output"].startswith("You have called search_docs with these exact arguments 3 times")
assert result.final_output == "Refunds are accepted within 30 days."

# 2. A model that keeps going: advice, a block, then the run halts.
agent, model = support_agent(*(search("refund policy", n) for n in range(10)))
try:
    Runner.run_sync(agent, "What is the refund policy?", run_config=config)
except ToolInputGuardrailTripwireTriggered as halt:
    verdict = halt.output.output_info  # looptrap's Verdict
    print(f"halted after {len(model.calls)} model calls: {verdict.reason} ({verdict.summary})")
    assert verdict.reason == "loop_repeat"
else:
    raise AssertionError("the loop was not halted")
