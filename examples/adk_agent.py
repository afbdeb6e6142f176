"""looptrap in Google ADK, with a scripted model in place of Gemini (no network).
Run: python examples/adk_agent.py (needs pip install "looptrap[adk]")"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import Field

from looptrap.integrations.adk import LooptrapPlugin


def search_docs(query: str) -> str:
    """Search the documentation."""
    return "0 results" if query == "refund policy" else "Refunds: within 30 days, see section 4."


class ScriptedModel(BaseLlm):
    """Replies from a script (a query to search, or a final answer) and keeps what it was sent."""

    script: list[str]
    seen: list[Any] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(llm_request.contents[-1])
        step = self.script.pop(0)
        if step.startswith("answer: "):
            part = types.Part(text=step.removeprefix("answer: "))
        else:
            part = types.Part(function_call=types.FunctionCall(name="search_docs", args={"query": step}))
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=50, candidates_token_count=10)
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def ask(model: ScriptedModel) -> Any:
    agent = LlmAgent(name="support", model=model, tools=[search_docs])
    runner = InMemoryRunner(app=App(name="support", root_agent=agent, plugins=[LooptrapPlugin()]))
    session = asyncio.run(runner.session_service.create_session(app_name="support", user_id="u"))
    message = types.Content(role="user", parts=[types.Part(text="What is the refund policy?")])
    return list(runner.run(user_id="u", session_id=session.id, new_message=message))[-1]


# 1. A model that changes course after the advice finishes normally.
model = ScriptedModel(model="scripted", script=["refund policy"] * 3 + ["refunds", "answer: Within 30 days."])
final = ask(model)
advice = model.seen[3].parts[0].function_response.response["error"]  # the third identical search was not run
print("advice to the model:", advice[:90], "...")
print("final answer:", final.content.parts[0].text)
assert advice.startswith("You have called search_docs with these exact arguments 3 times")
assert final.content.parts[0].text == "Within 30 days."

# 2. A model that keeps going: advice, a block, then the run ends with the reason.
model = ScriptedModel(model="scripted", script=["refund policy"] * 10)
final = ask(model)
print(f"halted after {len(model.seen)} model calls: {final.content.parts[0].text}")
assert final.custom_metadata["looptrap"]["reason"] == "loop_repeat"
