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
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: The per-call path: the engine, what it reads of calls and results, the state, the ladder and the built-in
#: detectors. The detectors are compiled as ordinary Python classes (``mypyc_attr(native_class=False)``) and
#: their base, ``Detector``, stays interpreted: a custom detector written in Python subclasses it as before.
#: Then the per-event path of ``replay`` and ``analyze``: reading trace lines, replaying them, and the
#: per-session statistics of the detector pass.
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
    "src/looptrap/detectors/cycle.py",
    "src/looptrap/detectors/drift.py",
    "src/looptrap/detectors/edits.py",
    "src/looptrap/detectors/errors.py",
    "src/looptrap/detectors/progress.py",
    "src/looptrap/detectors/rate.py",
    "src/looptrap/detectors/repeat.py",
    "src/looptrap/detectors/text.py",
    "src/looptrap/analysis/trace.py",
    "src/looptrap/analysis/deal.py",
    "src/looptrap/analysis/replay.py",
    "src/looptrap/analysis/analyze/session.py",
]

ext_modules = []
if os.environ.get("LOOPTRAP_COMPILE") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(COMPILED, opt_level="3", multi_file=True)



class BuildWithDocs(build_py):
    """The build, with the documentation inside the package (``looptrap/docs/``): ``looptrap docs`` and
    every ``--help`` point a pip user to it."""

    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "docs"
        if source.is_dir():  # a source tree or an sdist (MANIFEST.in ships docs/)
            target = Path(self.build_lib) / "looptrap" / "docs"
            for md in source.rglob("*.md"):
                dest = target / md.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(md, dest)


setup(ext_modules=ext_modules, cmdclass={"build_py": BuildWithDocs})
