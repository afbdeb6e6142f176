"""Every example in examples/ runs and passes its own assertions (the docs point to these files)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 5


def imported_packages(path: Path) -> set[str]:
    """The top-level packages an example imports (a framework example needs its extra)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path: Path) -> None:
    for name in sorted(imported_packages(path)):
        need(f"{name} (the extra {path.name} is written for)", importlib.util.find_spec(name) is not None)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{path.name} printed nothing"
