"""LangChain 1.x agents and LangGraph: ``LooptrapMiddleware``, which checks every tool call before it runs.

    from looptrap.integrations.langchain import LooptrapMiddleware

    agent = create_agent(model, tools, middleware=[LooptrapMiddleware()])

Advice and blocks reach the model as the tool's result, ``ToolMessage(status="error")``, without running the
tool; a halt raises :class:`looptrap.LoopHalted` out of ``invoke`` / ``ainvoke`` (``on_halt="raise"``) or ends
the run with a final ``AIMessage`` that gives the reason (``on_halt="end"``); either way the halted calls are
answered first, so a checkpointed thread stays valid for the next user message. In a hand-built LangGraph
graph the same middleware wraps a ``ToolNode``:
``ToolNode(tools, wrap_tool_call=mw.wrap_tool_call, awrap_tool_call=mw.awrap_tool_call)``; there each new
invocation that brings new input is a new task, and the calls of one model message share one step of the
escalation ladder (the message's id is passed to the guard). A call that LangChain's human-in-the-loop middleware
answers with a refusal is recorded as refused; a call interrupted by LangGraph's ``interrupt()`` is checked
once, not again when it runs on resume.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from looptrap.core.errors import LoopHalted
from looptrap.core.types import OutcomeKind, Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.outcome_kinds import langchain_kind
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["LooptrapMiddleware"]

OnHalt = Literal["raise", "end"]
ToolResult = ToolMessage | Command[Any]
_MARKS = 10_000  # threads whose last message seen (and last invocation) is remembered
_DEFAULT_WRITER = Runtime().stream_writer  # a Runtime's outside a graph run: the same for every call
K = TypeVar("K")
V = TypeVar("V")


def _remember(marks: dict[K, V], key: K, value: V) -> None:
    """``marks[key] = value``, the newest last, forgetting the oldest key beyond ``_MARKS``."""
    marks.pop(key, None)
    if len(marks) >= _MARKS:
        del marks[next(iter(marks))]
    marks[key] = value


def _thread_id(runtime: Any) -> str | None:
    """The LangGraph thread id of a node's ``Runtime`` or a tool call's ``ToolRuntime``."""
    info = getattr(runtime, "execution_info", None)
    tid = getattr(info, "thread_id", None)
    if tid is None:
        config = getattr(runtime, "config", None)
        if config is None:  # a node's Runtime without execution info (older LangGraph): the run's config
            try:
                config = get_config()
            except RuntimeError:
                config = None
        if isinstance(config, Mapping):
            tid = (config.get("configurable") or {}).get("thread_id")
    return None if tid is None else str(tid)


def _invocation(runtime: Any) -> object | None:
    """What identifies the graph invocation (one ``invoke`` / ``stream`` call) a node or a tool call runs in:
    the run id when the caller gave one (``config["run_id"]``), else the invocation's stream writer (LangGraph
    makes a new one per invocation; a subgraph shares its parent's); ``None`` outside a graph run."""
    run_id = getattr(getattr(runtime, "execution_info", None), "run_id", None)
    if run_id:
        return str(run_id)
    writer = getattr(runtime, "stream_writer", None)
    return None if writer is None or writer is _DEFAULT_WRITER else writer


def _messages(state: Any) -> Sequence[Any]:
    """The messages of a graph's state (a ``messages`` key or attribute, or the state itself as a list)."""
    found = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", state)
    return found if isinstance(found, Sequence) and not isinstance(found, (str, bytes)) else ()


def _asking(messages: Sequence[Any], call_id: str | None) -> int | None:
    """The index of the model message that asked for the tool call ``call_id``."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AIMessage) and any(c.get("id") == call_id for c in m.tool_calls):
            return i
    return None


def _last_model_message(messages: Sequence[Any]) -> int | None:
    """The index of the last message when it is the model's, or the model's message that the tool messages at
    the end answer (those a middleware such as human-in-the-loop added for calls it did not run)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, AIMessage):
            return i
        if not isinstance(m, ToolMessage):
            return None
    return None


def _answers_new_input(messages: Sequence[Any], at: int | None) -> bool:
    """Whether the model message ``messages[at]`` is the first to ask for tools since the last input (a
    message neither the model's nor a tool's: the user's, a system prompt), or since the start; ``True``
    when that cannot be told."""
    if at is None:
        return True
    for m in reversed(messages[:at]):
        if isinstance(m, AIMessage):
            if m.tool_calls:
                return False
        elif not isinstance(m, ToolMessage):
            return True
    return True


def _outcome(out: Any, call_id: str | None) -> tuple[Any, bool, OutcomeKind | None]:
    """What the model reads of a tool's output, whether it is an error, and the outcome kind of a call that did
    not run (a refusal by LangChain's human-in-the-loop middleware)."""
    if isinstance(out, Command) and isinstance(out.update, Mapping):
        for m in out.update.get("messages") or ():
            if isinstance(m, ToolMessage) and m.tool_call_id == call_id:
                out = m
                break
        else:
            return out.update, False, None
    if isinstance(out, ToolMessage):
        return out.content, out.status == "error", langchain_kind(out.additional_kwargs)
    return out, False, None


def _message_id(messages: Sequence[Any], at: int | None) -> str | None:
    """The id of the model message ``messages[at]``, if it has one."""
    mid = None if at is None else messages[at].id
    return str(mid) if mid else None


def _report_blocked(tried: list[str], needed: str) -> str:
    return "Reported."  # never runs: the middleware answers this tool itself


class LooptrapMiddleware(AgentMiddleware[AgentState[Any], Any]):
    """Guards an agent's tool calls: ``create_agent(model, tools, middleware=[LooptrapMiddleware()])``.

    ``guard``: a :class:`~looptrap.Guard` (one session for everything) or a :class:`~looptrap.GuardPool`
    (one session per LangGraph thread, ``config["configurable"]["thread_id"]``; runs without one share the
    session ``"default"``); by default a new ``GuardPool()``. ``on_halt="raise"`` raises
    :class:`~looptrap.LoopHalted` out of the run; ``"end"`` ends it with a final ``AIMessage`` whose
    ``response_metadata["looptrap"]`` holds the halting verdict; either way the calls the halt left open are
    answered with the halt message first, so the thread stays valid. Each run started with new input is a new
    task for its session (repetition memory starts over, budgets do not; in a hand-built graph, the first
    tool call of an invocation whose model message answers new input), and every human message the run
    sees (its input, and any added later in the run) is the user's input, heard once. Each model call ends
    a turn with the model's token usage (turn, token and cost budgets apply), and the tool calls of one
    model message share one step of the escalation ladder. When the guard's
    ``report_tool`` is set (by default ``report_blocked``), the agent gets that tool: calling it halts with
    reason ``reported_blocked``.
    """

    def __init__(self, guard: Guard | GuardPool | None = None, *, on_halt: OnHalt = "raise") -> None:
        if on_halt not in ("raise", "end"):
            raise ValueError(f"on_halt must be 'raise' or 'end', got {on_halt!r}")
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        self.on_halt: OnHalt = on_halt
        config = self.guard.engine.config if isinstance(self.guard, GuardPool) else self.guard.config
        self.report_tool: str | None = config.report_tool
        self.tools: list[BaseTool] = []
        self._marks: dict[str | None, str] = {}  # thread -> id of the last message heard up to
        self._runs: dict[str | None, object] = {}  # thread -> the invocation its last tool call ran in
        self._paused: dict[tuple[str | None, str], None] = {}  # (thread, call id) of calls stopped by interrupt()
        self._runs_lock = threading.Lock()
        self._agent = False  # the agent hooks ran: create_agent starts tasks and raises halts itself
        if self.report_tool:
            self.tools.append(
                StructuredTool.from_function(
                    _report_blocked,
                    name=self.report_tool,
                    description=REPORT_BLOCKED_DESCRIPTION,
                    args_schema=report_blocked_schema(),
                )
            )

    def guard_for(self, thread_id: str | None) -> Guard:
        """The guard of a thread (its halting verdict: ``guard_for(thread_id).halted``)."""
        if isinstance(self.guard, Guard):
            return self.guard
        return self.guard.get("default" if thread_id is None else thread_id)

    # -- tool calls ---------------------------------------------------------------------------------
    def _check(self, request: ToolCallRequest) -> tuple[Guard, ToolMessage | None]:
        """The call's guard and, when the call must not run, the tool message that answers it."""
        call = request.tool_call
        thread = _thread_id(request.runtime)
        guard = self.guard_for(thread)
        messages = _messages(request.state)
        at = _asking(messages, call["id"])
        resumed = self._resumed(thread, call["id"])
        if not self._agent:
            self._new_invocation(thread, guard, request, messages, at, resumed)
        if resumed:  # checked before interrupt() stopped it: it runs now, as that check allowed
            return guard, None
        if call["name"] == self.report_tool:
            verdict = guard.handle_report_blocked(call["args"])
        else:
            verdict = guard.check(call["name"], call["args"], message_id=_message_id(messages, at))
            if verdict.allowed:
                return guard, None
        if verdict.action == "halt" and self.on_halt == "raise" and not self._agent:
            raise LoopHalted(verdict)  # a hand-built graph; create_agent raises after answering (after_agent)
        return guard, ToolMessage(verdict.message, tool_call_id=call["id"], name=call["name"], status="error")

    def _resumed(self, thread: str | None, call_id: str | None) -> bool:
        """Whether the call was stopped by ``interrupt()`` after its check, and now runs again on resume."""
        key = (thread, call_id)
        with self._runs_lock:
            if call_id is None or key not in self._paused:
                return False
            del self._paused[key]
            return True

    def _new_invocation(
        self,
        thread: str | None,
        guard: Guard,
        request: ToolCallRequest,
        messages: Sequence[Any],
        at: int | None,
        resumed: bool,
    ) -> None:
        """A hand-built graph: the first tool call of a new invocation is a new task, when its model message
        answers new input (a resume after an interrupt, or a human message added by a node inside the run,
        goes on with the task)."""
        run = _invocation(request.runtime)
        if run is None:  # outside a graph run: each model message may be a new invocation
            run = ("message", None if at is None else (messages[at].id or at))
        with self._runs_lock:  # once per invocation, before any of its calls is checked
            if thread in self._runs and self._runs[thread] == run:
                return
            _remember(self._runs, thread, run)
            if not resumed and _answers_new_input(messages, at):
                guard.new_task()

    def _record(self, guard: Guard, request: ToolCallRequest, out: ToolResult) -> ToolResult:
        call = request.tool_call
        result, is_error, outcome = _outcome(out, call["id"])
        guard.record(call["name"], call["args"], result, is_error=is_error, outcome=outcome)
        return out

    def _failed(self, guard: Guard, request: ToolCallRequest, exc: Exception) -> None:
        call = request.tool_call
        if isinstance(exc, GraphInterrupt):  # not a result: the call runs again on resume, already checked
            if call["id"] is not None:
                with self._runs_lock:
                    _remember(self._paused, (_thread_id(request.runtime), call["id"]), None)
        elif not isinstance(exc, GraphBubbleUp):
            guard.record(call["name"], call["args"], f"{type(exc).__name__}: {exc}", is_error=True)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        """Check the call, run it if allowed, record its result."""
        guard, refused = self._check(request)
        if refused is not None:
            return refused
        try:
            out = handler(request)
        except Exception as exc:
            self._failed(guard, request, exc)
            raise
        return self._record(guard, request, out)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        """:meth:`wrap_tool_call` for ``ainvoke`` / ``astream``."""
        guard, refused = self._check(request)
        if refused is not None:
            return refused
        try:
            out = await handler(request)
        except Exception as exc:
            self._failed(guard, request, exc)
            raise
        return self._record(guard, request, out)

    # -- the agent loop -----------------------------------------------------------------------------
    def _stop(self, verdict: Verdict, messages: list[AnyMessage]) -> dict[str, Any]:
        """End the run: answer the tool calls still open with the halt message, then (``on_halt="end"``) a
        final message with the reason; ``on_halt="raise"`` raises in :meth:`after_agent`, once the answers
        are in the thread."""
        out: list[AnyMessage] = []
        at = _last_model_message(messages)
        if at is not None:
            answered = {m.tool_call_id for m in messages[at + 1 :] if isinstance(m, ToolMessage)}
            for call in messages[at].tool_calls:  # type: ignore[union-attr]
                if call["id"] not in answered:
                    out.append(ToolMessage(verdict.message, tool_call_id=call["id"], name=call["name"], status="error"))
        if self.on_halt == "raise":
            return {"messages": out, "jump_to": "end"}
        reason = verdict.reason or "halt"
        text = f"Run halted by looptrap ({reason})." + (f" {verdict.summary}" if verdict.summary else "")
        meta = {"reason": reason, "kind": verdict.kind, "message": verdict.message, "summary": verdict.summary}
        out.append(AIMessage(text, response_metadata={"looptrap": meta}))
        return {"messages": out, "jump_to": "end"}

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """A run with new input is a new task."""
        self._agent = True
        self.guard_for(_thread_id(runtime)).new_task()
        return None

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """``on_halt="raise"``: raise :class:`~looptrap.LoopHalted` once the run has ended halted (the calls
        the halt left open are answered by then, and kept by a checkpointer)."""
        verdict = self.guard_for(_thread_id(runtime)).halted if self.on_halt == "raise" else None
        if verdict is not None:
            raise LoopHalted(verdict)
        return None

    def _hear(self, thread: str | None, guard: Guard, messages: list[AnyMessage], upto: int) -> None:
        """Feed the human messages in ``messages[:upto]`` not heard yet (those after the last message this
        thread was read up to; without that mark, those after the last AI message) as the user's input."""
        mark, start, ai_at = self._marks.get(thread), None, -1
        for i in range(upto - 1, -1, -1):
            m = messages[i]
            if mark is not None and m.id == mark:
                start = i
                break
            if ai_at < 0 and isinstance(m, AIMessage):
                ai_at = i
                if mark is None:
                    break
        for m in messages[(ai_at if start is None else start) + 1 : upto]:
            if isinstance(m, HumanMessage):
                guard.user_message(m.text or None)
        last = messages[-1].id if messages else None
        if last is not None:
            _remember(self._marks, thread, last)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Hear the human messages new since the last model call; stop before calling the model again once
        the session is halted."""
        self._agent = True
        thread = _thread_id(runtime)
        guard, messages = self.guard_for(thread), state["messages"]
        self._hear(thread, guard, messages, len(messages))
        verdict = guard.halted
        return None if verdict is None else self._stop(verdict, messages)

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """End the model's turn (its words and token usage), after hearing any human message added just
        before the call (an interrupt before the model); stop if that halts the session."""
        messages = state["messages"]
        at = _last_model_message(messages)  # the model's message, before any answers another middleware added
        self._agent = True
        if at is None:
            return None
        last: AIMessage = messages[at]
        thread = _thread_id(runtime)
        guard = self.guard_for(thread)
        self._hear(thread, guard, messages, at)
        verdict = guard.end_turn(
            usage=last.usage_metadata,
            text=last.text or None,
            error="invalid tool call" if last.invalid_tool_calls else None,
            tool_calls=len(last.tool_calls),  # the turn ends before its calls run
        )
        if verdict.action == "halt":
            return self._stop(verdict, messages)
        for m in messages[at + 1 :]:  # calls the user refused (human-in-the-loop, batched): the user's say
            if isinstance(m, ToolMessage) and langchain_kind(m.additional_kwargs) == "refused":
                guard.user_message(None)
                break
        return None

    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """See :meth:`before_agent`."""
        return self.before_agent(state, runtime)

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """See :meth:`after_agent`."""
        return self.after_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """See :meth:`before_model`."""
        return self.before_model(state, runtime)

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """See :meth:`after_model`."""
        return self.after_model(state, runtime)
