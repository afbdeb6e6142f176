"""looptrap: catch LLM agents in tool-call loops as the loops form, and get them out.

Start with :class:`Guard`: ``check`` before a tool call, ``record`` after it, ``end_turn`` once per turn.
State shared across processes lives in a store (:mod:`looptrap.stores`).

PYTEST_DONT_REWRITE: the package ships a pytest plugin, for which pytest would rewrite this module's
asserts (and warn when it was imported before the plugin loaded).
"""

_TYPE_CHECKING = False  # not typing's: `import looptrap` imports nothing until a name is used
if _TYPE_CHECKING:  # the names below are imported on first use (a hook process pays only for what it uses)
    from looptrap.core.errors import LoopHalted, LooptrapError
    from looptrap.core.policy import ToolPolicy
    from looptrap.core.state import SessionState, StateVersionError
    from looptrap.core.types import ACTIONS, Action, Call, Signal, Verdict
    from looptrap.detectors import (
        Cycle,
        Detector,
        Drift,
        EditLoop,
        ErrorRepeat,
        NoAction,
        NoProgress,
        Rate,
        Repeat,
        RepeatedText,
        default_detectors,
    )
    from looptrap.drivers.guard import AsyncGuard, Guard
    from looptrap.drivers.pool import GuardPool
    from looptrap.engine.config import GuardConfig
    from looptrap.engine.engine import Engine
    from looptrap.policies.budgets import Budgets
    from looptrap.policies.escalation import Escalation
    from looptrap.reading import outcome
    from looptrap.reading.outcome import Outcome
    from looptrap.reading.report import report_blocked_schema, report_blocked_tool

_WHERE = {
    "outcome": "looptrap.reading.outcome",
    "Budgets": "looptrap.policies.budgets",
    "GuardConfig": "looptrap.engine.config",
    "ToolPolicy": "looptrap.core.policy",
    "default_detectors": "looptrap.detectors",
    "Engine": "looptrap.engine.engine",
    "LoopHalted": "looptrap.core.errors",
    "LooptrapError": "looptrap.core.errors",
    "Escalation": "looptrap.policies.escalation",
    "AsyncGuard": "looptrap.drivers.guard",
    "Guard": "looptrap.drivers.guard",
    "Outcome": "looptrap.reading.outcome",
    "GuardPool": "looptrap.drivers.pool",
    "report_blocked_schema": "looptrap.reading.report",
    "report_blocked_tool": "looptrap.reading.report",
    "SessionState": "looptrap.core.state",
    "StateVersionError": "looptrap.core.state",
    "ACTIONS": "looptrap.core.types",
    "Action": "looptrap.core.types",
    "Call": "looptrap.core.types",
    "Signal": "looptrap.core.types",
    "Verdict": "looptrap.core.types",
    **dict.fromkeys(
        (
            "Cycle",
            "Detector",
            "Drift",
            "EditLoop",
            "ErrorRepeat",
            "NoAction",
            "NoProgress",
            "Rate",
            "Repeat",
            "RepeatedText",
        ),
        "looptrap.detectors",
    ),
}


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'looptrap' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(where)
    value = module if where.endswith(f".{name}") else getattr(module, name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__version__ = "0.1.0"

__all__ = [
    "ACTIONS",
    "Action",
    "AsyncGuard",
    "Budgets",
    "Call",
    "Cycle",
    "Detector",
    "Drift",
    "EditLoop",
    "Engine",
    "ErrorRepeat",
    "Escalation",
    "Guard",
    "GuardConfig",
    "GuardPool",
    "LoopHalted",
    "LooptrapError",
    "NoAction",
    "NoProgress",
    "Outcome",
    "Rate",
    "Repeat",
    "RepeatedText",
    "SessionState",
    "Signal",
    "StateVersionError",
    "ToolPolicy",
    "Verdict",
    "__version__",
    "default_detectors",
    "outcome",
    "report_blocked_schema",
    "report_blocked_tool",
]
