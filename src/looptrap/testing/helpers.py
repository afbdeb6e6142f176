"""Helpers for testing agents and guards: a clock you advance by hand, and one guarded call."""

from __future__ import annotations

from typing import Any

from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard

__all__ = ["FakeClock", "step"]


class FakeClock:
    """A clock for ``Guard(clock=...)`` that only moves when told: test time budgets and rates without
    sleeping."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        self.now += seconds


def step(guard: Guard, tool: str, args: Any, result: Any, *, is_error: bool = False, usage: Any = None) -> Verdict:
    """One tool call the way an agent loop makes it: check, and, if allowed, run (``result``) and record."""
    verdict = guard.check(tool, args)
    if verdict.allowed:
        guard.record(tool, args, result, is_error=is_error, usage=usage)
    return verdict
