"""Turn-level detectors: no_progress (the caller's state does not change) and no_action (turns without a call)."""

from __future__ import annotations

from dataclasses import dataclass, field

from looptrap.core.compiled import mypyc_attr
from looptrap.core.state import SessionState
from looptrap.core.types import Signal
from looptrap.detectors.base import Detector, TurnEnd
from looptrap.reading.signature import digest_text

__all__ = ["NoAction", "NoProgress"]


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class NoProgress(Detector):
    """Intervene when the ``state`` passed to ``end_turn`` has the same fingerprint ``threshold`` turns in a row,
    whatever the tools did. Turns ended without a state are ignored."""

    name: str = field(default="no_progress", init=False, repr=False, compare=False)
    reason: str = field(default="no_progress", init=False, repr=False, compare=False)
    threshold: int = 3
    warn_only: bool = False

    def end_turn(self, turn: TurnEnd, state: SessionState) -> Signal | None:
        if turn.state_digest is None:
            return None
        last = state.slots.get(self.name)
        count = last[1] + 1 if last and last[0] == turn.state_digest else 1
        state.slots[self.name] = [turn.state_digest, count]
        if count < self.threshold:
            return None
        return self.signal(
            f"The task state has not changed for {count} turns in a row: nothing was found, decided or written. "
            f"Doing more of the same will not change it. Step back: take a different approach, or report what "
            f"is blocking you.",
            count=count,
            evidence=(turn.call_index,),
            loop=self.loop_key(turn.state_digest),
        )

    def reset(self, state: SessionState) -> None:
        """The caller's state is the judge of progress here: a write does not reset the count."""


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class NoAction(Detector):
    """Intervene when ``threshold`` turns in a row end without acting: an invalid call (``error``), an empty
    reply, the same words as the last such turn again, or, while the agent runs on its own, any text-only
    turn. A text-only turn that answers or asks the user, with the user's input in between
    (``Guard.user_message``), is not idleness. The ladder climbs only while the stall goes on (no tool call
    in between).

    Idle turns in different words are weak evidence (an agent thinking aloud before it writes the fix): they
    advise, and block if they go on much longer, but never halt. The same reply again and again (the same
    words, the same invalid call, an empty reply each time) is the loop itself and may halt."""

    name: str = field(default="no_action", init=False, repr=False, compare=False)
    reason: str = field(default="no_action", init=False, repr=False, compare=False)
    threshold: int = 3
    warn_only: bool = False

    def end_turn(self, turn: TurnEnd, state: SessionState) -> Signal | None:
        slot = state.slots.get(self.name)
        count, said, heard, same = 0, None, False, 0
        if isinstance(slot, list):
            count, said, heard = slot[:3]
            same = slot[3] if len(slot) > 3 else 0  # saved before the same-reply count was kept
        if turn.tool_calls and turn.error is None:
            count, said, same = 0, None, 0
        else:
            # what the turn said: its words, else its error, else nothing (an empty reply)
            reply = turn.text_digest if turn.text_digest is not None else digest_text(turn.error or "")
            if turn.error is not None or turn.text_digest is None or not heard or reply == said:
                count += 1  # invalid, empty, on its own, or the same words again
                same = same + 1 if reply == said else 1
            else:
                count, same = 0, 0  # a reply to what the user said
            said = reply
        state.slots[self.name] = [count, said, False, same]
        if count < self.threshold:
            return None
        why = f" ({turn.error})" if turn.error else ""
        repeated = same >= self.threshold  # the last turns all said the same: the loop the advice names
        return self.signal(
            f"Your last {count} turns ended without a valid tool call{why}. Either make one well-formed tool "
            f"call, or give your final answer.",
            count=count,
            evidence=(turn.call_index,),
            # one stall is one loop: the same words after tool calls in between are another stall
            loop=self.loop_key("same" if repeated else "stall", said if repeated else "", turn.call_index),
            weak=not repeated,
        )

    def reset(self, state: SessionState) -> None:
        """Turn-level: a write does not reset the count."""

    def user_input(self, state: SessionState) -> None:
        """The user spoke: the next text-only turn answers them (unless it says the same words again)."""
        slot = state.slots.get(self.name)
        if isinstance(slot, list):
            slot[2] = True
        else:
            state.slots[self.name] = [0, None, True, 0]
