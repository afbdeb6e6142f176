"""`looptrap analyze` on the logs agents really write: the shapes real files have that small examples lack
(docs/analyze.md). Each test builds a file of the documented shape."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from conftest import need
from conftest import read_clean as records
from conftest import token_price as price

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)


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


def _swe_traj(actions: list[str]) -> dict[str, Any]:
    steps = [{"action": a, "observation": f"ran {a}", "thought": "next"} for a in actions]
    return {"trajectory": steps, "info": {"model_stats": {"instance_cost": 0.1}}}


def test_the_same_task_in_two_run_folders_is_two_sessions(tmp_path: Path) -> None:
    """SWE-agent writes <run>/<instance>/<instance>.traj: the same instance in two runs is two sessions."""
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    for run, actions in (("run-a", ["ls", "cat x.py"]), ("run-b", ["ls", "pytest", "cat y.py"])):
        folder = tmp_path / run / "django__django-11099"
        folder.mkdir(parents=True)
        (folder / "django__django-11099.traj").write_text(json.dumps(_swe_traj(actions)))
    report = analyze([str(tmp_path)], AnalyzeOptions())
    got = {a.session: a.tool_calls for a in report.sessions}
    assert got == {
        "run-a/django__django-11099/django__django-11099": 2,
        "run-b/django__django-11099/django__django-11099": 3,
    }


def _codex_rollout(path: Path, calls: int) -> None:
    lines: list[dict[str, Any]] = [
        {"timestamp": "2025-09-02T14:05:00Z", "type": "session_meta", "payload": {"id": "s-474"}}
    ]
    for i in range(calls):
        args = json.dumps({"command": ["bash", "-lc", f"sed -n {i},{i + 9}p app.py"]})
        lines.append(
            {
                "type": "response_item",
                "payload": {"type": "function_call", "name": "shell", "arguments": args, "call_id": f"call_{i}"},
            }
        )
        lines.append(
            {
                "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": f"call_{i}", "output": f"line {i}"},
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_one_session_in_files_that_copy_one_another_is_counted_once(tmp_path: Path) -> None:
    """Snapshots of one session at each checkpoint: the longest copy is read, the others are not summed."""
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    for n in (10, 25, 40):
        _codex_rollout(tmp_path / f"rollout-checkpoint-{n}.jsonl", n)
    report = analyze([str(tmp_path)], AnalyzeOptions())
    assert [(a.session, a.tool_calls) for a in report.sessions] == [("s-474", 40)]
    assert any("longest copy" in w and "40 calls" in w for w in report.warnings)


def test_parts_of_one_session_with_no_call_in_common_are_read_together(tmp_path: Path) -> None:
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    for day, first in (("1", 0), ("2", 100)):
        lines = [{"timestamp": "2025-09-02T14:05:00Z", "type": "session_meta", "payload": {"id": "s-9"}}]
        for i in range(first, first + 5):
            args = json.dumps({"command": ["ls", str(i)]})
            lines.append(
                {
                    "type": "response_item",
                    "payload": {"type": "function_call", "name": "shell", "arguments": args, "call_id": f"c{i}"},
                }
            )
        (tmp_path / f"rollout-day{day}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    report = analyze([str(tmp_path)], AnalyzeOptions())
    assert [(a.session, a.tool_calls) for a in report.sessions] == [("s-9", 10)]


def test_mini_swe_agent_1_1_keeps_its_cost_in_info(tmp_path: Path) -> None:
    """mini-swe-agent 1.1 records the run's cost in info.model_stats only, not per message."""
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    msgs: list[dict[str, Any]] = [{"role": "system", "content": "x"}, {"role": "user", "content": "fix it"}]
    for i in range(4):
        cmd = f"sed -n {i}p a.py"
        msgs.append(
            {"role": "assistant", "content": f"THOUGHT\n```bash\n{cmd}\n```", "extra": {"actions": [{"command": cmd}]}}
        )
        msgs.append({"role": "user", "content": f"<returncode>0</returncode><output>line {i}</output>"})
    doc = {
        "info": {"model_stats": {"instance_cost": 6.56, "api_calls": 4}},
        "messages": msgs,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    path = tmp_path / "astropy__astropy-1.traj.json"
    path.write_text(json.dumps(doc))
    (a,) = analyze([str(path)], AnalyzeOptions()).sessions
    assert (a.tool_calls, round(a.cost_usd, 6), a.cost_estimated) == (4, 6.56, False)


def test_claude_code_counts_cache_tokens_and_estimates_a_cost(tmp_path: Path) -> None:
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    sid = "5e0f3c1a-2b4d-4c6e-8f0a-1b2c3d4e5f60"
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": 20000,
        "cache_creation_input_tokens": 1000,
        "output_tokens": 200,
    }
    lines = [{"type": "user", "sessionId": sid, "uuid": "u0", "message": {"role": "user", "content": "go"}}]
    for i in range(3):
        use = {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"/a/{i}.go"}}
        msg = {
            "id": f"m{i}",
            "role": "assistant",
            "model": "claude-opus-4-5-20251101",
            "usage": usage,
            "content": [use],
        }
        lines.append({"type": "assistant", "sessionId": sid, "uuid": f"a{i}", "message": msg})
        res = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"package p{i}"}
        lines.append({"type": "user", "sessionId": sid, "uuid": f"r{i}", "message": {"role": "user", "content": [res]}})
    path = tmp_path / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    for detectors in (True, False):
        (a,) = analyze([str(path)], AnalyzeOptions(detectors=detectors)).sessions
        assert a.tokens == 3 * (3 + 20000 + 1000 + 200)
        # priced by the maintained table (its prices move; at the time of writing claude-opus-4-5 cost $5/M input,
        # $0.50/M cache reads, $6.25/M cache writes, $25/M output): the cache tokens are priced as such
        per_turn = price("claude-opus-4-5-20251101", 21003, 20000, 1000, 200)
        assert round(a.cost_usd, 6) == round(3 * per_turn, 6)
        assert per_turn < price("claude-opus-4-5-20251101", 21003, 0, 0, 200)
        assert a.cost_estimated is True


def test_a_json_document_on_one_line_longer_than_the_sniff_is_read(tmp_path: Path) -> None:
    """A Responses-style document on one line of more than 64 KiB."""
    from looptrap.analysis.analyze import AnalyzeOptions, analyze, detect_format
    from looptrap.analysis.analyze.sources import head

    items: list[dict[str, Any]] = [{"role": "user", "content": "x" * 70000}]
    for i in range(3):
        items.append(
            {"type": "function_call", "name": "search", "arguments": json.dumps({"q": "same"}), "call_id": f"c{i}"}
        )
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "no results"})
    path = tmp_path / "responses.json"
    path.write_text(json.dumps({"model": "gpt-4.1", "input": items}))
    assert detect_format(str(path), head(str(path))) == "openai-chat"
    (a,) = analyze([str(path)], AnalyzeOptions()).sessions
    assert a.tool_calls == 3


def _call_log(path: Path, rows: list[tuple[float, str, str]]) -> None:
    lines = ["seq,timestamp,tool_name,arguments"]
    lines += [f'{i},{ts},{tool},"{args}"' for i, (ts, tool, args) in enumerate(rows, 1)]
    path.write_text("\n".join(lines) + "\n")


def test_identical_calls_at_regular_intervals_without_results_are_a_loop(tmp_path: Path) -> None:
    """The post-mortem's evidence: a call log with no results, the same call again every 100 ms."""
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    t0 = 1764460800.0
    rows = [(t0, "search_docs", '{""q"": ""setup""}'), (t0 + 4.2, "read_file", '{""path"": ""a.md""}')]
    rows += [(t0 + 10 + 0.1 * i, "fetch_rates", '{""currency"": ""EUR""}') for i in range(40)]
    path = tmp_path / "calls.csv"
    _call_log(path, rows)
    for detectors in (True,):
        (a,) = analyze([str(path)], AnalyzeOptions(detectors=detectors)).sessions
        loop = a.loop
        assert loop is not None
        assert (loop["kind"], loop["found_by"], loop["tool"], loop["period"]) == ("repeat", "rhythm", "fetch_rates", 1)
        assert (loop["onset_call"], loop["end_call"], loop["calls_after_onset"]) == (4, 42, 39)
        assert loop["onset_time"] == "2025-11-30T00:00:10.100Z"
        assert loop["interval_mean_s"] == 0.1


def test_a_ping_pong_without_results_and_a_steady_poll(tmp_path: Path) -> None:
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    pp = tmp_path / "pingpong.csv"
    _call_log(pp, [(100 + 0.5 * i, "get_a" if i % 2 else "get_b", "{}") for i in range(30)])
    (a,) = analyze([str(pp)], AnalyzeOptions()).sessions
    assert a.loop is not None
    assert (a.loop["kind"], a.loop["period"]) == ("cycle", 2)
    poll = tmp_path / "poll.csv"  # a tool that waits by its name: its rhythm is the point
    _call_log(poll, [(100 + 5.0 * i, "wait_for_job", '{""id"": 7}') for i in range(30)])
    (b,) = analyze([str(poll)], AnalyzeOptions()).sessions
    assert b.loop is None
    human = tmp_path / "human.csv"  # the same call, at a model's irregular pace
    gaps = [3.1, 9.4, 2.2, 14.0, 5.5, 7.7, 2.9, 11.3, 4.4, 6.0, 8.8, 3.3]
    times = [100 + sum(gaps[:i]) for i in range(len(gaps) + 1)]
    _call_log(human, [(t, "get_order", '{""id"": 1}') for t in times])
    (c,) = analyze([str(human)], AnalyzeOptions()).sessions
    assert c.loop is None


def test_loop_counts_end_where_the_loop_ends_and_first_repeat_is_the_loops(tmp_path: Path) -> None:
    from looptrap.analysis.analyze import AnalyzeOptions, analyze

    events: list[dict[str, Any]] = []
    calls = [("pytest", "1 passed")] * 2  # a harmless repeat first: the test run again
    calls += [("search", "0 results")] * 4  # the loop
    calls += [(f"read {i}", f"content {i}") for i in range(10)]  # then ten calls of new work
    for i, (what, out) in enumerate(calls, 1):
        tool, _, arg = what.partition(" ")
        events.append(
            {
                "session": "s",
                "type": "tool_call",
                "tool": tool,
                "args": {"a": arg},
                "call_id": str(i),
                "ts": 1000.0 + 5 * i,
            }
        )
        events.append(
            {
                "session": "s",
                "type": "tool_result",
                "tool": tool,
                "call_id": str(i),
                "output": out,
                "usage": {"cost_usd": 0.01},
            }
        )
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    (a,) = analyze([str(path)], AnalyzeOptions()).sessions
    loop = a.loop
    assert loop is not None
    assert loop["kind"] == "repeat"
    # onset: the loop's first call (the first search); intervened at the 3rd identical call; the 4th is its last
    assert (loop["onset_call"], loop["first_intervention_call"], loop["end_call"]) == (3, 5, 6)
    assert (loop["calls_after_onset"], loop["calls_saved"]) == (4, 2)  # not to the end of the session
    assert loop["cost_after_onset"] == 0.04
    assert loop["onset_time"] == "1970-01-01T00:16:55.000Z"
    assert a.first_repeat is not None
    assert a.first_repeat["call"] == 4
