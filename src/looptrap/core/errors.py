"""Exceptions: a small hierarchy that carries data."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from looptrap.core.types import Verdict

__all__ = ["LoopHalted", "LooptrapError"]


class LooptrapError(Exception):
    """Base class of looptrap's exceptions."""


class LoopHalted(LooptrapError):
    """Raised by wrappers (never by ``Guard.check``) when a verdict halts the run.

    ``verdict`` is the halting verdict; ``reason`` (``loop_repeat``, ``budget_cost``, ``reported_blocked``...)
    and ``summary`` (what was tried) are copied from it.
    """

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.reason = verdict.reason or "halt"
        self.summary = verdict.summary
        super().__init__(f"looptrap halted the run ({self.reason}): {verdict.message}")
