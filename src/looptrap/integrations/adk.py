"""Google ADK: ``LooptrapPlugin``, an app plugin that checks every tool call of every agent before it runs.

    from looptrap.integrations.adk import LooptrapPlugin

    app = App(name="support", root_agent=agent, plugins=[LooptrapPlugin()])  # then Runner(app=app, ...)

Advice and blocks answer the call from ``before_tool_callback``: the tool does not run and the model reads
``{"error": <advice>}`` as its result. A halt ends the run the way ADK ends one: ``before_model_callback``
answers in the model's place with a final text response that gives the reason (``event.custom_metadata
["looptrap"]`` holds it), so no model call is made after the halt. Each model response ends a turn as it
arrives (``after_model_callback``), before its tool calls run: the parallel calls of one response share one
step of the escalation ladder. A call whose tool requires confirmation is checked once: when the user answers,
it runs (or is answered "rejected", recorded as the user's refusal) without a second check. Plugin callbacks serve
``Runner.run`` and ``Runner.run_async`` alike.

Needs ``pip install "looptrap[adk]"``.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Mapping
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.outcome_kinds import adk_kind
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["LooptrapPlugin", "halt_metadata"]

_RUNS = 10_000  # invocations whose turn advice or refused calls are remembered, at most
# The guard of the tool call running in this context: an agent used as a tool (AgentTool) runs its own runner
# inside the call, and ADK hands the call's context, as the before-tool callback left it, to the tool.
_CALLER: contextvars.ContextVar[Guard | None] = contextvars.ContextVar("looptrap_adk_caller", default=None)


def halt_metadata(verdict: Verdict) -> dict[str, Any]:
    """What the halting response carries in ``custom_metadata["looptrap"]``."""
    return {
        "reason": verdict.reason or "halt",
        "kind": verdict.kind,
        "message": verdict.message,
        "summary": verdict.summary,
    }


class _ReportBlocked(BaseTool):
    """The ``report_blocked`` tool the plugin adds to each model request; the plugin answers its calls."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, description=REPORT_BLOCKED_DESCRIPTION)

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters_json_schema=report_blocked_schema()
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return {"result": "Reported."}  # never reached: before_tool_callback answers every call


class LooptrapPlugin(BasePlugin):
    """Guards the tool calls of every agent an app runs: ``App(..., plugins=[LooptrapPlugin()])``.

    ``guard``: a :class:`~looptrap.Guard` (one session for everything) or a :class:`~looptrap.GuardPool` (by
    default a new one): one session per ADK session (``user_id`` and session id), so a conversation's runs
    share it. Each run started with a user message is a new task for its session (repetition memory starts
    over, budgets do not) and the message is the user's input. When the guard's ``report_tool`` is set (by
    default ``report_blocked``), every model request gets that tool, unless an agent has its own: calling it
    halts with reason ``reported_blocked``.
    """

    def __init__(self, guard: Guard | GuardPool | None = None, *, name: str = "looptrap") -> None:
        super().__init__(name=name)
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        config = self.guard.config if isinstance(self.guard, Guard) else self.guard.engine.config
        self._report = _ReportBlocked(config.report_tool) if config.report_tool else None
        self._advice: dict[str, str] = {}  # invocation id -> turn-level advice for its next model request
        self._refused: set[str] = set()  # function call ids answered by the guard, not run
        self._waiting: set[str] = set()  # calls checked, then held for the user's confirmation
        self._lock = threading.Lock()

    def guard_for(self, user_id: str, session_id: str) -> Guard:
        """The guard of an ADK session (its halting verdict: ``guard_for(user_id, session_id).halted``)."""
        if isinstance(self.guard, Guard):
            return self.guard
        return self.guard.get(f"{user_id}:{session_id}")

    def _guard(self, ctx: CallbackContext | InvocationContext) -> Guard:
        session = ctx.session
        return self.guard_for(session.user_id, session.id)

    # -- the run -----------------------------------------------------------------------------------------
    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: types.Content
    ) -> types.Content | None:
        """A new request: a new task, and what the user said. The request of an agent used as a tool that shares
        its caller's guard is a step of the caller's task, not a new one."""
        guard = self._guard(invocation_context)
        if _CALLER.get() is guard or _answers_only(user_message):
            return None  # an agent tool's request, or the user's answers to the agent's (a tool confirmation)
        guard.new_task()
        text = "\n".join(p.text for p in user_message.parts or () if p.text and not p.thought)
        guard.user_message(text or None)
        return None

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        """Forget the run; an agent used as a tool ran in a session made for that one call: drop its guard (from
        memory; stored state is left to the store's own expiry)."""
        with self._lock:
            self._advice.pop(invocation_context.invocation_id, None)
        caller, pool = _CALLER.get(), self.guard
        if caller is not None and isinstance(pool, GuardPool) and pool.store is None:
            session = invocation_context.session
            key = f"{session.user_id}:{session.id}"
            if caller.session != key:
                pool.forget(key)

    # -- model turns -------------------------------------------------------------------------------------
    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """Answer in the model's place once the session is halted (the run ends there); otherwise add the
        ``report_blocked`` tool and any turn-level advice to the request."""
        verdict = self._guard(callback_context).halted
        if verdict is not None:
            return _halt_response(verdict)
        if self._report is not None and self._report.name not in llm_request.tools_dict:
            llm_request.append_tools([self._report])
        with self._lock:
            advice = self._advice.pop(callback_context.invocation_id, None)
        if advice is not None:
            llm_request.contents.append(types.Content(role="user", parts=[types.Part(text=advice)]))
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        """End the model's turn as its response arrives (a streamed response: once complete); a budget halt
        replaces a response that asks for calls by the final halt response, so none of them runs."""
        if llm_response.partial:
            return None
        parts = llm_response.content.parts or [] if llm_response.content else []
        calls = sum(1 for p in parts if p.function_call)
        text = "".join(p.text for p in parts if p.text and not p.thought).strip()
        verdict = self._guard(callback_context).end_turn(
            usage=_usage(llm_response.usage_metadata),
            text=text or None,
            error=llm_response.error_message if llm_response.error_code and not calls else None,
            tool_calls=calls,  # the turn ends before its calls run
        )
        if not calls:
            return None  # an answer stands
        if verdict.action == "halt":
            return _halt_response(verdict)
        if not verdict.allowed:
            with self._lock:
                if len(self._advice) >= _RUNS:
                    del self._advice[next(iter(self._advice))]
                self._advice[callback_context.invocation_id] = verdict.message
        return None

    # -- tool calls --------------------------------------------------------------------------------------
    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """Check the call; a call that must not run is answered with the advice as its error."""
        guard = self._guard(tool_context)
        if tool_context.tool_confirmation is not None and self._confirmed(tool_context):
            _CALLER.set(guard)
            return None  # checked before it asked for confirmation: it goes on as that check allowed
        report = tool is self._report
        verdict = guard.handle_report_blocked(tool_args) if report else guard.check(tool.name, tool_args)
        if verdict.allowed:
            _CALLER.set(guard)  # seen by the tool's own task only (each call runs in a copy of this context)
            return None
        with self._lock:
            if len(self._refused) >= _RUNS:
                self._refused.clear()  # calls whose after-callback never came (a run cancelled in between)
            self._refused.add(_call_id(tool_context))
        return {"error": verdict.message}

    async def after_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Record what the call returned (a call the guard answered did not run: nothing to record)."""
        _CALLER.set(None)
        call_id = _call_id(tool_context)
        with self._lock:
            if call_id in self._refused:
                self._refused.discard(call_id)
                return None
        if tool_context.function_call_id in tool_context.actions.requested_tool_confirmations:
            with self._lock:  # not run: it waits for the user, and runs (or is rejected) once they answer
                if len(self._waiting) >= _RUNS:
                    self._waiting.clear()
                self._waiting.add(_confirmation_key(tool_context))
            return None
        guard = self._guard(tool_context)  # a rejected confirmation: the user's refusal
        guard.record(tool.name, tool_args, result, is_error=_failed(result), outcome=adk_kind(result))
        return None

    def _confirmed(self, tool_context: ToolContext) -> bool:
        """Whether the call was checked before it asked for the user's confirmation (and now comes back with it)."""
        key = _confirmation_key(tool_context)
        with self._lock:
            if key not in self._waiting:
                return False
            self._waiting.discard(key)
            return True

    async def on_tool_error_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> dict[str, Any] | None:
        """Record a tool that raised as a failed call (ADK then handles the error as it always does)."""
        _CALLER.set(None)
        if not isinstance(error, asyncio.CancelledError):  # cancelled: it gave no result
            self._guard(tool_context).record(tool.name, tool_args, f"{type(error).__name__}: {error}", is_error=True)
        return None


def _halt_response(verdict: Verdict) -> LlmResponse:
    reason = verdict.reason or "halt"
    text = f"Run halted by looptrap ({reason})." + (f" {verdict.summary}" if verdict.summary else "")
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        custom_metadata={"looptrap": halt_metadata(verdict)},
        turn_complete=True,
    )


def _call_id(ctx: ToolContext) -> str:
    return f"{ctx.invocation_id}:{ctx.function_call_id}"


def _confirmation_key(ctx: ToolContext) -> str:
    """A call awaiting confirmation, as it comes back once the user answered (in a new invocation)."""
    session = ctx.session
    return f"{session.user_id}:{session.id}:{ctx.function_call_id}"


def _answers_only(message: types.Content) -> bool:
    """Whether a user message holds nothing but function responses (answers to the agent's own requests, such as
    a tool confirmation), no words of the user's."""
    parts = message.parts or ()
    return bool(parts) and all(p.function_response is not None and not p.text for p in parts)


def _failed(result: Any) -> bool:
    """ADK's convention for a failed call: a dict with an ``error`` (or ``status: "error"``)."""
    return isinstance(result, Mapping) and (bool(result.get("error")) or result.get("status") == "error")


def _usage(usage: types.GenerateContentResponseUsageMetadata | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.prompt_token_count,
        "output_tokens": usage.candidates_token_count,
        "total_tokens": usage.total_token_count,
    }
