"""cycle: a run of stale calls, i.e. a loop of any period (A,B,A,B / A,B,C,A,B,C / a long re-read cycle)."""

from __future__ import annotations

from dataclasses import dataclass, field

from looptrap.core.compiled import mypyc_attr
from looptrap.core.policy import ToolPolicy
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector, preview

__all__ = ["Cycle"]


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class Cycle(Detector):
    """Intervene on a call that continues a cycle of stale calls:

    * a short cycle (period ``2`` to ``short_period``): the call that starts its third pass, once its whole
      second pass was stale (A,B,A,B then A; A,B,C,A,B,C then A);
    * any other run: the call that would be the ``threshold``-th stale call in a row. When the run is not
      one cycle repeated exactly (re-reads of parts already seen, in varying order: a stall that may resume),
      this is weak evidence: it advises and blocks, but never halts on its own.

    A call is stale when the same call already returned the same result since the last state change
    (a successful write, edit, commit, send...). Re-reading a file or re-running tests after an edit is
    therefore never stale; re-running the same greps in the same order without changing anything is.
    """

    name: str = field(default="cycle", init=False, repr=False, compare=False)
    reason: str = field(default="loop_cycle", init=False, repr=False, compare=False)
    threshold: int = 5
    short_period: int = 3
    warn_only: bool = False

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        run = state.stale_run
        if run < 2 or call.digest not in state.seen:
            return None
        n = self.limit(policy)
        history = list(state.history)
        period = _short_cycle(history, run, call.digest, self.short_period)
        exact = True
        if period:
            stale = history[-period:]
        elif run >= n - 1:
            stale = [e for e in history[-(n - 1) :] if e.flags & Flag.STALE]
            period, exact = _period(history, run, call.digest)
        else:
            return None
        names = []
        for e in stale:
            p = preview(state, e.digest, e.tool)
            if p not in names:
                names.append(p)
        shown = "; ".join(names[:6]) + ("; ..." if len(names) > 6 else "")
        shape = f" (a cycle of {period} calls)" if period > 1 else ""
        key = 0
        for d in {e.digest for e in stale} | {call.digest}:
            key ^= d
        return self.signal(
            f"Your last {len(stale)} calls repeated calls you had already made since the last change, and each "
            f"returned exactly what it returned before{shape}: {shown}. Nothing has changed, so repeating them "
            f"will not tell you anything new. Act on what you already have, change something, or try a "
            f"genuinely different approach.",
            tool=call.tool,
            evidence=(*(e.call_index for e in stale), call.index),
            count=len(stale) + 1,
            details={"period": period},
            loop=key,
            weak=not exact,
        )


def _short_cycle(history: list[Entry], run: int, digest: int, longest: int) -> int:
    """The period p (2..longest) of a cycle whose second pass (the last p calls) was stale and that ``digest``
    would go on with (it is the call p back): 0 if there is none."""
    for p in range(2, longest + 1):
        if run < p or len(history) < 2 * p:
            return 0
        tail = history[-2 * p :]
        first = [e.digest for e in tail[:p]]
        if (
            digest == first[0]
            and len(set(first)) == p
            and all(tail[i].digest == tail[i - p].digest for i in range(p, 2 * p))
        ):
            return p
    return 0


def _period(history: list[Entry], stale_run: int, digest: int) -> tuple[int, bool]:
    """The period of the cycle that the run of stale calls and the call ``digest`` go on with, and whether
    there is one: the smallest p such that each of them repeats the call p places before it (a whole pass
    of the cycle repeated exactly). Without one, the number of distinct calls in the run."""
    digests = [e.digest for e in history]
    digests.append(digest)
    run = min(stale_run, len(history)) + 1
    for p in range(1, run + 1):
        if len(digests) >= run + p and all(digests[-k] == digests[-k - p] for k in range(1, run + 1)):
            return p, True
    return len(set(digests[-run:])) or 1, False
