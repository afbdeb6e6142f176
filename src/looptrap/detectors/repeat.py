"""repeat: the same call returning the same result, again and again."""

from __future__ import annotations

from dataclasses import dataclass, field

from looptrap.core.compiled import mypyc_attr
from looptrap.core.policy import ToolPolicy
from looptrap.core.state import Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector

__all__ = ["Repeat"]


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class Repeat(Detector):
    """Intervene on the ``threshold``-th identical call in a row when its predecessors all returned the same result.

    Results that change (polling with progress) reset the count. A result that says the work is still
    going (``pending``, ``running``, ``status: in_progress``) uses ``pending_threshold`` instead, so polling
    that ends is left alone; a result the tool marked ``retryable: false`` uses ``non_retryable_threshold``
    (the first identical retry is intercepted). Calls before the user last spoke do not count: a lookup
    repeated because the user asked again is an answer. Failures do count across the user's words: an
    identical call that already failed the same way twice will fail again, whatever was said in between.
    """

    name: str = field(default="repeat", init=False, repr=False, compare=False)
    reason: str = field(default="loop_repeat", init=False, repr=False, compare=False)
    threshold: int = 3
    pending_threshold: int = 12
    non_retryable_threshold: int = 2
    warn_only: bool = False

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        h = state.history
        if not h:
            return None
        last = h[-1]
        if last.digest != call.digest:
            return None
        n = self.limit(policy)
        if last.flags & Flag.PENDING:
            n = max(n, self.pending_threshold)
        elif last.flags & Flag.NON_RETRYABLE:
            n = min(n, self.non_retryable_threshold)
        need = n - 1
        if len(h) < need or need < 1:
            return None
        evidence = []
        # a lookup repeated because the user spoke is an answer; a call that failed the same way is not
        heard = -1 if last.flags & Flag.ERROR else state.heard
        for i in range(1, need + 1):
            e = h[-i]
            if e.digest != call.digest or e.result != last.result or e.call_index <= heard:
                return None  # another call, another result, or the user spoke in between
            evidence.append(e.call_index)
        evidence.reverse()
        if last.flags & Flag.NON_RETRYABLE and need == 1:
            text = (
                f"{call.tool} already answered this exact call and said that retrying will not help, so calling it "
                f"again returns the same. Use different arguments or a different tool."
            )
        else:
            what = "failed with the same error" if last.flags & Flag.ERROR else "returned the same result"
            text = (
                f"You have called {call.tool} with these exact arguments {n} times in a row; the previous {need} "
                f"{what}. It will not change. Use different arguments or a different tool."
            )
        return self.signal(
            text,
            tool=call.tool,
            evidence=(*evidence, call.index),
            count=n,
            loop=call.digest,
        )
