"""The OpenAI Python SDK: looptrap in a hand-written Chat Completions or Responses loop, and in the SDK's
Responses tool runner.

``tools = GuardedTools({"search_docs": search_docs})`` runs the model's tool calls through the guard and returns
the next request's messages: ``tools.tool_messages(message.tool_calls)`` (Chat Completions: ``role: "tool"``
messages) or ``tools.function_call_outputs(response)`` (Responses: ``function_call_output`` items). Advice and
blocks become the call's output without running the function; a halt raises :class:`looptrap.LoopHalted`.

Each of these calls runs the calls of one model turn and ends that turn (with the usage and the words of the
completion, message or response passed in): don't call ``end_turn`` yourself too. ``tools.user_message(text)``
passes on what the user says.

``GuardedResponsesToolRunner`` is the SDK's ``ResponsesToolRunner`` with guarded functions. (This SDK has no
Chat Completions tool runner.)

Needs ``pip install "looptrap[openai]"``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncGenerator, Callable, Generator, Iterable
from contextlib import aclosing, closing
from typing import Any, cast

from openai.lib.responses_tool_runner import (
    AsyncRegisteredFunction,
    AsyncResponsesToolRunner,
    RegisteredFunction,
    ResponsesRunnerTurn,
    ResponsesToolRunner,
    ToolRunnerError,
)
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
from openai.types.responses import FunctionToolParam, ResponseInputItemParam

from looptrap.core.errors import LoopHalted
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.integrations._sdk import Outcome, ToolCall, ToolDispatch, Turn, error_text, field, json_call
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = [
    "AsyncGuardedResponsesToolRunner",
    "GuardedResponsesToolRunner",
    "GuardedTools",
    "report_blocked_chat_tool",
    "report_blocked_response_tool",
]


def report_blocked_chat_tool(name: str = "report_blocked") -> ChatCompletionFunctionToolParam:
    """The ``report_blocked`` tool for Chat Completions' ``tools=[...]``."""
    return {
        "type": "function",
        "function": {"name": name, "description": REPORT_BLOCKED_DESCRIPTION, "parameters": report_blocked_schema()},
    }


def report_blocked_response_tool(name: str = "report_blocked") -> FunctionToolParam:
    """The ``report_blocked`` tool for the Responses API's ``tools=[...]``."""
    return {
        "type": "function",
        "name": name,
        "description": REPORT_BLOCKED_DESCRIPTION,
        "parameters": report_blocked_schema(),
        "strict": False,
    }


# -- hand-written loops ------------------------------------------------------------------------------------
class GuardedTools(ToolDispatch):
    """Tool functions by name, for a hand-written loop: each method takes the model's tool calls, runs them
    through the guard, and returns the tool results in the API's own format, one per call, in order.

    ``tools``: ``{"name": function}`` or a list of functions (named by ``__name__``); a function gets the
    call's JSON arguments as keywords (a custom tool gets its raw input text) and returns text, a list of the
    API's content parts, or any JSON-able value. ``guard``: a :class:`Guard`, a :class:`GuardPool` or ``None``
    (a new pool); with a pool, ``session`` picks the guard (the Responses conversation id when there is one).

    A call the guard advises against or blocks is not run: its output is the advice. A tool that raises, an
    unknown tool or unreadable arguments give ``"Error: ..."`` as the output. A halt raises
    :class:`looptrap.LoopHalted` (``.reason``, ``.summary``). A model's call to ``report_blocked`` (see
    :func:`report_blocked_chat_tool`) halts with reason ``reported_blocked``.

    Each method call is one model turn: once its calls ran, the turn is ended with the usage and the words of
    what was passed in (a ``ChatCompletion`` or a ``Response`` carries both, an assistant message its words),
    so turn, token and cost budgets apply; a budget halt raises :class:`looptrap.LoopHalted` there, unless
    the turn asked for no call. Pass every reply, the last one (no calls) included. :meth:`user_message`
    passes on what the user says.
    """

    def tool_messages(self, tool_calls: Any, *, session: str | None = None) -> list[ChatCompletionToolMessageParam]:
        """Chat Completions: the ``{"role": "tool", "tool_call_id", "content"}`` messages for the assistant
        message's ``tool_calls`` (SDK objects or dicts; or the message itself, or the ``ChatCompletion``)."""
        calls, turn = _chat_turn(tool_calls)
        return [_tool_message(o) for o in self._run(calls, session, turn)]

    async def atool_messages(
        self, tool_calls: Any, *, session: str | None = None
    ) -> list[ChatCompletionToolMessageParam]:
        """:meth:`tool_messages` for async loops (tool functions may be async)."""
        calls, turn = _chat_turn(tool_calls)
        return [_tool_message(o) for o in await self._arun(calls, session, turn)]

    def function_call_outputs(self, output: Any, *, session: str | None = None) -> list[ResponseInputItemParam]:
        """Responses API: the ``{"type": "function_call_output", "call_id", "output"}`` items for the
        ``function_call`` items of a response (the ``Response``, or its ``output`` list; SDK objects or dicts).
        Other items (messages, reasoning, server tools) are skipped."""
        calls, turn = _response_calls(output), _response_turn(output)
        return [_output_item(o) for o in self._run(calls, session or _conversation(output), turn)]

    async def afunction_call_outputs(self, output: Any, *, session: str | None = None) -> list[ResponseInputItemParam]:
        """:meth:`function_call_outputs` for async loops (tool functions may be async)."""
        calls, turn = _response_calls(output), _response_turn(output)
        return [_output_item(o) for o in await self._arun(calls, session or _conversation(output), turn)]


def _chat_turn(given: Any) -> tuple[list[ToolCall], Turn]:
    """The calls, usage and words of a completion, an assistant message or a list of tool calls."""
    usage = None
    if given is not None and not isinstance(given, (list, tuple)) and field(given, "choices") is not None:
        usage, choices = field(given, "usage"), field(given, "choices")  # the ChatCompletion
        given = field(choices[0], "message") if choices else None
    text = None
    if given is not None and not isinstance(given, (list, tuple)) and field(given, "role"):
        content = field(given, "content")  # the assistant message
        text = content if isinstance(content, str) else None
        given = field(given, "tool_calls")
    return _chat_calls(given), (usage, text or None)


def _chat_calls(tool_calls: Any) -> list[ToolCall]:
    calls = []
    for tc in tool_calls or ():
        if field(tc, "type") == "custom":
            custom = field(tc, "custom")
            calls.append(ToolCall(field(tc, "id"), field(custom, "name"), field(custom, "input"), text_input=True))
        else:
            fn = field(tc, "function")
            calls.append(json_call(field(tc, "id"), field(fn, "name"), field(fn, "arguments")))
    return calls


def _tool_message(o: Outcome) -> ChatCompletionToolMessageParam:
    return {"role": "tool", "tool_call_id": o.call.id, "content": o.content}


def _response_items(output: Any) -> Iterable[Any]:
    if isinstance(output, (list, tuple)):
        return output
    items = field(output, "output")
    return cast("Iterable[Any]", output if items is None else items)


def _response_calls(output: Any) -> list[ToolCall]:
    calls = []
    for item in _response_items(output):
        kind = field(item, "type")
        if kind == "function_call":
            calls.append(json_call(field(item, "call_id"), field(item, "name"), field(item, "arguments")))
        elif kind == "custom_tool_call":
            calls.append(ToolCall(field(item, "call_id"), field(item, "name"), field(item, "input"), text_input=True))
    return calls


def _response_turn(output: Any) -> Turn:
    """The usage and the words (``output_text`` parts of its messages) of a response."""
    usage = None if isinstance(output, (list, tuple)) else field(output, "usage")
    words = [
        field(part, "text")
        for item in _response_items(output)
        if field(item, "type") == "message"
        for part in field(item, "content") or ()
        if field(part, "type") == "output_text"
    ]
    return usage, "".join(w for w in words if isinstance(w, str)) or None


def _input_text(given: Any) -> str | None:
    """What the user said in a request's ``input``: the text, or the text of the user messages it ends with;
    ``None`` when it ends with something else (tool outputs: the run carries on)."""
    if isinstance(given, str):
        return given
    said: list[str] = []
    for item in reversed(given if isinstance(given, (list, tuple)) else ()):
        if field(item, "role") != "user" or (field(item, "type") or "message") != "message":
            break
        content = field(item, "content")
        if isinstance(content, (list, tuple)):
            content = " ".join(t for p in content if isinstance(t := field(p, "text"), str))
        said.append(content if isinstance(content, str) else "")
    return "\n".join(t for t in reversed(said) if t) if said else None


def _conversation(output: Any) -> str | None:
    conversation = None if isinstance(output, (list, tuple)) else field(output, "conversation")
    return None if conversation is None else cast("str | None", field(conversation, "id"))


def _output_item(o: Outcome) -> ResponseInputItemParam:
    if o.call.text_input:
        return {"type": "custom_tool_call_output", "call_id": o.call.id, "output": o.content}
    return {"type": "function_call_output", "call_id": o.call.id, "output": o.content}


# -- the SDK's Responses tool runner ------------------------------------------------------------------------
class _RunnerGuard(ToolDispatch):
    """The guard side of a runner's functions: one check before each, one record after; a halt is kept so the
    runner can raise it instead of its own ``ToolRunnerError``."""

    halt: LoopHalted | None = None
    said: tuple[str, ...] = ()  # text appended to a turn, heard once its calls have run

    def refusal(self, guard: Guard, name: str, args: Any) -> str | None:
        """The advice to return instead of running the call (``None``: run it). A halt raises."""
        verdict = self._verdict(guard, name, args)
        if verdict.action == "halt":
            self.halt = LoopHalted(verdict)
            raise self.halt
        return None if verdict.allowed else verdict.message

    def report_function(self) -> FunctionToolParam | None:
        """The ``report_blocked`` tool to register, unless the guard has none or a function has its name."""
        report = self.guard().config.report_tool
        return None if report is None or report in self.functions else report_blocked_response_tool(report)

    def start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A run starts (``iterate(client, params, ...)``): what its ``input`` ends with from the user is heard."""
        self.halt, self.said = None, ()
        params = args[1] if len(args) > 1 else kwargs.get("params")
        said = _input_text(field(params, "input")) if params is not None else None
        if said is not None:
            self.user_message(said or None)

    def turn_ended(self, response: Any, *, final: bool = False) -> None:
        """End the model turn of ``response`` (its function calls have run, or it is the final one). A halt
        (a budget) raises :class:`LoopHalted` unless the turn is final (its answer stands)."""
        usage, text = _response_turn(response)
        verdict = self.guard().end_turn(usage=usage, text=text)
        if verdict.action == "halt" and not final:
            self.halt = LoopHalted(verdict)
            raise self.halt

    def listening(self, turn: ResponsesRunnerTurn) -> ResponsesRunnerTurn:
        """The turn, whose ``append_user_text`` also keeps the text, to pass on as the user's input once the
        turn's calls (asked for before the user spoke) have run."""
        append = turn._append

        def append_user_text(text: str) -> None:
            append(text)
            self.said += (text,)

        return dataclasses.replace(turn, _append=append_user_text)

    def hear_said(self) -> None:
        """Pass on what the user said during the last turn."""
        said, self.said = self.said, ()
        for text in said:
            self.user_message(text)

    def advance(self, last: ResponsesRunnerTurn | None, turn: ResponsesRunnerTurn) -> ResponsesRunnerTurn:
        """The runner moved on to ``turn``: the last turn's calls ran (end that turn, pass on what the user
        said during it); a final turn ends too. Returns the turn to hand to the caller."""
        if last is not None:
            self.turn_ended(last.response)
            self.hear_said()
        if turn.final:
            self.turn_ended(turn.response, final=True)
        return self.listening(turn)


def _calls_cancelled(fn: Callable[..., Any]) -> bool:
    try:
        return "cancelled" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _guard_function(fn: RegisteredFunction, gate: _RunnerGuard) -> RegisteredFunction:
    name, execute = fn.tool["name"], cast("Callable[..., Any]", fn.execute)
    cancellable = _calls_cancelled(execute)

    def run(arguments: Any, cancelled: Callable[[], bool] | None = None) -> Any:
        guard = gate.guard()
        advice = gate.refusal(guard, name, arguments)
        if advice is not None:
            return advice
        try:
            result = execute(arguments, cancelled=cancelled) if cancellable else execute(arguments)
        except Exception as exc:
            guard.record(name, arguments, error_text(exc), is_error=True)
            raise
        guard.record(name, arguments, result)
        return result

    return dataclasses.replace(fn, execute=run)


def _guard_async_function(fn: AsyncRegisteredFunction, gate: _RunnerGuard) -> AsyncRegisteredFunction:
    name, execute = fn.tool["name"], cast("Callable[..., Any]", fn.execute)
    cancellable = _calls_cancelled(execute)

    async def run(arguments: Any, cancelled: Callable[[], bool] | None = None) -> Any:
        guard = gate.guard()
        advice = gate.refusal(guard, name, arguments)
        if advice is not None:
            return advice
        try:
            result = await (execute(arguments, cancelled=cancelled) if cancellable else execute(arguments))
        except Exception as exc:
            guard.record(name, arguments, error_text(exc), is_error=True)
            raise
        guard.record(name, arguments, result)
        return result

    return dataclasses.replace(fn, execute=run)


class GuardedResponsesToolRunner(ResponsesToolRunner):
    """The SDK's ``ResponsesToolRunner``, its registered functions run through a guard.

    ``guard`` and ``session`` as for :class:`GuardedTools`; the other arguments are the runner's own. Advice
    and blocks are returned as the function's output; a halt ends the run: ``run`` and ``iterate`` raise
    :class:`looptrap.LoopHalted` (in place of the SDK's ``ToolRunnerError``, kept as its ``__cause__``). A
    ``report_blocked`` function is added (unless one is registered) that halts with ``reported_blocked``.
    Each model turn is ended once its calls ran (a budget halt raises there); the user messages the run's
    ``input`` ends with, and the text given to a turn's ``append_user_text``, are the user's input.
    """

    def __init__(
        self,
        *,
        functions: list[RegisteredFunction] | None = None,
        guard: Guard | GuardPool | None = None,
        session: str | None = None,
        **options: Any,
    ) -> None:
        selected = list(functions or [])
        self.looptrap = gate = _RunnerGuard({f.tool["name"]: f.execute for f in selected}, guard=guard, session=session)
        report = gate.report_function()
        if report is not None:
            selected.append(RegisteredFunction(tool=report, execute=lambda _: ""))  # never run: the guard answers
        super().__init__(functions=[_guard_function(f, gate) for f in selected], **options)

    def iterate(self, *args: Any, **kwargs: Any) -> Generator[ResponsesRunnerTurn, None, None]:
        """The runner's ``iterate``, each model turn ended once its calls ran; a halt raises
        :class:`looptrap.LoopHalted`."""
        gate = self.looptrap
        gate.start(args, kwargs)
        last: ResponsesRunnerTurn | None = None
        try:
            with closing(super().iterate(*args, **kwargs)) as turns:
                for turn in turns:
                    yield gate.advance(last, turn)
                    last = turn
        except ToolRunnerError as exc:
            if gate.halt is None:
                raise
            raise gate.halt from exc


class AsyncGuardedResponsesToolRunner(AsyncResponsesToolRunner):
    """:class:`GuardedResponsesToolRunner` for ``AsyncOpenAI``: the SDK's ``AsyncResponsesToolRunner`` with
    ``AsyncRegisteredFunction`` functions."""

    def __init__(
        self,
        *,
        functions: list[AsyncRegisteredFunction] | None = None,
        guard: Guard | GuardPool | None = None,
        session: str | None = None,
        **options: Any,
    ) -> None:
        selected = list(functions or [])
        self.looptrap = gate = _RunnerGuard({f.tool["name"]: f.execute for f in selected}, guard=guard, session=session)
        report = gate.report_function()
        if report is not None:
            selected.append(AsyncRegisteredFunction(tool=report, execute=_never_run))
        super().__init__(functions=[_guard_async_function(f, gate) for f in selected], **options)

    async def iterate(self, *args: Any, **kwargs: Any) -> AsyncGenerator[ResponsesRunnerTurn, None]:
        """The runner's ``iterate``, each model turn ended once its calls ran; a halt raises
        :class:`looptrap.LoopHalted`."""
        gate = self.looptrap
        gate.start(args, kwargs)
        last: ResponsesRunnerTurn | None = None
        try:
            async with aclosing(super().iterate(*args, **kwargs)) as turns:
                async for turn in turns:
                    yield gate.advance(last, turn)
                    last = turn
        except ToolRunnerError as exc:
            if gate.halt is None:
                raise
            raise gate.halt from exc


async def _never_run(_: Any) -> str:
    return ""  # the report_blocked function: the guard answers every call before it would run
