"""edit_loop: edits that go in circles, by undoing each other or by never changing how a check fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from looptrap.core.compiled import mypyc_attr
from looptrap.core.policy import ToolPolicy
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector, preview
from looptrap.reading.edits import RETURN, predict_edit

__all__ = ["EditLoop"]

_CHECKS = 16  # failing checks followed per task
_EVIDENCE = 6


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class EditLoop(Detector):
    """Intervene on an edit that continues an edit loop:

    * **flip-flop**: the edit would bring a file back to a content it already had in this task, after a
      visit that brought nothing new (the calls since the last change gave only what they had given before
      in this same state of the files), for the ``threshold``-th time: the agent undoes its own edit, redoes
      it, undoes it again, re-running the same test or re-reading the same lines in between. Toggling a fix
      to run a different test each time learns something at each visit and is not counted; what a file
      holds is known from the edits' arguments (see :mod:`looptrap.reading.edits`);
    * **same failure**: the same check (the identical command) failed with the same error after each of the
      last ``same_failure`` edit-then-check rounds in a row: the edits do not touch what fails. A round whose
      failure changes, or a check that passes, starts the count over. The edit that would start the next
      round is intercepted, once per round: after the advice the agent may edit again, and only another
      round with the same failure continues the loop.

    A write of what a file already holds is no state change at all (it starts no epoch).
    """

    name: str = field(default="edit_loop", init=False, repr=False, compare=False)
    reason: str = field(default="loop_edit", init=False, repr=False, compare=False)
    threshold: int = 2
    same_failure: int = 4
    warn_only: bool = False

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        f = entry.flags
        if f & (Flag.WRITE_ATTEMPT | Flag.PENDING | Flag.OPAQUE):
            return  # edits are what the rounds are made of; a check is a call that reads or runs something
        slot: dict[str, Any] | None = state.slots.get(self.name)
        if not f & Flag.ERROR:
            if slot:
                slot.pop(str(entry.digest), None)  # the check passed
            return
        key = str(entry.digest)
        if slot is None:
            slot = state.slots[self.name] = {}
        rec = slot.pop(key, None)
        # an edit since this check last ran (or, the first time, since the task began): this run ends a round
        edited = rec[2] != state.epoch if rec is not None else state.visit[0] != 0
        if rec is not None and rec[0] == entry.result:
            rounds = rec[1] + 1 if edited else rec[1]
            advised, evidence = rec[3], [*rec[4][-(_EVIDENCE - 1) :], entry.call_index]
        else:  # a first failure, or another one: a round if an edit came before it
            rounds, advised, evidence = (1 if edited else 0), 0, [entry.call_index]
        slot[key] = [entry.result, rounds, state.epoch, advised, evidence, entry.family]
        while len(slot) > _CHECKS:
            del slot[next(iter(slot))]

    def reset(self, state: SessionState) -> None:
        """A successful edit is what a round is made of: the rounds are kept."""

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        if not call.mutating:
            return None
        if call.edit is not None:
            outcome, returns, fruitless = predict_edit(state, call.edit)
            n = self.limit(policy)
            if outcome == RETURN and fruitless and returns + 1 >= n:
                return self.signal(
                    f"This edit would bring the file back to a content it already had, for the {returns + 1}"
                    f"{_nth(returns + 1)} time in this task, and what you checked since the last edit only "
                    f"gave what it gave before in this same state: you are undoing and redoing the same "
                    f"changes. Going back and forth will not get further. Stop editing; re-read the failure "
                    f"and the code, decide what the change has to achieve, then make one change that does "
                    f"it, or report what is blocking you.",
                    tool=call.tool,
                    evidence=(call.index,),
                    count=returns + 1,
                    details={"shape": "flip_flop", "returns": returns + 1},
                    loop=self.loop_key("file", call.edit[0]),
                )
        slot = state.slots.get(self.name)
        if not slot:
            return None
        for key, rec in slot.items():
            result, rounds, epoch, advised, evidence, family = rec
            if rounds >= self.same_failure and epoch == state.epoch and advised < rounds:
                rec[3] = rounds  # once per round: the agent may act on the advice and edit again
                digest = int(key)
                shown = preview(state, digest, family)
                excerpt = preview(state, result, "")
                said = f": {excerpt}" if excerpt else ""
                return self.signal(
                    f"Your last {rounds} edits did not change how {shown} fails: after each of them it failed "
                    f"with the same error{said}. Editing again in the same way is unlikely to help. Re-read "
                    f"the failure and the code it comes from, try a different approach, or report what is "
                    f"blocking you.",
                    tool=call.tool,
                    evidence=(*evidence, call.index),
                    count=rounds,
                    details={"shape": "same_failure", "rounds": rounds, "check": _label(family)},
                    loop=self.loop_key("check", key, result),
                )
        return None


def _label(family: str) -> str:
    """``bash (pytest)`` for a shell family, the tool otherwise."""
    tool, _, program = family.partition(":")
    return f"{tool} ({program})" if program else tool


def _nth(n: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(n if n < 20 else n % 10, "th")
