"""``looptrap analyze`` on input that is not what it seems: pipes, FIFOs, devices, records too long for memory,
arguments nested a thousand levels deep, link loops, cut and undecodable lines, a SIGTERM mid-way. A clear
message, the rest of the input read, bounded memory, nothing left behind (docs/analyze.md, "Safety")."""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import need

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)

from looptrap.analysis import trace  # noqa: E402
from looptrap.analysis.analyze import AnalyzeOptions, analyze  # noqa: E402
from looptrap.analysis.trace import is_oversize, lines_of  # noqa: E402

LOOPTRAP = [sys.executable, "-m", "looptrap.cli.main"]


def events(session: str = "s", calls: int = 4) -> bytes:
    out = []
    for i in range(calls):
        out.append({"session": session, "type": "tool_call", "tool": "search", "args": {"q": "a"}, "call_id": str(i)})
        out.append(
            {"session": session, "type": "tool_result", "tool": "search", "call_id": str(i), "output": "0 results"}
        )
    return b"".join(json.dumps(e).encode() + b"\n" for e in out)


def cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOOPTRAP, "analyze", *args], capture_output=True, text=True, timeout=120, **kw)


def test_a_pipe_is_read_once() -> None:
    """``looptrap analyze <(cat log)``: guessing the format must not eat the data."""
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "wb") as f:
            f.write(events())

    threading.Thread(target=feed, daemon=True).start()
    proc = cli("--json", f"/dev/fd/{read}", pass_fds=(read,))
    os.close(read)
    assert proc.returncode == 0, proc.stderr
    (s,) = json.loads(proc.stdout)["sessions"]
    assert s["tool_calls"] == 4


def test_a_named_fifo_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "calls.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(events())

    threading.Thread(target=feed, daemon=True).start()
    proc = cli("--json", str(fifo))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["fleet"]["tool_calls"] == 4


def test_a_stream_without_line_ends_stops_with_a_clear_message() -> None:
    started = time.monotonic()
    proc = cli("--format", "trace", "/dev/zero")
    assert proc.returncode == 2
    assert "no line end in" in proc.stderr
    assert time.monotonic() - started < 60


def test_lines_too_long_are_passed_over_without_holding_them() -> None:
    data = b"short\n" + b"x" * 5000 + b"\nafter\n" + b"y" * 3000
    got = list(lines_of(io.BytesIO(data), 1000))
    assert got[0] == b"short\n"
    assert is_oversize(got[1])
    assert got[2] == b"after\n"
    assert is_oversize(got[3])
    with pytest.raises(OSError, match="no line end"):
        list(lines_of(io.BytesIO(b"z" * 50_000), 1000))


def test_a_record_too_long_is_skipped_and_named_and_the_rest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trace, "MAX_RECORD", 1 << 20)
    huge = {"session": "s", "type": "tool_result", "tool": "search", "call_id": "x", "output": "z" * (2 << 20)}
    log = tmp_path / "log.jsonl"
    log.write_bytes(events("a") + json.dumps(huge).encode() + b"\n" + events("b"))
    report = analyze([str(log)], AnalyzeOptions())
    assert sorted((a.session, a.tool_calls) for a in report.sessions) == [("a", 4), ("b", 4)]
    assert report.skipped == 1
    assert report.errors[0].startswith(f"{log}:9: a record of 2,097,")


def test_a_decompression_bomb_stays_within_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(events("a"))
        for _ in range(200):  # 200 MiB of one line, a few hundred KiB on disk
            f.write(b"a" * (1 << 20))
        f.write(b"\n" + events("b"))
    assert bomb.stat().st_size < 2 << 20
    code = (
        "import resource, subprocess, sys; "
        f"p = subprocess.run({[*LOOPTRAP, 'analyze', '--json', str(bomb)]!r}, capture_output=True, text=True); "
        "print(p.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(p.stdout)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300).stdout
    code_line, rss, report = out.split("\n", 2)
    assert code_line == "0"
    assert int(rss) < 600 * 1024  # KiB: the 200 MiB line is never held whole
    assert sorted(s["tool_calls"] for s in json.loads(report)["sessions"]) == [4, 4]


def test_arguments_a_thousand_levels_deep(tmp_path: Path) -> None:
    args = '{"a":' * 1000 + "1" + "}" * 1000
    lines = [
        '{"session":"s","type":"tool_call","tool":"t","call_id":"1","args":' + args + "}",
        '{"session":"s","type":"tool_result","tool":"t","call_id":"1","output":' + args + "}",
    ]
    log = tmp_path / "deep.jsonl"
    log.write_text("\n".join(lines * 3) + "\n")
    for extra in ((), ("--no-detectors",)):
        proc = cli("--json", *extra, str(log))
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["fleet"]["tool_calls"] == 3
    replayed = subprocess.run([*LOOPTRAP, "replay", str(log)], capture_output=True, text=True, timeout=60)
    assert replayed.returncode == 0, replayed.stderr


def test_a_link_loop_is_walked_once(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "run"
    logs.mkdir(parents=True)
    (logs / "a.jsonl").write_bytes(events())
    (logs / "up").symlink_to("..")
    (logs / "up2").symlink_to("../..")
    for spec in (str(tmp_path / "logs"), str(tmp_path / "**" / "*.jsonl")):
        proc = cli("--json", spec)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert len(doc["inputs"]) == 1, doc["inputs"]
        assert doc["fleet"]["tool_calls"] == 4


def test_a_cut_or_undecodable_first_line_costs_that_line_only(tmp_path: Path) -> None:
    for first in (b'{"session":"s","type":"tool_ca', b'\xff\xfe{"session": "s"}'):
        log = tmp_path / "log.jsonl"
        log.write_bytes(first + b"\n" + events())
        proc = cli("--json", str(log))
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["skipped"] == 1
        assert doc["fleet"]["tool_calls"] == 4


def test_sigterm_leaves_no_temporary_files(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    log = tmp_path / "big.jsonl.gz"
    with gzip.open(log, "wb", compresslevel=1) as f:
        for i in range(4000):
            f.write(events(f"s{i}", 25))
    env = {**os.environ, "TMPDIR": str(temp)}
    proc = subprocess.Popen(
        [*LOOPTRAP, "analyze", "--no-progress", str(log)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not any(temp.iterdir()) and time.monotonic() < deadline:  # the decompressed copy is being written
        time.sleep(0.05)
    assert any(temp.iterdir()), "the analysis made no temporary folder"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert list(temp.iterdir()) == []
