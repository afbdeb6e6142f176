"""`looptrap analyze` on the logs agents really write: the shapes real files have that small examples lack
(docs/analyze.md). Each test builds a file of the documented shape."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from conftest import need
from looptrap.analysis.analyze import ImportOptions, Problems, read_records

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)


def records(path: Path, fmt: str) -> list[dict[str, Any]]:
    problems = Problems()
    out = list(read_records(str(path), fmt, str(path), problems, ImportOptions()))
    assert problems.count == 0, problems.first
    return out


def _call(cid: str, q: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": q})}}


def test_reused_call_ids_are_distinct_calls_paired_by_position(tmp_path: Path) -> None:
    """gpt-4o reuses tool-call ids within one conversation: every call counts, each with its own result."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "find the three orders"}]
    for i in range(3):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [_call("call_0", f"order {i}")]})
        msgs.append({"role": "tool", "tool_call_id": "call_0", "content": f"order {i}: shipped"})
    doc = tmp_path / "chat.json"
    doc.write_text(json.dumps({"messages": msgs}))
    evs = records(doc, "openai-chat")
    calls = [e for e in evs if e["type"] == "tool_call"]
    results = [e for e in evs if e["type"] == "tool_result"]
    assert [c["args"]["q"] for c in calls] == ["order 0", "order 1", "order 2"]
    assert len({c["call_id"] for c in calls}) == 3
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    assert [r["output"] for r in results] == [f"order {i}: shipped" for i in range(3)]


def test_a_request_log_with_reused_ids_counts_each_call_once(tmp_path: Path) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "find the three orders"}]
    lines = []
    for i in range(3):
        answer = {"role": "assistant", "content": None, "tool_calls": [_call("call_0", f"order {i}")]}
        lines.append({"request": {"messages": list(history)}, "response": {"choices": [{"message": answer}]}})
        history += [answer, {"role": "tool", "tool_call_id": "call_0", "content": f"order {i}: shipped"}]
    lines.append(
        {
            "request": {"messages": list(history)},
            "response": {"choices": [{"message": {"role": "assistant", "content": "done"}}]},
        }
    )
    log = tmp_path / "requests.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    evs = records(log, "openai-chat")
    calls = [e for e in evs if e["type"] == "tool_call"]
    results = [e for e in evs if e["type"] == "tool_result"]
    assert [c["args"]["q"] for c in calls] == ["order 0", "order 1", "order 2"]
    assert [r["output"] for r in results] == [f"order {i}: shipped" for i in range(3)]
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]


def test_tau_bench_results_are_one_session_per_run(tmp_path: Path) -> None:
    """The published tau-bench results file: a JSON array of runs, each with its conversation in ``traj``."""
    runs = []
    for task in range(2):
        for trial in range(2):
            traj: list[dict[str, Any]] = [
                {"role": "system", "content": "You are an airline agent."},
                {"role": "user", "content": "Change my flight."},
                {"role": "assistant", "content": None, "tool_calls": [_call("call_0", f"res {task}")]},
                {"role": "tool", "tool_call_id": "call_0", "name": "lookup", "content": "Error: not available"},
                {"role": "assistant", "content": "That flight is not available."},
            ]
            runs.append({"task_id": task, "reward": 0.0, "info": {}, "traj": traj, "trial": trial})
    path = tmp_path / "tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_0101.json"
    path.write_text(json.dumps(runs))
    evs = records(path, "openai-chat")
    sessions = sorted({e["session"] for e in evs})
    assert [s.rsplit("/", 1)[1] for s in sessions] == [
        "task-0-trial-0",
        "task-0-trial-1",
        "task-1-trial-0",
        "task-1-trial-1",
    ]
    assert sum(e["type"] == "tool_call" for e in evs) == 4


def test_an_input_that_gives_nothing_is_a_warning_and_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    empty = tmp_path / "notes.jsonl"
    empty.write_text(json.dumps({"type": "note", "text": "nothing here"}) + "\n")
    good = tmp_path / "trace.jsonl"
    good.write_text(json.dumps({"session": "s", "type": "tool_call", "tool": "t", "args": {}}) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", "analyze", "--json", str(empty), str(good)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{empty}: no tool calls found" in proc.stderr
    assert json.loads(proc.stdout)["empty_inputs"] == [str(empty)]
