"""rate: calls arriving faster than an agent can think (machine-speed loops, retry storms)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from looptrap.core.config import ToolPolicy
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector

__all__ = ["Rate"]


@dataclass(frozen=True, slots=True, repr=False)
class Rate(Detector):
    """Intervene when a call would make the last ``threshold`` calls arrive faster than ``max_per_second`` on average.

    Only sequential calls count: a call that arrives while others are still running (parallel tool calls of
    one model turn) is part of a batch, not a loop. The default (30 sequential calls at more than 10 per
    second) is far above what a model thinking between calls produces and far below what a code loop
    produces. Needs timestamps (the guard's clock, or ``ts`` in a trace); silent without them.
    """

    name = "rate"
    reason = "rate"
    threshold: int = 30
    max_per_second: float = 10.0
    warn_only: bool = False

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        if now is None or entry.flags & Flag.BATCHED:
            return
        times: list[float] = state.slots.setdefault(self.name, [])
        times.append(now)
        if len(times) > self.threshold:
            del times[: len(times) - self.threshold]

    def reset(self, state: SessionState) -> None:
        """Time does not start over after a write: a loop of fast writes is still a loop."""

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        times = state.slots.get(self.name)
        n = self.limit(policy)
        if call.at is None or call.batched or not times or len(times) < n - 1:
            return None
        window = [*times[-(n - 1) :], call.at]
        span = window[-1] - window[0]
        if span * self.max_per_second >= n - 1:
            return None
        gaps = [b - a for a, b in itertools.pairwise(window)]
        stats = {
            "calls": n,
            "span_s": round(span, 6),
            "rate_per_s": round((n - 1) / span, 3) if span > 0 else None,
            "interval_mean_s": round(sum(gaps) / len(gaps), 6),
            "interval_median_s": round(_median(gaps), 6),
            "interval_min_s": round(min(gaps), 6),
            "interval_max_s": round(max(gaps), 6),
        }
        return self.signal(
            f"The last {n} tool calls arrived within {span:.3f} s (median interval "
            f"{stats['interval_median_s']:.4f} s): faster than a reasoning agent calls tools. This looks like a "
            f"retry loop in code. Stop and check why the calls repeat.",
            tool=call.tool,
            count=n,
            details=stats,
        )


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
