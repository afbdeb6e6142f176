"""Guard an AG2 agent. Run: python examples/ag2_agent.py (needs: pip install "looptrap[ag2]")

AG2's TestConfig plays the model (no network): it searches the same thing again and again. AG2's agent loop has no
cap of its own, so without looptrap it goes on as long as the model does; with the LoopGuard plugin it is advised,
blocked, then the turn ends with a reply that says why.
"""

from __future__ import annotations

import asyncio

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.testing import TestConfig

from looptrap.integrations.ag2 import LoopGuard

searches: list[str] = []


def search_docs(query: str) -> str:
    """Search the documentation."""
    searches.append(query)
    return "0 results"


def stuck(turns: int) -> TestConfig:
    calls = [ToolCallEvent("search_docs", arguments='{"query": "refund policy"}') for _ in range(turns)]
    return TestConfig(*calls, "I give up.", raise_tool_errors=False)


async def main() -> None:
    plain = Agent("support", config=stuck(40), tools=[search_docs])
    reply = await plain.ask("What is the refund policy?")
    print(f"without looptrap: {len(searches)} searches, then: {await reply.content()}")

    searches.clear()
    agent = Agent("support", config=stuck(40), tools=[search_docs], plugins=[LoopGuard()])
    reply = await agent.ask("What is the refund policy?")
    print(f"with looptrap: {len(searches)} searches, then: {await reply.content()}")
    assert reply.response.metadata["looptrap"]["reason"] == "loop_repeat"


asyncio.run(main())
