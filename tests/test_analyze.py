"""``looptrap analyze``: numbers checked by hand on small logs, verdicts equal to replay's (one process and
several), the statistics of DuckDB equal to the detector pass's, the command's outputs and exit codes, and
bad, truncated and compressed input."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import need
from looptrap.analysis.analyze import AnalyzeOptions, analyze
from looptrap.analysis.analyze.fleet import robust_z
from looptrap.analysis.replay import replay_file

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "src" / "looptrap" / "testing" / "scenarios"
BENCH = ROOT / "benchmarks"

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)


def write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def hand_log() -> list[dict[str, Any]]:
    """Session h1: search a, search a, read x, then search a three times, the last two within 10 ms."""
    calls = [
        (0.0, "search", {"q": "a"}, "0 results"),
        (2.0, "search", {"q": "a"}, "0 results"),
        (4.0, "read", {"p": "x"}, "content of x, which is long enough to be something"),
        (6.0, "search", {"q": "a"}, "0 results"),
        (6.01, "search", {"q": "a"}, "0 results"),
        (6.02, "search", {"q": "a"}, "0 results"),
    ]
    out: list[dict[str, Any]] = []
    for i, (ts, tool, args, result) in enumerate(calls, 1):
        out.append({"session": "h1", "type": "tool_call", "tool": tool, "args": args, "call_id": f"c{i}", "ts": ts})
        out.append(
            {
                "session": "h1",
                "type": "tool_result",
                "tool": tool,
                "call_id": f"c{i}",
                "output": result,
                "ts": ts + 0.001,
                "usage": {"input_tokens": 90, "output_tokens": 10, "cost_usd": 0.01},
            }
        )
    out.append(
        {
            "session": "h2",
            "type": "tool_call",
            "tool": "report_blocked",
            "args": {"tried": ["x"], "needed": "the order id"},
        }
    )
    return out


def test_hand_computed_numbers(tmp_path: Path) -> None:
    report = analyze([str(write(tmp_path / "t.jsonl", hand_log()))])
    h1, h2 = report.sessions
    assert (h1.session, h1.tool_calls, h1.distinct_calls, h1.dedup_ratio) == ("h1", 6, 2, 3.0)
    # stale: 2 (a again, same result), 4, 5, 6; the longest stretch is 4-6
    assert (h1.longest_stale, h1.stale_from, h1.stale_to) == (3, 4, 6)
    assert h1.first_repeat == {
        "call": 2,
        "first_seen": 1,
        "signature": 'search {"q":"a"}',
        "result_before": "0 results",
    }
    # intervals 2, 2, 2, 0.01, 0.01: median 2, p10 0.01, p90 2
    iv = h1.intervals
    assert iv is not None
    assert (iv["n"], iv["median_s"], iv["p10_s"], iv["p90_s"]) == (5, 2.0, 0.01, 2.0)
    assert iv["spread"] == pytest.approx((2.0 - 0.01) / 2.0, abs=1e-4)
    assert iv["machine_band"] is False
    assert (h1.bursts, h1.burst_calls) == (1, 3)  # calls 4, 5, 6: 10 ms apart
    assert h1.new_in_second_half == 0
    assert not h1.converged
    assert (h1.tokens, h1.cost_usd) == (600, pytest.approx(0.06))
    loop = h1.loop
    assert loop is not None
    assert loop["kind"] == "repeat"
    assert loop["tool"] == "search"
    assert loop["first_intervention_call"] == 6  # the 3rd identical call in a row
    assert loop["onset_call"] == 4
    assert (loop["calls_after_onset"], loop["cost_after_onset"]) == (3, pytest.approx(0.03))
    assert (loop["calls_saved"], loop["cost_saved"]) == (1, pytest.approx(0.01))
    assert h1.timeline == {"width": 1, "calls": [1] * 6, "stale": [0, 1, 0, 1, 1, 1]}
    assert h2.needed == ["the order id"]
    f = report.fleet
    assert (f["sessions"], f["tool_calls"], f["events"]) == (2, 7, 13)
    assert f["needed"] == [{"session": "h2", "text": "the order id"}]
    assert f["loops"]["sessions"] == 1
    assert f["shapes"] == {"repeat": 1}
    top = f["top_signatures"][0]
    assert (top["tool"], top["args"], top["calls"], top["sessions"], top["max_in_session"]) == (
        "search",
        '{"q":"a"}',
        5,
        1,
        5,
    )
    search = next(t for t in f["tools"] if t["tool"] == "search")
    assert (search["calls"], search["sessions"], search["loop_sessions"], search["empty"]) == (5, 1, 1, 5)
    assert search["signal_rate"] == 1.0
    assert search["empty_rate"] == 1.0


def test_statistics_only_equal_the_detector_pass(tmp_path: Path) -> None:
    """DuckDB (``--no-detectors``) and the Python pass agree on what both compute."""
    path = write(tmp_path / "t.jsonl", hand_log())
    full = analyze([str(path)])
    stats = analyze([str(path)], AnalyzeOptions(detectors=False))
    assert not stats.detectors
    assert stats.fleet["loops"] is None
    for a, b in zip(full.sessions, stats.sessions, strict=True):
        da, db = a.to_dict(), b.to_dict()
        for key in (
            "session",
            "tool_calls",
            "distinct_calls",
            "new_in_second_half",
            "intervals",
            "bursts",
            "tokens",
            "needed",
        ):
            assert da[key] == db[key], key
        assert da["cost_usd"] == pytest.approx(db["cost_usd"])
        assert db["loop"] is None
        assert db["replay"] is None
        assert db["longest_stale"] is None
    assert full.fleet["top_signatures"] == stats.fleet["top_signatures"]
    assert full.fleet["calls_per_session"] == stats.fleet["calls_per_session"]


def test_robust_outliers() -> None:
    calls = [10, 11, 9, 10, 12, 8, 10, 11, 9, 10, 500]
    zs, med, _ = robust_z(calls)
    assert med == 10
    assert [z is not None and z > 3.5 for z in zs] == [False] * 10 + [True]
    assert robust_z([5, 5, 5]) == ([None, None, None], 5, 0.0)


def test_fleet_marks_the_outlier(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    for s, n in [*((f"s{i}", 8 + i % 5) for i in range(20)), ("runaway", 900)]:
        events += [{"session": s, "type": "tool_call", "tool": "read", "args": {"i": i}} for i in range(n)]
    report = analyze([str(write(tmp_path / "t.jsonl", events))], AnalyzeOptions(detectors=False))
    marked = [a.session for a in report.sessions if a.outlier]
    assert marked == ["runaway"]
    cps = report.fleet["calls_per_session"]
    assert cps["median"] == 10
    assert cps["max"] == 900
    assert cps["outliers"] == 1
    assert 12 < cps["outlier_above"] < 900


def _replayed(path: Path) -> list[dict[str, Any]]:
    reports, _ = replay_file(str(path))
    return [r.to_dict() for r in reports]


def fleet_log(tmp_path: Path, events: int = 6_000) -> Path:
    sys.path.insert(0, str(BENCH))
    try:
        import analyze as bench  # benchmarks/analyze.py
    finally:
        sys.path.remove(str(BENCH))
    path = tmp_path / "fleet.jsonl"
    bench.generate(path, events, seed=3)
    return path


@pytest.mark.parametrize("jobs", [1, 2])
def test_verdicts_equal_replay(tmp_path: Path, jobs: int) -> None:
    """The same engine, the same verdicts: on the scenario corpus and on a synthetic fleet (with loops of every
    shape and a pathological session), with sessions finished and freed as their last event is read."""
    paths = [*sorted(SCENARIOS.glob("*.jsonl")), ROOT / "examples" / "trace.jsonl", fleet_log(tmp_path)]
    for path in paths:
        report = analyze([str(path)], AnalyzeOptions(jobs=jobs))
        expected = {r["session"]: r for r in _replayed(path)}
        got = {a.session: a.replay for a in report.sessions}
        assert got == expected, path.name
        assert [a.session for a in report.sessions] == list(expected), path.name  # replay's order
    assert any(a.loop and a.loop["halted_call"] for a in report.sessions)


def test_user_messages_and_text_reach_the_detectors(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    for k in range(4):
        events.append({"session": "c", "type": "tool_call", "tool": "lookup", "args": {"id": 1}, "call_id": f"k{k}"})
        events.append({"session": "c", "type": "tool_result", "tool": "lookup", "call_id": f"k{k}", "output": "none"})
        events.append({"session": "c", "type": "text", "text": "Let me check that again for you."})
        events.append({"session": "c", "type": "turn_end", "usage": {"cost_usd": 0.5}})
        events.append({"session": "c", "type": "user_message", "text": "Please look again."})
    path = write(tmp_path / "t.jsonl", events)
    report = analyze([str(path)])
    assert report.sessions[0].replay == _replayed(path)[0]
    assert report.sessions[0].cost_usd == pytest.approx(2.0)


# -- the command -----------------------------------------------------------------------------------------


class Ran:
    """What a run of the command gave: its exit code, stdout and stderr."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def looptrap(*args: str, stdin: bytes | None = None) -> Ran:
    """The command, run in this process (the same entry point; a fresh interpreter costs a second a run)."""
    from looptrap.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        code = main(list(args))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Ran(code, out.getvalue(), err.getvalue())


def test_the_installed_command_exits_3_on_a_loop(tmp_path: Path) -> None:
    path = write(tmp_path / "loop.jsonl", hand_log())
    proc = subprocess.run(
        [sys.executable, "-m", "looptrap", "analyze", str(path), "--fail-on", "loop"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert "2 sessions, 7 tool calls" in proc.stdout


def _on_a_terminal(args: list[str], stdin: Path) -> tuple[int, bytes, bytes]:
    """The command in a subprocess whose stderr is a terminal (a pseudo-terminal): exit code, stdout, stderr."""
    import os
    import pty
    import threading

    master, slave = pty.openpty()
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    with stdin.open("rb") as fin:
        proc = subprocess.run(
            [sys.executable, "-m", "looptrap", "analyze", *args],
            stdin=fin,
            stdout=subprocess.PIPE,
            stderr=slave,
            cwd=ROOT,
            timeout=300,
            check=False,
        )
    os.close(slave)
    reader.join(10)
    os.close(master)
    return proc.returncode, proc.stdout, b"".join(seen)


def test_progress_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal, a large input or a pipe shows a spinner while DuckDB reads, then a progress bar (on
    stderr; stdout is the same); ``--no-progress`` and a small file show none."""
    log = fleet_log(tmp_path, 4_000)
    code, out, err = _on_a_terminal(["-", "--json"], log)
    assert code == 0, err
    assert b"computing the statistics" in err
    assert b"analysing" in err
    assert orjson.loads(out)["fleet"] == orjson.loads(looptrap("analyze", str(log), "--json").stdout)["fleet"]
    for args in (["-", "--json", "--no-progress"], [str(log), "--json"]):
        code, out, err = _on_a_terminal(args, log)
        assert code == 0, err
        assert b"analysing" not in err
        assert b"computing the statistics" not in err


def test_fail_on_exit_codes(tmp_path: Path) -> None:
    looping = write(tmp_path / "loop.jsonl", hand_log())
    healthy = write(
        tmp_path / "ok.jsonl",
        [{"session": "ok", "type": "tool_call", "tool": "read", "args": {"p": i}} for i in range(5)],
    )
    assert looptrap("analyze", str(looping)).returncode == 0
    assert looptrap("analyze", str(looping), "--fail-on", "loop").returncode == 3
    assert looptrap("analyze", str(healthy), "--fail-on", "loop").returncode == 0
    assert looptrap("analyze", str(looping), "--fail-on", "halt").returncode == 0  # advised, never halted
    halted = write(tmp_path / "halt.jsonl", [e for _ in range(2) for e in hand_log() if e["session"] == "h1"])
    assert looptrap("analyze", str(halted), "--fail-on", "halt").returncode == 3
    bad = looptrap("analyze", str(tmp_path / "missing.jsonl"))
    assert bad.returncode == 2
    assert "no such file" in bad.stderr
    assert not bad.stderr.startswith("Traceback")


def test_an_output_that_cannot_be_written_fails_first(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", hand_log())
    nowhere = tmp_path / "no-such-dir" / "r.html"
    out = looptrap("analyze", str(path), "--html", str(nowhere))
    assert out.returncode == 2
    assert out.stderr == f"looptrap analyze: --html {nowhere}: No such file or directory\n"
    assert out.stdout == ""  # nothing analysed
    csv_path = tmp_path / "s.csv"
    missing = looptrap("analyze", str(tmp_path / "missing.jsonl"), "--csv", str(csv_path))
    assert missing.returncode == 2
    assert not csv_path.exists()  # a failed run leaves no empty output behind


def test_outputs_json_csv_html_and_the_terminal(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", hand_log())
    out = looptrap("analyze", str(path), "--json", "--csv", str(tmp_path / "s.csv"), "--html", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    doc = orjson.loads(out.stdout)
    assert doc["version"] == 1
    assert doc["fleet"]["sessions"] == 2
    assert doc["sessions"][0]["loop"]["first_intervention_call"] == 6
    rows = list(csv.DictReader(io.StringIO((tmp_path / "s.csv").read_text())))
    assert [r["session"] for r in rows] == ["h1", "h2"]
    assert rows[0]["longest_stale"] == "3"
    assert rows[0]["loop_kind"] == "repeat"
    assert rows[0]["calls_after_onset"] == "3"
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page
    assert "https://" not in page
    text = looptrap("analyze", str(path))
    assert "2 sessions, 7 tool calls" in text.stdout
    assert "repeat #4->#6 (search)" in text.stdout
    assert "the order id" in text.stdout
    csv_out = looptrap("analyze", str(path), "--csv", "-")
    assert csv_out.stdout.splitlines()[0].startswith("session,source,tool_calls")


def test_stdin_globs_directories(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    write(tmp_path / "d" / "a.jsonl", hand_log())
    write(tmp_path / "d" / "b.jsonl", [{"session": "z", "type": "tool_call", "tool": "t", "args": {}}])
    piped = looptrap("analyze", "-", "--json", stdin=(tmp_path / "d" / "a.jsonl").read_bytes())
    assert piped.returncode == 0, piped.stderr
    assert orjson.loads(piped.stdout)["inputs"] == [{"name": "<stdin>", "format": "trace"}]
    for spec in (str(tmp_path / "d"), str(tmp_path / "d" / "*.jsonl")):
        doc = orjson.loads(looptrap("analyze", spec, "--json").stdout)
        assert [s["session"] for s in doc["sessions"]] == ["h1", "h2", "z"]


def test_malformed_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    lines = [orjson.dumps(e).decode() for e in hand_log()]
    lines[3:3] = [
        "{not json",
        '{"type": "tool_call", "tool": "x"}',
        "[1, 2]",
        '{"session": "h1", "type": "tool_call"}',
        '{"session": "h1", "type": "turn_end", "ts": "yesterday"}',
        '{"session": "h1", "type": "turn_end", "seq": "7"}',
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for extra in ((), ("--no-detectors",)):
        out = looptrap("analyze", str(path), "--json", *extra)
        assert out.returncode == 0, out.stderr
        doc = orjson.loads(out.stdout)
        assert doc["skipped"] == 6
        assert f"{path}:4: not valid JSON" in out.stderr
        assert f"{path}:5: missing 'session'" in out.stderr
        assert f"{path}:7: a tool_call needs 'tool'" in out.stderr
        assert f"{path}:8: 'ts' is not a number of seconds" in out.stderr
        assert doc["errors"][5] == f"{path}:9: 'seq' must be an integer"  # stderr lists the first 5
        assert "skipped 6 malformed records" in out.stderr
        assert doc["fleet"]["tool_calls"] == 7
    strict = looptrap("analyze", str(path), "--strict")
    assert strict.returncode == 2
    assert strict.stderr.startswith(f"{path}:4: not valid JSON")


def test_compressed_and_truncated_input(tmp_path: Path) -> None:
    need("zstandard", importlib.util.find_spec("zstandard") is not None)
    import zstandard

    raw = b"".join(orjson.dumps(e) + b"\n" for e in hand_log())
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(raw))
    zst = tmp_path / "t.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(raw))
    plain = analyze([str(write(tmp_path / "t.jsonl", hand_log()))])
    for path in (gz, zst):
        report = analyze([str(path)])
        assert [a.replay for a in report.sessions] == [a.replay for a in plain.sessions]
        assert report.inputs == [{"name": str(path), "format": "trace"}]
    cut = tmp_path / "cut.jsonl.gz"
    data = gzip.compress(raw * 50)
    cut.write_bytes(data[: len(data) // 2])
    out = looptrap("analyze", str(cut), "--json")
    assert out.returncode == 0, out.stderr
    assert "cannot read on from here" in out.stderr
    doc = orjson.loads(out.stdout)
    assert doc["skipped"] == 1
    assert doc["fleet"]["tool_calls"] > 7
    assert looptrap("analyze", str(cut), "--strict").returncode == 2


def test_hostile_text_is_made_printable(tmp_path: Path) -> None:
    evil = "s\x1b[31m\u202eevil</td><script>alert(1)</script>"
    path = write(tmp_path / "t.jsonl", [{"session": evil, "type": "tool_call", "tool": "t\x1b]0;x\x07", "args": {}}])
    out = looptrap("analyze", str(path), "--html", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout
    assert "\u202e" not in out.stdout
    page = (tmp_path / "r.html").read_text()
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)" in page
