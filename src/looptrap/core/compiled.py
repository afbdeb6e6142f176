"""What the source says for the optional compiled build (setup.py, ``LOOPTRAP_COMPILE=1``).

``mypyc_attr(native_class=False)`` keeps a compiled class an ordinary Python class (its methods compiled),
which an interpreted subclass can extend and whose class attributes it can override. mypyc reads the
decorator when it compiles; interpreted, it does nothing, and ``mypy_extensions`` (installed with mypy) is
not needed to run looptrap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["mypyc_attr"]

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # a plain install: nothing is compiled, the decorator has nothing to say

    def mypyc_attr(*args: str, **kwargs: Any) -> Any:  # type: ignore[misc]
        """The decorator's stand-in: returns the class as it is."""
        return lambda cls: cls
