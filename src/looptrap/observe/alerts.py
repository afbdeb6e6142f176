"""Alert rules: the practitioners' early warnings, as detectors whose signals only warn.

A loop that no detector stops must at least be seen. Each rule is a small detector whose signals have
kind ``alert`` (the reason names the rule); they reach ``warn`` verdicts, logs, observers (callbacks,
metrics) like any signal, and never advise, block or halt unless the rule is built with
``warn_only=False`` (then it climbs the escalation ladder as any detector does). With an intervention of
another detector on the same call, the alert rides along in ``verdict.signals`` and changes nothing.

The defaults: more than 50 tool calls in a session (:class:`CallsPerSession`), more than half of the last
10 calls repeating an earlier one (:class:`RepeatShare`), more than 3 times the expected duration
(:class:`Overtime`, on once ``expected_seconds`` is set) and 5 steps in a row that brought nothing new
(:class:`NothingNew`). Turn them on with ``GuardConfig(detectors=(*default_detectors(), *default_alerts()))``
or an ``[alerts]`` table in the configuration file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector

if TYPE_CHECKING:
    from looptrap.core.policy import ToolPolicy
    from looptrap.core.state import Entry, SessionState

__all__ = ["ALERT", "CallsPerSession", "NothingNew", "Overtime", "RepeatShare", "default_alerts", "is_alert"]

ALERT = "alert"  #: the kind of every alert signal


class _Alert(Detector):
    """What the rules share: signals of kind ``alert``, memory that survives state changes and the user's words."""

    def alert(self, message: str, call: Call, count: int, details: dict[str, Any]) -> Signal:
        return Signal(
            kind=ALERT,
            reason=self.name,
            message=message,
            tool=call.tool,
            evidence=(call.index,),
            count=count,
            warn_only=self.warn_only,
            details=details,
            loop=self.loop_key(),
        )

    def reset(self, state: SessionState) -> None:
        """A state change does not make a long session short: the rule's memory stays."""

    def user_input(self, state: SessionState) -> None:
        """Nor does the user's input."""


@dataclass(frozen=True, slots=True, repr=False)
class CallsPerSession(_Alert):
    """Alert when the session's tool calls pass ``threshold``, then again each time the count doubles."""

    name = "calls_per_session"
    reason = "calls_per_session"
    threshold: int = 50
    warn_only: bool = True

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        due = state.slots.get(self.name) or self.limit(policy) + 1
        if state.calls < due:
            return None
        state.slots[self.name] = state.calls * 2
        return self.alert(
            f"This session has made {state.calls} tool calls (alert at more than {self.threshold}).",
            call,
            state.calls,
            {"calls": state.calls, "threshold": self.threshold},
        )


@dataclass(frozen=True, slots=True, repr=False)
class RepeatShare(_Alert):
    """Alert when more than ``share`` of the last ``window`` calls (this one included) repeat an earlier call of
    the window (the same signature); once per stretch: the rule re-arms when the share falls back."""

    name = "repeat_share"
    reason = "repeat_share"
    threshold: int = 10  # the window: how many recent calls are looked at
    share: float = 0.5
    warn_only: bool = True

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        window = self.limit(policy)
        recent = [e.digest for e in list(state.history)[-(window - 1) :]] if window > 1 else []
        recent.append(call.digest)
        if len(recent) < window:
            return None
        repeats = len(recent) - len(set(recent))
        over = repeats > self.share * window
        armed = not state.slots.get(self.name)
        if not over:
            if not armed:
                state.slots[self.name] = 0
            return None
        if not armed:
            return None
        state.slots[self.name] = 1
        return self.alert(
            f"{repeats} of the last {window} tool calls repeat an earlier one (alert above {self.share:.0%}).",
            call,
            repeats,
            {"repeats": repeats, "window": window, "share": self.share},
        )


@dataclass(frozen=True, slots=True, repr=False)
class Overtime(_Alert):
    """Alert once when the session runs more than ``factor`` times ``expected_seconds`` (off while
    ``expected_seconds`` is 0; needs the guard's clock)."""

    name = "overtime"
    reason = "overtime"
    expected_seconds: float = 0.0
    factor: float = 3.0
    warn_only: bool = True

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        if self.expected_seconds <= 0 or call.at is None or state.started is None or state.slots.get(self.name):
            return None
        elapsed = call.at - state.started
        if elapsed <= self.factor * self.expected_seconds:
            return None
        state.slots[self.name] = 1
        return self.alert(
            f"This session has run {elapsed:.0f} s, more than {self.factor:g} times the expected "
            f"{self.expected_seconds:g} s.",
            call,
            state.calls,
            {"seconds": round(elapsed, 3), "expected_seconds": self.expected_seconds, "factor": self.factor},
        )


@dataclass(frozen=True, slots=True, repr=False)
class NothingNew(_Alert):
    """Alert when ``threshold`` model steps in a row brought nothing new (no new result, no state change); once
    per stretch."""

    name = "nothing_new"
    reason = "nothing_new"
    threshold: int = 5
    warn_only: bool = True

    # slot: [the step last seen, whether it brought news, stale steps in a row before it, alerted]
    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        from looptrap.core.state import Flag

        slot = state.slots.get(self.name) or [state.step, False, 0, False]
        if slot[0] != state.step:  # the previous step is complete
            slot = [state.step, False, 0 if slot[1] else slot[2] + 1, slot[3]]
        if entry.flags & Flag.NEWS:
            slot = [state.step, True, 0, False]
        state.slots[self.name] = slot

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        slot = state.slots.get(self.name)
        if not slot or slot[3]:
            return None
        stale = slot[2] + (1 if slot[0] != state.step and not slot[1] else 0)
        if stale < self.limit(policy):
            return None
        slot[3] = True
        return self.alert(
            f"{stale} steps in a row brought nothing new.", call, stale, {"steps": stale, "threshold": self.threshold}
        )


def default_alerts(
    *,
    calls: int = 50,
    repeat_window: int = 10,
    repeat_share: float = 0.5,
    expected_seconds: float = 0.0,
    overtime_factor: float = 3.0,
    stale_steps: int = 5,
    warn_only: bool = True,
) -> tuple[Detector, ...]:
    """The four alert rules with the given settings (``expected_seconds=0``: no duration alert)."""
    for name, value in (("calls", calls), ("repeat_window", repeat_window), ("stale_steps", stale_steps)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if not 0 < repeat_share < 1:
        raise ValueError(f"repeat_share must be a fraction between 0 and 1, got {repeat_share}")
    if expected_seconds < 0 or overtime_factor <= 0:
        raise ValueError("expected_seconds must be 0 or more and overtime_factor above 0")
    return (
        CallsPerSession(threshold=calls, warn_only=warn_only),
        RepeatShare(threshold=repeat_window, share=repeat_share, warn_only=warn_only),
        Overtime(expected_seconds=expected_seconds, factor=overtime_factor, warn_only=warn_only),
        NothingNew(threshold=stale_steps, warn_only=warn_only),
    )


ALERT_NAMES: Sequence[str] = ("calls_per_session", "repeat_share", "overtime", "nothing_new")


def is_alert(detector: Detector) -> bool:
    """Whether a detector is one of the alert rules."""
    return isinstance(detector, _Alert)
