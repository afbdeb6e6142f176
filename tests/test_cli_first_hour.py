"""The command as a new user meets it: bare `looptrap` lists the commands, every text fits 80 columns, --help
points at documentation a pip user has (`looptrap docs`), --quiet, shell completion, one number format."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from looptrap.cli import docs
from looptrap.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "examples" / "trace.jsonl"


def looptrap(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "looptrap", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=120, env={**os.environ, **(env or {})})


def commands() -> list[list[str]]:
    """Every command and sub-command of the parser, as words."""
    import argparse

    found: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        found.append(words)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])

    walk(build_parser(), [])
    return found


def test_bare_looptrap_lists_the_commands() -> None:
    done = looptrap()
    assert done.returncode == 0
    for name in ("demo", "replay", "analyze", "hook", "mcp-proxy", "sessions", "config", "docs", "completion"):
        assert re.search(rf"^\s+{re.escape(name)}\s", done.stdout, re.MULTILINE), name
    assert "looptrap docs" in done.stdout
    assert "the following arguments are required" not in done.stderr


@pytest.mark.parametrize("words", commands(), ids=lambda w: " ".join(w) or "looptrap")
def test_every_help_fits_80_columns_and_points_at_docs_a_pip_user_has(words: list[str]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    text = out.getvalue()
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, too_wide
    assert not re.search(r"docs/[\w/-]+\.md", text), "a path pip users do not have"
    base = docs.folder()
    assert base is not None
    known = docs.topics(base)
    for topic, _, part in re.findall(r"looptrap docs ([\w/-]+)(#([\w-]+))?", text):
        assert topic in known, topic
        if part:
            assert docs.section((base / f"{topic}.md").read_text(encoding="utf-8"), part) is not None, part


def test_docs_lists_topics_and_prints_one_section() -> None:
    listed = looptrap("docs")
    assert listed.returncode == 0
    assert re.search(r"^\s+hooks\s+Hooks", listed.stdout, re.MULTILINE)
    assert re.search(r"^\s+integrations/langchain\s", listed.stdout, re.MULTILINE)
    part = looptrap("docs", "configuration#who-may-set-what")
    assert part.returncode == 0
    assert part.stdout.startswith("### Who may set what\n")
    assert "## ToolPolicy" not in part.stdout  # the section only, up to the next heading of its level
    whole = looptrap("docs", "docs/hooks.md")  # a path as the docs write it also works
    assert whole.returncode == 0
    assert whole.stdout == (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    assert looptrap("docs", "nope").returncode == 2
    missing = looptrap("docs", "hooks#nope")
    assert missing.returncode == 2
    assert "cost-the-resident-hook-server" in missing.stderr  # the sections it has


@pytest.mark.slow
def test_the_wheel_carries_the_docs(tmp_path: Path) -> None:
    """`pip install looptrap` has `looptrap docs`: the wheel holds every page, and reads them outside the tree."""
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("looptrap-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert {n.removeprefix("looptrap/docs/") for n in names if n.startswith("looptrap/docs/")} == pages
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-m", "looptrap", "docs", "hooks#cost-the-resident-hook-server"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("## Cost: the resident hook server")


def test_bash_completes_commands_options_and_files(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    script = tmp_path / "looptrap.bash"
    made = looptrap("completion", "bash")
    assert made.returncode == 0
    script.write_text(made.stdout)
    (tmp_path / "run.jsonl").write_text("")

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        program = (
            f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMP_LINE='{line}'; "
            'COMP_POINT=${#COMP_LINE}; _shtab_looptrap; printf "%s\\n" "${COMPREPLY[@]}"'
        )
        done = subprocess.run([bash, "-c", program], capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("looptrap", "re") == ["replay"]
    assert "analyze" in complete("looptrap", "a")
    assert complete("looptrap", "analyze", "--fo") == ["--format"]
    assert set(complete("looptrap", "analyze", "--format", "c")) == {"csv", "claude-code", "codex"}
    assert complete("looptrap", "replay", "r") == ["run.jsonl"]  # a file where a trace goes
    assert complete("looptrap", "hook", "g") == ["gemini-cli"]
    for shell in ("zsh", "tcsh"):
        assert looptrap("completion", shell).stdout.strip()


def test_quiet_silences_warnings_but_not_errors_or_results(tmp_path: Path) -> None:
    bad = tmp_path / "t.jsonl"
    bad.write_text(TRACE.read_text() + "not json\n")
    loud = looptrap("replay", "--skip-invalid", str(bad))
    assert "skipped 1 invalid line" in loud.stderr
    for args in (["-q", "replay", "--skip-invalid", str(bad)], ["replay", "--skip-invalid", str(bad), "--quiet"]):
        quiet = looptrap(*args)
        assert quiet.returncode == 0
        assert quiet.stderr == ""
        assert quiet.stdout == loud.stdout
    (tmp_path / "looptrap.toml").write_text("enabled = false\n")
    warned = looptrap("config", "check", "-q", "looptrap.toml", "--strict", cwd=tmp_path)
    assert (warned.returncode, warned.stderr) == (1, "")  # the exit code still says it
    assert looptrap("-q", "replay", str(tmp_path / "missing.jsonl")).stderr  # errors still print


def test_replay_text_fits_80_columns_and_explains_itself(tmp_path: Path) -> None:
    long = tmp_path / "long.jsonl"
    rows = []
    for k in range(4):
        for session in ("a-very-long-session-identifier-" * 3 + "end", "零一二三四五六七八九" * 4):
            rows.append(
                {"session": session, "type": "tool_call", "tool": "search_documents_everywhere", "args": {"q": 1}}
            )
            rows.append(
                {"session": session, "type": "tool_result", "tool": "search_documents_everywhere", "output": f"{k}"}
            )
            rows.append(
                {"session": session, "type": "tool_result", "tool": "x", "output": ""}
                if False
                else {"session": session, "type": "turn_end"}
            )
    long.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from looptrap.core.columns import cols

    for trace in (TRACE, long):
        done = looptrap("replay", str(trace))
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert max(cols(line) for line in lines) <= 80
        assert "signals: " in done.stdout  # the legend
        assert re.search(
            r"^\d+ sessions?, \d+ tool calls?: \d+ of \d+ sessions? \(\d+%\) with an intervention", lines[-1]
        )
    assert max(cols(line) for line in looptrap("replay", str(TRACE), env={"COLUMNS": "60"}).stdout.splitlines()) <= 60


def test_sessions_and_config_show_fit_80_columns(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/s.db"
    payload_dir = ROOT / "examples" / "hooks"
    for _ in range(2):
        for name in ("claude-code-pre-tool-use.json", "claude-code-post-tool-use.json"):
            subprocess.run(
                [sys.executable, "-m", "looptrap", "hook", "claude-code", "--store", store],
                input=(payload_dir / name).read_bytes(),
                capture_output=True,
                timeout=60,
                check=True,
            )
    session = json.loads((payload_dir / "claude-code-pre-tool-use.json").read_text())["session_id"]
    for args in (
        ["sessions", "show", session, "--store", store],
        ["sessions", "list", "--store", store],
        ["config", "show"],
    ):
        done = looptrap(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        wide = [line for line in done.stdout.splitlines() if len(line) > 80]
        assert not wide, (args, wide)
    shown = looptrap("sessions", "show", session, "--store", store).stdout
    assert "calls     2 in" in shown


def test_the_replay_progress_bar_shows_rate_and_time_left(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from looptrap.cli import main as cli_main

    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 99 + b"\n" * 1)
    ticks = itertools.count(0.0, 0.5)
    monkeypatch.setattr("time.monotonic", lambda: next(ticks))
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with path.open("rb") as raw:
        lines = [raw.read(50), raw.read(50)]
        got = list(cli_main._progress(iter(lines), raw))
    assert got == lines
    text = err.getvalue()
    assert "MiB/s" in text
    assert " left" in text
    assert text.endswith("\r")  # the bar is wiped at the end
