"""Guard a smolagents agent. Run: python examples/smolagents_agent.py (needs: pip install "looptrap[smolagents]")

A scripted model stands in for the LLM (a subclass of smolagents' ``Model``): it searches the same thing again and
again. Once advised, the ToolCallingAgent's model changes course and answers; the CodeAgent's model does not and is
halted.
"""

from __future__ import annotations

from typing import Any

from smolagents import CodeAgent, LogLevel, ToolCallingAgent, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model

from looptrap import Guard, LoopHalted
from looptrap.integrations.smolagents import guard_agent


@tool
def search_docs(query: str) -> str:
    """Search the documentation.

    Args:
        query: What to look for.
    """
    return "1 result: refunds within 30 days" if query == "refunds" else "0 results"


class ScriptedModel(Model):
    """Replies from a script, and reads what the agent sends it."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.replies = replies
        self.inputs: list[str] = []

    def generate(self, messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.inputs.append(str([m.content for m in messages]))
        return self.replies.pop(0)


def call(name: str, **arguments: Any) -> ChatMessage:
    fn = ChatMessageToolCallFunction(name=name, arguments=arguments)
    return ChatMessage(
        role=MessageRole.ASSISTANT, content="", tool_calls=[ChatMessageToolCall(fn, "call_1", "function")]
    )


# A ToolCallingAgent whose model changes course after the advice.
same = call("search_docs", query="refund policy")
model = ScriptedModel([same, same, same, call("search_docs", query="refunds"), call("final_answer", answer="30 days")])
agent = ToolCallingAgent(tools=[search_docs], model=model, verbosity_level=LogLevel.OFF)
guard_agent(agent, Guard())
answer = agent.run("What is the refund policy?")
advice = "You have called search_docs with these exact arguments 3 times"
print("the model read:", advice, "...")
assert advice in model.inputs[3]  # the step after the advised call
print("ToolCallingAgent answered:", answer)
assert answer == "30 days"

# A CodeAgent whose model keeps going: advice, then a block, then the run is halted.
blob = ChatMessage(role=MessageRole.ASSISTANT, content='<code>\nprint(search_docs("refund policy"))\n</code>')
code_agent = CodeAgent(tools=[search_docs], model=ScriptedModel([blob] * 10), verbosity_level=LogLevel.OFF)
guard_agent(code_agent, Guard())
halted: LoopHalted | None = None
try:
    code_agent.run("What is the refund policy?")
except LoopHalted as exc:
    halted = exc
assert halted is not None
print(f"CodeAgent halted ({halted.reason}): {halted.summary}")
assert halted.reason == "loop_repeat"
