"""Escalation: how signals become actions. The first signal of a loop advises; if the loop goes on, the next
call is blocked; if it still goes on, the run halts. Budgets halt at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from looptrap.core.state import Flag
from looptrap.core.types import ALLOW, Action, Signal, Verdict

if TYPE_CHECKING:
    from looptrap.core.state import SessionState

__all__ = ["Escalation", "summarize"]


@dataclass(frozen=True)
class Escalation:
    """``ladder``: the actions taken for the 1st, 2nd, 3rd... consecutive loop signal (the last one repeats).
    ``cooldown``: clean calls in a row (new results, or a successful state change) that end the loop and
    bring the next signal back to the first rung. ``warn_only=True`` turns every loop intervention into a
    warning (budgets still halt)."""

    ladder: tuple[Action, ...] = ("advise", "block", "halt")
    cooldown: int = 3
    warn_only: bool = False

    def __post_init__(self) -> None:
        if not self.ladder or any(a not in ("warn", "advise", "block", "halt") for a in self.ladder):
            raise ValueError(f"ladder must be a non-empty sequence of warn/advise/block/halt, got {self.ladder}")

    def decide(self, state: SessionState, signals: list[Signal], call_index: int, report_tool: str | None) -> Verdict:
        """Turn a call's (or a turn end's) signals into one verdict, updating the escalation level."""
        if not signals:
            return ALLOW
        hard = [s for s in signals if not s.warn_only]
        budget = next((s for s in hard if s.kind == "budget"), None)
        if budget is not None:
            action: Action = "halt"
            primary = budget
        elif hard and not self.warn_only:
            primary = hard[0]
            action = self.ladder[min(state.level, len(self.ladder) - 1)]
            state.level += 1
            state.clean = 0
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

    def after_call(self, state: SessionState, clean: bool) -> None:
        """After a call ran: ``cooldown`` clean calls in a row end the loop; any other call restarts the count."""
        if not state.level:
            return
        if not clean:
            state.clean = 0
            return
        state.clean += 1
        if state.clean >= self.cooldown:
            state.level = 0
            state.clean = 0


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
    """ "tried: A (nothing found), B (error), ..." for the distinct calls behind a signal."""
    wanted = set(evidence)
    items: list[str] = []
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
        text = f"{state.previews.get(e.digest) or e.tool} ({what})"
        if text not in items:
            items.append(text)
    if not items:
        return ""
    tail = ""
    if len(outcomes) == 1:
        tail = {
            "error": "; all failed",
            "nothing found": "; all returned nothing",
            "same result as before": "; nothing new came back",
        }.get(next(iter(outcomes)), "")
    shown = items[:8] + ([f"... {len(items) - 8} more"] if len(items) > 8 else [])
    return "tried: " + ", ".join(shown) + tail
