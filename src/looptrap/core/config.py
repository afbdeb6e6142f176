"""Configuration: what every process of an application shares (detectors, budgets, escalation, tool policies).

Configuration is immutable and cheap to derive (``config.replace(...)``); all per-call work that can be
done once (compiling patterns, resolving tool policies) is done here, not on the call path.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from looptrap.core.budgets import Budgets
from looptrap.core.escalation import Escalation
from looptrap.core.signature import Canonicaliser, fold_text
from looptrap.core.volatile import (
    ARG_VOLATILE_KEYS,
    RESULT_VOLATILE_KEYS,
    VOLATILE_TEXT,
    VolatileText,
    key_matcher,
    text_scrubber,
)

if TYPE_CHECKING:
    from looptrap.detectors.base import Detector

__all__ = ["GuardConfig", "ToolPolicy", "default_detectors"]

MutatingRule = bool | Callable[[str, Any], bool] | None


@dataclass(frozen=True)
class ToolPolicy:
    """Per-tool settings. Keys of ``GuardConfig.tools`` are tool names or ``fnmatch`` patterns (``"debug_*"``).

    * ``mutating``: ``True``/``False`` overrides the name/command heuristic; a function ``(tool, args) -> bool``
      decides per call.
    * ``exempt``: no detector looks at this tool (a debugger's ``step``, a ``read_output`` stream); budgets
      still count it.
    * ``keys``: only these argument keys make up the call's signature; ``key``: a function of the arguments
      whose return value is the signature instead; ``result_key``: a function of the result whose return
      value is compared instead of the result (for results that have no faithful canonical form).
    * ``fold_whitespace`` / ``fold_case``: compare string arguments with whitespace collapsed / case folded.
    * ``polling``: ``True`` when the tool waits for something to happen (its repeated answers count as pending),
      ``False`` to turn off the name/argument heuristic, ``None`` for the heuristic.
    * ``disable``: detector names turned off for this tool; ``limits``: per-detector thresholds,
      e.g. ``{"repeat": 5}``.
    """

    mutating: MutatingRule = None
    exempt: bool = False
    keys: tuple[str, ...] | None = None
    key: Callable[[Any], Any] | None = None
    result_key: Callable[[Any], Any] | None = None
    fold_whitespace: bool = False
    fold_case: bool = False
    polling: bool | None = None
    disable: Collection[str] = frozenset()
    limits: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.keys is not None and not isinstance(self.keys, tuple):
            object.__setattr__(self, "keys", tuple(self.keys))
        if not isinstance(self.disable, frozenset):
            object.__setattr__(self, "disable", frozenset(self.disable))


DEFAULT_POLICY = ToolPolicy()


def default_detectors() -> tuple[Detector, ...]:
    """The default detectors, in priority order (the first signal of a call decides its kind)."""
    from looptrap.detectors import (
        Cycle,
        Drift,
        EditLoop,
        ErrorRepeat,
        NoAction,
        NoProgress,
        Rate,
        Repeat,
        RepeatedText,
    )

    return (
        Repeat(),
        ErrorRepeat(),
        Cycle(),
        EditLoop(),
        Drift(),
        Rate(),
        NoProgress(),
        NoAction(),
        RepeatedText(),
    )


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
