"""rate: calls arriving faster than an agent can think, that also repeat or bring nothing new."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from looptrap.core.compiled import mypyc_attr
from looptrap.core.policy import ToolPolicy
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector

__all__ = ["Rate"]


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class Rate(Detector):
    """Speed is evidence, not a verdict: when a call would make the last ``threshold`` calls arrive faster
    than ``max_per_second`` on average, the signal intervenes only if at least ``fruitless_share`` of them
    came back with nothing (they failed, came back empty, or returned what the same call had already
    returned, or a long result the tool had already given): a retry storm, a code loop around a tool that
    stopped working. Fast calls that bring something new (a program paging through results, a batch job
    with short answers) get a warning at most.

    Only sequential calls count: a call that arrives while others are still running (parallel tool calls of
    one model turn) is part of a batch, not a loop. The default (30 sequential calls at more than 10 per
    second) is far above what a model thinking between calls produces and far below what a code loop
    produces. The signal carries the interval figures. Needs timestamps (the guard's clock, or ``ts`` in a
    trace); silent without them.
    """

    name: str = field(default="rate", init=False, repr=False, compare=False)
    reason: str = field(default="rate", init=False, repr=False, compare=False)
    threshold: int = 30
    max_per_second: float = 10.0
    fruitless_share: float = 0.5
    warn_only: bool = False

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        if now is None or entry.flags & Flag.BATCHED:
            return
        slot: list[list[float]] = state.slots.setdefault(self.name, [])
        if slot and type(slot[0]) is not list:  # saved by a version that kept times only
            slot.clear()
        f = entry.flags
        fruitless = f & (Flag.ERROR | Flag.EMPTY | Flag.STALE) or (f & Flag.LONG and not f & (Flag.NOVEL | Flag.OPAQUE))
        slot.append([now, 1.0 if fruitless and not f & Flag.MUTATED else 0.0])
        if len(slot) > self.threshold:
            del slot[: len(slot) - self.threshold]

    def reset(self, state: SessionState) -> None:
        """Time does not start over after a write: a loop of fast writes is still a loop."""

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        slot = state.slots.get(self.name)
        if call.at is None or call.batched or not slot or type(slot[0]) is not list:
            return None
        n = self.limit(policy)
        if len(slot) < n - 1:
            return None
        span = call.at - slot[len(slot) - (n - 1) if n > 1 else 1 - n][0]  # the first of slot[-(n - 1):]
        if span * self.max_per_second >= n - 1:
            return None  # the common case: not fast (decided before the window is copied)
        recent = slot[-(n - 1) :]
        window = [*(t for t, _ in recent), call.at]
        gaps = [b - a for a, b in itertools.pairwise(window)]
        fruitless = int(sum(f for _, f in recent))
        stats = {
            "calls": n,
            "span_s": round(span, 6),
            "rate_per_s": round((n - 1) / span, 3) if span > 0 else None,
            "interval_mean_s": round(sum(gaps) / len(gaps), 6),
            "interval_median_s": round(_median(gaps), 6),
            "interval_min_s": round(min(gaps), 6),
            "interval_max_s": round(max(gaps), 6),
            "fruitless": fruitless,
        }
        looping = fruitless >= self.fruitless_share * len(recent)
        if looping:
            said = f"and {fruitless} of the last {len(recent)} brought nothing new"
            advice = "This looks like a retry loop in code. Stop and check why the calls repeat."
        else:
            said = "each bringing something new"
            advice = "A program is calling tools; if that is not intended, check why."
        return self.signal(
            f"The last {n} tool calls arrived within {span:.3f} s (median interval "
            f"{stats['interval_median_s']:.4f} s), faster than a reasoning agent calls tools, {said}. {advice}",
            tool=call.tool,
            count=n,
            details=stats,
            loop=self.loop_key(),
            warn_only=not looping,
        )


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
