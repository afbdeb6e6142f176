"""looptrap.chaos: prove that an agent stops when its tools misbehave.

Wrap tools so that they fail on purpose by seeded schedules (:class:`Chaos`, the faults), run the agent
against them inside a hard ceiling (:func:`run`, :class:`Report`), run every fault against every tool
(:func:`matrix`), assert in tests (:func:`assert_terminates`, and the pytest plugin), and make a retry
library's attempts visible to the guard (:func:`report_attempts`). See docs/chaos.md.

Nothing is imported until a name is used (the pytest plugin loads this package in every test run).
"""

_TYPE_CHECKING = False
if _TYPE_CHECKING:
    from looptrap.chaos.asserts import assert_terminates
    from looptrap.chaos.fault_matrix import Matrix, matrix
    from looptrap.chaos.faults import (
        ALL,
        FAULTS,
        CeilingReached,
        Contradict,
        Effect,
        Empty,
        Error,
        Fault,
        Faults,
        Flaky,
        InjectedError,
        InjectedTimeout,
        Malformed,
        NotFound,
        Oversized,
        Retryable,
        RetryInside,
        RetryRefused,
        Slow,
        Target,
        Timeout,
        after,
        by_name,
        every,
        first,
    )
    from looptrap.chaos.log import CallLog, CallRecord
    from looptrap.chaos.retry import report_attempts
    from looptrap.chaos.runner import Intervention, Report, run
    from looptrap.chaos.tools import Chaos

_FAULTS = (
    "ALL",
    "FAULTS",
    "CeilingReached",
    "Contradict",
    "Effect",
    "Empty",
    "Error",
    "Fault",
    "Faults",
    "Flaky",
    "InjectedError",
    "InjectedTimeout",
    "Malformed",
    "NotFound",
    "Oversized",
    "RetryInside",
    "Retryable",
    "Slow",
    "Target",
    "Timeout",
    "after",
    "by_name",
    "every",
    "first",
)

_WHERE = {
    **dict.fromkeys(_FAULTS, "looptrap.chaos.faults"),
    "RetryRefused": "looptrap.chaos.faults",
    "assert_terminates": "looptrap.chaos.asserts",
    "CallLog": "looptrap.chaos.log",
    "CallRecord": "looptrap.chaos.log",
    "Matrix": "looptrap.chaos.fault_matrix",
    "matrix": "looptrap.chaos.fault_matrix",
    "report_attempts": "looptrap.chaos.retry",
    "Intervention": "looptrap.chaos.runner",
    "Report": "looptrap.chaos.runner",
    "run": "looptrap.chaos.runner",
    "Chaos": "looptrap.chaos.tools",
}


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'looptrap.chaos' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ALL",
    "FAULTS",
    "CallLog",
    "CallRecord",
    "CeilingReached",
    "Chaos",
    "Contradict",
    "Effect",
    "Empty",
    "Error",
    "Fault",
    "Faults",
    "Flaky",
    "InjectedError",
    "InjectedTimeout",
    "Intervention",
    "Malformed",
    "Matrix",
    "NotFound",
    "Oversized",
    "Report",
    "RetryInside",
    "RetryRefused",
    "Retryable",
    "Slow",
    "Target",
    "Timeout",
    "after",
    "assert_terminates",
    "by_name",
    "every",
    "first",
    "matrix",
    "report_attempts",
    "run",
]
