"""The detector interface: one small object per loop shape, with no memory of its own.

A detector reads the configuration (its own fields, the tool's policy) and the session state, and returns
signals. What it must remember between calls lives in ``state.slots[detector.name]`` as plain data, so a
state saved by one process can be loaded and continued by another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from looptrap.core.types import Call, Signal
from looptrap.reading.signature import digest_text

if TYPE_CHECKING:
    from looptrap.core.policy import ToolPolicy
    from looptrap.core.state import Entry, SessionState

__all__ = ["Detector", "TurnEnd"]


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """What the guard knows about a model turn when it ends."""

    tool_calls: int
    state_digest: int | None = None
    text_digest: int | None = None
    error: str | None = None
    call_index: int = 0


class Detector:
    """Base class: override ``check`` (before a call), ``observe`` (after it ran), ``end_turn`` and/or ``text``
    (the model's words); ``reset`` and ``user_input`` say what a state change and the user's words make moot.

    ``threshold`` is the detector's main number (documented per detector); a tool's policy may override it
    with ``ToolPolicy(limits={name: n})``. ``warn_only=True`` turns the detector's interventions into warnings.
    """

    # Set them as class attributes (``name = "my_detector"``). The built-in detectors declare them as dataclass
    # fields with ``init=False`` instead: compiled (setup.py), mypyc would count a ClassVar as a field.
    name: str = "detector"
    reason: str = "loop"
    threshold: int = 0
    warn_only: bool = False

    def limit(self, policy: ToolPolicy | None) -> int:
        """This detector's threshold for a tool (its policy's override, or the default)."""
        if policy is not None and policy.limits:
            return int(policy.limits.get(self.name, self.threshold))
        return self.threshold

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        """Before ``call`` runs: does running it continue a loop?"""
        return None

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        """After a call ran: update ``state.slots[self.name]`` (only this detector's slot)."""

    def end_turn(self, turn: TurnEnd, state: SessionState) -> Signal | None:
        """At the end of a model turn."""
        return None

    def text(self, chunk: str, state: SessionState, call_index: int, *, final: bool = False) -> Signal | None:
        """More of the model's own text (a streamed chunk; ``final``: the turn's text is complete)."""
        return None

    def reset(self, state: SessionState) -> None:
        """A state change (successful mutating call): forget what no longer holds. Default: clear the slot."""
        state.slots.pop(self.name, None)

    def user_input(self, state: SessionState) -> None:
        """The user said something (``Guard.user_message``): what the agent does next answers it. Default:
        clear the slot."""
        state.slots.pop(self.name, None)

    def signal(
        self,
        message: str,
        *,
        tool: str | None = None,
        evidence: tuple[int, ...] = (),
        count: int = 0,
        details: dict[str, Any] | None = None,
        loop: int = 0,
        warn_only: bool | None = None,
        weak: bool = False,
    ) -> Signal:
        """Build this detector's signal (``loop``: what identifies the loop, see :meth:`loop_key`;
        ``warn_only``: this signal only warns, whatever the detector's setting; ``weak``: evidence that
        advises and blocks but never halts on its own, see docs/escalation.md)."""
        return Signal(
            kind=self.name,
            reason=self.reason,
            message=message,
            tool=tool,
            evidence=evidence,
            count=count,
            warn_only=self.warn_only if warn_only is None else warn_only or self.warn_only,
            details=details or {},
            loop=loop,
            weak=weak,
        )

    def loop_key(self, *parts: object) -> int:
        """A stable key for one loop of this detector (the same parts give the same key in every process)."""
        return digest_text("\x00".join((self.name, *map(str, parts))))

    def __repr__(self) -> str:
        fields = {k: getattr(self, k) for k, f in getattr(self, "__dataclass_fields__", {}).items() if f.repr}
        inner = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        return f"{type(self).__name__}({inner})"


def preview(state: SessionState, digest: int, tool: str) -> str:
    """The remembered preview of a call, or its tool name when previews are off or evicted."""
    return state.previews.get(digest) or tool


def label(call: Call) -> str:
    """How messages name a call's family: ``search_docs``, or ``bash (pytest)`` for a shell command."""
    if call.family and call.family != call.tool:
        return f"{call.tool} ({call.family[len(call.tool) + 1 :]})"
    return call.tool
