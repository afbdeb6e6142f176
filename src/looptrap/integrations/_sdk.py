"""What the OpenAI and Anthropic SDK integrations share: a model's tool calls run through a guard.

One decision path per call (``ToolDispatch._begin`` and ``_end``); the sync and async drivers
only differ in how they call the tool function. Each batch is the calls of one model turn, which the drivers
end once the calls ran (``_end_turn``). The SDK modules turn the outcomes into their API's messages.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from looptrap.core.errors import LoopHalted
from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool

__all__ = ["Outcome", "ToolCall", "ToolDispatch", "Turn", "content_of", "error_text", "field", "json_call"]

ToolFunctions = Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]]
Turn = tuple[Any, "str | None"]  # a model turn's usage report and words


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for: its id, the tool's name and its arguments (a JSON object, or the raw
    text of a custom tool, ``text_input``). ``error`` says why the arguments could not be read."""

    id: str
    name: str
    args: Any
    error: str | None = None
    text_input: bool = False


@dataclass(frozen=True, slots=True)
class Outcome:
    """What goes back to the model for one call: the content (text, or the API's content blocks) and
    whether it is an error (a failed tool, advice or a block)."""

    call: ToolCall
    content: Any
    is_error: bool = False


class _BadCall(Exception):
    """The call cannot run: an unknown tool or unreadable arguments."""


def field(obj: Any, name: str) -> Any:
    """A field of an SDK object or of its dict form."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def json_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A call whose arguments are a JSON object (a string as the API sends it, or already parsed)."""
    args = arguments
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return ToolCall(str(call_id), str(name), arguments, error=f"the arguments are not valid JSON ({exc})")
    if not isinstance(args, Mapping):
        return ToolCall(str(call_id), str(name), args, error="the arguments must be a JSON object")
    return ToolCall(str(call_id), str(name), dict(args))


def content_of(result: Any) -> Any:
    """A tool's return value as tool-result content: text and lists of content blocks (dicts with a ``type``)
    as they are, ``None`` as empty text, anything else as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and result and all(isinstance(b, Mapping) and "type" in b for b in result):
        return result
    if result is None:
        return ""
    return json.dumps(result, ensure_ascii=False, default=str)


def error_text(exc: BaseException) -> str:
    return f"Error: {exc}" if isinstance(exc, _BadCall) else f"Error: {type(exc).__name__}: {exc}"


class ToolDispatch:
    """Tool functions by name, run through a guard.

    ``tools``: a mapping of tool name to function, or functions (named by ``__name__``); a function gets the
    call's arguments as keywords (a custom tool's raw text as its one argument) and may be sync or async (async
    ones need the async methods). ``guard``: a :class:`Guard`, a :class:`GuardPool` or ``None`` (a new pool);
    with a pool, each method's ``session`` picks the guard (default: this object's ``session``, made up if not
    given). A call to the guard's ``report_blocked`` tool (``config.report_tool``), unless ``tools`` has its
    own, is handled by the guard: it halts the run. Each batch of calls is one model turn: once its calls
    ran, the turn is ended (with the reply's usage and words, when given).
    """

    def __init__(
        self, tools: ToolFunctions, *, guard: Guard | GuardPool | None = None, session: str | None = None
    ) -> None:
        items = tools.items() if isinstance(tools, Mapping) else ((str(fn.__name__), fn) for fn in tools)
        self.functions: dict[str, Callable[..., Any]] = dict(items)
        self.guards: Guard | GuardPool = GuardPool() if guard is None else guard
        self.session: str = session or os.urandom(8).hex()

    def guard(self, session: str | None = None) -> Guard:
        """The guard of ``session`` (with a :class:`Guard`: that guard)."""
        g = self.guards
        return g if isinstance(g, Guard) else g.get(session or self.session)

    def user_message(self, text: str | None = None, *, session: str | None = None) -> None:
        """The user said something (a new message in the conversation): see :meth:`looptrap.Guard.user_message`.
        For a new request, call ``guard(session).new_task()`` first."""
        self.guard(session).user_message(text)

    def _verdict(self, guard: Guard, name: str, args: Any) -> Verdict:
        """The guard's verdict on a call; a call to the guard's ``report_blocked`` tool is the model's report."""
        report = guard.config.report_tool
        if name == report and report not in self.functions:
            return guard.handle_report_blocked(args)
        return guard.check(name, args)

    # -- the decision path, shared by the sync and async drivers ------------------------------------------
    def _begin(self, guard: Guard, call: ToolCall) -> Outcome | Callable[[], Any]:
        """Check a call: the outcome of a call that does not run (advice, a block, a malformed report), or the
        thunk that runs it. A halt raises :class:`LoopHalted`."""
        verdict = self._verdict(guard, call.name, call.args)
        if verdict.action == "halt":
            raise LoopHalted(verdict)
        if not verdict.allowed:
            return Outcome(call, verdict.message, is_error=True)
        fn = self.functions.get(call.name)
        if call.error is not None or fn is None:
            return partial(_fail, call.error or f"unknown tool {call.name!r}")
        return partial(fn, call.args) if call.text_input else partial(fn, **call.args)

    def _end(self, guard: Guard, call: ToolCall, result: Any = None, exc: Exception | None = None) -> Outcome:
        """Record what the call returned (or raised) and make its outcome."""
        if exc is not None:
            text = error_text(exc)
            guard.record(call.name, call.args, text, is_error=True)
            return Outcome(call, text, is_error=True)
        guard.record(call.name, call.args, result)
        return Outcome(call, content_of(result))

    @staticmethod
    def _end_turn(guard: Guard, out: list[Outcome], turn: Turn | None) -> list[Outcome]:
        """End the model turn whose calls ran: a halt (a budget) raises :class:`LoopHalted`, unless the turn
        asked for no call (its answer stands; the halt stays for the next call)."""
        usage, text = turn if turn is not None else (None, None)
        verdict = guard.end_turn(usage=usage, text=text)
        if verdict.action == "halt" and out:
            raise LoopHalted(verdict)
        return out

    # -- the drivers ---------------------------------------------------------------------------------------
    def _run(self, calls: Iterable[ToolCall], session: str | None = None, turn: Turn | None = None) -> list[Outcome]:
        """Run the calls of one model turn in order (sync tool functions), then end the turn."""
        guard, out = self.guard(session), []
        for call in calls:
            step = self._begin(guard, call)
            if isinstance(step, Outcome):
                out.append(step)
                continue
            try:
                result = step()
            except Exception as exc:  # noqa: BLE001 - a failed tool is a result the model reads
                out.append(self._end(guard, call, exc=exc))
                continue
            if inspect.isawaitable(result):
                _discard(result)
                raise TypeError(f"tool {call.name!r} is async: use the async method (the one starting with 'a')")
            out.append(self._end(guard, call, result))
        return self._end_turn(guard, out, turn)

    async def _arun(
        self, calls: Iterable[ToolCall], session: str | None = None, turn: Turn | None = None
    ) -> list[Outcome]:
        """Run the calls of one model turn in order, awaiting async tool functions, then end the turn."""
        guard, out = self.guard(session), []
        for call in calls:
            step = self._begin(guard, call)
            if isinstance(step, Outcome):
                out.append(step)
                continue
            try:
                result = step()
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:  # noqa: BLE001 - a failed tool is a result the model reads
                out.append(self._end(guard, call, exc=exc))
                continue
            out.append(self._end(guard, call, result))
        return self._end_turn(guard, out, turn)


def _fail(problem: str) -> Any:
    raise _BadCall(problem)


def _discard(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)  # a coroutine never awaited would warn
    if close is not None:
        close()
