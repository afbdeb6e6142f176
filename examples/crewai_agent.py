"""looptrap in CrewAI, with a scripted LLM in place of a real one (no network).
Run: python examples/crewai_agent.py (needs pip install "looptrap[crewai]")"""

from __future__ import annotations

import json
import os
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # this example talks to nothing

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from pydantic import Field

from looptrap import LoopHalted
from looptrap.integrations.crewai import LoopGuard


@tool("search_docs")
def search_docs(query: str) -> str:
    """Search the documentation."""
    return "0 results" if query == "refund policy" else "Refunds: within 30 days, see section 4."


class ScriptedLLM(BaseLLM):
    """Replies from a script (a query to search, or a final answer) and keeps what it was sent."""

    script: list[str]
    seen: list[Any] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(messages[-1])
        step = self.script.pop(0)
        if step.startswith("answer: "):
            return step.removeprefix("answer: ")
        arguments = json.dumps({"query": step})
        return [
            {
                "id": f"c{len(self.seen)}",
                "type": "function",
                "function": {"name": "search_docs", "arguments": arguments},
            }
        ]

    def supports_function_calling(self) -> bool:
        return True


def crew(llm: ScriptedLLM, guard: LoopGuard) -> Crew:
    tools = [search_docs, guard.report_tool()]
    agent = Agent(role="support", goal="Answer from the docs", backstory="A support agent.", llm=llm, tools=tools)
    task = Task(description="What is the refund policy?", expected_output="The policy", agent=agent)
    return Crew(agents=[agent], tasks=[task])


with LoopGuard() as guard:  # registers looptrap's hooks with CrewAI (guard.register() does it for good)
    # 1. A model that changes course after the advice finishes normally.
    llm = ScriptedLLM(model="scripted", script=["refund policy"] * 3 + ["refunds", "answer: Within 30 days."])
    result = crew(llm, guard).kickoff()
    advice = llm.seen[3]["content"]  # the third identical search was not run: its result is the advice
    print("advice to the model:", advice[:90], "...")
    print("final answer:", result.raw)
    assert advice.startswith("You have called search_docs with these exact arguments 3 times")
    assert result.raw == "Within 30 days."

    # 2. A model that keeps going: advice, a block, then the run is stopped with the reason.
    llm = ScriptedLLM(model="scripted", script=["refund policy"] * 30)
    halted: LoopHalted | None = None
    try:
        crew(llm, guard).kickoff()
    except LoopHalted as exc:  # CrewAI's deliberate stop (a HookAborted), never retried
        halted = exc
    assert halted is not None, "the loop was not halted"
    print(f"halted after {len(llm.seen)} model calls: {halted.reason} ({halted.summary})")
    assert halted.reason == "loop_repeat"
