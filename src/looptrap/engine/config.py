"""Configuration: what every process of an application shares (detectors, budgets, escalation, tool policies).

Configuration is immutable and cheap to derive (``config.replace(...)``); all per-call work that can be
done once (compiling patterns, resolving tool policies) is done here, not on the call path.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from looptrap.core.policy import DEFAULT_POLICY, ToolPolicy
from looptrap.detectors import Detector, default_detectors
from looptrap.policies.budgets import Budgets
from looptrap.policies.escalation import Escalation
from looptrap.reading.signature import Canonicaliser, fold_text
from looptrap.reading.volatile import (
    ARG_VOLATILE_KEYS,
    RESULT_VOLATILE_KEYS,
    VOLATILE_TEXT,
    VolatileText,
    key_matcher,
    text_scrubber,
)

__all__ = ["GuardConfig"]


@dataclass(frozen=True)
class GuardConfig:
    """Everything a guard needs besides its session state.

    ``detectors``: the loop detectors, composed in priority order. ``budgets``: hard and soft caps.
    ``escalation``: how repeated signals turn into advise, block and halt. ``tools``: per-tool policies.
    ``enabled=False`` turns the guard off (every call allowed, nothing recorded). ``fail_closed=True`` halts
    on an internal error instead of allowing the call. ``log_args=True`` puts argument previews in logs
    (off by default: logs carry digests only). ``previews=False`` keeps no argument previews in the state
    at all (summaries then name tools only). ``report_tool``: the name of the honest-way-out tool that
    messages point to (``None`` when the agent has none). ``observers``: objects told about every check,
    verdict and store error (metrics, traces, alert callbacks: see :mod:`looptrap.observe`).
    """

    detectors: tuple[Detector, ...] = field(default_factory=default_detectors)
    budgets: Budgets = field(default_factory=Budgets)
    escalation: Escalation = field(default_factory=Escalation)
    tools: Mapping[str, ToolPolicy] = field(default_factory=dict)
    enabled: bool = True
    fail_closed: bool = False
    log_args: bool = False
    previews: bool = True
    report_tool: str | None = "report_blocked"
    arg_volatile_keys: tuple[str, ...] = ARG_VOLATILE_KEYS
    result_volatile_keys: tuple[str, ...] = RESULT_VOLATILE_KEYS
    result_volatile_text: tuple[VolatileText | str, ...] = VOLATILE_TEXT
    observers: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.observers, tuple):
            object.__setattr__(self, "observers", tuple(self.observers))
        if not isinstance(self.detectors, tuple):
            object.__setattr__(self, "detectors", tuple(self.detectors))
        names = [d.name for d in self.detectors]
        if len(set(names)) != len(names):
            raise ValueError(f"each detector may appear once; got {names}")

    def replace(self, **changes: Any) -> GuardConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def policy(self, tool: str) -> ToolPolicy:
        """The policy for a tool: an exact entry, else the first matching pattern, else the default."""
        exact = self.tools.get(tool)
        if exact is not None:
            return exact
        for pattern, pol in self.tools.items():
            if any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(tool, pattern):
                return pol
        return DEFAULT_POLICY

    def arg_canonicaliser(self, policy: ToolPolicy) -> Canonicaliser:
        """The canonicaliser for a tool's arguments (built once per tool by the engine)."""
        return Canonicaliser(
            key_matcher(self.arg_volatile_keys),
            fold_text(whitespace=policy.fold_whitespace, case=policy.fold_case),
        )

    def result_canonicaliser(self) -> Canonicaliser:
        """The canonicaliser for results: volatile keys dropped, volatile substrings scrubbed."""
        return Canonicaliser(key_matcher(self.result_volatile_keys), text_scrubber(self.result_volatile_text))
