"""AG2 (``ag2`` 1.x): ``LoopGuard``, a plugin whose middleware checks every tool call before it runs.

    from looptrap.integrations.ag2 import LoopGuard

    agent = Agent("support", config=config, tools=[search_docs], plugins=[LoopGuard()])

(or for one request: ``await agent.ask(message, plugins=[LoopGuard(guard)])``). Advice and blocks answer the call
with a ``ToolErrorEvent`` holding the advice (the tool does not run) and the turn goes on. AG2's agent loop has
no cap of its own: once the run is halted, the next model call is answered by the middleware without calling the
model, so the turn ends with a final reply that says why (its message's ``metadata["looptrap"]``). Each model
response ends a turn before its calls (which AG2 runs in parallel) execute; each ``ask`` is a new task, its
message the user's input. A call the user denies (a tool's ``approval_required`` middleware) is their refusal.

Needs ``pip install "looptrap[ag2]"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ag2 import Context, Plugin
from ag2.events import (
    BaseEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextInput,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResult,
    ToolResultEvent,
)
from ag2.middleware import BaseMiddleware
from ag2.middleware.base import LLMCall, ToolExecution, ToolResultType
from ag2.tools import tool

from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.outcome_kinds import ag2_kind
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION

__all__ = ["CallRefused", "LoopGuard"]


class CallRefused(Exception):
    """Why a call did not run (advice, a block, a halt): the error of its ``ToolErrorEvent``."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


class LoopGuard(Plugin):
    """looptrap for an AG2 agent: ``Agent(..., plugins=[LoopGuard()])``.

    ``guard``: a :class:`~looptrap.Guard` (every conversation is one session) or a :class:`~looptrap.GuardPool`
    (the default, a new one): one session per conversation (the AG2 stream: ``reply.ask(...)`` goes on in it).
    The plugin adds the guard's ``report_tool`` (``report_blocked``; unless the guard's ``report_tool`` is
    ``None``): calling it halts with reason ``reported_blocked``.
    """

    def __init__(self, guard: Guard | GuardPool | None = None) -> None:
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        config = self.guard.config if isinstance(self.guard, Guard) else self.guard.engine.config
        self.report_name: str | None = config.report_tool
        tools = [] if self.report_name is None else [_report_tool(self.report_name)]
        super().__init__(tools=tools, middleware=[self._make])

    def guard_for(self, context: Context) -> Guard:
        """The guard of the conversation ``context`` belongs to."""
        if isinstance(self.guard, Guard):
            return self.guard
        return self.guard.get(str(context.stream.id))

    def _make(self, event: BaseEvent, context: Context) -> BaseMiddleware:
        return _Middleware(event, context, self)


class _Middleware(BaseMiddleware):
    """One ``ask`` of a guarded agent (AG2 makes a middleware per request)."""

    def __init__(self, event: BaseEvent, context: Context, owner: LoopGuard) -> None:
        super().__init__(event, context)
        self.owner = owner
        self.guard = owner.guard_for(context)
        self.advice: str | None = None  # turn-level advice, with the next tool result
        if isinstance(event, ModelRequest):  # a new request (not a resumed one)
            self.guard.new_task()
            said = "\n".join(p.content for p in event.parts if isinstance(p, TextInput))
            self.guard.user_message(said or None)

    async def on_llm_call(self, call_next: LLMCall, events: Sequence[BaseEvent], context: Context) -> ModelResponse:
        verdict = self.guard.halted
        if verdict is not None:  # the turn ends here, with this reply, instead of another model call
            info = {
                "reason": verdict.reason,
                "kind": verdict.kind,
                "message": verdict.message,
                "summary": verdict.summary,
            }
            text = f"Run halted by looptrap ({verdict.reason}). {verdict.summary}".strip()
            message = ModelMessage(text, metadata={"looptrap": info})
            await context.send(message)
            return ModelResponse(message)
        response = await call_next(events, context)
        turn = self.guard.end_turn(
            usage=response.usage or None, text=response.content or None, tool_calls=len(response.tool_calls)
        )
        if turn.action in ("advise", "block") and response.tool_calls:
            self.advice = turn.message
        return response

    async def on_tool_execution(
        self, call_next: ToolExecution, event: ToolCallEvent, context: Context
    ) -> ToolResultType:
        args = _arguments(event)
        if event.name == self.owner.report_name:
            verdict = self.guard.handle_report_blocked(args)
        else:
            verdict = self.guard.check(event.name, args)
        if not verdict.allowed:
            return ToolErrorEvent(
                parent_id=event.id, name=event.name, error=CallRefused(verdict), result=ToolResult(verdict.message)
            )
        out = await call_next(event, context)
        if isinstance(out, ToolErrorEvent):
            self.guard.record(event.name, args, f"{type(out.error).__name__}: {out.error}", is_error=True)
        elif isinstance(out, ToolResultEvent):  # a denial by the tool's approval_required: the user's refusal
            text = "".join(str(getattr(p, "content", p)) for p in out.result.parts)
            self.guard.record(event.name, args, text, outcome=ag2_kind(text))
        else:  # a call the client runs: no result here
            return out
        advice, self.advice = self.advice, None
        if advice is not None:
            out.result.parts.append(TextInput(f"\n\n{advice}"))
        return out


def _arguments(event: ToolCallEvent) -> Any:
    try:
        return event.serialized_arguments
    except ValueError:
        return event.arguments


def _report_tool(name: str) -> Any:
    def report_blocked(tried: list[str], needed: str) -> str:
        return "Reported."  # never runs: the middleware answers every report_blocked call

    return tool(report_blocked, name=name, description=REPORT_BLOCKED_DESCRIPTION)
