"""Per-tool settings (:class:`ToolPolicy`): the one piece of configuration that detectors read.

It lives below the configuration and the detectors so that both can use it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_POLICY", "MutatingRule", "ToolPolicy"]

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
