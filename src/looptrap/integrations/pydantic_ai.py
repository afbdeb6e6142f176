"""Pydantic AI: ``LoopGuard``, a capability that checks every tool call before it runs.

    from looptrap.integrations.pydantic_ai import LoopGuard

    agent = Agent(model, tools=[...], capabilities=[LoopGuard()])

Advice and blocks reach the model as a failed tool result (``ToolFailed``), which does not count against the
tool's ``retries``; a halt raises :class:`looptrap.LoopHalted` out of ``agent.run`` / ``agent.run_sync``.
Each model response ends a turn as it arrives, before its tool calls run: the calls of one response share one
step of the escalation ladder. A call the user denies (an approval answered ``ToolDenied``) is recorded as
refused: the user's say on what the agent does next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability, AgentNode, NodeResult, WrapToolExecuteHandler
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, SkipToolExecution, ToolFailed
from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturn, ToolReturnPart
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AgentToolset, FunctionToolset

from looptrap.core.errors import LoopHalted
from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.outcome_kinds import pydantic_ai_kind
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["LoopGuard"]

_ADVICE = 1024  # turn-level advice waiting for its run's next request, at most
_CONTROL_FLOW = (SkipToolExecution, CallDeferred, ApprovalRequired)  # not a result: nothing to record


def _prompt_text(prompt: Any) -> str | None:
    """The text of a user prompt (a string, or the text parts of multi-modal content)."""
    if isinstance(prompt, str):
        return prompt or None
    return "\n".join(p for p in prompt if isinstance(p, str)) or None


def _refuse(verdict: Verdict) -> Exception:
    """What a refused call raises: a halt ends the run, advice and blocks become the tool's failed result."""
    return LoopHalted(verdict) if verdict.action == "halt" else ToolFailed(verdict.message)


@dataclass
class LoopGuard(AbstractCapability[AgentDepsT]):
    """Guards an agent's tool calls: ``Agent(model, capabilities=[LoopGuard()])`` (or per run:
    ``agent.run(prompt, capabilities=[LoopGuard(guard)])``).

    ``guard``: a :class:`~looptrap.Guard` (one session for every run of the agent) or a
    :class:`~looptrap.GuardPool` (one session per Pydantic AI conversation, ``conversation_id``); by default a
    new ``GuardPool()``. Every run that starts with a user prompt is a new task for its session (repetition
    memory starts over, budgets do not), and the prompt is the user's input. Each model response ends a turn
    (its usage and text) before its tool calls run. When the guard's ``report_tool`` is set (by default
    ``report_blocked``), the agent gets that tool: calling it halts with reason ``reported_blocked``.
    """

    guard: Guard | GuardPool = field(default_factory=GuardPool)
    _: KW_ONLY
    id: str | None = "looptrap"  # one per agent: a LoopGuard given to a run replaces the agent's own
    _advice: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live guard: not spec-serializable

    def guard_for(self, ctx: RunContext[Any]) -> Guard:
        """The guard of the run's session."""
        if isinstance(self.guard, GuardPool):
            return self.guard.get(ctx.conversation_id or ctx.run_id or "default")
        return self.guard

    def get_toolset(self) -> AgentToolset[AgentDepsT] | None:
        name = self.guard.engine.config.report_tool
        if name is None:
            return None
        report = Tool[AgentDepsT].from_schema(
            self._report, name, REPORT_BLOCKED_DESCRIPTION, report_blocked_schema(), takes_ctx=True
        )
        return FunctionToolset([report])

    async def before_run(self, ctx: RunContext[AgentDepsT]) -> None:
        if ctx.prompt is not None:  # no prompt: a run resuming deferred tool calls continues the task
            guard = self.guard_for(ctx)
            guard.new_task()
            guard.user_message(_prompt_text(ctx.prompt))

    async def wrap_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        name = call.tool_name
        if name == self.guard.engine.config.report_tool:
            return await handler(args)
        guard = self.guard_for(ctx)
        verdict = guard.check(name, args)
        if not verdict.allowed:
            raise _refuse(verdict)
        try:
            result = await handler(args)
        except _CONTROL_FLOW:
            raise
        except Exception as exc:  # an error, a ModelRetry or a ToolFailed from the tool: a failed call
            guard.record(name, args, f"{type(exc).__name__}: {exc}", is_error=True)
            raise
        guard.record(name, args, result.return_value if isinstance(result, ToolReturn) else result)
        return result

    async def after_node_run(
        self, ctx: RunContext[AgentDepsT], *, node: AgentNode[AgentDepsT], result: NodeResult[AgentDepsT]
    ) -> NodeResult[AgentDepsT]:
        if Agent.is_model_request_node(node) and Agent.is_call_tools_node(result):
            # The response is in, its tool calls have not run: the turn ends here, so from the first response on
            # the calls of one response are one step of the ladder, and a budget halt comes before they run.
            self._ended(ctx, result.model_response)
        elif Agent.is_call_tools_node(node):
            if Agent.is_model_request_node(result):
                self._not_run(ctx, node.model_response, result.request.parts)
            advice = self._advice.pop(ctx.run_id or "", None)
            if advice is not None and not Agent.is_end_node(result):  # turn-level advice: with the next request
                ctx.enqueue(advice)
        return result

    def _ended(self, ctx: RunContext[Any], response: ModelResponse) -> None:
        calls = sum(1 for part in response.parts if isinstance(part, ToolCallPart))  # they have not run yet
        verdict = self.guard_for(ctx).end_turn(usage=response.usage, text=response.text, tool_calls=calls)
        if verdict.action == "halt":
            raise LoopHalted(verdict)
        if not verdict.allowed:
            if len(self._advice) >= _ADVICE:  # runs that failed before their tool calls ran
                del self._advice[next(iter(self._advice))]
            self._advice[ctx.run_id or ""] = verdict.message

    def _not_run(self, ctx: RunContext[Any], response: ModelResponse, parts: Sequence[Any]) -> None:
        """Record the calls of ``response`` that were answered without running (denied, interrupted): the
        approval flow answers them before any tool hook."""
        guard = None
        for part in parts:
            kind = pydantic_ai_kind(part.outcome) if isinstance(part, ToolReturnPart) else None
            if kind is None:
                continue
            call = next((c for c in response.tool_calls if c.tool_call_id == part.tool_call_id), None)
            args = call.args_as_dict() if call is not None else None
            guard = guard or self.guard_for(ctx)
            guard.record(part.tool_name, args, part.model_response_str(), outcome=kind)

    async def _report(self, ctx: RunContext[Any], **arguments: Any) -> str:
        raise _refuse(self.guard_for(ctx).handle_report_blocked(arguments))
