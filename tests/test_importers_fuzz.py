"""Every importer against mutated records: each example file of tests/data/analyze/, with values anywhere in
its records replaced by values of another JSON type, records dropped or cut short, read in its format. An
importer may skip what it cannot read (noting ``file:line: reason``), never raise (docs/analyze.md,
"Safety")."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import need

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)

from looptrap.analysis.analyze import FORMATS, ImportOptions, Problems, detect_format, read_records  # noqa: E402
from looptrap.analysis.analyze.sources import head  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "analyze"
SAMPLES = sorted(p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj", ".csv", ".tsv"))
SWAPS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.just({}),
    st.just([]),
    st.just({"type": {}}),
    st.just([None, {"content": None}]),
    st.dictionaries(st.sampled_from(["type", "role", "content", "id", "name", "tool_calls", "message"]), st.none()),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (a key of a dict, an index of a list)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head_, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head_] = _put(value[head_], tuple(rest), new)
    return copy


def _records(path: Path) -> tuple[str, list[Any]]:
    """The file as a list of records: its lines (JSON Lines), or one document."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".csv", ".tsv"):
        return "rows", text.splitlines()
    if path.suffix == ".jsonl":
        return "lines", [json.loads(line) for line in text.splitlines() if line.strip()]
    return "document", [json.loads(text)]


def _write(kind: str, records: list[Any], path: Path) -> None:
    if kind == "rows":
        path.write_text("\n".join(str(r) for r in records) + "\n", encoding="utf-8")
    elif kind == "lines":
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        path.write_text(json.dumps(records[0]) if records else "", encoding="utf-8")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
@settings(
    max_examples=int(os.environ.get("LOOPTRAP_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_importer_raises_on_mutated_records(sample: Path, tmp_path: Path, data: st.DataObject) -> None:
    fmt = detect_format(str(sample), head(str(sample)))
    assert fmt is not None
    assert fmt in FORMATS
    kind, records = _records(sample)
    for _ in range(data.draw(st.integers(1, 6))):
        if not records:
            break
        i = data.draw(st.integers(0, len(records) - 1))
        action = data.draw(st.sampled_from(["swap", "swap", "swap", "drop", "cut", "dup"]))
        if action == "drop":
            del records[i]
        elif action == "dup":
            records.insert(i, records[i])
        elif kind == "rows" or action == "cut":
            text = records[i] if isinstance(records[i], str) else json.dumps(records[i])
            records[i] = text[: data.draw(st.integers(0, max(len(text) - 1, 0)))]
            if kind != "rows":
                kind = "rows"  # a cut record is no JSON value any more: the file is written as text lines
                records = [r if isinstance(r, str) else json.dumps(r) for r in records]
                if sample.suffix != ".jsonl":
                    records = ["\n".join(records)]
        else:
            places = _paths(records[i])
            where = data.draw(st.sampled_from(places))
            records[i] = _put(records[i], where, data.draw(SWAPS))
    out = tmp_path / sample.name
    _write(kind, records, out)
    problems = Problems()
    for rec in read_records(str(out), fmt, str(out), problems, ImportOptions()):
        assert isinstance(rec, dict)
        assert isinstance(rec.get("session"), str)
        assert isinstance(rec.get("type"), str)
