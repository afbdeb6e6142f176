"""Strands Agents: ``LoopGuard``, a plugin that checks every tool call before it runs.

    from looptrap.integrations.strands import LoopGuard

    agent = Agent(model=model, tools=[...], plugins=[LoopGuard()])

Advice and blocks cancel the call (``BeforeToolCallEvent.cancel_tool``): the tool does not run and the model reads
the advice as the call's error result. A halt ends the agent loop after the current tool batch
(``AfterToolsEvent.end_turn``), without calling the model again: the invocation returns normally with
``stop_reason == "end_turn"`` and a final message that gives the reason. Each model response ends a turn as it
arrives, before its tool calls run, so the calls of one response share one step of the escalation ladder. A call
another hook cancels after looptrap let it through is recorded as not run (cancelled; refused when the cancel
follows the user's answer to an interrupt, an approval), and one that an interrupt stops before it runs is
checked once, not again when it runs on resume.
Sync (``agent(...)``) and async (``invoke_async``, ``stream_async``) alike.

Needs ``pip install "looptrap[strands]"``.
"""

from __future__ import annotations

import contextvars
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from strands import Agent
from strands.hooks import (
    AfterModelCallEvent,
    AfterToolCallEvent,
    AfterToolsEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    BeforeToolsEvent,
    HookRegistry,
)
from strands.plugins import Plugin
from strands.tools.tools import PythonAgentTool
from strands.types.tools import ToolResult, ToolSpec, ToolUse

from looptrap.core.types import OutcomeKind, Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.outcome_kinds import strands_kind
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["LoopGuard", "halt_text"]

SessionKey = Callable[[Agent], str]
# The guard of the tool call running in this context: an agent used as a tool (``agent.as_tool()``) is invoked
# inside the call, in its context.
_CALLER: contextvars.ContextVar[Guard | None] = contextvars.ContextVar("looptrap_strands_caller", default=None)
_ALLOWED = 4096  # tool use ids awaiting their AfterToolCallEvent, per agent, at most


def halt_text(verdict: Verdict) -> str:
    """The final message of a halted run: the reason and what was tried."""
    reason = verdict.reason or "halt"
    return f"Run halted by looptrap ({reason})." + (f" {verdict.summary}" if verdict.summary else "")


@dataclass
class _Run:
    """What one agent's current invocation carries between events."""

    session: str
    halt: Verdict | None = None  # halts the loop once the current tool batch is answered
    advice: str | None = None  # turn-level advice, added to the next tool results
    cancelled_model: bool = False  # this invocation's model call was cancelled: its response is not a turn
    # tool use ids let through, whose AfterToolCallEvent is to come -> whether they came back after an interrupt
    allowed: dict[str, bool] = field(default_factory=dict)


class LoopGuard(Plugin):
    """Guards an agent's tool calls: ``Agent(..., plugins=[LoopGuard()])``.

    ``guard``: a :class:`~looptrap.Guard` (one session for every agent and invocation) or a
    :class:`~looptrap.GuardPool` (by default a new one): one session per agent object (a Strands agent holds its
    conversation), or the one ``session(agent)`` names. Each invocation with user input is a new task for its
    session (repetition memory starts over, budgets do not) and that input is the user's message. When the
    guard's ``report_tool`` is set (by default ``report_blocked``), the agent gets that tool: calling it halts
    with reason ``reported_blocked``. As a plain hook provider (``Agent(hooks=[LoopGuard()])``) it guards the
    same way but adds no tool.
    """

    name = "looptrap"

    def __init__(self, guard: Guard | GuardPool | None = None, *, session: SessionKey | None = None) -> None:
        super().__init__()
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        self.session = session
        config = self.guard.config if isinstance(self.guard, Guard) else self.guard.engine.config
        self.report_tool: str | None = config.report_tool
        self._runs: weakref.WeakKeyDictionary[Agent, _Run] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    # -- wiring ------------------------------------------------------------------------------------------
    def init_agent(self, agent: Agent) -> None:
        """Register the hooks and, unless the agent has its own, the ``report_blocked`` tool."""
        self.register_hooks(agent.hooks)
        name = self.report_tool
        if name and name not in agent.tool_registry.registry:
            spec: ToolSpec = {
                "name": name,
                "description": REPORT_BLOCKED_DESCRIPTION,
                "inputSchema": {"json": report_blocked_schema()},
            }
            agent.tool_registry.register_tool(PythonAgentTool(name, spec, _reported))

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """The hook-provider protocol: subscribe to the events the guard needs."""
        registry.add_callback(BeforeInvocationEvent, self._invocation)
        registry.add_callback(BeforeModelCallEvent, self._before_model)
        registry.add_callback(AfterModelCallEvent, self._after_model)
        registry.add_callback(BeforeToolsEvent, self._before_tools)
        registry.add_callback(BeforeToolCallEvent, self._before_call)
        registry.add_callback(AfterToolCallEvent, self._after_call)
        registry.add_callback(AfterToolsEvent, self._after_tools)

    def guard_for(self, agent: Agent) -> Guard:
        """The guard of the agent's session (its halting verdict: ``guard_for(agent).halted``)."""
        if isinstance(self.guard, Guard):
            return self.guard
        return self.guard.get(self._run(agent).session)

    def _run(self, agent: Agent) -> _Run:
        with self._lock:
            run = self._runs.get(agent)
            if run is None:
                key = self.session(agent) if self.session is not None else "strands-" + uuid.uuid4().hex[:16]
                run = self._runs[agent] = _Run(key)
                pool = self.guard
                if self.session is None and isinstance(pool, GuardPool) and pool.store is None:
                    weakref.finalize(agent, pool.forget, key)  # nothing but memory to free
            return run

    # -- the events --------------------------------------------------------------------------------------
    def _invocation(self, event: BeforeInvocationEvent) -> None:
        run = self._run(event.agent)
        run.halt, run.advice, run.cancelled_model = None, None, False
        if self.session is not None:  # named per invocation: an agent may serve one conversation after another
            run.session = self.session(event.agent)
        said = _user_text(event.messages)
        guard = self.guard_for(event.agent)
        # No user text: a resumed interrupt, which goes on with the task; an agent used as a tool that shares its
        # caller's guard: its input is a step of the caller's task.
        if said is not None and _CALLER.get() is not guard:
            run.allowed.clear()  # calls an interrupt stopped are not resumed: new input instead
            guard.new_task()
            guard.user_message(said or None)

    def _before_model(self, event: BeforeModelCallEvent) -> None:
        halted = self.guard_for(event.agent).halted  # a budget halt outlives the task it was reached in
        if halted is not None:
            self._run(event.agent).cancelled_model = True
            event.cancel = halt_text(halted)

    def _after_model(self, event: AfterModelCallEvent) -> None:
        run, response = self._run(event.agent), event.stop_response
        if run.cancelled_model or response is None:  # our own cancel, or a failed model call
            run.cancelled_model = False
            return
        content = response.message.get("content") or []
        calls = sum(1 for block in content if "toolUse" in block)
        text = "".join(block["text"] for block in content if isinstance(block.get("text"), str)).strip()
        usage = (response.message.get("metadata") or {}).get("usage")
        verdict = self.guard_for(event.agent).end_turn(
            usage=_usage(usage),
            text=text or None,
            error="the response was cut off at the token limit" if response.stop_reason == "max_tokens" else None,
            tool_calls=calls,  # the turn ends before its calls run
        )
        if not calls:
            return  # an answer stands
        if verdict.action == "halt":
            run.halt = verdict
        elif not verdict.allowed:
            run.advice = verdict.message

    def _before_tools(self, event: BeforeToolsEvent) -> None:
        halt = self._run(event.agent).halt
        if halt is not None:  # a budget reached as the response came in: none of its calls runs
            event.cancel = halt.message

    def _before_call(self, event: BeforeToolCallEvent) -> None:
        use = event.tool_use
        name, args, use_id = use["name"], use.get("input"), str(use.get("toolUseId"))
        guard, run = self.guard_for(event.agent), self._run(event.agent)
        if use_id in run.allowed:  # let through, then stopped by an interrupt: it runs now, on resume
            run.allowed[use_id] = True
            _CALLER.set(guard)
            return
        if name == self.report_tool and _is_ours(event):
            verdict = guard.handle_report_blocked(args)
        else:
            verdict = guard.check(name, args)
        if verdict.allowed:
            _CALLER.set(guard)  # until the call's AfterToolCallEvent, which comes in the same task
            with self._lock:
                if len(run.allowed) >= _ALLOWED:
                    run.allowed.clear()
                run.allowed[use_id] = False
            return
        if verdict.action == "halt":
            run.halt = run.halt or verdict
        event.cancel_tool = verdict.message

    def _after_call(self, event: AfterToolCallEvent) -> None:
        _CALLER.set(None)
        use, result, run = event.tool_use, event.result, self._run(event.agent)
        with self._lock:
            resumed = run.allowed.pop(str(use.get("toolUseId")), None)
        if event.cancel_message is not None:  # not run: cancelled here (nothing to record) or by another hook
            if resumed is not None:  # after the user's answer to an interrupt (an approval): their refusal
                why: OutcomeKind = "refused" if resumed else "cancelled"
                self.guard_for(event.agent).record(use["name"], use.get("input"), event.cancel_message, outcome=why)
            return
        value, failed = _result_value(result), result.get("status") == "error"
        kind = strands_kind(value) if failed else None  # cancelled while it ran (agent.cancel())
        self.guard_for(event.agent).record(use["name"], use.get("input"), value, is_error=failed, outcome=kind)

    def _after_tools(self, event: AfterToolsEvent) -> None:
        run = self._run(event.agent)
        if run.halt is not None:
            event.end_turn = halt_text(run.halt)
        elif run.advice is not None:
            results = [b["toolResult"] for b in event.message.get("content") or [] if "toolResult" in b]
            if results:  # the model reads it with the results of the turn it is about
                results[-1]["content"] = [*results[-1].get("content", []), {"text": run.advice}]
            run.advice = None


def _is_ours(event: BeforeToolCallEvent) -> bool:
    return getattr(event.selected_tool, "_tool_func", None) is _reported


def _reported(tool_use: ToolUse, **kwargs: Any) -> ToolResult:
    """Never runs: the plugin answers every call to its ``report_blocked`` tool before it would."""
    return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": "Reported."}]}


def _user_text(messages: Any) -> str | None:
    """What the user said in an invocation's input: the text of its user messages; ``None`` when the input has
    no user text (tool results, an interrupt's answers)."""
    said, found = [], False
    for message in messages or ():
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        for block in message.get("content") or ():
            if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                found = True
                said.append(block["text"])
    return "\n".join(t for t in said if t) if found else None


def _usage(usage: Any) -> dict[str, Any] | None:
    """A Strands usage report (``inputTokens``, ``outputTokens``, ``totalTokens``) as looptrap reads usage."""
    if not isinstance(usage, Mapping):
        return None
    return {
        "input_tokens": usage.get("inputTokens"),
        "output_tokens": usage.get("outputTokens"),
        "total_tokens": usage.get("totalTokens"),
    }


def _result_value(result: Any) -> Any:
    """What a tool returned, as the guard compares results: the text, a JSON block's value, or the blocks."""
    content = result.get("content") if isinstance(result, Mapping) else None
    if not isinstance(content, list):
        return result
    if all(isinstance(b, Mapping) and isinstance(b.get("text"), str) for b in content):
        return "\n".join(b["text"] for b in content)
    if len(content) == 1 and isinstance(content[0], Mapping) and "json" in content[0]:
        return content[0]["json"]
    return content
