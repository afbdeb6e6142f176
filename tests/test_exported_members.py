"""The public surface is explicit: every name in ``looptrap.__all__`` exists, and nothing public is missing."""

from __future__ import annotations

import subprocess
import sys

import looptrap


def test_all_names_exist_and_are_exported() -> None:
    for name in looptrap.__all__:
        assert hasattr(looptrap, name), name
    # ("@py_builtins" and the like: pytest rewrites the asserts of a package that ships a pytest plugin)
    public = {n for n in dir(looptrap) if not n.startswith(("_", "@"))}
    # subpackages are reachable but not part of the flat namespace contract
    assert public - set(looptrap.__all__) <= {
        "analysis",
        "chaos",
        "cli",
        "config_file",
        "core",
        "dashboard",
        "detectors",
        "drivers",
        "engine",
        "integrations",
        "observe",
        "policies",
        "reading",
        "stores",
        "testing",
    }


def test_the_contract_names_are_there() -> None:
    for name in ("Guard", "Verdict", "GuardConfig", "ToolPolicy", "Budgets", "Escalation", "LoopHalted"):
        assert name in looptrap.__all__
    v = looptrap.Verdict()
    assert (v.action, v.kind, v.reason, v.message) == ("allow", None, None, "")


def test_import_is_light() -> None:
    code = (
        "import sys, looptrap\n"
        "heavy = ('pydantic', 'langchain', 'openai', 'anthropic', 'numpy', 'rich', 'redis', 'mcp')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
