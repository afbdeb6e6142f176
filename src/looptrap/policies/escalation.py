"""Escalation: how signals become actions. The first signal of a loop advises; if the loop goes on, the next
intervention blocks; if it still goes on, the run halts. Budgets halt at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from looptrap.core.state import LOOPS, Flag
from looptrap.core.types import ALLOW, Action, Signal, Verdict
from looptrap.reading.signature import digest_text

if TYPE_CHECKING:
    from looptrap.core.state import SessionState

__all__ = ["WARN", "Escalation", "summarize"]


WARN = -1  # the rung of a warning: weak evidence between its advice and its block


@dataclass(frozen=True)
class Escalation:
    """How signals become actions: ``ladder`` holds the actions for the 1st, 2nd, 3rd... intervention of one
    loop going on (the last one repeats).

    The ladder follows the loop, not the count of signals (docs/escalation.md):

    * it climbs one rung when the loop goes on: nothing new came back since the last intervention, or the
      signal is about the very loop already intervened on (the same call, the same failing command, the
      same file flipped back), whatever came back in between;
    * a halt needs a loop that survived its advice: a signal reaches the halt only when its own loop (the
      same loop key) was intervened on as many times as there are rungs below the halt, the last of them
      the rung just below it (advised, then blocked); otherwise it gets that rung;
    * weak evidence (``Signal.weak``) advises, then warns for its next ``patience`` signals (the calls run),
      then blocks; it never halts;
    * a signal about another loop after new work starts again at the first rung;
    * ``cooldown`` calls that bring something new (new results, successful state changes) since the last
      intervention end the loop: the next signal, whatever it is about, starts at the first rung;
    * every call of one model step (the calls of one model turn or message) gets the same rung, so the
      block comes no earlier than the next step (a step that only warned so far takes the rung of its
      first strong signal).

    ``warn_only=True`` turns every loop intervention into a warning (budgets still halt).
    """

    ladder: tuple[Action, ...] = ("advise", "block", "halt")
    cooldown: int = 3
    warn_only: bool = False
    patience: int = 3

    def __post_init__(self) -> None:
        if not self.ladder or any(a not in ("warn", "advise", "block", "halt") for a in self.ladder):
            raise ValueError(f"ladder must be a non-empty sequence of warn/advise/block/halt, got {self.ladder}")
        if self.cooldown < 1:
            raise ValueError(f"cooldown must be at least 1, got {self.cooldown}")
        if self.patience < 0:
            raise ValueError(f"patience must be at least 0, got {self.patience}")

    def decide(self, state: SessionState, signals: list[Signal], call_index: int, report_tool: str | None) -> Verdict:
        """Turn a call's (or a turn end's) signals into one verdict, updating the ladder's state."""
        if not signals:
            return ALLOW
        hard = [s for s in signals if not s.warn_only]
        budget = next((s for s in hard if s.kind == "budget"), None)
        if budget is not None:
            action: Action = "halt"
            primary = budget
        elif hard and not self.warn_only:
            primary = next((s for s in hard if not s.weak), hard[0])  # strong evidence decides first
            rung = self.rung(state, primary)
            action = "warn" if rung == WARN else self.ladder[rung]
        else:
            primary = signals[0]
            action = "warn"
        summary = summarize(state, primary.evidence) if action != "warn" else ""
        message = _compose(action, primary, summary, report_tool)
        verdict = Verdict(
            action=action,
            kind=primary.kind,
            reason=primary.reason,
            message=message,
            summary=summary,
            signals=tuple(signals),
            call_index=call_index,
        )
        if action == "halt":
            state.halted = {"reason": primary.reason, "kind": primary.kind, "message": message, "summary": summary}
        return verdict

    def rung(self, state: SessionState, signal: Signal) -> int:
        """The ladder index for an intervention on ``signal``'s loop now (``WARN``: a warning), with the
        ladder's state updated to it."""
        key = signal.loop or _anonymous_key(signal)
        loops = state.loops
        if state.rung_step == state.step and (state.rung != WARN or signal.weak):
            _mark(loops, key, state.rung)  # another call of the same model step: the same rung, no climbing
            state.clean = 0
            return state.rung
        if not (state.level and (state.clean == 0 or key in loops)):  # no loop yet, or another after new work
            state.level = 0
            loops.clear()
        mark = loops.get(key)
        if signal.weak:
            rung = self._weak_rung(mark[0] if mark else 0)
        else:
            rung = min(state.level, len(self.ladder) - 1)
            given, best = mark if mark else (0, WARN)
            while rung > 0 and self.ladder[rung] == "halt" and (best < rung - 1 or given < rung):
                rung -= 1  # a halt needs this very loop to have gone through every rung below it already
        if rung != WARN:
            state.level += 1
        _mark(loops, key, rung)
        state.clean = 0
        state.rung_step = state.step
        state.rung = rung
        return rung

    def _weak_rung(self, given: int) -> int:
        """Weak evidence on a loop given ``given`` interventions already: its advice, then ``patience``
        warnings, then the next rung, up to the last one below a halt (where it stays)."""
        cap = next((i for i, a in enumerate(self.ladder) if a == "halt"), len(self.ladder)) - 1
        if cap < 0:
            return WARN  # a ladder that only halts: weak evidence warns
        stage, rest = divmod(given, self.patience + 1)
        if stage >= cap:
            return cap
        return stage if rest == 0 else WARN

    def after_call(self, state: SessionState, news: bool) -> None:
        """After a call ran: a call of a later step that brought something new counts towards ``cooldown``."""
        if not state.level or not news or state.step == state.rung_step:
            return  # a call of the intervened step was asked for before the model read the intervention
        state.clean += 1
        if state.clean >= self.cooldown:
            state.level = 0
            state.clean = 0
            state.loops.clear()


def _anonymous_key(signal: Signal) -> int:
    """The loop key of a signal that names none: its detector on its tool."""
    return digest_text(f"{signal.kind}\x00{signal.tool or ''}")


def _mark(loops: dict[int, list[int]], key: int, rung: int) -> None:
    """One more intervention on ``key``, and the highest rung it got."""
    mark = loops.pop(key, None)  # re-inserted last: the oldest loop is evicted first
    loops[key] = [mark[0] + 1, max(mark[1], rung)] if mark else [1, rung]
    while len(loops) > LOOPS:
        del loops[next(iter(loops))]


def _compose(action: Action, s: Signal, summary: str, report_tool: str | None) -> str:
    way_out = (
        f" If you cannot get what you need, call {report_tool} with what you tried and what you need: that is a "
        f"correct outcome, not a failure."
        if report_tool
        else " If you cannot get what you need, say so in your answer."
    )
    if s.kind == "budget":
        return f"{s.message} The run is stopped. Give your best answer from what you have."
    if action == "advise":
        return f"{s.message}{way_out}"
    if action == "block":
        return f"Blocked: this call was not run. You were already told this is a loop. {s.message}{way_out}"
    if action == "halt":
        tried = f" {summary}." if summary else ""
        return (
            f"Halted ({s.reason}): the loop went on after advice and a block, so the run is stopped.{tried} "
            f"Do not call more tools; report what you found and what is missing."
        )
    return s.message


def summarize(state: SessionState, evidence: tuple[int, ...]) -> str:
    """ "tried: A (nothing found), B (error), ..." for the distinct calls behind a signal: each call once,
    with what it came back with (every distinct outcome, in order)."""
    wanted = set(evidence)
    calls: dict[int, tuple[str, list[str]]] = {}
    outcomes: set[str] = set()
    for e in state.history:
        if e.call_index not in wanted:
            continue
        if e.flags & Flag.ERROR:
            what = "error"
        elif e.flags & Flag.EMPTY:
            what = "nothing found"
        elif e.flags & Flag.STALE or not e.flags & Flag.NOVEL:
            what = "same result as before"
        else:
            what = "new result"
        outcomes.add(what)
        whats = calls.setdefault(e.digest, (state.previews.get(e.digest) or e.tool, []))[1]
        if what not in whats:
            whats.append(what)
    if not calls:
        return ""
    items = [f"{name} ({', '.join(whats)})" for name, whats in calls.values()]
    tail = ""
    if len(outcomes) == 1:
        tail = {
            "error": "; all failed",
            "nothing found": "; all returned nothing",
            "same result as before": "; nothing new came back",
        }.get(next(iter(outcomes)), "")
    shown = items[:8] + ([f"... {len(items) - 8} more"] if len(items) > 8 else [])
    return "tried: " + ", ".join(shown) + tail
