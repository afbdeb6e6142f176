"""Each importer on a small realistic file written from its format's documentation (tests/data/analyze/):
the events it yields (calls, results paired by id, the user's words, turn ends, usage) and the verdicts the
analysis then gives."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import need
from conftest import token_price as price
from looptrap.analysis.analyze import AnalyzeOptions, ImportOptions, Problems, analyze, detect_format, read_records
from looptrap.analysis.analyze.importers import parse_columns
from looptrap.analysis.analyze.sources import head as _head

DATA = Path(__file__).resolve().parent / "data" / "analyze"
CLAUDE = DATA / "claude-code" / "-home-dev-shop" / "3f9b2c1e-7a4d-4e8b-9c21-5d6e7f8a9b0c.jsonl"
CODEX = DATA / "codex" / "2025" / "09" / "02" / "rollout-2025-09-02T14-05-00-0198a3b2-5c4d-7e6f-8a9b-0c1d2e3f4a5b.jsonl"

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)


def events(path: Path, fmt: str | None = None, **kw: Any) -> tuple[list[dict[str, Any]], Problems]:
    problems = Problems()
    fmt = fmt or detect_format(str(path), _head(str(path)))
    assert fmt is not None
    return list(read_records(str(path), fmt, str(path), problems, ImportOptions(**kw))), problems


def kinds(evs: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in evs]


def one(path: Path, **kw: Any) -> Any:
    report = analyze([str(path)], AnalyzeOptions(**kw))
    assert report.skipped == 0, report.errors
    return report


EXPECTED = {
    # file: (format, sessions, calls of the first session, loop kind of the first session or None)
    CLAUDE: ("claude-code", 2, 7, "repeat"),
    CODEX: ("codex", 1, 6, "repeat"),
    DATA / "gemini-cli" / "session-2025-10-21T08-00-7c2e9a41.json": ("gemini-cli", 1, 5, "repeat"),
    DATA / "gemini-cli" / "session-2025-11-02T10-00-b81f.jsonl": ("gemini-cli", 1, 2, None),
    DATA / "openai" / "chat-conversation.json": ("openai-chat", 1, 8, "cycle"),
    DATA / "openai" / "chat-requests.jsonl": ("openai-chat", 1, 7, "drift"),
    DATA / "openai" / "responses-request.json": ("openai-chat", 1, 3, "repeat"),
    DATA / "anthropic" / "messages-request.json": ("openai-chat", 1, 3, "repeat"),
    DATA / "otel" / "billing-agent.otlp.json": ("otel", 1, 4, "repeat"),
    DATA / "swe-agent" / "django__django-11099.traj": ("swe-agent", 1, 7, "repeat"),
    DATA / "mini-swe-agent" / "sympy__sympy-20590.traj.json": ("mini-swe-agent", 1, 7, "repeat"),
    DATA / "mini-swe-agent" / "astropy__astropy-12907.traj.json": ("mini-swe-agent", 1, 2, None),
    DATA / "calllog" / "tool_calls.tsv": ("tsv", 1, 4, "repeat"),
    DATA / "calllog" / "tool_calls.jsonl": ("jsonl-calls", 1, 40, "repeat"),
}


@pytest.mark.parametrize("path", list(EXPECTED), ids=lambda p: p.name)
def test_each_format_is_found_and_analysed(path: Path) -> None:
    fmt, n_sessions, calls, kind = EXPECTED[path]
    assert detect_format(str(path), _head(str(path))) == fmt
    report = one(path)
    assert len(report.sessions) == n_sessions
    first = report.sessions[0]
    assert first.tool_calls == calls
    assert (first.loop["kind"] if first.loop else None) == kind
    assert report.inputs == [{"name": str(path), "format": fmt}]


def test_claude_code() -> None:
    evs, problems = events(CLAUDE)
    assert problems.count == 0
    main = [e for e in evs if e["session"] == "3f9b2c1e-7a4d-4e8b-9c21-5d6e7f8a9b0c"]
    # the user's words (not the isMeta line), the split assistant message read as one turn
    assert kinds(main)[:4] == ["user_message", "text", "tool_call", "tool_result"]
    calls = [e for e in main if e["type"] == "tool_call"]
    results = [e for e in main if e["type"] == "tool_result"]
    assert [c["tool"] for c in calls] == ["Bash", "Read", "Bash", "Bash", "Bash", "Bash", "Bash"]
    assert calls[0]["args"] == {"command": "npm test -- checkout", "description": "Run checkout tests"}
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    assert results[0]["is_error"] is True
    assert results[0]["output"].startswith("FAIL src/checkout.test.ts")
    assert results[1]["output"].startswith("     1\texport function total")  # a list of text blocks
    turns = [e for e in main if e["type"] == "turn_end"]
    assert len(turns) == 7  # one per assistant message id
    # counted once for the two lines; cache reads are input too; no cost in the log: priced from the tokens
    # (claude-sonnet-4: 4,210 x $3/M + 12,000 cached x $0.30/M + 88 x $15/M), marked as an estimate
    assert turns[0]["usage"] == {
        "input_tokens": 16210,
        "cache_read_tokens": 12000,
        "output_tokens": 88,
        "cost_usd": round(price("claude-sonnet-4-20250514", 16210, 12000, 0, 88), 8),  # 0.01755 when written
        "cost_estimated": True,
    }
    side = [e for e in evs if e["session"].endswith("~sidechain")]
    assert [e["tool"] for e in side if e["type"] == "tool_call"] == ["Glob"]
    assert all(isinstance(e.get("ts"), float) for e in calls + results)


def test_codex() -> None:
    evs, _ = events(CODEX)
    assert {e["session"] for e in evs} == {"0198a3b2-5c4d-7e6f-8a9b-0c1d2e3f4a5b"}
    assert kinds(evs)[0] == "user_message"  # the environment context is not the user's words
    assert sum(e["type"] == "user_message" for e in evs) == 1
    call = next(e for e in evs if e["type"] == "tool_call")
    assert call["tool"] == "shell"
    assert call["args"]["command"] == ["bash", "-lc", "alembic upgrade head"]
    result = next(e for e in evs if e["type"] == "tool_result")
    assert result["is_error"] is True  # metadata.exit_code 1
    assert result["output"]["output"].startswith("ERROR [alembic")
    usage = [e["usage"] for e in evs if e["type"] == "turn_end" and e.get("usage")]
    # the last request's, not the running total; gpt-5-codex priced as gpt-5: 2,000 x $1.25/M + 7,000 cached x
    # $0.125/M + 120 x $10/M
    assert usage[0] == {
        "input_tokens": 9000,
        "cache_read_tokens": 7000,
        "output_tokens": 120,
        "cost_usd": round(price("gpt-5-codex", 9000, 7000, 0, 120), 8),  # 0.004575 when written
        "cost_estimated": True,
    }
    assert evs[-2]["type"] == "text"


def test_gemini_cli_json_and_jsonl() -> None:
    evs, _ = events(DATA / "gemini-cli" / "session-2025-10-21T08-00-7c2e9a41.json")
    results = [e for e in evs if e["type"] == "tool_result"]
    assert len(results) == 5
    assert results[0]["output"].startswith("No matches found")
    assert results[0]["call_id"] == "search_file_content-1761033600000-0"
    # the JSONL form: the last copy of a message counts, $set lines are bookkeeping
    evs, problems = events(DATA / "gemini-cli" / "session-2025-11-02T10-00-b81f.jsonl")
    assert problems.count == 0
    calls = [e for e in evs if e["type"] == "tool_call"]
    assert [c["tool"] for c in calls] == ["list_directory", "read_file"]
    failed = [e for e in evs if e["type"] == "tool_result" and e["is_error"]]
    assert failed
    assert failed[0]["output"] == "File not found: /p/missing.md"
    assert {e["session"] for e in evs} == {"b81f"}


def test_openai_request_log_counts_each_call_once() -> None:
    evs, _ = events(DATA / "openai" / "chat-requests.jsonl")
    calls = [e for e in evs if e["type"] == "tool_call"]
    assert [c["args"]["q"] for c in calls][:2] == ["acme revenue 2023", "acme annual report 2023"]
    assert len(calls) == len({c["call_id"] for c in calls}) == 7
    assert sum(e["type"] == "user_message" for e in evs) == 1
    assert {e["session"] for e in evs} == {"research-7"}


def test_openai_chat_anthropic_and_responses() -> None:
    chat, _ = events(DATA / "openai" / "chat-conversation.json")
    assert [e["tool"] for e in chat if e["type"] == "tool_call"][:2] == ["get_order", "find_customer"]
    assert next(e for e in chat if e["type"] == "tool_result")["output"] == '{"status": "not_found"}'
    anth, _ = events(DATA / "anthropic" / "messages-request.json")
    res = [e for e in anth if e["type"] == "tool_result"]
    assert len(res) == 3
    assert all(r["is_error"] for r in res)
    assert res[0]["call_id"] == "toolu_w0"
    assert sum(e["type"] == "text" for e in anth) == 4
    resp, _ = events(DATA / "openai" / "responses-request.json")
    assert {e["session"] for e in resp} == {"booking-42"}
    assert [e["call_id"] for e in resp if e["type"] == "tool_call"] == ["call_r0", "call_r1", "call_r2"]


def test_otel_spans() -> None:
    evs, _ = events(DATA / "otel" / "billing-agent.otlp.json")
    calls = [e for e in evs if e["type"] == "tool_call"]
    assert [c["call_id"] for c in calls] == ["call_inv0", "call_inv1", "call_inv2", "call_inv3"]
    assert calls[0]["args"] == {"invoice": "INV-9"}
    assert calls[0]["ts"] == pytest.approx(1761120001.0)
    res = [e for e in evs if e["type"] == "tool_result"]
    assert all(r["is_error"] and r["output"] == "permission denied" for r in res)
    turns = [e for e in evs if e["type"] == "turn_end"]
    assert turns[0]["usage"] == {"input_tokens": 1200, "output_tokens": 30}


def test_swe_agent_and_mini_swe_agent() -> None:
    evs, _ = events(DATA / "swe-agent" / "django__django-11099.traj")
    calls = [e for e in evs if e["type"] == "tool_call"]
    assert calls[1]["args"] == {"command": 'find_file "validators.py"'}
    assert calls[1]["tool"] == "bash"
    errors = [e for e in evs if e["type"] == "turn_end" and e.get("error")]
    assert len(errors) == 1  # the step with an empty action
    report = one(DATA / "swe-agent" / "django__django-11099.traj")
    assert report.sessions[0].cost_usd == pytest.approx(0.48)
    evs, _ = events(DATA / "mini-swe-agent" / "sympy__sympy-20590.traj.json")
    res = [e for e in evs if e["type"] == "tool_result"]
    assert res[0]["is_error"] is True
    assert res[0]["output"].startswith("<returncode>1</returncode>")
    assert all("ts" in e for e in evs if e["type"] == "tool_call")
    evs, _ = events(DATA / "mini-swe-agent" / "astropy__astropy-12907.traj.json")
    assert [e["args"]["command"] for e in evs if e["type"] == "tool_call"] == ["ls", "cat setup.py"]
    assert [e.get("error") for e in evs if e["type"] == "turn_end" and e.get("error")] == ["no valid tool call"]


def test_call_log_with_named_columns() -> None:
    path = DATA / "calllog" / "tool_calls.csv"
    cols = parse_columns("session=run,seq=n,ts=when,tool=function,args=input,output=result,is_error=failed,cost=usd")
    evs, problems = events(path, columns=cols)
    assert problems.count == 0
    first = evs[0]
    assert first == {
        "session": "r1",
        "type": "tool_call",
        "tool": "fetch_page",
        "call_id": "row-2",
        "seq": 1,
        "ts": 1748772000.0,
        "args": {"url": "https://example.com/a"},
    }
    assert evs[-1]["is_error"] is True
    assert evs[-1]["usage"] == {"cost_usd": 0.002}
    report = analyze([str(path)], AnalyzeOptions(columns=cols))
    r2 = next(a for a in report.sessions if a.session == "r2")
    assert r2.loop is not None
    assert r2.cost_usd == pytest.approx(0.012)
    assert report.fleet["tools"][0]["errors"] == 6
    with pytest.raises(ValueError, match="unknown field"):
        parse_columns("colour=x")


def test_call_log_without_a_tool_column_says_so(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    evs, problems = events(path)
    assert evs == []
    assert problems.count == 1
    assert "no tool column" in str(problems.first[0])
    assert str(problems.first[0]).startswith(f"{path}:1:")


def test_parquet_trace_and_call_log(tmp_path: Path) -> None:
    need("pyarrow (pip install 'looptrap[analyze]')", importlib.util.find_spec("pyarrow") is not None)
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"session": "p1", "type": "tool_call", "tool": "get", "args": '{"id": 7}', "ts": 1.0 + i, "call_id": f"c{i}"}
        for i in range(4)
    ]
    rows = [
        r
        for i, r in enumerate(rows)
        for r in (
            r,
            {"session": "p1", "type": "tool_result", "tool": "get", "args": None, "ts": 1.5 + i, "call_id": f"c{i}"},
        )
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    report = one(tmp_path / "t.parquet")
    assert report.inputs == [{"name": str(tmp_path / "t.parquet"), "format": "parquet"}]
    a = report.sessions[0]
    assert a.tool_calls == 4
    assert a.distinct_calls == 1
    assert a.loop is not None
    calls = [{"run_id": "q", "tool": "ls", "arguments": '{"d": "/"}', "output": ""} for _ in range(3)]
    pq.write_table(pa.Table.from_pylist(calls), tmp_path / "c.parquet")
    b = one(tmp_path / "c.parquet", columns={"session": "run_id"}).sessions[0]
    assert (b.session, b.tool_calls, b.longest_stale) == ("q", 3, 2)


def test_malformed_records_are_noted_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cc.jsonl"
    good = CLAUDE.read_text().splitlines()
    path.write_text("\n".join([good[0], good[1], "{oops", '{"type": "assistant", "sessionId": "x"}', *good[2:]]) + "\n")
    evs, problems = events(path, "claude-code")
    assert problems.count == 2
    assert [str(e).split(": ", 1)[0] for e in problems.first] == [f"{path}:3", f"{path}:4"]
    assert sum(e["type"] == "tool_call" for e in evs) == 8
    cut = tmp_path / "traj.traj"
    cut.write_text((DATA / "swe-agent" / "django__django-11099.traj").read_text()[:900])
    evs, problems = events(cut, "swe-agent")
    assert evs == []
    assert problems.count == 1
    assert "not valid JSON" in str(problems.first[0])


@pytest.mark.parametrize(
    "first",
    [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {"trackedFileBackups": {}}},
        {"type": "progress", "sessionId": "s", "data": {"type": "hook_progress"}},
        {"type": "permission-mode", "sessionId": "s", "permissionMode": "default"},
        {"type": "queue-operation", "sessionId": "s", "operation": "enqueue"},
        {"type": {}, "oops": 1},
    ],
)
def test_claude_code_is_found_past_bookkeeping_records(tmp_path: Path, first: dict[str, Any]) -> None:
    """Most real transcripts open with a record that is not a message: the format is read from the records
    that follow (and a first line cut short, or a record of an odd shape, is passed over)."""
    path = tmp_path / "session.jsonl"
    body = CLAUDE.read_bytes()
    path.write_bytes(json.dumps(first).encode() + b"\n" + b'{"cut short\n' + body)
    assert detect_format(str(path), _head(str(path))) == "claude-code"
