"""The outcome protocol: tool results that say what happened, so the model does not retry blindly.

A tool returns a plain dict with ``status`` (``success`` | ``not_found`` | ``error`` | ``partial``),
``retryable``, ``message``, ``next_action_hint`` and ``data``. The guard reads ``status`` and ``retryable``:
a non-retryable ``not_found`` or ``error`` repeated is a loop sooner.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from looptrap.core.types import Verdict

__all__ = ["Outcome", "Status", "error", "from_verdict", "not_found", "partial", "success"]

Status = Literal["success", "not_found", "error", "partial"]


class Outcome(TypedDict, total=False):
    """A tool result following the outcome protocol (JSON-serialisable as it is)."""

    status: Status
    retryable: bool
    message: str
    next_action_hint: str
    data: Any


def _make(status: Status, message: str, retryable: bool, hint: str | None, data: Any) -> Outcome:
    out: Outcome = {"status": status, "retryable": retryable, "message": message}
    if hint:
        out["next_action_hint"] = hint
    if data is not None:
        out["data"] = data
    return out


def success(data: Any = None, message: str = "ok", *, next_action_hint: str | None = None) -> Outcome:
    """The call worked. ``retryable`` is False: calling again returns the same."""
    return _make("success", message, False, next_action_hint, data)


def not_found(
    message: str, *, retryable: bool = False, next_action_hint: str | None = None, data: Any = None
) -> Outcome:
    """Nothing matched. By default not retryable: the same call will find nothing again."""
    return _make("not_found", message, retryable, next_action_hint, data)


def error(message: str, *, retryable: bool, next_action_hint: str | None = None, data: Any = None) -> Outcome:
    """The call failed. Say whether retrying the same call can work (a timeout) or not (a bad argument)."""
    return _make("error", message, retryable, next_action_hint, data)


def partial(data: Any, message: str, *, next_action_hint: str | None = None, retryable: bool = False) -> Outcome:
    """Some of what was asked, with a hint for getting the rest (the next page, a narrower query)."""
    return _make("partial", message, retryable, next_action_hint, data)


def from_verdict(verdict: Verdict) -> Outcome:
    """The result to hand the model for a call the guard did not run (advise/block/halt)."""
    hint = "Stop and report what you found." if verdict.action == "halt" else "Change course; see the message."
    return _make("error", verdict.message, False, hint, None)
