"""Every example in examples/ runs and passes its own assertions (the docs point to these files)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SEPARATE_EXTRAS, need

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
        if (path.parent / f"{name}.py").exists():
            continue  # another example, beside it
        found = importlib.util.find_spec(name) is not None
        need(f"{name} (the extra {path.name} is written for)", found, SEPARATE_EXTRAS.get(name))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{path.name} printed nothing"


ROOT = Path(__file__).resolve().parents[1]


def looptrap(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPTRAP_")}
    env["LOOPTRAP_HOOK_SERVER"] = "0"  # each event in its own process: nothing left running after the test
    return subprocess.run(
        [sys.executable, "-m", "looptrap", *args], input=stdin, capture_output=True, timeout=120, cwd=cwd, env=env
    )


def test_sample_trace_is_flagged_by_replay() -> None:
    """README: ``looptrap replay examples/trace.jsonl`` shows a loop caught and a healthy session untouched."""
    proc = looptrap("replay", str(ROOT / "examples" / "trace.jsonl"), "--json")
    assert proc.returncode == 0, proc.stderr
    reports = [json.loads(line) for line in proc.stdout.splitlines()]
    flagged = [r for r in reports if r["first_intervention"]]
    assert flagged
    assert any(not r["signals"] for r in reports)  # and a healthy session, untouched
    table = looptrap("replay", str(ROOT / "examples" / "trace.jsonl"))
    assert b"with an intervention" in table.stdout


def test_sample_hook_payloads_give_advice_the_third_time(tmp_path: Path) -> None:
    """README: feeding the Claude Code payloads of examples/hooks/ to ``looptrap hook claude-code`` three
    times (the call before it runs, then its result) denies the third call with advice."""
    folder = ROOT / "examples" / "hooks"
    pre = (folder / "claude-code-pre-tool-use.json").read_bytes()
    post = (folder / "claude-code-post-tool-use.json").read_bytes()
    store = ["--store", f"sqlite:///{tmp_path}/sessions.db"]
    answers = []
    for _ in range(3):
        for payload in (pre, post):
            proc = looptrap("hook", "claude-code", *store, stdin=payload, cwd=tmp_path)
            assert proc.returncode == 0, proc.stderr
            answers.append(proc.stdout.decode().strip())
    assert answers[:4] == ["", "", "", ""]  # the first two calls run
    advice = json.loads(answers[4])["hookSpecificOutput"]
    assert advice["permissionDecision"] == "deny"
    assert "3 times" in advice["permissionDecisionReason"]
    shown = looptrap("sessions", "show", json.loads(pre)["session_id"], *store, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr  # docs/troubleshooting.md: how to see why
    assert b"Grep" in shown.stdout


def test_readme_install_section_lists_every_extra() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "pip install looptrap" in install
    for extra, requirements in project["optional-dependencies"].items():
        row = next((line for line in install.splitlines() if line.startswith(f"| `{extra}` |")), None)
        assert row is not None, f"no row for the extra {extra!r}"
        for requirement in requirements:
            if not requirement.startswith("looptrap["):
                name = requirement.split(">")[0].split("<")[0].split("=")[0]
                assert f"`{requirement}`" in row or (extra == "dev" and f"`{name}`" in row), (extra, requirement)
    low = project["requires-python"].removeprefix(">=")
    assert f"Python {low}" in install


def test_readme_quick_start_is_unchanged() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/looptrap demo" in readme
    assert 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]" && .venv/bin/pytest' in readme


def test_troubleshooting_page() -> None:
    page = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    for needed in ("looptrap sessions show", "looptrap sessions reset", "exempt"):
        assert needed in page, needed
    assert "docs/troubleshooting.md" in (ROOT / "README.md").read_text(encoding="utf-8")
