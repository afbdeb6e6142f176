"""The optional compiled build (setup.py, ``LOOPTRAP_COMPILE=1``): it compiles modules that exist, from the same
source, and a run that expects it (``LOOPTRAP_EXPECT_COMPILED=1``, set by the CI's compiled run) really runs
the compiled modules, while every other run runs the interpreted ones."""

from __future__ import annotations

import ast
import importlib
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compiled_modules() -> list[str]:
    """The module names of setup.py's ``COMPILED`` list (read, not imported: setup.py runs setup())."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "COMPILED" for t in node.targets):
            paths = ast.literal_eval(node.value)
            return [p.removeprefix("src/").removesuffix(".py").replace("/", ".") for p in paths]
    raise AssertionError("setup.py has no COMPILED list")


def test_the_compiled_modules_are_modules_of_the_package() -> None:
    names = compiled_modules()
    assert names
    assert len(set(names)) == len(names)
    for name in names:
        assert (ROOT / "src" / (name.replace(".", "/") + ".py")).is_file(), name


def test_the_build_that_runs_is_the_one_expected() -> None:
    expect_compiled = os.environ.get("LOOPTRAP_EXPECT_COMPILED") == "1"
    for name in compiled_modules():
        path = str(importlib.import_module(name).__file__)
        assert path.endswith(".so") == expect_compiled, path
