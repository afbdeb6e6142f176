"""``looptrap analyze --no-detectors`` on a runaway session: the order of its calls (intervals, bursts, new
calls) is kept in a table that spills to disk, never in memory whole, and the figures stay exact."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from conftest import need

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)

import duckdb  # noqa: E402

from looptrap.analysis.analyze import sql  # noqa: E402

CALLS = 2_000_000


def runaway_log(path: Path) -> Path:
    """One session of CALLS calls 100 ms apart: the same search again and again, a new call at the last
    step, and a pair 10 ms apart (a burst) at the start."""
    con = duckdb.connect()
    con.execute(
        f"""COPY (
          SELECT 'runaway' AS session, 'tool_call' AS type, 'search' AS tool,
                 CASE WHEN i = {CALLS} THEN {{'q': 'new'}} ELSE {{'q': 'same'}} END AS args, i AS seq,
                 CASE WHEN i = 1 THEN 1764000000.19 ELSE 1764000000 + i * 0.1 END AS ts
          FROM range(1, {CALLS} + 1) t(i)) TO '{path}' (FORMAT json)"""
    )
    con.close()
    return path


def test_a_runaway_session_is_counted_exactly_within_a_small_memory_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 MB for DuckDB, one thread: two million calls' order held in a list would need more (16 bytes a
    call, and the read buffers); in the table it spills to disk."""
    path = runaway_log(tmp_path / "runaway.jsonl")
    monkeypatch.setattr(sql, "MEMORY_LIMIT", "64MB")
    monkeypatch.setattr(sql, "_OBJECT_SIZES", (1 << 16, 1 << 20))  # small read buffers: the records are short
    st = sql.Statistics([str(path)], threads=1, temp_dir=str(tmp_path), flat_above=path.stat().st_size - 1)
    try:
        assert st.flat  # the input is over the bound
        (got,) = st.sessions()
    finally:
        st.close()
    assert got["tool_calls"] == CALLS
    assert got["distinct_calls"] == 2
    assert got["new_in_second_half"] == 1
    assert got["bursts"] == 1  # calls 1 and 2, 10 ms apart
    assert got["burst_calls"] == 2
    intervals = got["intervals"]
    assert intervals["n"] == CALLS - 1
    assert intervals["median_s"] == pytest.approx(0.1)
    assert intervals["p10_s"] == pytest.approx(0.1)
    assert intervals["p90_s"] == pytest.approx(0.1)
    assert intervals["machine_band"] is True
    assert not list(tmp_path.glob("*.tmp"))
    assert not list(tmp_path.glob("duckdb_temp*"))


def test_an_input_under_the_bound_keeps_the_order_in_lists(tmp_path: Path) -> None:
    path = tmp_path / "small.jsonl"
    path.write_text('{"session": "s", "type": "tool_call", "tool": "t", "args": {}, "seq": 1, "ts": 1.0}\n')
    st = sql.Statistics([str(path)], flat_above=path.stat().st_size)
    try:
        assert not st.flat
        assert st.sessions()[0]["tool_calls"] == 1
    finally:
        st.close()


def test_the_runaway_benchmark_runs_and_checks_its_figures(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    got = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "runaway.py"), "--calls", "2000", "--keep", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert got.stdout.splitlines()[-1].startswith("| 2,000 | 0.0 GiB | ")
    assert (tmp_path / "runaway-2000.jsonl").stat().st_size > 0
