"""CrewAI: ``LoopGuard``, CrewAI's own tool-call and LLM-call hooks around every agent's loop.

    from looptrap.integrations.crewai import LoopGuard

    LoopGuard().register()  # then crew.kickoff() / agent.kickoff() as usual; or: with LoopGuard(): ...

The before-tool hook checks each call; a call that must not run is blocked, and the after-tool hook puts the
advice in place of CrewAI's "blocked" text, so the model reads the advice as the tool's result. A call CrewAI
itself does not run because it repeats the agent's last call ("I tried reusing the same input...") is recorded
with that last call's result, which it stands for (the same answer again). A halt is
CrewAI's deliberate stop: the before-LLM hook raises :class:`LoopHaltedAbort` (a ``HookAborted`` that is also a
:class:`looptrap.LoopHalted`) before the next model call, which CrewAI never retries: ``kickoff`` raises it with
``.reason`` and ``.summary``. Each model call of an agent's run ends the turn before it, so the parallel calls
of one model response share one step of the escalation ladder. The hooks are synchronous and serve
``kickoff``, ``kickoff_async`` and ``akickoff`` alike.

Needs ``pip install "looptrap[crewai]"``.
"""

from __future__ import annotations

import contextvars
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from crewai.hooks import (
    HookAborted,
    LLMCallHookContext,
    ToolCallHookContext,
    register_after_tool_call_hook,
    register_before_llm_call_hook,
    register_before_tool_call_hook,
    unregister_after_tool_call_hook,
    unregister_before_llm_call_hook,
    unregister_before_tool_call_hook,
)
from crewai.tools import BaseTool

from looptrap.core.errors import LoopHalted
from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.outcome_kinds import crewai_kind
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION

__all__ = ["LoopGuard", "LoopHaltedAbort", "ReportBlockedTool"]

SessionKey = Callable[[Any, Any, Any], str]  # (agent, task, crew) -> session id
_RUNS = 10_000  # agents whose current run is remembered, at most
_REFUSED: contextvars.ContextVar[Verdict | None] = contextvars.ContextVar("looptrap_refused", default=None)
# The guard of the tool call running in this context: an agent a call delegates to runs inside it.
_CALLER: contextvars.ContextVar[Guard | None] = contextvars.ContextVar("looptrap_crewai_caller", default=None)
_TOOL_ERROR = "Error executing tool"  # how CrewAI words a tool that raised


class LoopHaltedAbort(LoopHalted, HookAborted):
    """A halt as CrewAI's deliberate stop: a ``HookAborted`` (never retried, it ends the task and the crew's
    ``kickoff``) that is a :class:`looptrap.LoopHalted` (``.verdict``, ``.reason``, ``.summary``)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict)
        self.reason = verdict.reason or "halt"  # HookAborted's reason is the text; keep LoopHalted's code
        self.source = "looptrap"


@dataclass
class _Run:
    """One agent's current run (an executor's invocation on a task or a kickoff)."""

    guard: Guard
    usage: tuple[int, int, int] = (0, 0, 0)  # the LLM's token counters when its last turn ended
    last: tuple[str, dict[str, Any], Any, bool] | None = None  # the last call that ran: tool, input, result, failed


class ReportBlockedTool(BaseTool):
    """looptrap's ``report_blocked`` as a CrewAI tool: the model says it cannot go on, and the run halts
    (reason ``reported_blocked``). The guard answers its calls; add it to an agent's ``tools``."""

    name: str = "report_blocked"
    description: str = REPORT_BLOCKED_DESCRIPTION

    def _run(self, tried: list[str], needed: str) -> str:
        """What you tried (one entry per distinct attempt) and what you would need to go on."""
        return "Reported."  # never reached while a LoopGuard is registered: it answers every call


class LoopGuard:
    """Guards the tool calls of every CrewAI agent in the process while registered (CrewAI's hooks are global):
    ``LoopGuard().register()``, or ``with LoopGuard(): crew.kickoff()``.

    ``guard``: a :class:`~looptrap.Guard` (one session for every run) or a :class:`~looptrap.GuardPool` (by
    default a new one): each agent run (an agent working on a task, or an ``agent.kickoff``) gets its own
    session, or the one ``session(agent, task, crew)`` names (a crew-wide session, say). Each run is a new task
    for its session (repetition memory starts over, budgets do not) and its prompt is the user's input. The
    guard answers calls to its ``report_tool`` (``report_blocked``; give agents :meth:`report_tool`).
    """

    def __init__(self, guard: Guard | GuardPool | None = None, *, session: SessionKey | None = None) -> None:
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        self.session = session
        config = self.guard.config if isinstance(self.guard, Guard) else self.guard.engine.config
        self.report_name: str | None = config.report_tool
        self._runs: dict[int, _Run] = {}  # id(agent) -> its current run
        self._lock = threading.Lock()

    def report_tool(self) -> ReportBlockedTool:
        """The ``report_blocked`` tool the advice points to, for an agent's ``tools``."""
        return ReportBlockedTool(name=self.report_name or "report_blocked")

    # -- registration ------------------------------------------------------------------------------------
    def register(self) -> LoopGuard:
        """Register the hooks with CrewAI (globally, for every agent from now on); returns ``self``."""
        register_before_llm_call_hook(self.before_llm_call)
        register_before_tool_call_hook(self.before_tool_call)
        register_after_tool_call_hook(self.after_tool_call)
        return self

    def unregister(self) -> None:
        """Remove the hooks."""
        unregister_before_llm_call_hook(self.before_llm_call)
        unregister_before_tool_call_hook(self.before_tool_call)
        unregister_after_tool_call_hook(self.after_tool_call)

    def __enter__(self) -> LoopGuard:
        return self.register()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.unregister()

    def guard_for(self, agent: Any) -> Guard | None:
        """The guard of the agent's current (or last) run; ``None`` before its first (``.halted`` holds why a
        run halted)."""
        with self._lock:
            run = self._runs.get(id(agent))
        return None if run is None else run.guard

    # -- the hooks ---------------------------------------------------------------------------------------
    def before_llm_call(self, context: LLMCallHookContext) -> None:
        """A model call of an agent's loop: the first one starts the run (a new task, the prompt as the user's
        input); each later one ends the turn whose calls just ran. A halted run stops here."""
        executor = context.executor
        if executor is None:  # a model call outside an agent's loop (planning, memory): not a turn
            return
        agent = context.agent
        if context.iterations == 0:
            run = self._start(agent, context.task, context.crew, context.llm)
            if _CALLER.get() is not run.guard:  # work delegated by a call of this session is part of its task
                run.guard.new_task()
                run.guard.user_message(_prompt(context.messages))
        else:
            run = self._run_of(agent, context.task, context.crew, context.llm)
            before, run.usage = run.usage, _usage(context.llm)
            used = [now - then for now, then in zip(run.usage, before, strict=True)]
            verdict = run.guard.end_turn(
                usage={"input_tokens": used[0], "output_tokens": used[1], "total_tokens": used[2]}
            )
            if not verdict.allowed and verdict.action != "halt":  # turn-level advice: with this request
                context.messages.append({"role": "user", "content": verdict.message})
        halted = run.guard.halted
        if halted is not None:
            raise LoopHaltedAbort(halted)

    def before_tool_call(self, context: ToolCallHookContext) -> bool | None:
        """Check the call; ``False`` blocks it (the after-tool hook gives the model the advice instead)."""
        run = self._run_of(context.agent, context.task, context.crew, None)
        name, args = context.tool_name, dict(context.tool_input)
        report = name == self.report_name
        verdict = run.guard.handle_report_blocked(args) if report else run.guard.check(name, args)
        _REFUSED.set(None if verdict.allowed else verdict)
        _CALLER.set(run.guard if verdict.allowed else None)
        return None if verdict.allowed else False

    def after_tool_call(self, context: ToolCallHookContext) -> str | None:
        """Record the result; a call the guard refused gets the advice as its result."""
        refused = _REFUSED.get()
        _CALLER.set(None)
        if refused is not None:
            _REFUSED.set(None)
            return refused.message
        run = self._run_of(context.agent, context.task, context.crew, None)
        name, args, raw = context.tool_name, dict(context.tool_input), context.raw_tool_result
        if crewai_kind(raw) == "cancelled":  # CrewAI did not run it: it repeats the last call that ran
            last = run.last
            if last is not None and last[:2] == (name, args):  # so its answer is that call's, again: stale
                run.guard.record(name, args, last[2], is_error=last[3])
            else:
                run.guard.record(name, args, raw, outcome="cancelled")
            return None
        failed = isinstance(raw, str) and raw.startswith(_TOOL_ERROR)
        run.guard.record(name, args, raw, is_error=failed)
        run.last = (name, args, raw, failed)
        return None

    # -- runs --------------------------------------------------------------------------------------------
    def _start(self, agent: Any, task: Any, crew: Any, llm: Any) -> _Run:
        with self._lock:
            previous = self._runs.pop(id(agent), None)
            if len(self._runs) >= _RUNS:
                del self._runs[next(iter(self._runs))]
            run = self._runs[id(agent)] = _Run(self._session_guard(agent, task, crew, previous), _usage(llm))
        return run

    def _run_of(self, agent: Any, task: Any, crew: Any, llm: Any) -> _Run:
        with self._lock:
            run = self._runs.get(id(agent))
        return run if run is not None else self._start(agent, task, crew, llm)  # a call from outside a loop

    def _session_guard(self, agent: Any, task: Any, crew: Any, previous: _Run | None) -> Guard:
        pool = self.guard
        if isinstance(pool, Guard):
            return pool
        if self.session is not None:
            return pool.get(self.session(agent, task, crew))
        if previous is not None and pool.store is None:
            pool.forget(previous.guard.session)  # one run at a time per agent: its last run is over
        return pool.get("crewai-" + uuid.uuid4().hex[:16])


def _prompt(messages: list[Any]) -> str | None:
    """The run's prompt: the text of its last user message."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
            return content if isinstance(content, str) and content else None
    return None


def _usage(llm: Any) -> tuple[int, int, int]:
    """The LLM's cumulative token counters (prompt, completion, total); zeros when it has none."""
    summary = getattr(llm, "get_token_usage_summary", None)
    if summary is None:
        return (0, 0, 0)
    try:
        got = summary()
    except Exception:  # noqa: BLE001 - usage is optional; the guard goes on without it
        return (0, 0, 0)
    parts = (getattr(got, name, 0) for name in ("prompt_tokens", "completion_tokens", "total_tokens"))
    return tuple(int(p or 0) for p in parts)  # type: ignore[return-value]
