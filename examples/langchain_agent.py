"""A LangChain agent (create_agent) guarded by LooptrapMiddleware. Run: python examples/langchain_agent.py

The model is LangChain's own fake chat model, scripted: one conversation thread keeps repeating a search that
finds nothing, another changes course after the advice. No network, no API key.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from looptrap.integrations.langchain import LooptrapMiddleware


class FakeModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self  # scripted replies: the tools are not needed


@tool
def search_docs(query: str) -> str:
    """Search the documentation."""
    return "Returns are accepted within 30 days." if "returns" in query else "0 results"


def search(query: str, n: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "search_docs", "args": {"query": query}, "id": f"call_{n}"}])


guard = LooptrapMiddleware(on_halt="end")  # one middleware, one session per thread_id


def ask(replies: list[AIMessage], thread: str) -> list[Any]:
    agent = create_agent(FakeModel(messages=iter(replies)), [search_docs], middleware=[guard])
    out = agent.invoke({"messages": [("user", "What is the refund policy?")]}, {"configurable": {"thread_id": thread}})
    return list(out["messages"])


stubborn = ask([search("refund policy", i) for i in range(10)], "stubborn")
listens = ask([*(search("refund policy", i) for i in range(3)), search("returns", 3), AIMessage("30 days.")], "listens")

for name, messages in (("stubborn", stubborn), ("listens", listens)):
    print(f"-- thread {name}")
    for m in messages[1:]:
        if isinstance(m, ToolMessage):
            print(f"   tool ({m.status}): {str(m.content)[:90]}")
        elif m.content:
            print(f"   model: {str(m.content)[:100]}")

assert stubborn[-1].response_metadata["looptrap"]["reason"] == "loop_repeat"  # ended cleanly, reason attached
assert listens[-1].content == "30 days."
