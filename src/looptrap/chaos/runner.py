"""``run``: one agent against faulty tools, inside a hard ceiling, and the report of how it ended."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from looptrap.chaos.faults import CeilingReached, flatten
from looptrap.chaos.log import CallLog, CallRecord
from looptrap.chaos.tools import Chaos, FaultSpec, _by_tool, _framework
from looptrap.core.printable import one_line
from looptrap.drivers.guard import Guard

__all__ = ["Agent", "GuardSpec", "Intervention", "Report", "run", "tool_name"]

#: The user's agent: ``agent(tools, guard)`` runs it once with these tools (the faulty copies, in the order
#: given) and this guard (``None``: unguarded); it may be ``async``.
Agent = Callable[[list[Any], Guard | None], Any]
#: A guard for a run: an instance, a factory (``Guard`` itself, or ``lambda: Guard(budgets=...)``) or ``None``.
GuardSpec = Guard | Callable[[], Guard] | None

OUTCOMES = ("finished", "halted", "ceiling", "error")


@dataclass
class Intervention:
    """A verdict of the guard other than allow or warn, seen during the run: ``after_seq`` is the call log's
    last row when it came (``0``: before any call ran), ``seconds`` since the run started; ``tool`` is
    ``None`` for a verdict at the end of a model turn."""

    action: str
    reason: str | None
    kind: str | None
    tool: str | None
    call_index: int
    after_seq: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """As plain data."""
        return dict(self.__dict__)


@dataclass
class Report:
    """How one chaos run ended.

    ``outcome``: ``finished`` (the agent returned), ``halted`` (the guard stopped it: ``reason`` says why),
    ``ceiling`` (the hard ceiling cut it off: ``reason`` is ``max_calls`` or ``max_seconds``) or ``error``
    (the agent raised, or called ``sys.exit()``: ``reason`` is the exception's type, ``error`` the text,
    ``SystemExit: exit code 3``). ``terminated`` is false only at the ceiling. ``calls``: agent-level tool
    calls (``ran``, and ``refused`` by the guard);
    ``attempts``: tool-level attempts behind the calls that ran; ``per_tool`` the same per tool. ``tokens``
    and ``cost``: as the guard counted them (``None`` without a guard or a reported usage).
    """

    name: str
    faults: str
    guarded: bool
    outcome: str
    reason: str | None
    calls: int
    ran: int
    refused: int
    attempts: int
    per_tool: dict[str, dict[str, int]]
    interventions: list[Intervention]
    seconds: float
    seed: int
    max_calls: int | None
    max_seconds: float | None
    tokens: int | None = None
    cost: float | None = None
    error: str | None = None
    log: list[CallRecord] = field(default_factory=list)
    result: Any = field(default=None, repr=False, compare=False)

    @property
    def terminated(self) -> bool:
        """Whether the run ended by itself or by the guard (not at the ceiling)."""
        return self.outcome != "ceiling"

    @property
    def first_intervention(self) -> Intervention | None:
        """The guard's first intervention, if any."""
        return self.interventions[0] if self.interventions else None

    def summary(self) -> str:
        """One short line: ``halted @4 (loop_repeat)``, ``ceiling @30 (max_calls)``, ``finished @3``, and
        ``[9 attempts]`` when the tools worked harder than the calls that ran."""
        detail = f" ({self.reason})" if self.reason and self.outcome != "finished" else ""
        work = f" [{self.attempts} attempts]" if self.attempts > self.ran else ""
        return f"{self.outcome} @{self.calls}{detail}{work}"

    def sequence(self, limit: int = 40) -> str:
        """The calls in order, with the guard's interventions between them (the first and last ``limit // 2``
        lines when there are more than ``limit``)."""
        lines: list[tuple[int, int, str]] = []
        for r in self.log:
            args = one_line(_args_text(r.args), 80)
            extra = f" [{r.fault}]" if r.fault else ""
            attempts = f" x{r.attempts} attempts" if r.attempts > 1 else ""
            lines.append((r.seq, 1, f"#{r.seq:<3} {r.tool}({args}) -> {r.result_kind}{extra}{attempts}"))
        for i in self.interventions:
            where = f"{i.tool}, call {i.call_index}" if i.tool else f"turn end, after call {i.call_index}"
            lines.append((i.after_seq, 2, f"     guard: {i.action} {i.reason} ({one_line(where, 60)})"))
        text = [t for _, _, t in sorted(lines, key=lambda x: (x[0], x[1]))]
        if len(text) > limit:
            half = max(1, limit // 2)
            text = [*text[:half], f"     ... {len(text) - 2 * half} more ...", *text[-half:]]
        return "\n".join(text) if text else "(no tool call ran)"

    def to_dict(self) -> dict[str, Any]:
        """As plain data (JSON-serialisable; the agent's return value is left out)."""
        return {
            "name": self.name,
            "faults": self.faults,
            "guarded": self.guarded,
            "terminated": self.terminated,
            "outcome": self.outcome,
            "reason": self.reason,
            "calls": self.calls,
            "ran": self.ran,
            "refused": self.refused,
            "attempts": self.attempts,
            "per_tool": self.per_tool,
            "interventions": [i.to_dict() for i in self.interventions],
            "first_intervention": self.first_intervention.to_dict() if self.first_intervention else None,
            "seconds": round(self.seconds, 4),
            "tokens": self.tokens,
            "cost": self.cost,
            "error": self.error,
            "seed": self.seed,
            "max_calls": self.max_calls,
            "max_seconds": self.max_seconds,
            "log": [r.to_dict() for r in self.log],
        }


def _error_text(error: BaseException) -> str:
    """``Type: text`` of the exception that ended a run (``SystemExit: exit code 3`` for ``sys.exit(3)``)."""
    text = f"exit code {error.code!r}" if isinstance(error, SystemExit) else str(error)
    return f"{type(error).__name__}: {text}"


def _args_text(args: Any) -> str:
    import orjson

    try:
        return orjson.dumps(args, default=repr).decode()
    except TypeError:
        return repr(args)


def tool_name(tool: Any) -> str:
    """The name a tool is called by: a framework tool's ``name``, else the function's ``__name__``."""
    if _framework(tool) is not None:
        return str(tool.name)
    return str(getattr(tool, "__name__", type(tool).__name__))


class _Watch(logging.Handler):
    """Collects the guard's interventions from its log records (logger ``looptrap``, WARNING: advise,
    block and halt), for one guard's session."""

    def __init__(self, guard: Guard, chaos: Chaos, started: float) -> None:
        super().__init__(logging.WARNING)
        self.guard = guard
        self.chaos = chaos
        self.started = started
        self.seen: list[Intervention] = []

    def emit(self, record: logging.LogRecord) -> None:
        action = getattr(record, "action", None)
        if action not in ("advise", "block", "halt") or getattr(record, "run_id", None) != self.guard.state.run_id:
            return
        self.seen.append(
            Intervention(
                action=str(action),
                reason=getattr(record, "reason", None),
                kind=getattr(record, "kind", None),
                tool=getattr(record, "tool", None),
                call_index=int(getattr(record, "call_index", 0) or 0),
                after_seq=self.chaos.calls,
                seconds=round(time.perf_counter() - self.started, 4),
            )
        )


def _has_ceiling(exc: BaseException | None, depth: int = 0) -> bool:
    if exc is None or depth > 20:
        return False
    if isinstance(exc, CeilingReached):
        return True
    for inner in getattr(exc, "exceptions", ()) or ():
        if isinstance(inner, BaseException) and _has_ceiling(inner, depth + 1):
            return True
    return _has_ceiling(exc.__cause__, depth + 1) or _has_ceiling(exc.__context__, depth + 1)


def _await(awaitable: Any, chaos: Chaos) -> Any:
    """Run an async agent to its end, cancelled at the run's deadline (in a thread of its own when this
    thread already runs an event loop)."""

    async def contained() -> Any:
        try:
            return await awaitable
        except SystemExit as exc:  # out of a task, it would stop the event loop half closed: carried out instead
            return _Exited(exc)

    async def bounded() -> Any:
        remaining = None if chaos.deadline is None else max(0.0, chaos.deadline - time.monotonic())
        try:
            return await asyncio.wait_for(contained(), remaining)
        except asyncio.TimeoutError:
            with chaos._lock:
                raise chaos._stop("max_seconds") from None

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _exited(asyncio.run(bounded()))
    box: dict[str, Any] = {}

    def in_thread() -> None:
        try:
            box["value"] = asyncio.run(bounded())
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=in_thread, name="looptrap-chaos-agent", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return _exited(box.get("value"))


class _Exited:
    """An async agent's ``sys.exit()``, returned out of the event loop, to be raised outside it."""

    def __init__(self, exc: SystemExit) -> None:
        self.exc = exc


def _exited(value: Any) -> Any:
    """``value``, or the ``SystemExit`` it carries raised."""
    if isinstance(value, _Exited):
        raise value.exc
    return value


def make_guard(guard: GuardSpec) -> Guard | None:
    """The guard for one run: the instance given, or a new one from the factory."""
    if guard is None or isinstance(guard, Guard):
        return guard
    made = guard()
    if not isinstance(made, Guard):
        raise TypeError(f"the guard factory returned {type(made).__name__}, not a Guard")
    return made


def run(
    agent: Agent,
    tools: Any,
    faults: FaultSpec = None,
    *,
    guard: GuardSpec = None,
    max_calls: int | None = 50,
    max_seconds: float | None = 30.0,
    seed: int = 0,
    log: CallLog | str | os.PathLike[str] | None = None,
    name: str | None = None,
) -> Report:
    """Run ``agent(tools, guard)`` once against faulty copies of ``tools`` and report how it ended.

    ``tools``: a tool or a list of them (functions, LangChain, OpenAI Agents or Pydantic AI tool objects);
    ``faults``: a fault, faults, or ``{tool_name: fault}`` (see :class:`Chaos`); ``guard``: a guard, a
    factory for a fresh one, or ``None`` to run unguarded. ``max_calls`` and ``max_seconds``: the hard
    ceiling (every tool call after it raises :class:`CeilingReached`; an async agent is also cancelled at
    the deadline). ``seed``: the faults' schedules. ``log``: where the call log goes (a path is appended
    to). ``name``: the report's name (default: the faults and whether guarded).
    """
    the_guard = make_guard(guard)
    given: list[Any] = list(tools) if isinstance(tools, (list, tuple)) else [tools]
    label = _label(faults)
    title = name or f"{label} ({'guard' if the_guard is not None else 'no guard'})"
    chaos = Chaos(
        faults,
        seed=seed,
        max_calls=max_calls,
        max_seconds=max_seconds,
        log=log,
        session=title,
        guard=the_guard,
    )
    wrapped = chaos.wrap_all(given)
    log_start = len(chaos.log)
    started = time.perf_counter()
    watch = _Watch(the_guard, chaos, started) if the_guard is not None else None
    logger = logging.getLogger("looptrap")
    if watch is not None:
        logger.addHandler(watch)
    result: Any = None
    error: BaseException | None = None
    chaos.start()
    try:
        result = agent(wrapped, the_guard)
        if inspect.isawaitable(result):
            result = _await(result, chaos)
    except BaseException as exc:
        # an agent's sys.exit() is this run's error, not the end of a matrix (or of the test session)
        if not isinstance(exc, (Exception, SystemExit)) and not _has_ceiling(exc):
            raise  # KeyboardInterrupt, a test framework's own outcome
        error = exc
    finally:
        if watch is not None:
            logger.removeHandler(watch)
        if log is not None and not isinstance(log, CallLog):
            chaos.log.close()
    seconds = time.perf_counter() - started
    return _report(title, label, chaos, the_guard, watch, error, result, seconds, log_start)


def _label(faults: FaultSpec) -> str:
    members = _by_tool(faults)
    if not members:
        return "no fault"
    return " + ".join(m.describe() for f in members for m in flatten(f))


def _report(
    title: str,
    label: str,
    chaos: Chaos,
    guard: Guard | None,
    watch: _Watch | None,
    error: BaseException | None,
    result: Any,
    seconds: float,
    log_start: int,
) -> Report:
    halted = guard.halted if guard is not None else None
    reason: str | None
    if chaos.stopped is not None:
        outcome, reason = "ceiling", chaos.stopped.which
    elif halted is not None:
        outcome, reason = "halted", halted.reason
    elif error is not None:
        outcome, reason = "error", type(error).__name__
    else:
        outcome, reason = "finished", None
    seen = watch.seen if watch is not None else []
    refused_by_tool: dict[str, int] = {}
    for i in seen:
        if i.tool is not None:
            refused_by_tool[i.tool] = refused_by_tool.get(i.tool, 0) + 1
    per_tool: dict[str, dict[str, int]] = {}
    for tool in sorted({*chaos.counts, *refused_by_tool}):
        count = chaos.counts.get(tool)
        ran = count.calls if count else 0
        refused = refused_by_tool.get(tool, 0)
        per_tool[tool] = {
            "calls": ran + refused,
            "ran": ran,
            "refused": refused,
            "attempts": count.attempts if count else 0,
        }
    refused = sum(refused_by_tool.values())
    state = guard.state if guard is not None else None
    return Report(
        name=title,
        faults=label,
        guarded=guard is not None,
        outcome=outcome,
        reason=reason,
        calls=chaos.calls + refused,
        ran=chaos.calls,
        refused=refused,
        attempts=chaos.attempts,
        per_tool=per_tool,
        interventions=list(seen),
        seconds=seconds,
        seed=chaos.seed,
        max_calls=chaos.max_calls,
        max_seconds=chaos.max_seconds,
        tokens=state.tokens if state is not None and state.tokens else None,
        cost=state.cost if state is not None and state.cost else None,
        error=None if error is None or outcome != "error" else one_line(_error_text(error), 500),
        log=list(chaos.log)[log_start:],
        result=result,
    )


def names(tools: Iterable[Any]) -> list[str]:
    """The names of ``tools`` (see :func:`tool_name`)."""
    return [tool_name(t) for t in tools]
