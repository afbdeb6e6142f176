"""The Anthropic Python SDK: looptrap in a hand-written Messages loop, and in the SDK's tool runner.

``tools = GuardedTools({"search_docs": search_docs})`` runs the ``tool_use`` blocks of a reply through the guard:
``tools.tool_results(message)`` returns the next user message's ``tool_result`` blocks. Advice and blocks become
an ``is_error`` result without running the function; a halt raises :class:`looptrap.LoopHalted`. Each call
runs the calls of one model turn and ends that turn (with the reply's usage and words): don't call
``end_turn`` yourself too. ``tools.user_message(text)`` passes on what the user says.

``tool_runner(client, guard=..., **params)`` is ``client.beta.messages.tool_runner(**params)`` with its tools
(``@beta_tool`` functions) guarded: advice reaches the model as an ``is_error`` result, a halt stops the runner
before its next request and raises :class:`looptrap.LoopHalted`.

Needs ``pip install "looptrap[anthropic]"``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any, overload

from anthropic import Anthropic, AsyncAnthropic
from anthropic.lib.tools import (
    BetaAsyncBuiltinFunctionTool,
    BetaAsyncFunctionTool,
    BetaBuiltinFunctionTool,
    BetaFunctionTool,
    BetaFunctionToolResultType,
    ToolError,
)
from anthropic.types import ToolParam, ToolResultBlockParam
from anthropic.types.beta import BetaToolUnionParam

from looptrap.core.errors import LoopHalted
from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.integrations._sdk import Outcome, ToolCall, ToolDispatch, Turn, error_text, field, json_call
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["AsyncGuardedToolRunner", "GuardedToolRunner", "GuardedTools", "report_blocked_tool_param", "tool_runner"]


def report_blocked_tool_param(name: str = "report_blocked") -> ToolParam:
    """The ``report_blocked`` tool for the Messages API's ``tools=[...]``."""
    return {"name": name, "description": REPORT_BLOCKED_DESCRIPTION, "input_schema": report_blocked_schema()}


# -- hand-written loops ------------------------------------------------------------------------------------
class GuardedTools(ToolDispatch):
    """Tool functions by name, for a hand-written Messages loop: :meth:`tool_results` takes the model's reply,
    runs its ``tool_use`` blocks through the guard and returns the ``tool_result`` blocks for the next user
    message, one per call, in order.

    ``tools``: ``{"name": function}`` or a list of functions (named by ``__name__``); a function gets the
    call's input as keywords and returns text, a list of content blocks, or any JSON-able value. ``guard``: a
    :class:`Guard`, a :class:`GuardPool` or ``None`` (a new pool); with a pool, ``session`` picks the guard.

    A call the guard advises against or blocks is not run: its result is the advice, with ``is_error: true``.
    A tool that raises or an unknown tool give ``"Error: ..."`` with ``is_error: true``. A halt raises
    :class:`looptrap.LoopHalted` (``.reason``, ``.summary``). A model's call to ``report_blocked`` (see
    :func:`report_blocked_tool_param`) halts with reason ``reported_blocked``.

    Each :meth:`tool_results` call is one model turn: once its calls ran, the turn is ended with the reply's
    ``usage`` and text, so turn, token and cost budgets apply; a budget halt raises
    :class:`looptrap.LoopHalted` there, unless the reply asked for no call. Pass every reply, the last one
    (no calls) included. :meth:`user_message` passes on what the user says.
    """

    def tool_results(self, message: Any, *, session: str | None = None) -> list[ToolResultBlockParam]:
        """The ``tool_result`` blocks for a reply (the ``Message``, or its ``content`` list; SDK objects or
        dicts, beta types too). Blocks other than ``tool_use`` (text, thinking, server tools, toolset
        members) are skipped."""
        return [_tool_result(o) for o in self._run(_tool_uses(message), session, _reply_turn(message))]

    async def atool_results(self, message: Any, *, session: str | None = None) -> list[ToolResultBlockParam]:
        """:meth:`tool_results` for async loops (tool functions may be async)."""
        return [_tool_result(o) for o in await self._arun(_tool_uses(message), session, _reply_turn(message))]


def _tool_uses(message: Any) -> list[ToolCall]:
    blocks = message if isinstance(message, (list, tuple)) else field(message, "content")
    return [
        json_call(field(b, "id"), field(b, "name"), field(b, "input"))
        for b in blocks or ()
        if field(b, "type") == "tool_use" and not field(b, "toolset_name")
    ]


def _reply_turn(message: Any) -> Turn:
    """A reply's usage and the words of its text blocks."""
    listed = isinstance(message, (list, tuple))
    blocks = message if listed else field(message, "content")
    words = [field(b, "text") for b in blocks or () if field(b, "type") == "text"] if isinstance(blocks, list) else []
    return None if listed else field(message, "usage"), "".join(w for w in words if isinstance(w, str)) or None


def _said(message: Any) -> str | None:
    """The text of a user message, or ``None`` when it is not one (an assistant reply, tool results only)."""
    if field(message, "role") != "user":
        return None
    content = field(message, "content")
    if isinstance(content, str):
        return content
    words = [field(b, "text") for b in content or () if field(b, "type") == "text"]
    return "\n".join(w for w in words if isinstance(w, str)) or None


def _tool_result(o: Outcome) -> ToolResultBlockParam:
    return {"type": "tool_result", "tool_use_id": o.call.id, "content": o.content, "is_error": o.is_error}


# -- the SDK's tool runner ---------------------------------------------------------------------------------
class _RunnerGuard(ToolDispatch):
    """The guard side of a runner's tools; a halt is kept, and the runner closed before its next request."""

    halted: Verdict | None = None
    runner: Any = None

    def refusal(self, guard: Guard, name: str, args: Any) -> Verdict | None:
        """The verdict that refuses the call (``None``: run it); a halt is kept."""
        verdict = self._verdict(guard, name, args)
        if verdict.allowed:
            return None
        if verdict.action == "halt":
            self.halted = verdict
        return verdict

    def definition(self, tool: Any) -> BetaToolUnionParam:
        return report_blocked_tool_param(self.report) if tool is None else tool.to_dict()

    @property
    def report(self) -> str:
        return self.guard().config.report_tool or "report_blocked"

    def hear(self, messages: Iterable[Any]) -> None:
        """The user messages among ``messages`` (not tool results) are the user's input."""
        for m in messages:
            said = _said(m)
            if said is not None:
                self.user_message(said)

    def turn_ended(self, message: Any) -> None:
        """End the model turn of a reply whose calls ran; a halt (a budget) is kept, unless the reply asked for
        no call (its answer stands)."""
        usage, text = _reply_turn(message)
        verdict = self.guard().end_turn(usage=usage, text=text)
        if verdict.action == "halt" and _tool_uses(message) and self.halted is None:
            self.halted = verdict


class _GuardedTool(BetaBuiltinFunctionTool):
    """A sync runner tool (or, without one, the ``report_blocked`` tool) behind the guard."""

    def __init__(self, tool: BetaFunctionTool[Any] | BetaBuiltinFunctionTool | None, gate: _RunnerGuard) -> None:
        self.tool, self.gate = tool, gate

    def to_dict(self) -> BetaToolUnionParam:
        return self.gate.definition(self.tool)

    def call(self, input: object) -> BetaFunctionToolResultType:
        guard, gate = self.gate.guard(), self.gate
        refused = gate.refusal(guard, self.name, input)
        if refused is not None:
            if refused.action == "halt":
                gate.runner.close()  # from inside a tool: the runner stops before its next request
            raise ToolError(refused.message)
        assert self.tool is not None  # the report tool is always refused
        try:
            result = self.tool.call(input)
        except Exception as exc:
            guard.record(self.name, input, error_text(exc), is_error=True)
            raise
        guard.record(self.name, input, result)
        return result


class _AsyncGuardedTool(BetaAsyncBuiltinFunctionTool):
    """:class:`_GuardedTool` for the async runner."""

    def __init__(
        self, tool: BetaAsyncFunctionTool[Any] | BetaAsyncBuiltinFunctionTool | None, gate: _RunnerGuard
    ) -> None:
        self.tool, self.gate = tool, gate

    def to_dict(self) -> BetaToolUnionParam:
        return self.gate.definition(self.tool)

    async def call(self, input: object) -> BetaFunctionToolResultType:
        guard, gate = self.gate.guard(), self.gate
        refused = gate.refusal(guard, self.name, input)
        if refused is not None:
            if refused.action == "halt":
                await gate.runner.close()
            raise ToolError(refused.message)
        assert self.tool is not None
        try:
            result = await self.tool.call(input)
        except Exception as exc:
            guard.record(self.name, input, error_text(exc), is_error=True)
            raise
        guard.record(self.name, input, result)
        return result


class _Runner:
    def __init__(self, runner: Any, gate: _RunnerGuard) -> None:
        self.runner = runner
        self.looptrap = gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runner, name)

    def append_messages(self, *messages: Any) -> None:
        """The runner's ``append_messages``; the user messages among them (not tool results) are the user's
        input."""
        self.runner.append_messages(*messages)
        self.looptrap.hear(messages)

    def _raise_halt(self) -> None:
        if self.looptrap.halted is not None:
            raise LoopHalted(self.looptrap.halted)


class GuardedToolRunner(_Runner):
    """The SDK's tool runner (``runner``) with guarded tools: iterate it or call :meth:`until_done` as usual;
    when the guard halts, the runner stops before its next request and both raise
    :class:`looptrap.LoopHalted`. Each reply ends a model turn once its calls ran (a budget halt stops the
    runner there). Other attributes are the runner's."""

    def __iter__(self) -> Iterator[Any]:
        gate, last = self.looptrap, None
        for item in self.runner:
            if last is not None and gate.halted is None:
                gate.turn_ended(_message_of(last))
                if gate.halted is not None:
                    self.runner.close()
                    break
            last = item
            yield item
        if last is not None and gate.halted is None:
            gate.turn_ended(_message_of(last))
        self._raise_halt()

    def until_done(self) -> Any:
        """The final message (the runner's ``until_done``); a halt raises :class:`looptrap.LoopHalted`."""
        for _ in self:
            pass
        return self.runner.until_done()


class AsyncGuardedToolRunner(_Runner):
    """:class:`GuardedToolRunner` for ``AsyncAnthropic``: ``async for`` and ``await runner.until_done()``."""

    async def __aiter__(self) -> AsyncIterator[Any]:
        gate, last = self.looptrap, None
        async for item in self.runner:
            if last is not None and gate.halted is None:
                gate.turn_ended(await _amessage_of(last))
                if gate.halted is not None:
                    await self.runner.close()
                    break
            last = item
            yield item
        if last is not None and gate.halted is None:
            gate.turn_ended(await _amessage_of(last))
        self._raise_halt()

    async def until_done(self) -> Any:
        """The final message (the runner's ``until_done``); a halt raises :class:`looptrap.LoopHalted`."""
        async for _ in self:
            pass
        return await self.runner.until_done()


def _message_of(item: Any) -> Any:
    """The reply a runner yielded: the message itself, or the final message of a stream (read by then)."""
    return item if field(item, "usage") is not None else item.get_final_message()


async def _amessage_of(item: Any) -> Any:
    return item if field(item, "usage") is not None else await item.get_final_message()


@overload
def tool_runner(
    client: AsyncAnthropic,
    *,
    tools: Iterable[Any],
    guard: Guard | GuardPool | None = None,
    session: str | None = None,
    **params: Any,
) -> AsyncGuardedToolRunner: ...


@overload
def tool_runner(
    client: Anthropic,
    *,
    tools: Iterable[Any],
    guard: Guard | GuardPool | None = None,
    session: str | None = None,
    **params: Any,
) -> GuardedToolRunner: ...


def tool_runner(
    client: Anthropic | AsyncAnthropic,
    *,
    tools: Iterable[Any],
    guard: Guard | GuardPool | None = None,
    session: str | None = None,
    **params: Any,
) -> GuardedToolRunner | AsyncGuardedToolRunner:
    """``client.beta.messages.tool_runner(tools=tools, **params)`` with the tools behind the guard.

    Function tools (``@beta_tool`` / ``@beta_async_tool``, and built-in function tools such as the memory
    tool) are guarded; toolsets and raw tool definitions pass as they are. A ``report_blocked`` tool is added
    unless one is given. ``guard`` and ``session`` as for :class:`GuardedTools`. The last of ``messages``, when
    the user wrote it, and the user messages given to ``append_messages`` are the user's input.
    """
    is_async = isinstance(client, AsyncAnthropic)
    sync_kind, async_kind = (
        (BetaFunctionTool, BetaBuiltinFunctionTool),
        (BetaAsyncFunctionTool, BetaAsyncBuiltinFunctionTool),
    )
    given = list(tools)
    runnable = {t.name: t.call for t in given if isinstance(t, sync_kind + async_kind)}
    gate = _RunnerGuard(runnable, guard=guard, session=session)
    wrapped: list[Any] = []
    for t in given:
        if isinstance(t, sync_kind):
            wrapped.append(_GuardedTool(t, gate))
        elif isinstance(t, async_kind):
            wrapped.append(_AsyncGuardedTool(t, gate))
        else:
            wrapped.append(t)
    if gate.guard().config.report_tool is not None and gate.report not in runnable:
        wrapped.append(_AsyncGuardedTool(None, gate) if is_async else _GuardedTool(None, gate))
    gate.runner = client.beta.messages.tool_runner(tools=wrapped, **params)
    gate.hear(list(params.get("messages") or ())[-1:])  # the run's input: the user's last message
    return AsyncGuardedToolRunner(gate.runner, gate) if is_async else GuardedToolRunner(gate.runner, gate)
