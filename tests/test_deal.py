"""Dealing an input's lines out to worker processes by session (looptrap.analysis.deal): every line reaches
the one worker of its session, in file order, with its line number; lines that are no event reach the first
worker; a worker that fails, dies or stops early does not hang the reader."""

from __future__ import annotations

import gzip
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from looptrap.analysis.deal import Batch, deal, dealt_events, shard_of
from looptrap.analysis.trace import TraceError


def write_trace(path: Path, sessions: int, per_session: int) -> list[bytes]:
    lines = []
    for k in range(per_session):
        for s in range(sessions):
            lines.append(orjson.dumps({"session": f"s{s}", "type": "text", "seq": k, "text": f"step {k}"}))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return lines


def collect(worker: int, batches: Iterator[Batch]) -> list[tuple[int, int, bytes]]:
    out = []
    for index, numbers, lines in batches:
        out += [(index, n, line.rstrip(b"\n")) for n, line in zip(numbers, lines, strict=True)]
    return out


def test_each_line_reaches_the_worker_of_its_session_in_order(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = write_trace(path, sessions=40, per_session=60)  # more lines than one batch per worker
    dealt = deal([(str(path), "t")], 3, collect)
    assert dealt.read_errors == []
    assert len(dealt.results) == 3
    seen = [item for part in dealt.results for item in part]
    assert sorted(seen) == [(0, n, line) for n, line in enumerate(lines, 1)]  # every line once, numbered
    for worker, part in enumerate(dealt.results):
        assert [n for _, n, _ in part] == sorted(n for _, n, _ in part)  # in file order
        assert {shard_of(orjson.loads(line)["session"], jobs=3) for _, _, line in part} == {worker}


def test_lines_whose_session_needs_parsing_and_lines_that_are_no_event(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    odd = [
        b'{"type":"text","session" : "s7"}',  # read by the regex
        b'{"\\u0073ession":"s7","type":"text"}',  # an escaped key: parsed
        b'{"session":"s7","type":"text","args":{"session":"x"}}',  # twice: parsed (the last one counts)
        b"not json",
        b'{"type":"text"}',  # no session
        b"",
        b"   ",
    ]
    path.write_bytes(b"\n".join(odd) + b"\n")
    dealt = deal([(str(path), "t")], 4, collect)
    where = {n: worker for worker, part in enumerate(dealt.results) for _, n, _ in part}
    assert where[1] == where[2] == shard_of("s7", jobs=4)
    assert where[3] == shard_of("s7", jobs=4)  # orjson keeps the last "session": s7, not the nested "x"
    assert where[4] == where[5] == 0  # no event: the first worker reports it
    assert set(where) == {1, 2, 3, 4, 5}  # blank lines are dropped


def test_the_workers_parse_as_the_trace_reader_does(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"session":"a","type":"text","ts":1.5}\n{"session":"a","type":"text","seq":"x"}\n')

    def parse(worker: int, batches: Iterator[Batch]) -> tuple[list[int], list[str]]:
        errors: list[TraceError] = []
        got = [ev.line for _, ev in dealt_events(batches, ["t"], skip_invalid=True, errors=errors)]
        return got, [str(e) for e in errors]

    parts = deal([(str(path), "t")], 2, parse).results
    assert parts[shard_of("a", jobs=2)] == ([1], ["t:2: 'seq' must be an integer"])


def test_a_cut_compressed_input_reports_where_it_ends(tmp_path: Path) -> None:
    full = tmp_path / "t.jsonl"
    write_trace(full, sessions=5, per_session=400)
    packed = gzip.compress(full.read_bytes())
    cut = tmp_path / "t.jsonl.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    dealt = deal([(str(cut), "cut"), (str(full), "full")], 2, collect)
    assert len(dealt.read_errors) == 1
    assert dealt.read_errors[0].where.startswith("cut:")
    assert "cannot read on from here" in dealt.read_errors[0].reason
    assert sum(1 for part in dealt.results for index, _, _ in part if index == 1) == 2000  # read on


def test_a_worker_that_stops_early_does_not_hang_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, sessions=8, per_session=5000)  # far more than a pipe holds

    def first_batch_only(worker: int, batches: Iterator[Batch]) -> int:
        return len(next(batches)[2])

    assert deal([(str(path), "t")], 2, first_batch_only).results == [1024, 1024]


def test_a_worker_that_fails_makes_the_reader_raise(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, sessions=8, per_session=100)

    def fails(worker: int, batches: Iterator[Batch]) -> None:
        if worker == 1:
            raise ValueError("worker one cannot go on")
        for _ in batches:
            pass

    with pytest.raises(ValueError, match="worker one cannot go on"):
        deal([(str(path), "t")], 2, fails)


def test_a_worker_that_dies_makes_the_reader_raise_not_hang(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, sessions=8, per_session=5000)

    def dies(worker: int, batches: Iterator[Batch]) -> None:
        next(batches)
        if worker == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        for _ in batches:
            pass

    with pytest.raises(RuntimeError, match="worker 1 of 2 ended without an answer"):
        deal([(str(path), "t")], 2, dies)


def test_an_input_that_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.jsonl"):
        deal([(str(tmp_path / "missing.jsonl"), "missing")], 2, collect)
