"""Faults: what a chaos-wrapped tool does wrong, on which of its calls (a seeded schedule), for which tools.

A fault is a small configuration object. At each call of a tool it targets, its schedule (``when``) says
whether it fires; the faults that fire shape the call's :class:`Effect` (a delay, an error, a replacement
result). Faults compose with ``+`` and target tools with :meth:`Fault.on`. They keep no state of their own:
what a fault remembers (a flaky tool's failures so far) lives in the run, so one fault object serves many
runs.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from looptrap.core.errors import LooptrapError

if TYPE_CHECKING:
    from looptrap.core.types import Verdict

__all__ = [
    "ALL",
    "FAULTS",
    "CeilingReached",
    "Contradict",
    "Effect",
    "Empty",
    "Error",
    "Fault",
    "Faults",
    "Flaky",
    "InjectedError",
    "InjectedTimeout",
    "Malformed",
    "NotFound",
    "Oversized",
    "RetryInside",
    "RetryRefused",
    "Retryable",
    "Slow",
    "Target",
    "Timeout",
    "after",
    "by_name",
    "every",
    "first",
    "flatten",
]

Schedule = Callable[[int, random.Random], bool]
When = float | Iterable[int] | Schedule | None
F = TypeVar("F", bound="Fault")


class InjectedError(Exception):
    """A failure a fault injected. ``retryable``: whether the same call could work if made again (a 503, a
    timeout) or not (a bad argument); ``fault``: the fault's label."""

    def __init__(self, message: str, *, retryable: bool, fault: str) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.fault = fault


class InjectedTimeout(InjectedError, TimeoutError):
    """An injected timeout (also a :class:`TimeoutError`)."""


class RetryRefused(LooptrapError):
    """The guard refused a retry attempt (advice or a block): the retrying stops here and the tool fails
    with the guard's message (``verdict``: the refusing verdict)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


def injected(exc: BaseException) -> bool:
    """Whether a tool's exception is chaos's doing: an injected error, or a retry the guard refused."""
    return isinstance(exc, (InjectedError, RetryRefused))


class CeilingReached(BaseException):
    """A chaos run reached its hard ceiling: ``which`` is ``"max_calls"`` or ``"max_seconds"``.

    Raised by the next tool call (and by a fault's sleep that would outlast the deadline). It derives from
    ``BaseException`` so that agent code and frameworks that turn a tool's ``Exception`` into an error result
    for the model let it through and the run ends.
    """

    def __init__(self, which: Literal["max_calls", "max_seconds"], limit: float) -> None:
        super().__init__(f"the chaos run reached its ceiling: {which}={limit:g}")
        self.which = which
        self.limit = limit


_UNSET: Any = object()


@dataclass
class Effect:
    """What the faults that fire do to one attempt of a call: sleep ``delay`` seconds, then raise ``error``,
    or return ``result`` instead of running the tool (``replaced``), or run the tool. ``kind`` is the result
    kind the call log gets; ``faults`` the labels of the faults that fired."""

    delay: float = 0.0
    error: InjectedError | None = None
    result: Any = _UNSET
    kind: str = "ok"
    faults: list[str] = field(default_factory=list)

    @property
    def replaced(self) -> bool:
        """Whether a fault supplied the result (the real tool does not run)."""
        return self.result is not _UNSET

    def replace(self, result: Any, kind: str) -> None:
        """Return ``result`` instead of running the tool (unless an error comes first)."""
        if self.error is None:
            self.result, self.kind = result, kind

    def fail(self, error: InjectedError, kind: str) -> None:
        """Raise ``error`` (the first error wins)."""
        if self.error is None:
            self.error, self.kind = error, kind


@dataclass
class Target:
    """One attempt of one call, as a fault sees it: the tool, its arguments, the tool's (agent-level) call
    number, the attempt number within the call, this fault's memory for this tool (kept for the run), and
    a seeded random generator for the fault's content."""

    tool: str
    args: Any
    call: int
    attempt: int
    memory: dict[str, Any]
    rng: random.Random


def _schedule(when: When) -> Schedule | None:
    if when is None:
        return None
    if isinstance(when, bool):
        raise TypeError("when: give a probability, call numbers or a schedule, not a bool")
    if isinstance(when, (int, float)):
        p = float(when)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"when: a probability is between 0 and 1, got {p}")
        return lambda call, rng: rng.random() < p
    if callable(when):
        return when
    numbers = frozenset(int(n) for n in when)
    return lambda call, rng: call in numbers


def every(n: int, *, start: int = 1) -> Schedule:
    """Fire on call ``start`` and every ``n``-th call after it."""
    if n < 1:
        raise ValueError("every: n must be at least 1")
    return lambda call, rng: call >= start and (call - start) % n == 0


def after(n: int) -> Schedule:
    """Fire on every call after the first ``n`` (a tool that breaks mid-run)."""
    return lambda call, rng: call > n


def first(n: int) -> Schedule:
    """Fire on the first ``n`` calls only."""
    return lambda call, rng: call <= n


class Fault:
    """Base class of the faults. ``when``: on which of a tool's calls the fault fires: ``None`` (every
    call), a probability (drawn from the run's seeded generator: the same seed gives the same schedule),
    call numbers (``{2, 3}``), or a schedule (:func:`every`, :func:`after`, :func:`first`, or any
    ``(call, rng) -> bool``). ``tools``: the tool names it targets (``None``: every tool); see :meth:`on`.
    ``label``: the name the call log and reports use (default: the fault's ``name``)."""

    name: ClassVar[str] = "fault"
    #: a short description for tables and docs
    about: ClassVar[str] = ""

    def __init__(self, *, when: When = None, tools: Iterable[str] | None = None, label: str | None = None) -> None:
        self.when: Schedule | None = _schedule(when)
        self.tools: frozenset[str] | None = frozenset(tools) if tools is not None else None
        self.label: str = label or self.name

    # -- targeting and composition --------------------------------------------------------------------
    def on(self: F, *tools: str) -> F:
        """A copy of this fault that targets only the tools named."""
        out = copy.copy(self)
        out.tools = frozenset(tools)
        return out

    def targets(self, tool: str) -> bool:
        """Whether the fault applies to ``tool``."""
        return self.tools is None or tool in self.tools

    def fires(self, call: int, rng: random.Random) -> bool:
        """Whether the fault fires on the tool's ``call``-th call (``rng``: the schedule's generator for this
        fault and tool)."""
        return True if self.when is None else bool(self.when(call, rng))

    def __add__(self, other: Fault) -> Faults:
        return Faults([*flatten(self), *flatten(other)])

    def schedule(self, calls: int = 20, *, tool: str = "tool", seed: int = 0) -> list[bool]:
        """Whether the fault fires on each of the first ``calls`` calls of ``tool`` in a run with ``seed``
        (what a run with the same seed does)."""
        rng = schedule_rng(seed, 0, self.label, tool)
        return [self.targets(tool) and self.fires(n, rng) for n in range(1, calls + 1)]

    # -- what it does ----------------------------------------------------------------------------------
    def attempts(self) -> int:
        """How many attempts each call makes (only :class:`RetryInside` makes more than one)."""
        return 1

    def reports_attempts(self) -> bool:
        """Whether the extra attempts are reported to the guard (see :class:`RetryInside`)."""
        return False

    def apply(self, target: Target, effect: Effect) -> None:
        """Shape ``effect`` for one attempt of a call the fault fired on."""

    def describe(self) -> str:
        """The label, and where the fault applies."""
        where = "every tool" if self.tools is None else ", ".join(sorted(self.tools))
        return f"{self.label} on {where}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class Faults(Fault):
    """Several faults at once (``Slow() + Empty()``): each fires on its own schedule; on one attempt the
    delays add up, the first error wins, and otherwise the last replacement result wins."""

    name = "faults"

    def __init__(self, faults: Iterable[Fault], *, label: str | None = None) -> None:
        self.members: tuple[Fault, ...] = tuple(m for f in faults for m in flatten(f))
        super().__init__(label=label or "+".join(m.label for m in self.members) or "none")

    def on(self, *tools: str) -> Faults:
        """A copy whose every member targets only the tools named."""
        return Faults([m.on(*tools) for m in self.members], label=self.label)

    def targets(self, tool: str) -> bool:
        return any(m.targets(tool) for m in self.members)

    def describe(self) -> str:
        return " + ".join(m.describe() for m in self.members)


def flatten(faults: Fault | str | Iterable[Fault | str] | None) -> list[Fault]:
    """The single faults in ``faults`` (a fault, a composition, a name, a list of them, or ``None``)."""
    if faults is None:
        return []
    if isinstance(faults, str):
        return flatten(by_name(faults))
    if isinstance(faults, Faults):
        return list(faults.members)
    if isinstance(faults, Fault):
        return [faults]
    return [m for f in faults for m in flatten(f)]


def schedule_rng(seed: int, nth: int, label: str, tool: str) -> random.Random:
    """The generator a fault's schedule draws from for one tool (``nth``: the fault's rank among the run's
    faults with the same label). Seeded by a string: the same on every platform and process, whatever the
    hash seed, and whatever the other faults of the run."""
    return random.Random(f"looptrap-chaos/{seed}/{nth}/{label}/{tool}/when")


def content_rng(seed: int, nth: int, label: str, tool: str) -> random.Random:
    """The generator a fault's content (which malformed payload) draws from for one tool."""
    return random.Random(f"looptrap-chaos/{seed}/{nth}/{label}/{tool}/content")


# -- the faults ---------------------------------------------------------------------------------------
class Empty(Fault):
    """An empty result (``"[]"`` by default) instead of the tool's."""

    name = "empty"
    about = "an empty result"

    def __init__(self, value: Any = "[]", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.value = value

    def apply(self, target: Target, effect: Effect) -> None:
        effect.replace(copy.deepcopy(self.value), "empty")


class NotFound(Fault):
    """A "not found" result: the unhelpful answer that invites a retry. ``outcome=True`` returns it in the
    outcome protocol instead (``status: not_found``, ``retryable: false``)."""

    name = "not_found"
    about = '"no matching records"'

    def __init__(self, message: str = "No matching records found.", *, outcome: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message
        self.outcome = outcome

    def apply(self, target: Target, effect: Effect) -> None:
        if self.outcome:
            from looptrap.reading import outcome

            effect.replace(outcome.not_found(self.message), "not_found")
        else:
            effect.replace(self.message, "not_found")


class Error(Fault):
    """A non-retryable error: the tool raises :class:`InjectedError` (``retryable=False``); with
    ``as_result=True`` it returns an outcome-protocol error instead (the tool reporting honestly)."""

    name = "error"
    about = "a non-retryable error"
    retryable: ClassVar[bool] = False
    default_message: ClassVar[str] = "400 Bad Request: the request is invalid and will fail again as it is."

    def __init__(self, message: str | None = None, *, as_result: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message or self.default_message
        self.as_result = as_result

    def apply(self, target: Target, effect: Effect) -> None:
        kind = "retryable" if self.retryable else "error"
        if self.as_result:
            from looptrap.reading import outcome

            effect.replace(outcome.error(self.message, retryable=self.retryable), kind)
        else:
            effect.fail(InjectedError(self.message, retryable=self.retryable, fault=self.label), kind)


class Retryable(Error):
    """A retryable error that never clears (``retryable=True``, on every call it fires on)."""

    name = "retryable"
    about = "a retryable error that never clears"
    retryable = True
    default_message = "503 Service Unavailable: the backend is overloaded, try again later."


class Timeout(Fault):
    """A timeout. By default the tool raises :class:`InjectedTimeout` at once (no wall time spent);
    ``sleep=SECONDS`` makes it sleep that long first (past the caller's deadline, which should cut it
    off), then ``raises=False`` returns the tool's own result after all."""

    name = "timeout"
    about = "a timeout"

    def __init__(self, sleep: float = 0.0, *, raises: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sleep = sleep
        self.raises = raises

    def apply(self, target: Target, effect: Effect) -> None:
        effect.delay += self.sleep
        if self.raises:
            message = f"Timed out after {self.sleep:g} s waiting for the backend." if self.sleep else "Timed out."
            effect.fail(InjectedTimeout(message, retryable=True, fault=self.label), "timeout")
        elif effect.error is None:
            effect.kind = "timeout"


def _big_text(size: int) -> str:
    line = "row {:07d}: id={:07d} status=active owner=ops region=eu-west-1 note=lorem ipsum dolor sit amet\n"
    out: list[str] = []
    n = total = 0
    while total < size:
        s = line.format(n, n * 7919 % 10_000_000)
        out.append(s)
        total += len(s)
        n += 1
    return "".join(out)[:size]


class Oversized(Fault):
    """An oversized result: ``size`` characters (1 MiB by default) of plausible rows."""

    name = "oversized"
    about = "a result of megabytes"

    def __init__(self, size: int = 1 << 20, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.size = size
        self._text: str | None = None

    def apply(self, target: Target, effect: Effect) -> None:
        if self._text is None:
            self._text = _big_text(self.size)
        effect.replace(self._text, "oversized")


MALFORMED = (
    '{"results": [{"id": 17, "title": "Refund pol',
    "<html><body><h1>502 Bad Gateway</h1><p>upstream sent an invalid respo",
    "\ufffd\ufffd\x00PK\x03\x04\ufffdE\ufffd\ufffd binary garbage \ufffd\ufffd",
    '{"status": "ok", "data": null, "data": [1, 2, ',
    "NaN",
)


class Malformed(Fault):
    """A malformed result: truncated JSON, a proxy's HTML error page, binary garbage (one of ``payloads``,
    picked by the run's seeded generator)."""

    name = "malformed"
    about = "a malformed result"

    def __init__(self, payloads: Sequence[str] = MALFORMED, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not payloads:
            raise ValueError("Malformed: give at least one payload")
        self.payloads = tuple(payloads)

    def apply(self, target: Target, effect: Effect) -> None:
        effect.replace(target.rng.choice(self.payloads), "malformed")


class Contradict(Fault):
    """An answer that contradicts the previous one: each call it fires on returns the next of ``answers``
    (two that cannot both be true, by default), in turn."""

    name = "contradict"
    about = "an answer that contradicts the previous one"

    def __init__(
        self,
        answers: Sequence[Any] = (
            "Confirmed: the record exists and is active.",
            "Confirmed: the record was deleted and never existed.",
        ),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if len(answers) < 2:
            raise ValueError("Contradict: give at least two answers")
        self.answers = tuple(answers)

    def apply(self, target: Target, effect: Effect) -> None:
        n = target.memory.get("answered", 0)
        target.memory["answered"] = n + 1
        effect.replace(copy.deepcopy(self.answers[n % len(self.answers)]), "contradiction")


class Flaky(Fault):
    """Fails ``failures`` times (a retryable error), then works: counted per tool, over every attempt."""

    name = "flaky"
    about = "fails N times, then works"

    def __init__(
        self,
        failures: int = 2,
        *,
        message: str = "502 Bad Gateway: the backend did not answer, try again.",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.failures = failures
        self.message = message

    def apply(self, target: Target, effect: Effect) -> None:
        failed = target.memory.get("failed", 0)
        if failed < self.failures:
            target.memory["failed"] = failed + 1
            effect.fail(InjectedError(self.message, retryable=True, fault=self.label), "retryable")


class Slow(Fault):
    """A slow tool: sleeps ``seconds`` before it runs (the run's deadline cuts a long sleep short)."""

    name = "slow"
    about = "slow"

    def __init__(self, seconds: float = 0.02, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seconds = seconds

    def apply(self, target: Target, effect: Effect) -> None:
        effect.delay += self.seconds


class RetryInside(Fault):
    """A tool that retries itself: each call makes ``attempts`` attempts, of which the first
    ``attempts - 1`` fail inside the tool (a backend that times out, retried without telling anyone), so
    the work behind one agent call is multiplied; the last attempt's outcome is the call's. The call log
    counts the attempts (``attempts``); ``report=True`` also tells the guard about each one, as the retry
    integration does (:func:`looptrap.chaos.report_attempts`)."""

    name = "retry_inside"
    about = "the tool retries itself N times per call"

    def __init__(self, attempts: int = 3, *, report: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if attempts < 1:
            raise ValueError("RetryInside: attempts must be at least 1")
        self.count = attempts
        self.report = report

    def attempts(self) -> int:
        return self.count

    def reports_attempts(self) -> bool:
        return self.report


#: The faults by name, each class with its defaults.
FAULTS: Mapping[str, type[Fault]] = {
    f.name: f
    for f in (Empty, NotFound, Error, Retryable, Timeout, Oversized, Malformed, Contradict, Flaky, Slow, RetryInside)
}


def _all() -> tuple[Fault, ...]:
    return tuple(cls() for cls in FAULTS.values())


#: One of every fault, with its defaults, in the order of :data:`FAULTS` (what ``matrix`` runs by default).
ALL: tuple[Fault, ...] = _all()


def by_name(name: str) -> Fault:
    """A fault with its defaults by its name (``"empty"``, ``"not_found"``, ...; ``"slow+empty"`` composes)."""
    parts = [p.strip() for p in name.split("+")]
    unknown = [p for p in parts if p not in FAULTS]
    if unknown or not parts:
        raise ValueError(f"unknown fault {name!r}: choose from {', '.join(FAULTS)} (or join them with +)")
    made = [FAULTS[p]() for p in parts]
    return made[0] if len(made) == 1 else Faults(made)


def _iter_names(faults: Iterable[Fault | str]) -> Iterator[Fault]:
    for f in faults:
        yield by_name(f) if isinstance(f, str) else f


def resolve(faults: Fault | str | Iterable[Fault | str] | None) -> list[Fault]:
    """Faults given as objects or names (``None``: :data:`ALL`), as a list of faults to run one by one."""
    if faults is None:
        return list(ALL)
    if isinstance(faults, (Fault, str)):
        return list(_iter_names([faults]))
    return list(_iter_names(faults))
