"""looptrap in Strands Agents, with a scripted model in place of Bedrock (no network).
Run: python examples/strands_agent.py (needs pip install "looptrap[strands]")"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from strands import Agent, tool
from strands.models.model import Model

from looptrap.integrations.strands import LoopGuard


@tool
def search_docs(query: str) -> str:
    """Search the documentation."""
    return "0 results" if query == "refund policy" else "Refunds: within 30 days, see section 4."


class ScriptedModel(Model):
    """Replies from a script (a query to search, or a final answer) and keeps what it was sent."""

    def __init__(self, script: list[str]) -> None:
        self.script, self.seen = script, []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        raise NotImplementedError
        yield {}

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.seen.append(messages[-1])
        step = self.script.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if step.startswith("answer: "):
            yield {"contentBlockDelta": {"delta": {"text": step.removeprefix("answer: ")}}}
            stop = "end_turn"
        else:
            yield {
                "contentBlockStart": {"start": {"toolUse": {"name": "search_docs", "toolUseId": f"t{len(self.seen)}"}}}
            }
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"query": step})}}}}
            stop = "tool_use"
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}


def ask(model: ScriptedModel) -> Any:
    agent = Agent(model=model, tools=[search_docs], plugins=[LoopGuard()], callback_handler=None)
    return agent("What is the refund policy?")


# 1. A model that changes course after the advice finishes normally.
model = ScriptedModel(["refund policy"] * 3 + ["refunds", "answer: Within 30 days."])
result = ask(model)
advice = model.seen[3]["content"][0]["toolResult"]["content"][0]["text"]  # the third identical search did not run
print("advice to the model:", advice[:90], "...")
print("final answer:", result)
assert advice.startswith("You have called search_docs with these exact arguments 3 times")
assert str(result).strip() == "Within 30 days."

# 2. A model that keeps going: advice, a block, then the loop ends with the reason.
model = ScriptedModel(["refund policy"] * 10)
result = ask(model)
print(f"halted after {len(model.seen)} model calls ({result.stop_reason}): {result}")
assert str(result).startswith("Run halted by looptrap (loop_repeat)")
