"""``Chaos``: wraps tools so that they misbehave by the faults' schedules, keeps the call log, and enforces the
hard ceiling of a run.

One ``Chaos`` is one run (or one test): its tool counters, its faults' memory, its log and its deadline are
shared by every tool it wraps. The framework wrappers (LangChain, OpenAI Agents SDK, Pydantic AI) are
imported only when a tool of that framework is wrapped.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import os
import random
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from looptrap.chaos.calls import CURRENT, bind_arguments, signature_of, tell_guard
from looptrap.chaos.faults import (
    CeilingReached,
    Effect,
    Fault,
    InjectedError,
    Target,
    content_rng,
    flatten,
    injected,
    schedule_rng,
)
from looptrap.chaos.log import CallLog, CallRecord, preview

if TYPE_CHECKING:
    from looptrap.drivers.guard import Guard

__all__ = ["Chaos", "ChaosCall", "FaultSpec", "ToolCount"]

T = TypeVar("T")
FaultSpec = Fault | str | Iterable[Fault | str] | Mapping[str, Fault | str | Iterable[Fault | str]] | None


@dataclass
class ToolCount:
    """A tool's calls in a run: agent-level ``calls`` and the tool-level ``attempts`` behind them."""

    calls: int = 0
    attempts: int = 0


@dataclass
class ChaosCall:
    """The call a wrapped tool is running (see :func:`looptrap.chaos.calls.current_call`)."""

    chaos: Chaos
    tool: str
    args: Any
    record: CallRecord
    active: list[tuple[int, Fault]]
    attempts: int
    report: bool
    started: float = field(default_factory=time.perf_counter)
    ended: bool = False


def _by_tool(faults: FaultSpec) -> list[Fault]:
    if isinstance(faults, Mapping):
        return [f.on(tool) for tool, given in faults.items() for f in flatten(given)]
    return flatten(faults)


def _framework(tool: Any) -> str | None:
    """Which framework's tool object ``tool`` is (without importing any framework)."""
    checks = (
        ("langchain", "langchain_core.tools", "BaseTool"),
        ("openai_agents", "agents.tool", "FunctionTool"),
        ("pydantic_ai", "pydantic_ai.tools", "Tool"),
    )
    for name, module, cls in checks:
        mod = sys.modules.get(module)
        kind = getattr(mod, cls, None) if mod is not None else None
        if isinstance(kind, type) and isinstance(tool, kind):
            return name
    return None


class Chaos:
    """Faulty tools for one run: ``tools = Chaos(Empty().on("search_docs"), seed=1).wrap_all(tools)``.

    ``faults``: a fault, a list of them (or a composition), or ``{tool_name: fault or faults}``; each fires
    on its own seeded schedule (``seed``: the same seed, the same schedule). ``max_calls`` and
    ``max_seconds``: the hard ceiling; once reached, every tool call raises :class:`CeilingReached`.
    ``log``: a :class:`CallLog` to write to, or a path for one (JSON Lines, appended); ``session``: the
    ``session`` column of its rows. ``guard``: the guard that :class:`RetryInside` ``(report=True)`` and the
    retry integration tell about attempts. ``clock``: the ``ts`` of each row.
    """

    def __init__(
        self,
        faults: FaultSpec = None,
        *,
        seed: int = 0,
        max_calls: int | None = None,
        max_seconds: float | None = None,
        log: CallLog | str | os.PathLike[str] | None = None,
        session: str = "chaos",
        guard: Guard | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.faults: list[Fault] = _by_tool(faults)
        self.seed = seed
        self.max_calls = max_calls
        self.max_seconds = max_seconds
        self.log: CallLog = log if isinstance(log, CallLog) else CallLog(log)
        self.session = session
        self.guard = guard
        self.clock = clock
        self.counts: dict[str, ToolCount] = {}
        self.calls = 0
        self.stopped: CeilingReached | None = None
        self.deadline: float | None = None
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self._rngs: dict[tuple[int, str], tuple[random.Random, random.Random]] = {}
        seen: dict[str, int] = {}
        self._nth: list[int] = []  # each fault's rank among those with its label: its generators' seed
        for f in self.faults:
            self._nth.append(seen.get(f.label, 0))
            seen[f.label] = self._nth[-1] + 1
        self._memory: dict[tuple[int, str], dict[str, Any]] = {}
        if max_seconds is not None:
            self.start()

    # -- the run ---------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the clock of ``max_seconds`` now (done at construction; the runner starts it again)."""
        if self.max_seconds is not None:
            self.deadline = time.monotonic() + self.max_seconds

    @property
    def attempts(self) -> int:
        """Tool-level attempts so far, every tool."""
        return sum(c.attempts for c in self.counts.values())

    def _stop(self, which: Literal["max_calls", "max_seconds"]) -> CeilingReached:
        if self.stopped is None:
            limit = self.max_calls if which == "max_calls" else self.max_seconds
            self.stopped = CeilingReached(which, float(limit or 0))
        return CeilingReached(self.stopped.which, self.stopped.limit)

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    # -- wrapping --------------------------------------------------------------------------------------
    def wrap(self, tool: T, *, name: str | None = None) -> T:
        """``tool`` as it misbehaves: a function (sync or async), a LangChain ``BaseTool``, an OpenAI Agents
        ``FunctionTool`` or a Pydantic AI ``Tool``, returned as the same kind of object (a copy: the
        original is left as it is). Injected errors reach a framework's model the way that framework
        delivers a tool's failure; a plain function raises :class:`InjectedError`."""
        kind = _framework(tool)
        if kind == "langchain":
            from looptrap.chaos._langchain import wrap_tool as wrap_langchain

            return cast(T, wrap_langchain(self, tool))  # type: ignore[arg-type]
        if kind == "openai_agents":
            from looptrap.chaos._openai_agents import wrap_tool as wrap_openai_agents

            return cast(T, wrap_openai_agents(self, tool))  # type: ignore[arg-type]
        if kind == "pydantic_ai":
            from looptrap.chaos._pydantic_ai import wrap_tool as wrap_pydantic_ai

            return cast(T, wrap_pydantic_ai(self, tool))  # type: ignore[arg-type]
        if callable(tool):
            return cast(T, self.function(tool, name=name))
        raise TypeError(f"cannot wrap {type(tool).__name__!r}: give a function or a framework tool object")

    def wrap_all(self, tools: Iterable[T]) -> list[T]:
        """Every tool of ``tools`` wrapped, in order."""
        return [self.wrap(t) for t in tools]

    def function(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        convert: Callable[[Exception], BaseException] | None = None,
        drop: Iterable[str] = (),
        only: Iterable[str] | None = None,
    ) -> Any:
        """``fn`` (sync or async) wrapped; ``convert`` turns an injected error (or a refused retry) into what
        the framework expects a failing tool to raise; ``drop`` and ``only`` choose the logged arguments."""
        tool = name or str(getattr(fn, "__name__", "tool"))
        sig = signature_of(fn)
        drop, only = tuple(drop), (tuple(only) if only is not None else None)

        def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            return bind_arguments(sig, args, kwargs, drop=drop, only=only)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def chaotic_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await self.run_async(tool, arguments(args, kwargs), lambda: fn(*args, **kwargs))
                except Exception as exc:
                    if convert is not None and injected(exc):
                        raise convert(exc) from exc
                    raise

            return chaotic_async

        @functools.wraps(fn)
        def chaotic(*args: Any, **kwargs: Any) -> Any:
            try:
                return self.run_sync(tool, arguments(args, kwargs), lambda: fn(*args, **kwargs))
            except Exception as exc:
                if convert is not None and injected(exc):
                    raise convert(exc) from exc
                raise

        return chaotic

    # -- one call --------------------------------------------------------------------------------------
    def begin(self, tool: str, args: Any) -> ChaosCall:
        """A call starts: the ceiling is checked (raising :class:`CeilingReached`), the call counted and
        numbered, and the faults that fire on it chosen."""
        with self._lock:
            if self.stopped is not None:
                raise self._stop(self.stopped.which)
            if self.max_calls is not None and self.calls >= self.max_calls:
                raise self._stop("max_calls")
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                raise self._stop("max_seconds")
            self.calls += 1
            count = self.counts.setdefault(tool, ToolCount())
            count.calls += 1
            n = count.calls
            seq = next(self._seq)
            active = []
            for pos, fault in enumerate(self.faults):
                if fault.targets(tool) and fault.fires(n, self._rng(pos, fault, tool)[0]):
                    active.append((pos, fault))
        attempts = max((f.attempts() for _, f in active), default=1)
        report = any(f.reports_attempts() and f.attempts() > 1 for _, f in active)
        record = CallRecord(seq=seq, ts=self.clock(), tool=tool, args=args, session=self.session, call=n, attempts=0)
        return ChaosCall(self, tool, args, record, active, attempts, report)

    def _rng(self, pos: int, fault: Fault, tool: str) -> tuple[random.Random, random.Random]:
        key = (pos, tool)
        got = self._rngs.get(key)
        if got is None:
            nth = self._nth[pos]
            got = self._rngs[key] = (
                schedule_rng(self.seed, nth, fault.label, tool),
                content_rng(self.seed, nth, fault.label, tool),
            )
        return got

    def effect(self, call: ChaosCall, attempt: int) -> Effect:
        """What the active faults do to one attempt of ``call`` (and the attempt counted)."""
        effect = Effect()
        with self._lock:
            call.record.attempts += 1
            self.counts[call.tool].attempts += 1
            for pos, fault in call.active:
                memory = self._memory.setdefault((pos, call.tool), {})
                target = Target(
                    call.tool, call.args, call.record.call, attempt, memory, self._rng(pos, fault, call.tool)[1]
                )
                fault.apply(target, effect)
                if fault.label not in effect.faults:
                    effect.faults.append(fault.label)
        return effect

    def count_attempt(self, call: ChaosCall) -> None:
        """One more tool-level attempt behind ``call`` (reported by a retry library)."""
        with self._lock:
            call.record.attempts += 1
            self.counts[call.tool].attempts += 1

    def end(self, call: ChaosCall, kind: str, error: BaseException | None = None, result: Any = None) -> None:
        """The call is over: its row goes to the log."""
        if call.ended:
            return
        call.ended = True
        r = call.record
        r.result_kind = kind
        r.fault = "+".join(dict.fromkeys(f.label for _, f in call.active))
        r.ms = round((time.perf_counter() - call.started) * 1000, 3)
        if error is not None:
            r.error_message = f"{type(error).__name__}: {error}"[:500]
            r.is_error = True
            r.output = r.error_message
        else:
            r.is_error = kind in _ERROR_KINDS
            try:
                r.output = preview(result)
            except Exception:  # noqa: BLE001 - a result the log cannot show is still a result
                r.output = repr(result)[:200]
        self.log.add(r)

    def sleep(self, seconds: float) -> None:
        """Sleep, but not past the run's deadline (which raises :class:`CeilingReached`)."""
        remaining = self._remaining()
        if remaining is not None and seconds >= remaining:
            time.sleep(max(0.0, remaining))
            with self._lock:
                raise self._stop("max_seconds")
        time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        """:meth:`sleep` for async tools."""
        remaining = self._remaining()
        if remaining is not None and seconds >= remaining:
            await asyncio.sleep(max(0.0, remaining))
            with self._lock:
                raise self._stop("max_seconds")
        await asyncio.sleep(seconds)

    def _retrying(self, call: ChaosCall, failure: str) -> None:
        if call.report and self.guard is not None:
            tell_guard(self.guard, call.tool, call.args, failure)

    def run_sync(self, tool: str, args: Any, real: Callable[[], T]) -> T:
        """Run one call of a sync tool (``real`` runs the tool itself) under the faults."""
        call = self.begin(tool, args)
        token = CURRENT.set(call)
        effect = Effect()
        try:
            for attempt in range(1, call.attempts + 1):
                if attempt > 1:
                    self._retrying(call, _failure(effect))
                effect = self.effect(call, attempt)
                if effect.delay:
                    self.sleep(effect.delay)
                try:
                    if effect.error is not None:
                        raise effect.error
                    result = effect.result if effect.replaced else real()
                except Exception as exc:
                    if attempt < call.attempts:
                        continue
                    self.end(call, effect.kind if effect.error is not None else _error_kind(exc), exc)
                    raise
                if attempt < call.attempts:
                    continue
                kind = _kind(effect, result)
                self.end(call, kind, result=result)
                return result
            raise AssertionError("unreachable")  # pragma: no cover
        except BaseException as exc:  # the ceiling, a cancelled call (a caller's deadline), a refused retry
            self.end(call, _stopped_kind(exc), exc)
            raise
        finally:
            CURRENT.reset(token)

    async def run_async(self, tool: str, args: Any, real: Callable[[], Awaitable[T]]) -> T:
        """Run one call of an async tool (``real`` returns the tool's awaitable) under the faults."""
        call = self.begin(tool, args)
        token = CURRENT.set(call)
        effect = Effect()
        try:
            for attempt in range(1, call.attempts + 1):
                if attempt > 1:
                    self._retrying(call, _failure(effect))
                effect = self.effect(call, attempt)
                if effect.delay:
                    await self.asleep(effect.delay)
                try:
                    if effect.error is not None:
                        raise effect.error
                    result = effect.result if effect.replaced else await real()
                except Exception as exc:
                    if attempt < call.attempts:
                        continue
                    self.end(call, effect.kind if effect.error is not None else _error_kind(exc), exc)
                    raise
                if attempt < call.attempts:
                    continue
                kind = _kind(effect, result)
                self.end(call, kind, result=result)
                return result
            raise AssertionError("unreachable")  # pragma: no cover
        except BaseException as exc:  # the ceiling, a cancelled call (a caller's deadline), a refused retry
            self.end(call, _stopped_kind(exc), exc)
            raise
        finally:
            CURRENT.reset(token)


_ERROR_KINDS = frozenset({"error", "retryable"})  # a result (not an exception) that says it failed


def _failure(effect: Effect) -> str:
    if effect.error is not None:
        return f"{type(effect.error).__name__}: {effect.error}"
    return "the attempt failed inside the tool and was retried"


def _stopped_kind(exc: BaseException) -> str:
    if isinstance(exc, CeilingReached):
        return "ceiling"
    return "timeout" if isinstance(exc, asyncio.CancelledError) else _error_kind(exc)


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, InjectedError):
        return "retryable" if exc.retryable else "error"
    return "timeout" if isinstance(exc, TimeoutError) else "error"


def _kind(effect: Effect, result: Any) -> str:
    """The result kind of a finished call: the fault's, else what the tool's own result says."""
    if effect.kind != "ok":
        return effect.kind
    from looptrap.reading.results import ResultFacts, result_facts

    try:
        facts = result_facts(result, False)
    except Exception:  # noqa: BLE001 - an odd result is still a result
        return "ok"
    if facts & ResultFacts.ERROR:
        return "retryable" if facts & ResultFacts.RETRYABLE else "error"
    return "empty" if facts & ResultFacts.EMPTY else "ok"
