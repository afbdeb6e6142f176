"""LlamaIndex: ``GuardedFunctionAgent``, a ``FunctionAgent`` whose tool calls go through looptrap and whose run
ends on a halt.

    from looptrap.integrations.llamaindex import GuardedFunctionAgent

    agent = GuardedFunctionAgent(tools=[search_docs], llm=llm)

LlamaIndex's instrumentation only observes, and the agent turns every exception a tool raises into one more tool
result, so a halt cannot be raised from a tool. Here the agent's own steps do it: each tool call is checked
before it runs (advice and blocks are the call's error result, ``ToolOutput(is_error=True)``, and the tool
message the model reads says so, ``additional_kwargs["is_error"]``; the tool does not run), and once the run
is halted, the next agent step answers without calling the model, so the workflow ends with its ``StopEvent``
as after any answer: the run's ``AgentOutput`` says why (``response.additional_kwargs["looptrap"]``). Each
model response ends a turn before its calls run; each run is a new task, its message the user's input.
LlamaIndex agents are async (``await agent.run(...)``).

Needs ``pip install "looptrap[llamaindex]"``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from llama_index.core.agent.workflow import AgentOutput, FunctionAgent, ToolCallResult
from llama_index.core.agent.workflow.agent_context import AgentContext
from llama_index.core.bridge.pydantic import Field, create_model
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import BaseMemory
from llama_index.core.tools import AsyncBaseTool, BaseTool, FunctionTool, ToolOutput
from llama_index.core.workflow import Context

from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION

__all__ = ["SESSION_KEY", "GuardedFunctionAgent"]

SESSION_KEY = "looptrap_session"  # the context store key of a run's session id (kept with the Context)
_ADVICE_KEY = "looptrap_advice"  # turn-level advice, given with the next tool result
_MARK = "looptrap"  # the key of a refused call's ToolOutput.raw_output: {"looptrap": action, "reason": reason}


class GuardedFunctionAgent(FunctionAgent):
    """``FunctionAgent`` with looptrap: the same arguments, and ``guard``.

    ``guard``: a :class:`~looptrap.Guard` (every run is one session) or a :class:`~looptrap.GuardPool` (the
    default, a new one): one session per ``Context``, so runs that share a ``Context`` (a conversation:
    ``agent.run(msg, ctx=ctx)``) share a session; its id is kept in the context's store (``"looptrap_session"``),
    so a serialized context keeps it too. Each run is a new task, and its user message the user's input. When the
    guard's ``report_tool`` is set (by default ``report_blocked``), the agent gets that tool: calling it halts
    with reason ``reported_blocked``.
    """

    guard: Any = Field(default_factory=GuardPool, exclude=True, description="looptrap's Guard or GuardPool")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(self.guard, Guard | GuardPool):
            raise TypeError(f"guard must be a Guard or a GuardPool, got {type(self.guard)!r}")
        name = self._report_name
        if name and all(not isinstance(t, BaseTool) or t.metadata.name != name for t in self.tools or ()):
            self.tools = [*(self.tools or []), _report_tool(name)]

    @property
    def _report_name(self) -> str | None:
        guard = self.guard
        config = guard.config if isinstance(guard, Guard) else guard.engine.config
        return config.report_tool

    async def guard_for(self, ctx: AgentContext) -> Guard:
        """The guard of the session that ``ctx`` belongs to (``.halted``, ``.needed``, ``.state``)."""
        guard = self.guard
        if isinstance(guard, Guard):
            return guard
        session = await ctx.store.get(SESSION_KEY, default=None)
        if session is None:
            session = uuid.uuid4().hex
            await ctx.store.set(SESSION_KEY, session)
        pool: GuardPool = guard
        return pool.get(str(session))

    # -- each model turn ---------------------------------------------------------------------------------------
    async def take_step(
        self, ctx: AgentContext, llm_input: list[ChatMessage], tools: Sequence[AsyncBaseTool], memory: BaseMemory
    ) -> AgentOutput:
        """Stop before the model call once halted; else call the model and end its turn before its calls run."""
        guard = await self.guard_for(ctx)
        if await ctx.store.get("num_iterations", default=0) == 0:  # the first step of a run
            guard.new_task()
            said = await ctx.store.get("user_msg_str", default=None)
            guard.user_message(said or None)
        halted = guard.halted
        if halted is not None:
            return await self._stop(ctx, halted)
        output = await super().take_step(ctx, llm_input, tools, memory)
        verdict = guard.end_turn(
            usage=_usage(output.raw), text=output.response.content or None, tool_calls=len(output.tool_calls)
        )
        if verdict.action in ("advise", "block") and output.tool_calls:
            await ctx.store.set(_ADVICE_KEY, verdict.message)
        return output

    async def _stop(self, ctx: AgentContext, verdict: Verdict) -> AgentOutput:
        """The run's answer on a halt: no tool calls, so the workflow finalizes and stops as after any answer."""
        text = f"Run halted by looptrap ({verdict.reason}). {verdict.summary}".strip()
        info = {"reason": verdict.reason, "kind": verdict.kind, "message": verdict.message, "summary": verdict.summary}
        message = ChatMessage(role="assistant", content=text, additional_kwargs={"looptrap": info})
        scratchpad = await ctx.store.get(self.scratchpad_key, default=[])
        scratchpad.append(message)  # into the memory with the run's other messages, when the run is finalized
        await ctx.store.set(self.scratchpad_key, scratchpad)
        return AgentOutput(response=message, tool_calls=[], raw=None, current_agent_name=self.name)

    # -- each tool call ------------------------------------------------------------------------------------
    async def _call_tool(self, ctx: Context, tool: AsyncBaseTool, tool_input: dict[str, Any]) -> ToolOutput:
        guard = await self.guard_for(ctx)
        name = tool.metadata.get_name()
        if name == self._report_name:
            verdict = guard.handle_report_blocked(tool_input)
        else:
            verdict = guard.check(name, tool_input)
        if not verdict.allowed:
            refused = {_MARK: verdict.action, "reason": verdict.reason}
            return ToolOutput(
                content=verdict.message, tool_name=name, raw_input=tool_input, raw_output=refused, is_error=True
            )
        out = await super()._call_tool(ctx, tool, tool_input)
        guard.record(name, tool_input, out.content, is_error=out.is_error)
        advice = await ctx.store.get(_ADVICE_KEY, default=None)
        if advice is not None:
            await ctx.store.set(_ADVICE_KEY, None)
            out.blocks = [*out.blocks, *ToolOutput(tool_name=name, content=f"\n\n{advice}").blocks]
        return out

    async def handle_tool_call_results(self, ctx: Context, results: list[ToolCallResult], memory: BaseMemory) -> None:
        """``FunctionAgent``'s, and the tool messages of refused calls say they are errors
        (``additional_kwargs["is_error"] = True``, which ``FunctionAgent`` leaves out), for an LLM adapter that
        gives the model the provider's error flag, and for code that reads the memory."""
        await super().handle_tool_call_results(ctx, results, memory)
        refused = {r.tool_id for r in results if _is_refusal(r.tool_output)}
        if not refused:
            return
        scratchpad: list[ChatMessage] = await ctx.store.get(self.scratchpad_key, default=[])
        for message in reversed(scratchpad):  # this step's tool messages are the last ones
            call_id = message.additional_kwargs.get("tool_call_id") if message.role == "tool" else None
            if call_id in refused:
                message.additional_kwargs["is_error"] = True
                refused.discard(call_id)
                if not refused:
                    break
        await ctx.store.set(self.scratchpad_key, scratchpad)


def _is_refusal(output: ToolOutput) -> bool:
    """Whether a tool output is the guard's answer to a call it did not run."""
    raw = output.raw_output
    return output.is_error and isinstance(raw, dict) and _MARK in raw


def _usage(raw: Any) -> Any:
    """The token usage in a response's raw form, if the LLM reports one."""
    if isinstance(raw, dict):
        return raw.get("usage")
    return getattr(raw, "usage", None)


def _report_tool(name: str) -> FunctionTool:
    schema = create_model(
        "ReportBlocked",
        tried=(list[str], Field(description="What you tried, one entry per distinct attempt.")),
        needed=(str, Field(description="What you would need to go on.")),
    )
    return FunctionTool.from_defaults(
        async_fn=_never_runs, name=name, description=REPORT_BLOCKED_DESCRIPTION, fn_schema=schema
    )


async def _never_runs(**arguments: Any) -> str:
    return "Reported."  # the agent answers every report_blocked call before the tool would run
