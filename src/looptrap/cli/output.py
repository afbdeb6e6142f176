"""What the commands print for people on stderr: warnings and notes, which ``--quiet`` silences.

Their text on stdout fits the terminal (:mod:`looptrap.core.columns`) and writes numbers one way
(:mod:`looptrap.core.figures`).
"""

from __future__ import annotations

import sys

__all__ = ["quiet", "set_quiet", "warn"]

_state = {"quiet": False}


def set_quiet(on: bool) -> None:
    """``--quiet``: no warnings, notes or progress bars on stderr (errors still print)."""
    _state["quiet"] = bool(on)


def quiet() -> bool:
    """Whether ``--quiet`` was given."""
    return _state["quiet"]


def warn(text: str, prefix: str = "looptrap") -> None:
    """A warning on stderr (one line), unless ``--quiet``."""
    from looptrap.core.printable import one_line

    if not quiet():
        sys.stderr.write(f"{prefix}: warning: {one_line(text, 1000)}\n")
