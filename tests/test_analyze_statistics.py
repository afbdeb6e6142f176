"""``looptrap analyze --no-detectors``: the statistics DuckDB computes in one scan agree with the detector pass on
every number both give, whichever way the scan reads the files (typed, or the exact way when a record does
not convert), and the tool layer's attempts of a chaos call log are read and counted apart from the calls."""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import need
from fleet import write_fleet
from looptrap.analysis.analyze import AnalyzeOptions, Report, analyze
from looptrap.core.figures import count

ROOT = Path(__file__).resolve().parents[1]

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)

from looptrap.analysis.analyze import sql  # noqa: E402  (needs DuckDB)

#: What the statistics and the detector pass both report, per session.
SHARED = (
    "session",
    "tool_calls",
    "distinct_calls",
    "dedup_ratio",
    "new_in_second_half",
    "converged",
    "intervals",
    "bursts",
    "tool_attempts",
    "tokens",
    "needed",
)
TOOL_SHARED = ("calls", "sessions", "results", "errors", "empty", "error_rate", "empty_rate")
FLEET_SHARED = (
    "sessions",
    "events",
    "tool_calls",
    "tokens",
    "calls_per_session",
    "top_signatures",
    "needed",
    "bursts",
    "tool_attempts",
    "machine_band_sessions",
)


@pytest.fixture(autouse=True, params=["lists", "table"])
def order_kept_in(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test both ways a session's calls are kept in order: in lists (an input of up to
    ``FLAT_ABOVE`` bytes) and in a table that spills to disk (a larger one; here, any)."""
    if request.param == "table":
        monkeypatch.setattr(sql, "FLAT_ABOVE", 0)
    return str(request.param)


def both(path: Path) -> tuple[Report, Report]:
    """The analysis with the detectors, and the statistics alone."""
    return analyze([str(path)]), analyze([str(path)], AnalyzeOptions(detectors=False))


def assert_agree(full: Report, stats: Report) -> None:
    assert not stats.detectors
    assert [a.session for a in full.sessions] == [a.session for a in stats.sessions]
    for a, b in zip(full.sessions, stats.sessions, strict=True):
        da, db = a.to_dict(), b.to_dict()
        for key in SHARED:
            assert da[key] == db[key], (a.session, key)
        assert da["cost_usd"] == pytest.approx(db["cost_usd"]), a.session
    for key in FLEET_SHARED:
        assert full.fleet[key] == stats.fleet[key], key
    assert full.fleet["cost_usd"] == pytest.approx(stats.fleet["cost_usd"])
    tools = {t["tool"]: t for t in stats.fleet["tools"]}
    assert set(tools) == {t["tool"] for t in full.fleet["tools"]}
    for t in full.fleet["tools"]:
        for key in TOOL_SHARED:
            assert t[key] == tools[t["tool"]][key], (t["tool"], key)
    assert full.skipped == stats.skipped
    assert full.errors == stats.errors


def write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def awkward_log(*, seq: bool = True, iso_times: bool = False) -> list[dict[str, Any]]:
    """Two interleaved sessions with what the statistics must read as the detector pass reads it: bursts
    broken by a call without a time, usage with totals, parts, negative and fractional values, ``cost`` and
    ``cost_usd``, empty results written many ways, errors, tool-level attempts, a ``report_blocked``."""
    t0 = 1_764_000_000.0
    plan: list[tuple[str, float | None, str, dict[str, Any], Any, dict[str, Any]]] = [
        # session, time, tool, args, output, extra fields of the result
        ("a", 0.0, "search", {"q": "x"}, "No results found.", {"usage": {"total_tokens": 100, "input_tokens": 60}}),
        ("b", 0.5, "read", {"p": "1"}, "a long enough text, the content of the file that was read", {}),
        ("a", 0.004, "search", {"q": "x"}, "[]", {"usage": {"input_tokens": -5, "output_tokens": 7}}),
        ("a", 0.008, "search", {"q": "x"}, "  none \n", {"usage": {"total_tokens": -1, "prompt_tokens": 3}}),
        ("a", None, "search", {"q": "x"}, [], {"is_error": True}),
        ("a", 0.02, "search", {"q": "x"}, "0 results", {"usage": {"cost": 0.5}}),
        ("b", 1.0, "read", {"p": "1"}, {}, {"usage": {"cost_usd": 0.25, "cost": 9}}),
        ("a", 3.0, "read", {"p": "2"}, "Error: permission denied", {"is_error": True}),
        ("b", 1.02, "read", {"p": "1"}, None, {}),
        ("a", 5.0, "report_blocked", {"tried": ["x"], "needed": "the order id"}, "noted", {}),
        ("b", 2.0, "fetch", {"url": "u"}, "503", {"attempts": 3}),
        ("a", 7.0, "search", {"q": "y"}, "1 result: y", {}),
        ("b", 2.01, "fetch", {"url": "u"}, "503", {"attempts": 2}),
        ("b", 2.02, "fetch", {"url": "u"}, "ok", {"attempts": 1}),
    ]
    events: list[dict[str, Any]] = []
    n = 0
    for i, (s, at, tool, args, output, extra) in enumerate(plan, 1):
        attempts = extra.pop("attempts", None)
        call: dict[str, Any] = {"session": s, "type": "tool_call", "tool": tool, "args": args, "call_id": f"c{i}"}
        result: dict[str, Any] = {"session": s, "type": "tool_result", "tool": tool, "call_id": f"c{i}", **extra}
        if output is not None:
            result["output"] = output
        if attempts is not None:
            call["attempts"] = attempts
        for ev, dt in ((call, 0.0), (result, 0.001)):
            if at is not None:
                ts = t0 + at + dt
                ev["ts"] = _iso(ts) if iso_times and ev is result else ts
            if seq:
                n += 1
                ev["seq"] = n
            events.append(ev)
        if i % 4 == 0:
            n += 1
            turn: dict[str, Any] = {"session": s, "type": "turn_end", "usage": {"input_tokens": 10.7, "cost_usd": 0.01}}
            events.append({**turn, "seq": n} if seq else turn)
    return events


def _iso(ts: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, timezone.utc).isoformat()


@pytest.mark.parametrize(
    ("variant", "exact", "by_key"),
    [
        ("typed", False, False),  # numbers everywhere: the typed read
        ("iso times", True, False),  # ISO 8601 times: the exact read
        ("no seq", False, True),  # ordered by time; a signature's first call found by (n, ts)
    ],
)
def test_statistics_agree_on_an_awkward_log(
    tmp_path: Path, variant: str, exact: bool, by_key: bool, order_kept_in: str
) -> None:
    events = awkward_log(seq=variant != "no seq", iso_times=variant == "iso times")
    if variant == "no seq":  # without a seq, a call without a time has no place in the order
        events = [e for e in events if "ts" in e or e["type"] != "tool_call"]
    path = write(tmp_path / "t.jsonl", events)
    full, stats = both(path)
    assert_agree(full, stats)
    got = {s.session: s for s in stats.sessions}
    assert got["a"].tool_calls == sum(1 for e in events if e["session"] == "a" and e["type"] == "tool_call")
    assert got["a"].needed == ["the order id"]
    assert got["a"].bursts == (1 if variant == "no seq" else 2)  # a call without a time ends a burst
    assert got["b"].tool_attempts == {"calls": 3, "attempts": 6, "retries": 3}
    # which way DuckDB read it
    st = sql.Statistics([str(path)])
    try:
        st.sessions()
        assert st.exact is exact
        assert st.flat is (order_kept_in == "table")
        assert st._first_by_key is (by_key and not st.flat)  # a table finds first calls by (n, ts) always
    finally:
        st.close()


def test_a_malformed_record_past_the_first_64_kib_reads_the_exact_way(tmp_path: Path) -> None:
    """The typed read stops at a record it cannot convert; the files are read again, each field checked as
    the trace reader checks it, and the malformed records are skipped and counted as the detector pass does."""
    events = [
        {"session": f"s{i % 7}", "type": "tool_call", "tool": "read", "args": {"p": i % 5}, "seq": 2 * i, "ts": 1e9 + i}
        for i in range(1, 1200)
    ]
    lines = [orjson.dumps(e) for e in events]
    assert sum(map(len, lines)) > 1 << 16
    lines[1100:1100] = [
        b"{not json",
        b'{"session": "s1", "type": "tool_call", "tool": "read", "args": {}, "ts": "yesterday"}',
        b'{"session": "s2", "type": "tool_call", "tool": "read", "args": {}, "seq": "7"}',
        orjson.dumps(
            {"session": "s3", "type": "tool_call", "tool": "read", "args": {}, "seq": 2201, "ts": _iso(1e9 + 1100.5)}
        ),
    ]
    path = tmp_path / "late.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    full, stats = both(path)
    assert_agree(full, stats)
    assert stats.skipped == 3
    assert stats.fleet["tool_calls"] == len(events) + 1
    st = sql.Statistics([str(path)])
    try:
        assert st.exact
    finally:
        st.close()


def test_the_benchmark_fleet_agrees(tmp_path: Path) -> None:
    path = tmp_path / "fleet.jsonl"
    write_fleet(path, 8_000, seed=5)
    full, stats = both(path)
    assert_agree(full, stats)
    assert stats.fleet["bursts"]["count"] > 0
    assert stats.fleet["machine_band_sessions"] > 0


def test_two_session_names_with_one_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions are numbered by the hash of their name; when two names share a hash, by a number instead."""
    path = write(tmp_path / "t.jsonl", awkward_log())
    expected = analyze([str(path)], AnalyzeOptions(detectors=False))
    monkeypatch.setattr(sql, "_SID", "hash(s) % 1")  # every name the same "hash"
    clashed = analyze([str(path)], AnalyzeOptions(detectors=False))
    assert [a.to_dict() for a in clashed.sessions] == [a.to_dict() for a in expected.sessions]
    assert clashed.fleet == expected.fleet


def test_a_record_longer_than_the_first_read_buffers(tmp_path: Path) -> None:
    """A record over 32 MiB (a huge tool output) makes DuckDB read again with larger buffers."""
    big = "x" * (33 << 20)
    events = [
        {"session": "s", "type": "tool_call", "tool": "read", "args": {"p": 1}, "seq": 1, "ts": 1e9},
        {"session": "s", "type": "tool_result", "tool": "read", "output": big, "seq": 2, "ts": 1e9 + 1},
        {"session": "s", "type": "tool_call", "tool": "read", "args": {"p": 1}, "seq": 3, "ts": 1e9 + 2},
    ]
    path = write(tmp_path / "big.jsonl", events)
    stats = analyze([str(path)], AnalyzeOptions(detectors=False))
    assert stats.fleet["events"] == 3
    (read,) = stats.fleet["tools"]
    assert (read["calls"], read["results"], read["empty"]) == (2, 1, 0)
    assert stats.sessions[0].intervals is not None
    assert stats.sessions[0].intervals["median_s"] == 2.0


def test_what_duckdb_cannot_do_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record longer than DuckDB reads, or DuckDB out of memory: a one-line message and exit 2."""
    events = [
        {"session": "s", "type": "tool_call", "tool": "read", "args": {"p": 1}, "seq": 1, "ts": 1e9},
        {"session": "s", "type": "tool_result", "tool": "read", "output": "x" * (33 << 20), "seq": 2},
    ]
    path = write(tmp_path / "big.jsonl", events)
    monkeypatch.setattr(sql, "_OBJECT_SIZES", (16 << 20,))
    code, _, err = run_command("analyze", str(path), "--no-detectors")
    assert (code, err) == (2, "looptrap analyze: a record longer than 32 MiB, more than DuckDB reads\n")
    monkeypatch.setattr(sql, "MEMORY_LIMIT", "1MB")
    code, out, err = run_command("analyze", str(write(tmp_path / "t.jsonl", awkward_log())), "--no-detectors")
    assert code == 2
    assert out == ""
    assert err.startswith("looptrap analyze: DuckDB: Out of Memory Error")
    assert len(err.splitlines()) == 1


# -- the tool layer: a chaos call log's attempts --------------------------------------------------------
def lookup(key: str) -> str:
    """The real tool: it always works."""
    return f"{key}: found, 3 rows"


def stuck(tools: list[Any], guard: object) -> None:
    """An unguarded agent that calls its tool again and again (the run's ceiling stops it)."""
    while True:
        tools[0](key="k")


def test_a_chaos_call_log_counts_the_tool_layer_apart(tmp_path: Path) -> None:
    """A real chaos run whose tool retries inside (three attempts a call) writes its call log; ``looptrap
    analyze`` reads the ``attempts`` column, JSON Lines or CSV, and reports the retries in the tool layer
    apart from the bursts of identical calls the log recorded, the same with and without the detectors."""
    from looptrap.chaos import CallLog, Empty, RetryInside, run

    path = tmp_path / "calls.jsonl"
    retried = run(stuck, [lookup], RetryInside(attempts=3), max_calls=6, log=path, name="retried")
    plain = run(stuck, [lookup], Empty(), max_calls=4, log=path, name="plain")
    both_runs = CallLog()
    for row in [*retried.log, *plain.log]:
        both_runs.add(row)
    csv_log = both_runs.write(tmp_path / "calls.csv")
    expected = {
        "retried": {"calls": retried.calls, "attempts": retried.attempts, "retries": retried.attempts - retried.calls},
        "plain": {"calls": plain.calls, "attempts": plain.attempts, "retries": 0},
    }
    assert expected["retried"]["retries"] == 2 * retried.calls
    for log in (path, csv_log):
        full, stats = both(log)
        assert_agree(full, stats)
        for report in (full, stats):
            got = {a.session: a for a in report.sessions}
            assert {s: a.tool_attempts for s, a in got.items()} == expected, log.name
            assert {s: a.tool_calls for s, a in got.items()} == {"retried": retried.calls, "plain": plain.calls}
            # the log's layer: identical calls within milliseconds are at most the calls it holds
            assert got["retried"].burst_calls <= retried.calls
            assert report.fleet["tool_attempts"] == {
                "sessions": 1,
                "calls": retried.calls + plain.calls,
                "attempts": retried.attempts + plain.attempts,
                "retries": retried.attempts - retried.calls,
            }

    table = looptrap("analyze", str(path), "--no-detectors", "--csv", "-")
    rows = {r["session"]: r for r in csv.DictReader(io.StringIO(table))}
    assert rows["retried"]["tool_retries"] == str(expected["retried"]["retries"])
    assert rows["plain"]["tool_retries"] == "0"
    summary = " ".join(looptrap("analyze", str(path), "--no-progress").split())
    calls = retried.calls + plain.calls
    retries = count(expected["retried"]["retries"], "retry")
    assert f"tool layer: {retries} behind {count(calls, 'call')} in 1 session" in summary


def run_command(*args: str) -> tuple[int, str, str]:
    """The command run in this process: exit code, stdout, stderr."""
    from looptrap.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(args))
    finally:
        sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


def looptrap(*args: str) -> str:
    """The command's stdout (it must exit 0)."""
    code, out, err = run_command(*args)
    assert code == 0, err
    return out
