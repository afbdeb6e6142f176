"""Guard a LlamaIndex FunctionAgent. Run: python examples/llamaindex_agent.py
(needs: pip install "looptrap[llamaindex]")


LlamaIndex's MockFunctionCallingLLM plays the model (no network): it searches the same thing again and again. A
FunctionAgent runs to its cap (WorkflowRuntimeError at 20 iterations); GuardedFunctionAgent advises, blocks, then
ends the run with an answer that says why.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow.errors import WorkflowRuntimeError

from looptrap.integrations.llamaindex import GuardedFunctionAgent


def search_docs(query: str) -> str:
    """Search the documentation."""
    return "0 results"


def stuck(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
    """A model that searches for the same thing forever."""
    call = ToolCallBlock(tool_call_id="call-1", tool_name="search_docs", tool_kwargs={"query": "refund policy"})
    return ChatMessage(role="assistant", blocks=[call])


async def main() -> None:
    plain = FunctionAgent(tools=[search_docs], llm=MockFunctionCallingLLM(response_generator=stuck))
    try:
        await plain.run(user_msg="What is the refund policy?")
    except WorkflowRuntimeError as exc:
        print("FunctionAgent:", str(exc).split("!")[0])

    agent = GuardedFunctionAgent(tools=[search_docs], llm=MockFunctionCallingLLM(response_generator=stuck))
    out = await agent.run(user_msg="What is the refund policy?")
    print("GuardedFunctionAgent:", out.response.content)
    assert out.response.additional_kwargs["looptrap"]["reason"] == "loop_repeat"


asyncio.run(main())
