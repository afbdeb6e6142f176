"""Retry amplification made visible: tell the guard about every attempt a retry library makes.

One agent call behind which a tool retries ten times is ten calls of work, at machine speed, that the
guard never sees. :func:`report_attempts` is a hook for tenacity (``before_sleep=``) and stamina
(``stamina.instrumentation.set_on_retry_hooks``): before each retry it records the failed attempt and
checks the next one with the guard, so tool-call budgets and the ``rate`` detector count the real work,
and a refused attempt stops the retrying (:class:`RetryRefused`, or :class:`looptrap.LoopHalted` on a
halt). Inside a chaos run it also counts the attempt in the call log (``attempts``).

Neither library is imported here: the hook reads the state object each one passes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from looptrap.chaos.calls import bind_arguments, current_call, tell_guard

if TYPE_CHECKING:
    from looptrap.drivers.guard import Guard

__all__ = ["AttemptReporter", "report_attempts"]


def _failure_of_tenacity(state: Any) -> str:
    outcome = getattr(state, "outcome", None)
    if outcome is None:
        return "the attempt failed"
    exc = outcome.exception() if outcome.failed else None
    if exc is not None:
        return f"{type(exc).__name__}: {exc}"
    return f"retried on its result: {outcome.result()!r}"[:500]


class AttemptReporter:
    """The hook :func:`report_attempts` returns; call it with tenacity's ``RetryCallState`` or stamina's
    ``RetryDetails``."""

    def __init__(self, guard: Guard | None, tool: str | None, args: Callable[..., Any] | None) -> None:
        if guard is not None and inspect.iscoroutinefunction(getattr(guard, "check", None)):
            raise TypeError("report_attempts needs a Guard: an AsyncGuard's checks must be awaited")
        self.guard = guard
        self.tool = tool
        self.args = args

    def __call__(self, state: Any) -> None:
        """Before a retry: count the attempt and tell the guard."""
        current = current_call()
        if current is not None:
            current.chaos.count_attempt(current)
        guard = self.guard if self.guard is not None else (current.chaos.guard if current is not None else None)
        if guard is None:
            return
        if hasattr(state, "retry_num"):  # stamina's RetryDetails
            name = str(state.name).rsplit(".", 1)[-1]
            raw_args, raw_kwargs = tuple(state.args), dict(state.kwargs)
            failure = f"{type(state.caused_by).__name__}: {state.caused_by}"
            sig = None
        else:  # tenacity's RetryCallState
            fn = getattr(state, "fn", None)
            name = str(getattr(fn, "__name__", "tool"))
            raw_args, raw_kwargs = tuple(getattr(state, "args", ())), dict(getattr(state, "kwargs", {}))
            failure = _failure_of_tenacity(state)
            try:
                sig = inspect.signature(fn) if fn is not None else None
            except (TypeError, ValueError):
                sig = None
        if self.tool is not None:
            tool = self.tool
        elif current is not None:
            tool = current.tool
        else:
            tool = name
        if self.args is not None:
            args = self.args(*raw_args, **raw_kwargs)
        elif current is not None and (self.tool is None or self.tool == current.tool):
            args = current.args
        else:
            args = bind_arguments(sig, raw_args, raw_kwargs)
        tell_guard(guard, tool, args, failure)


def report_attempts(
    guard: Guard | None = None, *, tool: str | None = None, args: Callable[..., Any] | None = None
) -> AttemptReporter:
    """A retry hook that tells ``guard`` about every retry attempt:

    * tenacity: ``@retry(stop=stop_after_attempt(5), before_sleep=report_attempts(guard))``;
    * stamina: ``stamina.instrumentation.set_on_retry_hooks([report_attempts(guard)])``.

    ``guard``: the session's :class:`~looptrap.Guard`; ``None`` inside a chaos run means the run's guard
    (and outside one, only counting). ``tool``: the tool name the guard knows the call by (default: the
    chaos call's, else the retried function's name); ``args``: a function of the retried call's arguments
    that gives the arguments the guard knows (default: the chaos call's, else the retried function's
    arguments by name). A refused attempt raises :class:`RetryRefused` (a halt, :class:`LoopHalted`) out
    of the retrying call: the retry decision goes back to the agent.
    """
    return AttemptReporter(guard, tool, args)
