"""drift: the same tool called with reworded arguments that keeps returning nothing new."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from looptrap.core.compiled import mypyc_attr
from looptrap.core.policy import ToolPolicy
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector, preview

__all__ = ["Drift"]

_KEEP = 8


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class Drift(Detector):
    """Intervene on the next call of a tool once ``threshold`` of its calls came back with nothing new
    (empty: "0 results", "not found", ``status: not_found``; or a long result the tool had already returned)
    while *no call of the session* brought anything new: drift is the agent finding nothing new anywhere.
    Any call that brings new content, or a successful state change, starts every count over, so reworded
    searches while new files are being read are exploration, not drift. Short identical answers ("sent",
    "ok", "in stock") are not "nothing new": a batch of distinct work with the same acknowledgement is not
    drift. Mutating calls, polls, results that are not comparable, errors with a message and the same call
    again with the same result (a repeat, a cycle) are left to the other detectors; an error with no message
    (``grep`` finding nothing exits 1 with an empty output) is an empty result. Counted per tool: a shell
    agent switching between ``grep``, ``rg`` and ``find`` for the same missing thing is rewording.
    """

    name: str = field(default="drift", init=False, repr=False, compare=False)
    reason: str = field(default="loop_drift", init=False, repr=False, compare=False)
    threshold: int = 5
    warn_only: bool = False

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        f = entry.flags
        if f & Flag.NEWS:
            state.slots.pop(self.name, None)  # something new came back: the agent is not drifting
            return
        if f & (Flag.MUTATED | Flag.PENDING | Flag.OPAQUE | Flag.STALE) or (f & Flag.ERROR and not f & Flag.EMPTY):
            return  # a write, a poll, an incomparable result, an error with a message is not a search; the same
            # call again with the same result is not rewording (repeat and cycle count those)
        slot: dict[str, Any] = state.slots.setdefault(self.name, {})
        if f & Flag.EMPTY or (f & Flag.LONG and not f & (Flag.NOVEL | Flag.ACK)):
            count, recent = slot.get(entry.tool) or (0, [])
            recent = [*recent[-(_KEEP - 1) :], [entry.call_index, entry.digest, 1 if f & Flag.EMPTY else 0]]
            if entry.tool not in slot and len(slot) >= 256:
                del slot[next(iter(slot))]
            slot[entry.tool] = [count + 1, recent]

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        slot = state.slots.get(self.name)
        if not slot or call.mutating:
            return None
        got = slot.get(call.tool)
        if not got or got[0] < self.limit(policy):
            return None
        count, recent = got
        tried = []
        for _, digest, empty in recent:
            item = f"{preview(state, digest, call.tool)} ({'nothing found' if empty else 'same result as before'})"
            if item not in tried:
                tried.append(item)
        return self.signal(
            f"You have called {call.tool} {count} times with different arguments and none of the calls returned "
            f"anything new. Tried: {'; '.join(tried)}. Rewording the request again is unlikely to help. Use what "
            f"you already found, try a different tool or source, or ask for what is missing.",
            tool=call.tool,
            evidence=(*(r[0] for r in recent), call.index),
            count=count + 1,
            loop=self.loop_key(call.tool),
        )
