"""``assert_terminates``: the assertion a chaos test makes, with the call sequence in its failure message."""

from __future__ import annotations

from collections.abc import Iterable

from looptrap.chaos.runner import Report

__all__ = ["assert_terminates"]


def assert_terminates(
    report: Report,
    *,
    within_calls: int | None = None,
    within_seconds: float | None = None,
    reasons: Iterable[str] | None = None,
    allow_errors: bool = False,
) -> None:
    """Assert that the run ended by itself or by the guard (not at the ceiling), after at most
    ``within_calls`` agent-level tool calls and ``within_seconds`` seconds; ``reasons``: the stop reasons
    allowed for a halt (``{"loop_repeat", "reported_blocked"}``); ``allow_errors``: whether the agent may
    end by raising. The failure message shows how the run ended and its call sequence, with the guard's
    interventions."""
    problems: list[str] = []
    if not report.terminated:
        problems.append(f"it did not terminate: the ceiling stopped it ({report.reason})")
    if report.outcome == "error" and not allow_errors:
        problems.append(f"the agent raised: {report.error}")
    if within_calls is not None and report.calls > within_calls:
        problems.append(f"it made {report.calls} tool calls, more than {within_calls}")
    if within_seconds is not None and report.seconds > within_seconds:
        problems.append(f"it took {report.seconds:.2f} s, more than {within_seconds:g} s")
    allowed = set(reasons) if reasons is not None else None
    if allowed is not None and report.outcome == "halted" and report.reason not in allowed:
        problems.append(f"it halted for {report.reason}, not for {' or '.join(sorted(allowed))}")
    if not problems:
        return
    guard = "with the guard" if report.guarded else "without a guard"
    head = (
        f"{report.name}: {'; '.join(problems)}.\n"
        f"ended: {report.summary()} after {report.seconds:.2f} s ({report.ran} ran, {report.refused} refused, "
        f"{report.attempts} tool-level attempts), {guard}, faults: {report.faults}, seed {report.seed}"
    )
    raise AssertionError(f"{head}\ncall sequence:\n{report.sequence()}")
