"""OpenAI Agents SDK: looptrap as a tool input guardrail (check) and a tool output guardrail (record).

``agent = guard_agent(agent)`` returns a copy of the agent whose function tools carry both guardrails. Advice
and blocks reject the call (``reject_content``): the tool does not run, the model gets the advice as the tool's
result and the run goes on. A halt trips the guardrail's tripwire: ``Runner.run`` raises the SDK's
``ToolInputGuardrailTripwireTriggered``, whose ``output.output_info`` is looptrap's halting :class:`Verdict`.
The input of each run is the user's input (an agent input guardrail), and the first call of each model
response ends the turn before it: the calls of one model response share one step of the escalation ladder
(the guarded agent's hooks count the run's model responses, ``on_llm_end``, around the agent's own hooks).

Needs ``pip install "looptrap[openai-agents]"``.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from agents import (
    Agent,
    AgentHookContext,
    AgentHooks,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrail,
    ModelResponse,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
    default_tool_error_function,
)
from agents.items import TResponseInputItem
from agents.tool import Tool
from agents.tool_context import ToolContext

from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["LoopGuardrails", "guard_agent", "run_session"]

TContext = TypeVar("TContext")
SessionKey = Callable[[RunContextWrapper[Any]], str]

_RUNS: dict[int, str] = {}  # id of a run's Usage object -> that run's session id, dropped when the run is gone
_SDK_ERROR = default_tool_error_function(RunContextWrapper(context=None), RuntimeError())


def run_session(ctx: RunContextWrapper[Any]) -> str:
    """The default session id: one per run. Every tool call of a ``Runner.run`` (handoffs and agents used as
    tools included) shares the run's context wrapper and its ``usage`` object, which identifies the run."""
    usage = ctx.usage
    key = _RUNS.get(id(usage))
    if key is None:
        key = _RUNS[id(usage)] = "run-" + os.urandom(8).hex()
        weakref.finalize(usage, _RUNS.pop, id(usage), None)
    return key


class LoopGuardrails:
    """looptrap's two tool guardrails, sharing one guard or pool: ``input`` checks each call before it runs,
    ``output`` records its result. Attach them to an agent with :meth:`apply` (or :func:`guard_agent`), or
    pass them to any function tool or MCP server (``tool_input_guardrails=[rails.input]``,
    ``tool_output_guardrails=[rails.output]``). ``user_input``, an agent input guardrail that :meth:`apply`
    adds, passes the input of each run to the guard as the user's input.

    The first call of each new model response of a run ends the turn before it, with the tokens used since
    (from the run's ``usage``): so the calls of one model response share one step of the escalation ladder
    (each is checked with the response's number in its run as ``message_id``), and turn and token budgets
    apply (a budget halt trips the wire of that call). The responses are counted by the agent's hooks, which
    :meth:`apply` wraps (``on_llm_end``; the agent's own hooks still run); on agents it did not guard, the
    guardrails tell responses apart by the run's usage alone.

    ``guard``: a :class:`Guard` (one session for every run it guards), a :class:`GuardPool` or ``None`` (a new
    pool): with a pool, each run gets its own guard, or the one ``session(ctx)`` names (a conversation id from
    your context, say). A session that outlives a run starts a new task with each run (repetition memory
    starts over, budgets do not). Without a store, the guards of runs that are gone are dropped from the pool.
    """

    def __init__(self, guard: Guard | GuardPool | None = None, *, session: SessionKey | None = None) -> None:
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        self.session: SessionKey = session or run_session
        self.input: ToolInputGuardrail[Any] = ToolInputGuardrail(self._check, name="looptrap")
        self.output: ToolOutputGuardrail[Any] = ToolOutputGuardrail(self._record, name="looptrap")
        # before the agent starts, not beside its first model call: the input comes before the calls it asks for
        self.user_input: InputGuardrail[Any] = InputGuardrail(self._hear, name="looptrap", run_in_parallel=False)
        self._report_name = self.guard.engine.config.report_tool
        self._runs: weakref.WeakKeyDictionary[Guard, str] = weakref.WeakKeyDictionary()  # each guard's last run
        self._turns: dict[str, tuple[int, int, int, int, int]] = {}  # run -> responses, usage at its last turn end
        self._responses: dict[str, int] = {}  # run -> the model responses it got so far (on_llm_end)
        self._lock = threading.Lock()

    def guard_for(self, ctx: RunContextWrapper[Any]) -> Guard:
        """The guard of the run (or session) that ``ctx`` belongs to."""
        pool, run = self.guard, run_session(ctx)
        if isinstance(pool, GuardPool) and self.session is run_session:
            if pool.store is None and run not in pool:
                weakref.finalize(ctx.usage, pool.forget, run)  # no store: nothing but memory to free
            return pool.get(run)
        guard = pool if isinstance(pool, Guard) else pool.get(self.session(ctx))
        if self._runs.get(guard) != run:  # the first call of a new run in a longer session
            self._runs[guard] = run
            guard.new_task()
        return guard

    def apply(self, agent: Agent[TContext]) -> Agent[TContext]:
        """A copy of ``agent``, and of the agents it hands off to, whose function tools carry both guardrails
        ahead of their own (so the guard sees every call), with the :meth:`report_tool` added and
        ``user_input`` first among its input guardrails (the SDK runs those for the starting agent). Other tools
        (hosted, computer, shell) have no tool guardrails in the SDK and stay as they are, as do ``Handoff``
        objects (guard their agents yourself)."""
        return self._apply(agent, {})

    def report_tool(self) -> FunctionTool | None:
        """The honest way out that looptrap's advice points to (``report_blocked``, or the guard's
        ``report_tool``; ``None`` when that is unset): calling it halts the run with reason
        ``reported_blocked``, like any halt (malformed arguments get advice instead)."""
        if self._report_name is None:
            return None
        return FunctionTool(
            name=self._report_name,
            description=REPORT_BLOCKED_DESCRIPTION,
            params_json_schema=report_blocked_schema(),
            on_invoke_tool=_never_runs,
            strict_json_schema=False,  # the schema's minItems/minLength are not in strict mode's subset
            tool_input_guardrails=[self.input],
        )

    def _apply(self, agent: Agent[TContext], done: dict[int, Agent[Any]]) -> Agent[TContext]:
        if id(agent) in done:  # agents that hand off to each other
            return done[id(agent)]
        tools = [self._attach(t) for t in agent.tools]
        report = self.report_tool()
        if report is not None and all(getattr(t, "name", None) != report.name for t in tools):
            tools.append(report)
        hooks = agent.hooks.inner if isinstance(agent.hooks, _Responses) else agent.hooks
        copied = done[id(agent)] = agent.clone(
            tools=tools,
            input_guardrails=[self.user_input, *_others(agent.input_guardrails)],
            hooks=_Responses(self, hooks),
        )
        copied.handoffs = [self._apply(h, done) if isinstance(h, Agent) else h for h in agent.handoffs]
        return copied

    def _attach(self, tool: Tool) -> Tool:
        if not isinstance(tool, FunctionTool):
            return tool
        guarded = copy.copy(tool)  # FunctionTool.__copy__ rebinds the tool's invoker to the copy
        guarded.tool_input_guardrails = [self.input, *_others(tool.tool_input_guardrails)]
        guarded.tool_output_guardrails = [self.output, *_others(tool.tool_output_guardrails)]
        return guarded

    def _hear(self, ctx: RunContextWrapper[Any], agent: Agent[Any], given: str | list[Any]) -> GuardrailFunctionOutput:
        """The input guardrail: the run's input is what the user said."""
        said = _user_text(given)
        if said is not None:
            self.guard_for(ctx).user_message(said or None)
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    def _responded(self, ctx: RunContextWrapper[Any]) -> None:
        """A model response of the run arrived (``on_llm_end``, before its tool calls are checked)."""
        run = run_session(ctx)
        with self._lock:
            n = self._responses.get(run)
            if n is None:
                weakref.finalize(ctx.usage, self._responses.pop, run, None)
                n = 0
            self._responses[run] = n + 1

    def _new_turn(self, ctx: RunContextWrapper[Any], guard: Guard) -> tuple[Verdict | None, str | None]:
        """End the turn before a call that belongs to a new model response of its run (``None``: same
        response), and the response's id for the check (``None`` when the responses are not counted)."""
        usage, run = ctx.usage, run_session(ctx)
        with self._lock:
            n = self._responses.get(run, 0)
            now = (n, usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens)
            message = f"{run}:{n}" if n else None
            last = self._turns.get(run)
            if last == now:
                return None, message
            if last is None:
                weakref.finalize(usage, self._turns.pop, run, None)
                last = (0, 0, 0, 0, 0)
            self._turns[run] = now
        used = {"input_tokens": now[2] - last[2], "output_tokens": now[3] - last[3], "total_tokens": now[4] - last[4]}
        return guard.end_turn(usage=used), message

    def _check(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        name, guard = ctx.qualified_tool_name, self.guard_for(ctx)
        turn, message = self._new_turn(ctx, guard)
        if turn is not None and turn.action == "halt":
            return ToolGuardrailFunctionOutput.raise_exception(output_info=turn)
        if name == self._report_name:
            verdict = guard.handle_report_blocked(_arguments(ctx))
        else:
            verdict = guard.check(name, _arguments(ctx), message_id=message)
        if verdict.allowed:
            return ToolGuardrailFunctionOutput.allow(verdict if verdict.signals else None)
        if verdict.action == "halt":
            return ToolGuardrailFunctionOutput.raise_exception(output_info=verdict)
        return ToolGuardrailFunctionOutput.reject_content(verdict.message, output_info=verdict)

    def _record(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx, result = data.context, data.output
        # A tool that raised reaches this point as the SDK's fixed error text (its default failure handler).
        failed = isinstance(result, str) and (
            result == _SDK_ERROR or result.startswith(f"Tool '{ctx.tool_name}' timed out")
        )
        self.guard_for(ctx).record(ctx.qualified_tool_name, _arguments(ctx), result, is_error=failed)
        return ToolGuardrailFunctionOutput.allow()


class _Responses(AgentHooks[Any]):
    """A guarded agent's hooks: counts the run's model responses for :class:`LoopGuardrails`, and calls the
    agent's own hooks (``inner``) for every event."""

    def __init__(self, rails: LoopGuardrails, inner: AgentHooks[Any] | None) -> None:
        self.rails = rails
        self.inner = inner

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        self.rails._responded(context)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: AgentHookContext[Any], agent: Agent[Any], output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_handoff(self, context: RunContextWrapper[Any], agent: Agent[Any], source: Agent[Any]) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, agent, source)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


def guard_agent(
    agent: Agent[TContext], guard: Guard | GuardPool | None = None, *, session: SessionKey | None = None
) -> Agent[TContext]:
    """A copy of ``agent`` (and of the agents it hands off to) whose function tools are guarded by looptrap:
    ``agent = guard_agent(agent)``. See :class:`LoopGuardrails` for ``guard`` and ``session``."""
    return LoopGuardrails(guard, session=session).apply(agent)


def _user_text(given: str | list[Any]) -> str | None:
    """What the user said in a run's input: the text, or the text of the user messages it ends with (a history
    passed back with a new message); ``None`` when it ends with something else (the run carries on)."""
    if isinstance(given, str):
        return given
    said: list[str] = []
    for item in reversed(given):
        if not isinstance(item, Mapping) or item.get("role") != "user" or item.get("type", "message") != "message":
            break
        content = item.get("content")
        if isinstance(content, list):
            content = " ".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
        said.append(content if isinstance(content, str) else "")
    return "\n".join(t for t in reversed(said) if t) if said else None


def _arguments(ctx: ToolContext[Any]) -> Any:
    raw = ctx.tool_arguments
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return raw


async def _never_runs(ctx: ToolContext[Any], arguments: str) -> str:
    return "Reported."  # the input guardrail answers every report_blocked call before the tool would run


def _others(guardrails: list[Any] | None) -> list[Any]:
    """A tool's own guardrails, without looptrap's (so guarding a guarded agent again replaces them)."""
    return [
        g for g in guardrails or () if not isinstance(getattr(g.guardrail_function, "__self__", None), LoopGuardrails)
    ]
