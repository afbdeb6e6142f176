"""The OpenAI Python SDK: looptrap in a hand-written Chat Completions or Responses loop, and in the SDK's
Responses tool runner.

``tools = GuardedTools({"search_docs": search_docs})`` runs the model's tool calls through the guard and returns
the next request's messages: ``tools.tool_messages(message.tool_calls)`` (Chat Completions: ``role: "tool"``
messages) or ``tools.function_call_outputs(response)`` (Responses: ``function_call_output`` items). Advice and
blocks become the call's output without running the function; a halt raises :class:`looptrap.LoopHalted`.

``GuardedResponsesToolRunner`` is the SDK's ``ResponsesToolRunner`` with guarded functions. (This SDK has no
Chat Completions tool runner.)

Needs ``pip install "looptrap[openai]"``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncGenerator, Callable, Generator, Iterable
from contextlib import aclosing
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
from looptrap.core.guard import Guard
from looptrap.core.pool import GuardPool
from looptrap.core.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema
from looptrap.integrations._sdk import Outcome, ToolCall, ToolDispatch, error_text, field, json_call

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
    """

    def tool_messages(self, tool_calls: Any, *, session: str | None = None) -> list[ChatCompletionToolMessageParam]:
        """Chat Completions: the ``{"role": "tool", "tool_call_id", "content"}`` messages for the assistant
        message's ``tool_calls`` (SDK objects or dicts; or the message itself)."""
        return [_tool_message(o) for o in self._run(_chat_calls(tool_calls), session)]

    async def atool_messages(
        self, tool_calls: Any, *, session: str | None = None
    ) -> list[ChatCompletionToolMessageParam]:
        """:meth:`tool_messages` for async loops (tool functions may be async)."""
        return [_tool_message(o) for o in await self._arun(_chat_calls(tool_calls), session)]

    def function_call_outputs(self, output: Any, *, session: str | None = None) -> list[ResponseInputItemParam]:
        """Responses API: the ``{"type": "function_call_output", "call_id", "output"}`` items for the
        ``function_call`` items of a response (the ``Response``, or its ``output`` list; SDK objects or dicts).
        Other items (messages, reasoning, server tools) are skipped."""
        return [_output_item(o) for o in self._run(_response_calls(output), session or _conversation(output))]

    async def afunction_call_outputs(self, output: Any, *, session: str | None = None) -> list[ResponseInputItemParam]:
        """:meth:`function_call_outputs` for async loops (tool functions may be async)."""
        return [_output_item(o) for o in await self._arun(_response_calls(output), session or _conversation(output))]


def _chat_calls(tool_calls: Any) -> list[ToolCall]:
    if tool_calls is not None and not isinstance(tool_calls, (list, tuple)) and field(tool_calls, "role"):
        tool_calls = field(tool_calls, "tool_calls")  # the assistant message itself
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
        """The runner's ``iterate``; a halt raises :class:`looptrap.LoopHalted`."""
        self.looptrap.halt = None
        try:
            yield from super().iterate(*args, **kwargs)
        except ToolRunnerError as exc:
            if self.looptrap.halt is None:
                raise
            raise self.looptrap.halt from exc


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
        """The runner's ``iterate``; a halt raises :class:`looptrap.LoopHalted`."""
        self.looptrap.halt = None
        try:
            async with aclosing(super().iterate(*args, **kwargs)) as turns:
                async for turn in turns:
                    yield turn
        except ToolRunnerError as exc:
            if self.looptrap.halt is None:
                raise
            raise self.looptrap.halt from exc


async def _never_run(_: Any) -> str:
    return ""  # the report_blocked function: the guard answers every call before it would run
