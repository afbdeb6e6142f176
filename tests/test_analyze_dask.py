"""Beyond one machine: the per-session analysis on a local Dask cluster (two worker processes), sessions
partitioned by id, from JSON Lines cut into blocks and from Parquet row groups: the same verdicts and
statistics as a local run."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import need
from looptrap.analysis.analyze import analyze
from looptrap.analysis.analyze.distributed import analyze_on_dask, blocks

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    need("dask.distributed (pip install 'dask[distributed]')", importlib.util.find_spec("distributed") is not None)
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(BENCH))
    try:
        import analyze as bench  # benchmarks/analyze.py
    finally:
        sys.path.remove(str(BENCH))
    path = tmp_path_factory.mktemp("dask") / "fleet.jsonl"
    bench.generate(path, 4000, seed=11)
    return path


def _same(local: Any, remote: Any) -> None:
    a = {s.session: s.to_dict() for s in local.sessions}
    b = {s.session: s.to_dict() for s in remote.sessions}
    assert a.keys() == b.keys()
    for name in a:
        for key in ("replay", "loop", "tool_calls", "distinct_calls", "longest_stale", "first_repeat", "intervals"):
            assert a[name][key] == b[name][key], (name, key)
    assert [s.session for s in local.sessions] == [s.session for s in remote.sessions]
    assert local.fleet["loops"] == remote.fleet["loops"]


def test_jsonl_blocks_on_a_local_cluster(client: Any, log: Path) -> None:
    parts = blocks([str(log)], block_bytes=200_000)
    assert len(parts) > 3  # the file really is cut, sessions spread over blocks
    data = log.read_bytes()
    assert data.count(b"\n") == sum(data[start:end].count(b"\n") for _, _, _, start, end, _ in parts)
    remote = analyze_on_dask([str(log)], client=client, partitions=4, block_bytes=200_000)
    _same(analyze([str(log)]), remote)


def test_parquet_row_groups_on_a_local_cluster(client: Any, log: Path, tmp_path: Path) -> None:
    need("pyarrow (pip install 'looptrap[analyze]')", importlib.util.find_spec("pyarrow") is not None)
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for line in log.read_bytes().splitlines():
        e = orjson.loads(line)
        for key in ("args", "output", "usage"):
            if key in e:
                e[key] = orjson.dumps(e[key]).decode()
        rows.append(e)
    path = tmp_path / "fleet.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=800)
    remote = analyze_on_dask([str(path)], client=client, partitions=3)
    _same(analyze([str(path)]), remote)
