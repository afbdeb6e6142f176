"""The ``looptrap`` command, run as a real subprocess (docs/trace-format.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

SIGNAL_KEYS = {"call_index", "seq", "kind", "action", "reason", "tool", "message"}
REPORT_KEYS = {"session", "tool_calls", "first_signal", "first_intervention", "halted_at", "signals"}


def looptrap(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def lines(events: Sequence[dict[str, Any] | str]) -> str:
    return "".join((e if isinstance(e, str) else orjson.dumps(e).decode()) + "\n" for e in events)


def write(tmp_path: Path, events: Sequence[dict[str, Any] | str], name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(lines(events), encoding="utf-8")
    return path


def call(session: str, tool: str, args: Any, call_id: str | None = None, **extra: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"session": session, "type": "tool_call", "tool": tool, "args": args, **extra}
    if call_id is not None:
        ev["call_id"] = call_id
    return ev


def result(session: str, tool: str, output: Any, call_id: str | None = None, **extra: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"session": session, "type": "tool_result", "tool": tool, "output": output, **extra}
    if call_id is not None:
        ev["call_id"] = call_id
    return ev


def looping(session: str, n: int, *, seq_from: int | None = None) -> list[dict[str, Any]]:
    """n identical searches that find nothing, each with its result."""
    out: list[dict[str, Any]] = []
    for k in range(n):
        c = call(session, "search_docs", {"query": "refund policy"}, f"{session}-c{k}")
        r = result(session, "search_docs", "0 results", f"{session}-c{k}")
        if seq_from is not None:
            c["seq"] = seq_from + 2 * k
            r["seq"] = seq_from + 2 * k + 1
        out += [c, r]
    return out


def healthy(session: str, n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(n):
        out.append(call(session, "read_file", {"path": f"f{k}.py"}, f"{session}-r{k}"))
        out.append(result(session, "read_file", f"contents of f{k}", f"{session}-r{k}"))
        out.append({"session": session, "type": "turn_end", "state": {"read": k}, "usage": None, "error": None})
    return out


def reports(stdout: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stdout.splitlines() if line.strip()]


# -- output -----------------------------------------------------------------------------------------------


def test_table_output(tmp_path: Path) -> None:
    path = write(tmp_path, looping("s1", 5) + healthy("s2", 4))
    proc = looptrap("replay", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    header = out[0].split()
    assert header[:2] == ["session", "calls"]
    assert "first intervention" in out[0]
    assert "halted at" in out[0]
    assert "signals" in out[0]
    s1 = next(line for line in out if line.startswith("s1 "))
    s2 = next(line for line in out if line.startswith("s2 "))
    assert "#3 advise loop_repeat" in s1
    assert "#5 loop_repeat" in s1
    assert s1.split()[1] == "5"
    assert s2.split()[1:] == ["4", "-", "-", "0"]
    assert out[-1] == "2 sessions, 9 tool calls: 1 of 2 sessions (50%) with an intervention, 1 halted"


def test_json_output_fields(tmp_path: Path) -> None:
    events: list[dict[str, Any] | str] = [*looping("s1", 7, seq_from=100), *healthy("s2", 2)]
    path = write(tmp_path, events)
    proc = looptrap("replay", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    got = reports(proc.stdout)
    assert [r["session"] for r in got] == ["s1", "s2"]
    s1, s2 = got
    assert set(s1) == REPORT_KEYS
    assert set(s2) == REPORT_KEYS
    assert s1["tool_calls"] == 7  # calls after the halt still count
    assert [(s["call_index"], s["action"]) for s in s1["signals"]] == [(3, "advise"), (4, "block"), (5, "halt")]
    for s in s1["signals"]:
        assert set(s) == SIGNAL_KEYS
        assert s["kind"] == "repeat"
        assert s["reason"] == "loop_repeat"
        assert s["tool"] == "search_docs"
        assert isinstance(s["message"], str)
        assert s["message"]
    # seq: the event's own seq (call k has seq 100 + 2k)
    assert [s["seq"] for s in s1["signals"]] == [104, 106, 108]
    assert s1["first_signal"] == s1["signals"][0]
    assert s1["first_intervention"] == s1["signals"][0]
    assert s1["halted_at"] == s1["signals"][2]
    assert s2 == {
        "session": "s2",
        "tool_calls": 2,
        "first_signal": None,
        "first_intervention": None,
        "halted_at": None,
        "signals": [],
    }


def test_json_seq_defaults_to_the_line_number_and_turn_verdicts(tmp_path: Path) -> None:
    events: list[dict[str, Any] | str] = [
        call("s1", "read_file", {"path": "a"}),  # line 1
        result("s1", "read_file", "a"),  # line 2
        {"session": "s1", "type": "turn_end"},  # line 3: the turn had a call
        {"session": "s1", "type": "turn_end", "error": "no valid tool call"},  # line 4
        {"session": "s1", "type": "text", "text": "Let me think."},  # line 5
        {"session": "s1", "type": "turn_end"},  # line 6
        {"session": "s1", "type": "turn_end"},  # line 7: the 3rd idle turn in a row
    ]
    proc = looptrap("replay", str(write(tmp_path, events)), "--json")
    assert proc.returncode == 0, proc.stderr
    (s1,) = reports(proc.stdout)
    (signal,) = s1["signals"]
    assert signal == {
        "call_index": 1,
        "seq": 7,
        "kind": "no_action",
        "action": "advise",
        "reason": "no_action",
        "tool": None,
        "message": signal["message"],
    }


def test_stdin(tmp_path: Path) -> None:
    text = lines([*looping("s1", 4), *healthy("s2", 1)])
    from_stdin = looptrap("replay", "-", "--json", stdin=text)
    from_file = looptrap("replay", str(write(tmp_path, [text.rstrip("\n")])), "--json")
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert reports(from_stdin.stdout) == reports(from_file.stdout)
    assert reports(from_stdin.stdout)[0]["first_intervention"]["call_index"] == 3


# -- errors -----------------------------------------------------------------------------------------------

MALFORMED = {
    "not json": "{not json",
    "not an object": "[1, 2]",
    "no session": '{"type": "tool_call", "tool": "a"}',
    "empty session": '{"session": "", "type": "tool_call", "tool": "a"}',
    "no type": '{"session": "s1", "tool": "a"}',
    "call without tool": '{"session": "s1", "type": "tool_call", "args": {}}',
    "result without tool": '{"session": "s1", "type": "tool_result", "output": "x"}',
    "seq not an integer": '{"session": "s1", "type": "turn_end", "seq": "3"}',
    "seq a float": '{"session": "s1", "type": "turn_end", "seq": 1.5}',
    "ts not a number": '{"session": "s1", "type": "turn_end", "ts": "yesterday"}',
    "ts a bool": '{"session": "s1", "type": "turn_end", "ts": true}',
}


@pytest.mark.parametrize("bad", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_line_stops_with_exit_2(tmp_path: Path, bad: str) -> None:
    path = write(tmp_path, [call("s1", "a", {}), bad, call("s1", "b", {})])
    proc = looptrap("replay", str(path))
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"{path}:2: ")
    assert len(err[0]) > len(f"{path}:2: ")  # a reason follows


def test_malformed_line_on_stdin() -> None:
    proc = looptrap("replay", "-", stdin=lines([call("s1", "a", {}), "", "nope"]))
    assert proc.returncode == 2
    assert proc.stderr.startswith("<stdin>:3: not valid JSON")


def test_missing_file() -> None:
    proc = looptrap("replay", "/nonexistent/trace.jsonl")
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr


def test_skip_invalid(tmp_path: Path) -> None:
    path = write(tmp_path, [*looping("s1", 2), MALFORMED["not json"], *looping("s1", 2)[:2], MALFORMED["no session"]])
    proc = looptrap("replay", str(path), "--json", "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    (s1,) = reports(proc.stdout)
    assert s1["tool_calls"] == 3
    assert s1["first_intervention"]["call_index"] == 3
    assert "skipped 2 invalid lines" in proc.stderr
    assert f"first: {path}:5: not valid JSON" in proc.stderr


# -- parallel replay: each process reads every line and keeps its own sessions ----------------------------


def many_sessions(n: int) -> list[dict[str, Any] | str]:
    """n sessions, interleaved, some looping, with nested "session" keys; the first 5 have unknown types."""
    per = [
        [
            *([{"session": f"s{k}", "type": f"note_{k}"}] if k < 5 else []),
            *(looping(f"s{k}", 4) if k % 3 == 0 else healthy(f"s{k}", 3)),
            call(f"s{k}", "open_session", {"session": f"other-{k}"}),
            result(f"s{k}", "open_session", {"session": f"other-{k}", "ok": True}),
        ]
        for k in range(n)
    ]
    out: list[dict[str, Any] | str] = []
    for i in range(max(len(p) for p in per)):
        out += [p[i] for p in per if i < len(p)]
    return out


def test_parallel_replay_equals_one_process(tmp_path: Path) -> None:
    path = write(tmp_path, many_sessions(40))
    one = looptrap("replay", str(path), "--json", "--jobs", "1")
    two = looptrap("replay", str(path), "--json", "--jobs", "2")
    three = looptrap("replay", str(path), "--json", "--jobs", "3")
    assert one.returncode == two.returncode == three.returncode == 0, two.stderr
    assert reports(one.stdout) == reports(two.stdout) == reports(three.stdout)
    assert len(reports(one.stdout)) == 40
    for proc in (one, two, three):  # every unknown type warned once, whichever process met it
        warned = sorted(line for line in proc.stderr.splitlines() if "unknown event type" in line)
        assert len(warned) == 5, proc.stderr
        assert all(f"'note_{k}'" in w for k, w in enumerate(warned))


def test_parallel_replay_reports_the_first_malformed_line(tmp_path: Path) -> None:
    events = many_sessions(20)
    bad_lines = {7: '{"session": "s3", "type": "turn_end", "seq": "x"}', 30: "{not json", 50: MALFORMED["no type"]}
    for line in sorted(bad_lines):
        events.insert(line - 1, bad_lines[line])
    path = write(tmp_path, events)
    for jobs in ("1", "2", "3"):
        proc = looptrap("replay", str(path), "--jobs", jobs)
        assert proc.returncode == 2
        err = [line for line in proc.stderr.splitlines() if not line.startswith("looptrap: warning:")]
        assert err == [f"{path}:7: 'seq' must be an integer"], (jobs, proc.stderr)
        skipped = looptrap("replay", str(path), "--json", "--skip-invalid", "--jobs", jobs)
        assert skipped.returncode == 0, skipped.stderr
        assert f"skipped 3 invalid lines; first: {path}:7:" in skipped.stderr, (jobs, skipped.stderr)


def test_unknown_event_type_is_skipped(tmp_path: Path) -> None:
    events: list[dict[str, Any] | str] = [
        {"session": "s1", "type": "thinking", "text": "hmm"},
        *looping("s1", 3),
        {"session": "s1", "type": "thinking", "text": "hmm again"},
        {"session": "s1", "type": "handoff"},
    ]
    proc = looptrap("replay", str(write(tmp_path, events)), "--json")
    assert proc.returncode == 0, proc.stderr
    (s1,) = reports(proc.stdout)
    assert s1["tool_calls"] == 3
    assert s1["first_intervention"]["call_index"] == 3


def test_unknown_event_type_warns_once_per_type(tmp_path: Path) -> None:
    """docs/trace-format.md: "Unknown event types are skipped with one warning per type"."""
    events: list[dict[str, Any] | str] = [
        {"session": "s1", "type": "thinking"},
        {"session": "s1", "type": "thinking"},
        {"session": "s2", "type": "thinking"},
        {"session": "s1", "type": "handoff"},
        *looping("s1", 1),
    ]
    proc = looptrap("replay", str(write(tmp_path, events)), "--json")
    assert proc.returncode == 0
    assert proc.stderr.count("thinking") == 1, proc.stderr
    assert proc.stderr.count("handoff") == 1, proc.stderr


# -- pairing and sessions ---------------------------------------------------------------------------------


def test_result_without_call_id_pairs_with_the_latest_open_call_of_its_tool(tmp_path: Path) -> None:
    a = {"query": "a"}
    events: list[dict[str, Any] | str] = [
        call("s1", "search_docs", a),
        result("s1", "search_docs", "0 results"),
        call("s1", "search_docs", {"query": "b"}),  # stays open
        call("s1", "search_docs", a),
        result("s1", "search_docs", "0 results"),  # pairs with the latest open call: a, not b
        call("s1", "search_docs", a),  # the 3rd a in a row (in results): repeat
        result("s1", "search_docs", "0 results"),
        result("s1", "search_docs", "0 results"),  # pairs with b
        result("s1", "search_docs", "0 results"),  # nothing open: an orphan
    ]
    proc = looptrap("replay", str(write(tmp_path, events)), "--json")
    assert proc.returncode == 0, proc.stderr
    (s1,) = reports(proc.stdout)
    assert s1["tool_calls"] == 4
    assert s1["first_intervention"] is not None
    assert (s1["first_intervention"]["call_index"], s1["first_intervention"]["kind"]) == (4, "repeat")
    assert s1["orphan_results"] == 1


def test_call_ids_pair_out_of_order(tmp_path: Path) -> None:
    events: list[dict[str, Any] | str] = [
        call("s1", "search_docs", {"query": "x"}, "c1"),
        call("s1", "read_file", {"path": "y"}, "c2"),
        result("s1", "read_file", "file y", "c2"),
        result("s1", "search_docs", "0 results", "c1"),
        result("s1", "search_docs", "0 results", "c9"),  # no such call: an orphan
    ]
    proc = looptrap("replay", str(write(tmp_path, events)), "--json")
    (s1,) = reports(proc.stdout)
    assert s1["tool_calls"] == 2
    assert s1["orphan_results"] == 1
    assert s1["signals"] == []


def test_interleaved_sessions_are_replayed_separately(tmp_path: Path) -> None:
    a, b = looping("a", 3), looping("b", 3)
    c = healthy("c", 3)
    events: list[dict[str, Any] | str] = [{"session": 7, "type": "tool_call", "tool": "read_file", "args": {}}]
    for k in range(len(c)):  # a, b and c event by event
        events += [e[k] for e in (a, b, c) if k < len(e)]
    proc = looptrap("replay", str(write(tmp_path, events)), "--json")
    assert proc.returncode == 0, proc.stderr
    got = {r["session"]: r for r in reports(proc.stdout)}
    assert list(got) == ["7", "a", "b", "c"]  # order of first appearance
    for name in ("a", "b"):
        assert got[name]["tool_calls"] == 3
        assert got[name]["first_intervention"]["call_index"] == 3  # not earlier: the sessions do not mix
        assert len(got[name]["signals"]) == 1
    assert got["c"]["signals"] == []
    assert got["7"]["tool_calls"] == 1


# -- demo -------------------------------------------------------------------------------------------------


def test_demo() -> None:
    proc = looptrap("demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    text = out.splitlines()
    at = next(i for i, line in enumerate(text) if line.startswith("scenario"))
    header = text[at]
    assert "without guard" in header
    assert "with looptrap" in header
    assert "Tool calls:" in out
    assert "saved" in out
    rows = text[at + 2 : text.index("", at)]
    assert len(rows) >= 5
    for row in rows:  # both columns on every row: calls, then how the run ended
        without, with_guard = (
            row[len(c) :] for c in (header[: header.index("without")], header[: header.index("with ")])
        )
        assert without.split()[0].isdigit()
        assert with_guard.split()[0].isdigit()


def test_demo_json() -> None:
    proc = looptrap("demo", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = reports(proc.stdout)
    assert rows
    for row in rows:
        assert set(row) == {"scenario", "without_guard", "with_guard"}
        assert row["with_guard"]["calls"] <= row["without_guard"]["calls"]
        if row["scenario"].startswith("healthy"):  # untouched: the same run with and without the guard
            assert row["with_guard"] == {**row["without_guard"], "reason": None}
        else:  # every loop shape is stopped well before the turn cap that stops it without the guard
            assert row["without_guard"]["outcome"] == "turn cap"
            assert row["with_guard"]["outcome"] in ("reported blocked", "halted")
            assert row["with_guard"]["calls"] <= 10


def test_iso_timestamps_are_read_as_seconds(tmp_path: Path) -> None:
    from looptrap.analysis.trace import parse_event

    a = parse_event(b'{"session": "s", "type": "text", "ts": "2026-11-30T05:19:53Z"}', "t:1", 1)
    b = parse_event(b'{"session": "s", "type": "text", "ts": 1796015993.0}', "t:2", 2)
    assert a.ts == b.ts
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"session": "s", "type": "text", "ts": "yesterday"}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", "replay", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert f"{bad}:1: 'ts' is not a number of seconds nor an ISO 8601 time" in proc.stderr


# -- the command itself: version, python -m, help, option values -------------------------------------------


def test_version() -> None:
    import looptrap as package

    proc = looptrap("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"looptrap {package.__version__}"


def test_python_dash_m_looptrap() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "looptrap", "demo", "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert reports(proc.stdout) == reports(looptrap("demo", "--json").stdout)
    usage = subprocess.run([sys.executable, "-m", "looptrap", "--help"], capture_output=True, text=True, timeout=60)
    assert usage.stdout.startswith("usage: looptrap ")


SUBCOMMANDS = [
    ["replay"],
    ["demo"],
    ["hook"],
    ["mcp-proxy"],
    ["sessions"],
    ["sessions", "list"],
    ["sessions", "show"],
    ["sessions", "reset"],
]


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_help_has_a_description(words: list[str]) -> None:
    proc = looptrap(*words, "--help")
    assert proc.returncode == 0, proc.stderr
    paragraphs = [p.strip() for p in proc.stdout.split("\n\n")]
    assert paragraphs[0].startswith(f"usage: looptrap {' '.join(words)}")
    described = paragraphs[1]  # argparse puts the description between the usage and the arguments
    assert not described.startswith(("positional arguments:", "options:", "optional arguments:")), proc.stdout
    assert len(described) > 20


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_at_least_one(tmp_path: Path, jobs: str) -> None:
    proc = looptrap("replay", str(write(tmp_path, looping("s1", 3))), "--jobs", jobs)
    assert proc.returncode == 2
    assert "--jobs" in proc.stderr
    assert "at least 1" in proc.stderr or "invalid" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- no traceback: a reader that goes away, a closed stdin ---------------------------------------------------


def gone_reader(args: Sequence[str], stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with its stdout on a pipe whose reader has already gone (``| head -1`` once head exits)."""
    read, write_end = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "looptrap.cli.main", *args],
            stdin=stdin,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("json_output", [False, True], ids=["table", "json"])
def test_a_closed_pipe_is_no_traceback(tmp_path: Path, json_output: bool) -> None:
    path = write(tmp_path, many_sessions(30))
    flag = ["--json"] if json_output else []
    for args in (["demo", *flag], ["replay", str(path), *flag], ["replay", str(path), "--jobs", "2", *flag]):
        proc = gone_reader(args)
        err = proc.stderr.decode()
        assert "Traceback" not in err, (args, err)
        assert "BrokenPipeError" not in err, (args, err)
        assert "Exception ignored" not in err, (args, err)
        assert proc.returncode == 141, (args, proc.returncode, err)  # as if killed by SIGPIPE, like `yes | head -1`


def test_head_one_in_a_shell(tmp_path: Path) -> None:
    path = write(tmp_path, many_sessions(30))
    run = f"{sys.executable} -m looptrap.cli.main"
    cmd = f"{run} demo | head -1; {run} replay {path} | head -1"
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0].startswith("Scripted agents")
    assert proc.stdout.splitlines()[1].startswith("session")
    assert "Traceback" not in proc.stderr, proc.stderr


def closed_stdin(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI started with its stdin closed (``<&-``)."""
    cmd = " ".join([sys.executable, "-m", "looptrap.cli.main", *args]) + " <&-"
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)


def test_replay_of_a_closed_stdin_is_a_clear_error() -> None:
    proc = closed_stdin("replay", "-")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2
    assert "stdin" in proc.stderr


def test_hook_with_a_closed_stdin_does_not_crash(tmp_path: Path) -> None:
    proc = closed_stdin("hook", "claude-code", "--store", f"sqlite:///{tmp_path}/h.db")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0  # a hook failure allows the call (docs/hooks.md)
    slow = closed_stdin("hook", "claude-code", "--store", f"sqlite:///{tmp_path}/h.db", "--session", "x", "--no-such")
    assert "Traceback" not in slow.stderr, slow.stderr


# -- input: pipes, gzip, zstd, escaped keys ------------------------------------------------------------------


def with_bad_lines(events: list[dict[str, Any] | str]) -> list[dict[str, Any] | str]:
    out = list(events)
    for at in (3, 40, 90, 150):
        out.insert(at, "{not json")
    return out


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="needs /dev/fd (a pipe passed as a file name)")
@pytest.mark.parametrize("jobs", ["2", "3"])
def test_replay_of_a_pipe_with_jobs_reads_it_once(tmp_path: Path, jobs: str) -> None:
    """``looptrap replay <(zcat t.gz) --jobs N``: the pipe is read by one reader, not split between workers."""
    text = lines(with_bad_lines(many_sessions(40))).encode()
    expected = looptrap("replay", str(write(tmp_path, [text.decode().rstrip("\n")])), "--json", "--skip-invalid")
    assert "skipped 4 invalid lines" in expected.stderr
    read, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as fh:
            fh.write(text)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "looptrap.cli.main",
                "replay",
                f"/dev/fd/{read}",
                "--json",
                "--skip-invalid",
                "--jobs",
                jobs,
            ],
            pass_fds=(read,),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(read)
        writer.join()
    assert proc.returncode == 0, proc.stderr
    assert reports(proc.stdout) == reports(expected.stdout)
    assert "skipped 4 invalid lines" in proc.stderr, proc.stderr
    assert "not a regular file" not in proc.stderr  # read once, and dealt out to the processes


def test_fifo_is_read_once(tmp_path: Path) -> None:
    text = lines(with_bad_lines(many_sessions(20)))
    expected = looptrap("replay", str(write(tmp_path, [text.rstrip("\n")])), "--json", "--skip-invalid")
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=(text,))
    writer.start()
    try:
        proc = looptrap("replay", str(fifo), "--json", "--skip-invalid", "--jobs", "2")
    finally:
        if writer.is_alive():  # the CLI never opened it: let the writer go
            with open(fifo, "rb") as fh:
                fh.read()
        writer.join()
    assert proc.returncode == 0, proc.stderr
    assert reports(proc.stdout) == reports(expected.stdout)


def escaped_key_events(n: int) -> list[dict[str, Any] | str]:
    """Sessions whose events name their session with an escaped key, with a nested plain "session" key."""
    out: list[dict[str, Any] | str] = []
    for k in range(n):
        for ev in looping(f"s{k}", 3):
            body = orjson.dumps({**ev, "args": {"session": f"other-{k}"}}).decode()
            out.append(body.replace('"session":', '"\\u0073ession":', 1))
    return out


def test_an_escaped_top_level_key_is_routed_like_any_other(tmp_path: Path) -> None:
    from looptrap.analysis.trace import routed_session

    assert routed_session(b'{"\\u0073ession": "a", "type": "text", "args": {"session": "b"}}') is None
    assert routed_session(b'{"s\\u0065ssion": "a", "type": "text", "args": {"session": "b"}}') is None
    assert routed_session(b'{"session": "a", "type": "text"}') == "a"
    path = write(tmp_path, escaped_key_events(30))
    one = looptrap("replay", str(path), "--json", "--jobs", "1")
    assert one.returncode == 0, one.stderr
    assert len(reports(one.stdout)) == 30
    assert all(r["tool_calls"] == 3 for r in reports(one.stdout))
    for jobs in ("2", "3"):
        many = looptrap("replay", str(path), "--json", "--jobs", jobs)
        assert many.returncode == 0, many.stderr
        assert reports(many.stdout) == reports(one.stdout), jobs


def test_routing_reads_the_session_without_parsing_only_when_certain() -> None:
    from looptrap.analysis.trace import routed_session

    assert routed_session(b'{"session":"a","type":"text"}') == "a"  # the common spelling, no regex
    assert routed_session(b'{"type":"text","session" :\t"a"}') == "a"  # other spacing: the regex
    assert routed_session(b'{"session":"","type":"text"}') is None  # empty: only parsing tells
    assert routed_session(b'{"session":"a\\"b","type":"text"}') is None  # an escape in the value
    assert routed_session(b'{"session":7,"type":"text"}') is None  # not a string
    assert routed_session(b'{"session":"a","type":"text","args":{"session":"b"}}') is None  # twice
    assert routed_session(b'{"session":"a","type":"text","text":"\\u00e9"}') == "a"  # an escape, not of the key
    assert routed_session(b'{"session":"\xff","type":"text"}') is None  # not UTF-8


def test_the_router_remembers_each_session_and_stays_bounded() -> None:
    from looptrap.analysis.trace import SessionRouter

    asked: list[str] = []

    def route(session: str) -> int:
        asked.append(session)
        return int(session[1:]) % 2

    router = SessionRouter(route, limit=4)
    lines = [f'{{"session":"s{k // 10}","type":"text"}}'.encode() for k in range(60)]  # s0 ten times, s1...
    routed = [router.route(line) for line in lines]
    assert routed == [(k // 10) % 2 for k in range(60)]
    assert asked == [f"s{k}" for k in range(6)]  # once per session
    assert len(router.decided) <= 4  # emptied past its limit
    assert router.route(lines[0]) == 0
    assert asked[-1] == "s0"  # forgotten, so asked again
    assert router.route(b'{"type":"text"}') == -1  # no session to read: parse the line
    assert router.route(b'{"session":"\xff","type":"text"}') == -1


def test_gzip_trace(tmp_path: Path) -> None:
    import gzip

    text = lines(many_sessions(20)).encode()
    plain = looptrap("replay", str(write(tmp_path, [text.decode().rstrip("\n")])), "--json")
    packed = tmp_path / "trace.jsonl.gz"
    packed.write_bytes(gzip.compress(text))
    for jobs in ("1", "2"):
        proc = looptrap("replay", str(packed), "--json", "--jobs", jobs)
        assert proc.returncode == 0, proc.stderr
        assert reports(proc.stdout) == reports(plain.stdout)
    piped = subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", "replay", "-", "--json"],
        input=gzip.compress(text),
        capture_output=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert reports(piped.stdout.decode()) == reports(plain.stdout)
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(lines([call("s1", "a", {}), "{not json"]).encode()))
    proc = looptrap("replay", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{bad}:2: not valid JSON"), proc.stderr
    broken = tmp_path / "cut.jsonl.gz"
    broken.write_bytes(gzip.compress(text)[:-20])  # a truncated download
    proc = looptrap("replay", str(broken))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert str(broken) in proc.stderr


def test_zstd_trace(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    text = lines(many_sessions(20)).encode()
    plain = looptrap("replay", str(write(tmp_path, [text.decode().rstrip("\n")])), "--json")
    packed = tmp_path / "trace.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(text))
    for jobs in ("1", "2"):
        proc = looptrap("replay", str(packed), "--json", "--jobs", jobs)
        assert proc.returncode == 0, proc.stderr
        assert reports(proc.stdout) == reports(plain.stdout)
    without = subprocess.run(  # the same, where zstandard cannot be imported
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['zstandard'] = sys.modules['compression'] = None; "
            "from looptrap.cli.main import main; raise SystemExit(main())",
            "replay",
            str(packed),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert without.returncode == 2
    assert "Traceback" not in without.stderr
    assert "zstandard" in without.stderr  # what to install
    assert str(packed) in without.stderr


# -- what reaches the terminal ---------------------------------------------------------------------------


def test_table_shows_no_control_characters_or_fake_rows(tmp_path: Path) -> None:
    evil = "s1\x1b[2J\x1b]0;pwned\x07\nfake   99  -  -  0\r"
    tool = "search\x1b[31m_docs\u202e\n"
    events: list[dict[str, Any] | str] = []
    for k in range(4):
        events += [call(evil, tool, {"q": 1}, f"c{k}"), result(evil, tool, "0 results", f"c{k}")]
    events += healthy("s2", 1)
    proc = looptrap("replay", str(write(tmp_path, events)))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b" not in out
    assert "\r" not in out
    assert "\u202e" not in out
    rows = out.splitlines()
    assert rows.index("") == 3  # header, two sessions, a blank line (then the legend and the summary)
    assert rows[1].startswith("s1")
    assert "99" in rows[1]  # the end of the id, on its own row
    assert "search_docs" in rows[1]  # the tool of the first intervention, shown clean
    assert rows[2].startswith("s2")
    assert rows[-1].startswith("2 sessions, 5 tool calls")
    assert all(len(row) <= 80 for row in rows)


def test_table_cells_are_bounded(tmp_path: Path) -> None:
    proc = looptrap("replay", str(write(tmp_path, looping("x" * 5000, 3))))
    assert proc.returncode == 0, proc.stderr
    assert max(len(row) for row in proc.stdout.splitlines()) <= 80  # the width when not a terminal


def test_demo_fits_80_columns_and_explains_itself() -> None:
    proc = looptrap("demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert max(len(line) for line in out) <= 80, max(out, key=len)
    head = out.index(next(line for line in out if line.startswith("scenario")))
    assert "tool calls" in " ".join(out[:head]).lower()  # what the numbers count, before the table
    explained = {line.split(":", 1)[0].strip() for line in out if ":" in line}
    assert {"turn cap", "reported blocked", "halted", "answered"} <= explained
    for outcome in ("turn cap", "reported blocked"):
        (line,) = [x for x in out if x.strip().startswith(f"{outcome}:")]  # one line each
        assert len(line.split(":", 1)[1].strip()) > 20


# -- the docs match the command -----------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_docs_cli_md_covers_every_command_and_option() -> None:
    import argparse

    from looptrap.cli.main import build_parser

    cli_md = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        # hook, mcp-proxy and config have their own pages, linked from cli.md
        page = {"hook": "hooks.md", "mcp-proxy": "mcp-proxy.md", "config": "configuration.md"}.get(
            words[0] if words else ""
        )
        text = cli_md + ((DOCS / page).read_text(encoding="utf-8") if page else "")
        if words and f"looptrap {' '.join(words)}" not in text.replace("|", " ").replace("  ", " "):
            missing.append(" ".join(words))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
            for option in action.option_strings:
                if (
                    option.startswith("--")
                    and option != "--help"
                    and f"`{option}" not in text
                    and f" {option}" not in text
                ):
                    missing.append(f"{' '.join(words) or 'looptrap'} {option}")

    walk(build_parser(), [])
    assert not missing, f"not in docs/cli.md: {missing}"
