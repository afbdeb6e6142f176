"""End-to-end smoke: the public contract from the README."""

from __future__ import annotations

from looptrap import Guard
from looptrap.testing import step


def test_same_failing_call_is_advised_then_blocked_then_halted() -> None:
    guard = Guard(clock=None)
    actions = [step(guard, "search_docs", {"query": "refund policy"}, "0 results").action for _ in range(5)]
    assert actions == ["allow", "allow", "advise", "block", "halt"]
    assert guard.halted is not None
    assert guard.halted.reason == "loop_repeat"
