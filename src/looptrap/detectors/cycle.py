"""cycle: a run of stale calls, i.e. a loop of any period (A,B,A,B / A,B,C,A,B,C / a long re-read cycle)."""

from __future__ import annotations

from dataclasses import dataclass

from looptrap.core.config import ToolPolicy
from looptrap.core.state import Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector, preview

__all__ = ["Cycle"]


@dataclass(frozen=True, slots=True, repr=False)
class Cycle(Detector):
    """Intervene when a call would be the ``threshold``-th stale call in a row.

    A call is stale when the same call already returned the same result since the last state change
    (a successful write, edit, commit, send...). Re-reading a file or re-running tests after an edit is
    therefore never stale; re-running the same greps in the same order without changing anything is.
    """

    name = "cycle"
    reason = "loop_cycle"
    threshold: int = 5
    warn_only: bool = False

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        n = self.limit(policy)
        if state.stale_run < n - 1 or call.digest not in state.seen:
            return None
        stale = [e for e in list(state.history)[-(n - 1) :] if e.flags & Flag.STALE]
        period = _period(state)
        names = []
        for e in stale:
            p = preview(state, e.digest, e.tool)
            if p not in names:
                names.append(p)
        shown = "; ".join(names[:6]) + ("; ..." if len(names) > 6 else "")
        shape = f" (a cycle of {period} calls)" if period > 1 else ""
        return self.signal(
            f"Your last {n - 1} calls repeated calls you had already made since the last change, and each "
            f"returned exactly what it returned before{shape}: {shown}. Nothing has changed, so repeating them "
            f"will not tell you anything new. Act on what you already have, change something, or try a "
            f"genuinely different approach.",
            tool=call.tool,
            evidence=(*(e.call_index for e in stale), call.index),
            count=n,
            details={"period": period},
        )


def _period(state: SessionState) -> int:
    """The smallest period that explains the recent history of call digests (1 if none does)."""
    digests = [e.digest for e in state.history]
    run = min(state.stale_run, len(digests))
    tail = digests[-run:] if run else []
    for p in range(1, len(tail) // 2 + 1):
        if all(tail[i] == tail[i - p] for i in range(p, len(tail))):
            return p
    return len(set(tail)) or 1
