"""error_repeat: the same call failing again, or the same error from one tool whatever its arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from looptrap.core.compiled import mypyc_attr
from looptrap.core.policy import ToolPolicy
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector, label, preview

__all__ = ["ErrorRepeat"]

_CAP = 256
_TOOLS = 64
_PER_TOOL = 16
_TARGETS = 4  # distinct targets remembered per error (more than one is all that counts)


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class ErrorRepeat(Detector):
    """Intervene on a call that keeps failing, counted since the last state change:

    * the identical call has failed ``threshold`` times, whatever its error texts said (``non_retryable``
      times when the tool said ``retryable: false``). The user's words do not wash this away: a new message
      makes a repeated lookup legitimate, not a call that already failed the same way;
    * the tool returned the same (normalised) error from different arguments: ``same_error`` times when the
      calls act on the same target (reworded queries, reshaped payloads, another guess at the text to
      replace in one file); when they act on different targets (other files, other buttons, other ids),
      each may fail for its own reason, so a few are exploration: ``same_error_targets`` times while
      nothing else happens (a call that brings something new starts that count over);
      ``same_error_non_retryable`` times for errors the tool marked non-retryable. This is weak evidence:
      it advises and, if it goes on, blocks, but never halts on its own. An error with no message (an empty
      output, a bare exit code) is not "the same error".

    A successful state change (an edit, a write) starts the counts over: re-running a failing test while
    fixing the code is not a loop.
    """

    name: str = field(default="error_repeat", init=False, repr=False, compare=False)
    reason: str = field(default="loop_error", init=False, repr=False, compare=False)
    threshold: int = 3
    same_error: int = 3
    same_error_targets: int = 5
    non_retryable: int = 1
    same_error_non_retryable: int = 2
    warn_only: bool = False

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        if not entry.flags & Flag.ERROR:  # the common case: a success ends the identical call's run of failures
            got = state.slots.get(self.name)
            if got:
                got["calls"].pop(str(entry.digest), None)
                if entry.flags & Flag.NEWS and got["errors"]:
                    _explored(got["errors"])
            return
        slot: dict[str, Any] = state.slots.get(self.name) or {"calls": {}, "errors": {}}
        calls, errors = slot["calls"], slot["errors"]
        key = str(entry.digest)
        hard = 1 if entry.flags & Flag.NON_RETRYABLE else 0
        fails, hard_fails, idx = calls.pop(key, (0, 0, []))
        calls[key] = [fails + 1, hard_fails + hard, [*idx[-5:], entry.call_index]]
        _trim(calls, _CAP)
        if not entry.flags & Flag.EMPTY:  # an error without a message is not "the same error"
            mine = errors.pop(entry.family, None) or {}
            errors[entry.family] = mine  # most recently failing family last
            ekey = str(entry.result)
            count, hard_count, eidx, writes, *rest = mine.pop(ekey, (0, 0, [], 0))
            targets: list[int] = rest[0] if rest else []
            target = entry.target
            if target not in targets and len(targets) < _TARGETS:
                targets = [*targets, target]
            write = 1 if entry.flags & Flag.WRITE_ATTEMPT else 0
            mine[ekey] = [count + 1, hard_count + hard, [*eidx[-5:], entry.call_index], writes | write, targets]
            _trim(mine, _PER_TOOL)
            _trim(errors, _TOOLS)
        state.slots[self.name] = slot

    def user_input(self, state: SessionState) -> None:
        """The user spoke: what the agent explores next answers them (the same-error counts start over), but an
        identical call that already failed is no more likely to work (its count is kept)."""
        slot = state.slots.get(self.name)
        if slot:
            slot["errors"] = {}

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        slot = state.slots.get(self.name)
        if not slot:
            return None
        mine = slot["calls"].get(str(call.digest))
        if mine and (mine[0] >= self.limit(policy) or mine[1] >= self.non_retryable):
            why = "the tool said the error is not retryable" if mine[1] >= self.non_retryable else "nothing changed"
            return self.signal(
                f"This exact call to {call.tool} has already failed {mine[0]} time(s) and {why}, so it will fail "
                f"again. Fix the cause first (different arguments, a prerequisite step), use another tool, or "
                f"report the failure.",
                tool=call.tool,
                evidence=(*mine[2], call.index),
                count=mine[0] + 1,
                loop=call.digest,
            )
        for ekey, (count, hard, idx, writes, *rest) in (slot["errors"].get(call.family or call.tool) or {}).items():
            if call.mutating and not writes:
                continue  # a write after failed reads is the change this signal asks for, not more of the same
            spread = len(rest[0]) > 1 if rest else False  # the failing calls acted on different targets
            need = self.same_error_targets if spread else self.same_error
            if count < need and hard < self.same_error_non_retryable:
                continue
            excerpt = preview(state, int(ekey), "")
            said = f": {excerpt}" if excerpt else ""
            since = "on different targets, with nothing new in between" if spread else "since the last change"
            return self.signal(
                f"{label(call)} has returned the same error {count} times with different arguments {since}{said}. "
                f"Changing the arguments has not helped. Fix the cause, use another tool, or report what is "
                f"failing.",
                tool=call.tool,
                evidence=(*idx, call.index),
                count=count + 1,
                loop=self.loop_key(call.family or call.tool, ekey),
                weak=True,
            )
        return None


def _explored(errors: dict[str, dict[str, Any]]) -> None:
    """Something new came back: errors met on different targets were exploration, and start over."""
    for family in list(errors):
        mine = {k: rec for k, rec in errors[family].items() if len(rec[4] if len(rec) > 4 else ()) <= 1}
        if mine:
            errors[family] = mine
        else:
            del errors[family]


def _trim(m: dict[str, Any], cap: int) -> None:
    while len(m) > cap:
        del m[next(iter(m))]
