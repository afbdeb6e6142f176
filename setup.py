"""The build, with an optional compiled per-call path.

``pip install .`` (or ``-e .``) installs plain Python: nothing to compile, no compiler needed. With
``LOOPTRAP_COMPILE=1`` the modules every tool call runs through are compiled by mypyc from the same source
(one implementation; the interpreted modules stay the reference and are what runs wherever no compiled
build is installed). Compiling needs mypy and a C compiler in the build environment:

    pip install mypy && LOOPTRAP_COMPILE=1 pip install --no-build-isolation .

See docs/evaluation.md#compiled-build for what it saves.
"""

from __future__ import annotations

import os

from setuptools import setup

#: The per-call path: the engine, what it reads of calls and results, the state and the ladder. The detectors
#: stay interpreted: mypyc does not keep ``ClassVar`` out of a dataclass's fields (their ``name`` and
#: ``reason``), so compiled detectors would not construct.
COMPILED = [
    "src/looptrap/core/types.py",
    "src/looptrap/core/state.py",
    "src/looptrap/reading/calls.py",
    "src/looptrap/reading/results.py",
    "src/looptrap/reading/signature.py",
    "src/looptrap/reading/volatile.py",
    "src/looptrap/reading/edits.py",
    "src/looptrap/policies/budgets.py",
    "src/looptrap/policies/escalation.py",
    "src/looptrap/engine/engine.py",
]

ext_modules = []
if os.environ.get("LOOPTRAP_COMPILE") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(COMPILED, opt_level="3", multi_file=True)

setup(ext_modules=ext_modules)
