"""looptrap: catch LLM agents in tool-call loops as the loops form, and get them out.

Start with :class:`Guard`: ``check`` before a tool call, ``record`` after it, ``end_turn`` once per turn.
State shared across processes lives in a store (:mod:`looptrap.stores`).
"""

from looptrap.core import outcome
from looptrap.core.budgets import Budgets
from looptrap.core.config import GuardConfig, ToolPolicy, default_detectors
from looptrap.core.engine import Engine
from looptrap.core.errors import LoopHalted, LooptrapError
from looptrap.core.escalation import Escalation
from looptrap.core.guard import AsyncGuard, Guard
from looptrap.core.outcome import Outcome
from looptrap.core.pool import GuardPool
from looptrap.core.report import report_blocked_schema, report_blocked_tool
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
)

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
