"""Haystack: ``LoopGuard``, hooks for the ``Agent`` loop that check every tool call before it runs.

    from looptrap.integrations.haystack import LoopGuard

    agent = Agent(chat_generator=..., tools=[...], hooks=LoopGuard().hooks())

The hooks edit the live ``State`` the way Haystack's own ``ConfirmationHook`` does: a refused call (advice, a
block) is answered with an error tool result holding the advice and does not run; the calls allowed run as usual.
Once the run is halted, the next ``before_llm`` sets the ``stop_run`` state key, so the run ends before another
model call with ``exit_reason == "looptrap:<reason>"`` and, by default, a last assistant message that says why.
Each model reply with tool calls ends a turn before its calls run; each run is a new task, its new user messages
the user's input. A call that a ``ConfirmationHook`` after looptrap's rejects is recorded as the user's refusal.
``Agent.run`` and ``Agent.run_async`` alike.

Needs ``pip install "looptrap[haystack]"``.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from haystack.components.agents.state import State
from haystack.components.agents.state.state_utils import replace_values
from haystack.dataclasses import ChatMessage, ChatRole, ToolCall
from haystack.tools.tool import Tool

from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.outcome_kinds import haystack_kind
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["SESSION_KEY", "LoopGuard"]

SESSION_KEY = "looptrap_session"  # the ``hook_context`` key that names a run's session (a conversation id)


class _Run:
    """What the hooks keep for one run: its guard, the calls that were let through, advice for the next request."""

    __slots__ = ("advice", "guard", "running")

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.running: list[ToolCall] = []
        self.advice: str | None = None


class _Hook:
    """One of looptrap's hooks (``point``: where it is registered)."""

    def __init__(self, owner: LoopGuard, point: str) -> None:
        self.owner = owner
        self.point = point

    def run(self, state: State) -> None:
        getattr(self.owner, f"_{self.point}")(state)

    def to_dict(self) -> dict[str, Any]:
        raise TypeError("looptrap's hooks hold a live guard and are not serializable: add them after loading")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> _Hook:
        raise TypeError("looptrap's hooks hold a live guard and are not serializable: add them after loading")


class LoopGuard:
    """looptrap for a Haystack ``Agent``: ``Agent(..., hooks=LoopGuard().hooks())``.

    ``guard``: a :class:`~looptrap.Guard` (every run is one session, each a new task) or a
    :class:`~looptrap.GuardPool` (the default, a new one): each run gets a session of its own, or the one its
    ``hook_context`` names (``agent.run(messages, hook_context={"looptrap_session": "conversation-42"})``).
    ``final_message``: on a halt, end the run with an assistant message that gives the reason (its
    ``meta["looptrap"]`` holds reason, kind, message and summary). A call to the guard's ``report_tool``
    (``report_blocked``) is answered by the hooks (it halts the run); offer it to the model with
    :attr:`report_tool`.
    """

    def __init__(self, guard: Guard | GuardPool | None = None, *, final_message: bool = True) -> None:
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        self.final_message = final_message
        config = self.guard.config if isinstance(self.guard, Guard) else self.guard.engine.config
        self.report_name: str | None = config.report_tool
        self._runs: weakref.WeakKeyDictionary[State, _Run] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def hooks(self, others: Mapping[str, Sequence[Any]] | None = None) -> dict[str, list[Any]]:
        """The hooks for ``Agent(hooks=...)``: looptrap's first at each point, then ``others`` (your own)."""
        mine: dict[str, list[Any]] = {p: [_Hook(self, p)] for p in ("before_run", "before_llm", "before_tool")}
        mine["after_tool"] = [_Hook(self, "after_tool")]
        for point, hooks in (others or {}).items():
            mine.setdefault(point, []).extend(hooks)
        return mine

    @property
    def report_tool(self) -> Tool | None:
        """The ``report_blocked`` tool the advice points to, for the agent's ``tools`` (``None`` if unset)."""
        if self.report_name is None:
            return None
        return Tool(
            name=self.report_name,
            description=REPORT_BLOCKED_DESCRIPTION,
            parameters=report_blocked_schema(),
            function=_never_runs,
        )

    def guard_for(self, state: State) -> Guard | None:
        """The guard of the run that ``state`` belongs to (``None`` before its ``before_run``)."""
        run = self._runs.get(state)
        return None if run is None else run.guard

    # -- the hooks -------------------------------------------------------------------------------------------
    def _before_run(self, state: State) -> None:
        pool = self.guard
        if isinstance(pool, Guard):
            guard = pool
        else:
            context = state.data.get("hook_context") or {}
            guard = pool.get(str(context.get(SESSION_KEY) or uuid.uuid4().hex))
            if SESSION_KEY not in context and pool.store is None:
                weakref.finalize(state, pool.forget, guard.session)  # a session of its own: gone with the run
        with self._lock:
            self._runs[state] = _Run(guard)
        guard.new_task()
        said = _user_text(state.data.get("messages") or [])
        if said is not None:
            guard.user_message(said or None)

    def _before_llm(self, state: State) -> None:
        run = self._runs.get(state)
        if run is None:
            return
        verdict = run.guard.halted
        if verdict is not None:
            state.set("stop_run", f"looptrap:{verdict.reason or 'halt'}")
            if self.final_message:
                text = f"Run halted by looptrap ({verdict.reason}). {verdict.summary}".strip()
                state.set("messages", [ChatMessage.from_assistant(text, meta={"looptrap": _info(verdict)})])
        elif run.advice is not None:
            advice, run.advice = run.advice, None
            state.set("messages", [ChatMessage.from_user(advice)])

    def _before_tool(self, state: State) -> None:
        run = self._runs.get(state)
        messages = list(state.data.get("messages") or [])
        if run is None or not messages or not messages[-1].tool_calls:
            return
        reply, guard = messages[-1], run.guard
        calls = reply.tool_calls
        turn = guard.end_turn(usage=reply.meta.get("usage"), text=reply.text or None, tool_calls=len(calls))
        if turn.action in ("advise", "block"):
            run.advice = turn.message
        keep: list[ToolCall] = []
        answers: list[ChatMessage] = []
        for call in calls:
            if turn.action == "halt":
                verdict = turn
            elif call.tool_name == self.report_name:
                verdict = guard.handle_report_blocked(call.arguments)
            else:
                verdict = guard.check(call.tool_name, call.arguments)
            if verdict.allowed:
                keep.append(call)
            else:  # as ConfirmationHook rejects a call: the call, then its (error) result
                answers += [_reply(reply, [call]), ChatMessage.from_tool(verdict.message, origin=call, error=True)]
        run.running = keep
        if answers:
            rest = [_reply(reply, keep)] if keep else []
            state.set("messages", messages[:-1] + answers + rest, handler_override=replace_values)

    def _after_tool(self, state: State) -> None:
        run = self._runs.get(state)
        if run is None or not run.running:
            return
        results = {}
        for m in state.data.get("messages") or []:
            result = m.tool_call_result
            if result is not None:
                results[id(result.origin)] = results[_key(result.origin)] = result
        for call in run.running:
            found = results.get(id(call)) or results.get(_key(call))
            if found is not None:  # a call a ConfirmationHook after this one rejected: the user's refusal
                kind = haystack_kind(found.result) if found.error else None
                run.guard.record(call.tool_name, call.arguments, found.result, is_error=found.error, outcome=kind)
        run.running = []


def _key(call: ToolCall) -> Any:
    return ("id", call.id) if call.id else ("call", call.tool_name, repr(call.arguments))


def _reply(reply: ChatMessage, calls: list[ToolCall]) -> ChatMessage:
    """The model's reply with only ``calls``."""
    return ChatMessage.from_assistant(
        text=reply.text, meta=reply.meta, name=reply.name, tool_calls=calls, reasoning=reply.reasoning
    )


def _user_text(messages: Sequence[ChatMessage]) -> str | None:
    """The text of the user messages the run's input ends with (``None``: it ends with something else)."""
    said: list[str] = []
    for m in reversed(messages):
        if not m.is_from(ChatRole.USER):
            break
        said.append(m.text or "")
    return "\n".join(t for t in reversed(said) if t) if said else None


def _info(verdict: Verdict) -> dict[str, Any]:
    return {"reason": verdict.reason, "kind": verdict.kind, "message": verdict.message, "summary": verdict.summary}


def _never_runs(**arguments: Any) -> str:
    return "Reported."  # the before_tool hook answers every report_blocked call before the tool would run
