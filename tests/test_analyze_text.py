"""The text report of ``looptrap analyze`` (docs/analyze.md, "Outputs"): every line fits the width, a table
row is one line, every column is explained under its table, and counts are written as looptrap.core.figures
writes them; also for hostile names (terminal escapes, 500-character ids, wide characters)."""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import need

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)

from looptrap.analysis.analyze import AnalyzeOptions, analyze  # noqa: E402
from looptrap.analysis.analyze.render_text import MIN_WIDTH, render_text, report_width, worst  # noqa: E402
from looptrap.analysis.analyze.run import Report  # noqa: E402
from looptrap.core.figures import count, money, share  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = {
    "claude-code-real": ROOT / "tests" / "data" / "claude-code-real",
    "scenarios": ROOT / "tests" / "scenarios",
    "example-trace": ROOT / "examples" / "trace.jsonl",
}
TITLES = ("sessions to look at first", "most repeated calls", "tools")


def cells(line: str) -> int:
    """The terminal cells a line takes, measured apart from the code under test: East Asian wide and full-width
    characters take two, combining marks and format characters none."""
    total = 0
    for ch in line:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return total


@cache
def report_of(name: str, detectors: bool = True) -> Report:
    return analyze([str(DATA[name])], AnalyzeOptions(detectors=detectors))


def render(report: Report, width: int) -> list[str]:
    out = io.StringIO()
    render_text(report, out, color=False, width=width)
    return out.getvalue().splitlines()


def tables(lines: list[str], report: Report) -> dict[str, dict[str, Any]]:
    """Each table: its header (names), its rows (the lines after the rule: as many as the report has rows,
    so a row broken over two lines shows as a missing legend) and its legend (the lines after the rows, to
    the blank line)."""
    expected = {
        "sessions to look at first": len(worst(report)),
        "most repeated calls": min(10, len(report.fleet["top_signatures"])),
        "tools": min(10, len(report.fleet["tools"])),
    }
    found: dict[str, dict[str, Any]] = {}
    for i, line in enumerate(lines):
        if not line or set(line) - {"─", " "}:
            continue
        title = next(t for t in reversed(lines[: i - 1]) if t and not t.startswith(" "))
        name = next(t for t in TITLES if title.startswith(t))
        rows = lines[i + 1 : i + 1 + expected[name]]
        end = next((j for j in range(i + 1 + expected[name], len(lines)) if not lines[j]), len(lines))
        found[name] = {
            "header": lines[i - 1].split("  "),
            "columns": [h.strip() for h in re.split(r"\s{2,}", lines[i - 1].strip())],
            "rows": rows,
            "legend": " ".join(x.strip() for x in lines[i + 1 + expected[name] : end]),
            "rule": line,
        }
    return found


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("data", sorted(DATA))
def test_every_line_fits_and_every_row_is_one_line(data: str, width: int) -> None:
    report = report_of(data)
    lines = render(report, width)
    assert max(cells(line) for line in lines) <= width
    found = tables(lines, report)
    assert set(found) == set(TITLES)
    for name, table in found.items():
        rule_width = cells(table["rule"])
        for row in table["rows"]:
            assert cells(row) <= rule_width, (name, row)
        assert table["legend"].startswith("calls: "), (name, table["legend"])  # right after the last row
    # each row of the sessions table is that session's, whole: its calls in the calls column
    sessions = found["sessions to look at first"]
    at = sessions["columns"].index("calls")
    for a, row in zip(worst(report), sessions["rows"], strict=True):
        assert re.split(r"\s{2,}", row.strip())[at] == count(a.tool_calls), row


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_legend_explains_every_column_shown_and_names_those_left_out(width: int) -> None:
    report = report_of("scenarios")
    found = tables(render(report, width), report)
    everything = {
        "sessions to look at first": ["calls", "distinct", "x", "stale", "loop", "spent", "interval", "marks"],
        "most repeated calls": ["calls", "sessions", "max", "call"],
        "tools": ["calls", "sessions", "loop rate", "empty", "errors"],
    }
    for name, table in found.items():
        shown = table["columns"][1:] if name != "most repeated calls" else table["columns"]
        for column in shown:
            assert f"{column}: " in table["legend"], (name, column)
        left_out = [c for c in everything[name] if c not in shown]
        if left_out:
            assert f"left out to fit {width} columns: {', '.join(left_out)}" in table["legend"]
        else:
            assert "left out" not in table["legend"]
    legend = found["sessions to look at first"]["legend"]
    if width == 80:  # the columns given up first, the others kept
        assert "left out to fit 80 columns: distinct, interval, marks" in legend
        assert "x: calls per distinct call" in legend


def test_a_row_keeps_what_tells_it_apart() -> None:
    """A session id cut in its middle keeps both ends; a call keeps its tool whole and its arguments' keys."""
    report = report_of("claude-code-real")
    found = tables(render(report, 60), report)
    for a, row in zip(worst(report), found["sessions to look at first"]["rows"], strict=True):
        assert row.startswith(a.session[:8]), row
        assert "…" in row.split()[0]
        assert row.split()[0].endswith(a.session[-8:]), row
    for sig, row in zip(report.fleet["top_signatures"][:10], found["most repeated calls"]["rows"], strict=True):
        assert f"{sig['tool']} {{" in row
        assert '{"file_path":"/U' in row
        assert row.rstrip().endswith(('"}', "…}")), row


def test_counts_are_written_one_way() -> None:
    report = report_of("scenarios")
    f = report.fleet
    lines = render(report, 200)  # one sentence a line: wrapping aside
    text = "\n".join(lines)
    assert lines[0] == (
        f"{count(f['sessions'], 'session')}, {count(f['tool_calls'], 'tool call')}, "
        f"{count(f['events'], 'event')} from {count(len(report.inputs), 'input')}"
    )
    lp = f["loops"]
    assert lines[1].startswith(
        f"loops: {lp['sessions']} of {count(f['sessions'], 'session')} ({share(lp['sessions'], f['sessions'])}) "
        f"had a loop; the guard would have halted {lp['halted']} of them. {count(lp['calls_after_onset'], 'call')} "
        f"and {money(lp['cost_after_onset'])} were spent inside the loops"
    )
    assert f"{count(f['calls_per_session']['outliers'], 'outlier')} (sessions with more than" in text
    assert f"cost: {money(f['cost_usd'])}; {count(f['tokens'], 'token')}" in text
    assert "(s)" not in text
    assert "(ies)" not in text
    real = render(report_of("claude-code-real"), 80)
    assert real[0] == "3 sessions, 151 tool calls, 478 events from 3 inputs"
    assert real[1] == "loops: 0 of 3 sessions (0%) had a loop"
    assert "cost: $6.74 (in part estimated from tokens); 7,934,017 tokens" in real


def test_statistics_only_leaves_out_the_columns_it_cannot_know() -> None:
    report = report_of("scenarios", detectors=False)
    lines = render(report, 80)
    assert max(cells(line) for line in lines) <= 80
    assert lines[1] == "statistics only (--no-detectors): no verdicts"
    found = tables(lines, report)
    assert not {"stale", "loop", "spent", "loop rate"} & {c for t in found.values() for c in t["columns"]}
    assert found["sessions to look at first"]["columns"][:2] == ["session", "calls"]


def test_the_width_comes_from_the_caller_then_columns_then_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert report_width(io.StringIO()) == 80  # not a terminal
    monkeypatch.setenv("COLUMNS", "100")
    assert report_width(io.StringIO()) == 100
    assert report_width(io.StringIO(), 60) == 60
    assert report_width(io.StringIO(), 3) == MIN_WIDTH
    monkeypatch.setenv("COLUMNS", "wide")
    assert report_width(io.StringIO()) == 80


@pytest.mark.parametrize("columns", [None, "80", "64"])
def test_the_command_fits_80_columns_or_columns_when_not_a_terminal(columns: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "looptrap", "analyze", str(DATA["claude-code-real"])],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(cells(line) for line in lines) == int(columns or 80)  # the tables use the width they have
    assert lines[0] == "3 sessions, 151 tool calls, 478 events from 3 inputs"


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_on_a_terminal_the_terminal_width() -> None:
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 70, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "looptrap", "analyze", "--no-progress", str(DATA["claude-code-real"])],
            stdout=slave,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
        )
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=300) == 0
    finally:
        os.close(master)
    text = re.sub(r"\x1b\[[0-9;]*m", "", seen.decode()).replace("\r\n", "\n")
    assert "\x1b" not in text
    lines = text.splitlines()
    assert max(cells(line) for line in lines) == 70
    assert lines[0] == "3 sessions, 151 tool calls, 478 events from 3 inputs"


WIDE = "会話セッション"
HOSTILE_SESSIONS = [
    "s" * 250 + WIDE * 20 + "e" * 110,  # 500 characters, wide ones among them
    "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m-session\u202egnp.exe",
    "🔁" * 40 + "-loop",
    "ｆｕｌｌ" * 30 + "e\u0301" * 20,  # full-width letters, combining accents
]


def hostile_log(path: Path) -> Path:
    events: list[dict[str, Any]] = []
    for n, session in enumerate(HOSTILE_SESSIONS):
        tool = ["search_" + WIDE * 8, "\x1b[1mbold\x1b[0m\u202etool", "工具" * 30, "plain"][n]
        for i in range(1, 9):
            args = {"q": WIDE * 12 + "\x1b[31m", "path": "/データ/" * 20 + "ファイル.txt", "n": 1}
            events.append({"session": session, "type": "tool_call", "tool": tool, "args": args, "call_id": f"c{i}"})
            events.append({"session": session, "type": "tool_result", "tool": tool, "call_id": f"c{i}", "output": ""})
        events.append(
            {
                "session": session,
                "type": "tool_call",
                "tool": "report_blocked",
                "args": {"tried": ["x"], "needed": "必要なのは" * 30 + "\x1b[5mblink\u202e"},
                "call_id": "rb",
            }
        )
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_hostile_names_stay_within_the_width(tmp_path: Path, width: int) -> None:
    report = analyze([str(hostile_log(tmp_path / "hostile.jsonl"))])
    assert len(report.sessions) == 4
    assert report.looped
    lines = render(report, width)
    text = "\n".join(lines)
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "\x07" not in text
    for line in lines:
        assert cells(line) <= width, line
    found = tables(lines, report)
    assert set(found) == set(TITLES)
    for table in found.values():
        assert table["legend"].startswith("calls: ")
    assert "what the model said it needed (4 texts):" in " ".join(text.split())


def test_hostile_names_in_colour_stay_within_the_width(tmp_path: Path) -> None:
    report = analyze([str(hostile_log(tmp_path / "hostile.jsonl"))])
    out = io.StringIO()
    render_text(report, out, color=True, width=60)
    raw = out.getvalue()
    assert "\x1b[" in raw  # coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    assert "\x1b" not in plain  # no escape from the log got through
    assert max(cells(line) for line in plain.splitlines()) <= 60
