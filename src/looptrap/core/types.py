"""The vocabulary: a call, a signal, a verdict, an action."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ACTIONS", "ALLOW", "Action", "Call", "Signal", "Verdict"]

Action = Literal["allow", "warn", "advise", "block", "halt"]
#: Actions in rising order of severity.
ACTIONS: tuple[Action, ...] = ("allow", "warn", "advise", "block", "halt")
_RANK = {a: i for i, a in enumerate(ACTIONS)}


@dataclass(slots=True)  # not frozen: a frozen dataclass costs 5x more to build, and one is built per call
class Call:
    """A tool call as the guard sees it: its tool, its signature digest, a short preview of its arguments,
    whether it changes state when it succeeds (``mutating``) or even when it fails (``writes_on_failure``:
    a shell chain whose write ran before a later command failed), whether it waits for something to happen
    (``polling``), its 1-based index in the session, the time it arrived, its ``family``: the tool, or for
    a shell tool the tool and the program it runs (``bash:pytest``), and for a write whose arguments say
    what a file holds afterwards, that ``edit``."""

    tool: str
    digest: int
    preview: str
    mutating: bool
    index: int = 0
    at: float | None = None
    writes_on_failure: bool = False
    polling: bool = False
    family: str = ""
    batched: bool = False
    args: Any = field(default=None, repr=False, compare=False)  # kept until the call is recorded, never saved
    edit: Any = field(default=None, repr=False, compare=False)  # what a write does to a file (core.edits.Edit)

    def numbered(self, index: int) -> Call:
        """This call with its index in the session (a plain constructor call: this is on the per-call path)."""
        return Call(
            self.tool,
            self.digest,
            self.preview,
            self.mutating,
            index,
            self.at,
            self.writes_on_failure,
            self.polling,
            self.family,
            self.batched,
            self.args,
            self.edit,
        )


@dataclass(frozen=True, slots=True)
class Signal:
    """One detector's or budget's finding: what loop shape, on which calls, and how many times."""

    kind: str
    reason: str
    message: str
    tool: str | None = None
    evidence: tuple[int, ...] = ()
    count: int = 0
    warn_only: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    #: What identifies the loop (0: nothing): a signal with the same key after an intervention is the same
    #: loop going on, even when other calls brought something new in between (see docs/escalation.md).
    loop: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (for logs, traces and reports)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "reason": self.reason,
            "tool": self.tool,
            "count": self.count,
            "evidence": list(self.evidence),
            "message": self.message,
        }
        if self.warn_only:
            out["warn_only"] = True
        if self.details:
            out["details"] = self.details
        return out


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a call (or at a turn end).

    ``action``: ``allow`` (run it), ``warn`` (run it, a signal was logged), ``advise`` / ``block`` (do not run
    it: hand ``message`` to the model as the tool's error result), ``halt`` (stop the run: ``reason`` says why,
    ``summary`` what was tried). ``kind`` names the detector or budget that decided.
    """

    action: Action = "allow"
    kind: str | None = None
    reason: str | None = None
    message: str = ""
    summary: str = ""
    signals: tuple[Signal, ...] = ()
    call_index: int = 0

    @property
    def allowed(self) -> bool:
        """True when the tool should run (``allow`` or ``warn``)."""
        return self.action == "allow" or self.action == "warn"

    @property
    def intervenes(self) -> bool:
        """True for ``advise``, ``block`` and ``halt``."""
        return not self.allowed

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "action": self.action,
            "kind": self.kind,
            "reason": self.reason,
            "message": self.message,
            "summary": self.summary,
            "call_index": self.call_index,
            "signals": [s.to_dict() for s in self.signals],
        }


ALLOW = Verdict()


def more_severe(a: Action, b: Action) -> bool:
    """Whether action ``a`` is more severe than ``b``."""
    return _RANK[a] > _RANK[b]
