"""Outcome kinds: the agent programs' own messages for calls that did not run, read by every importer and
hook as cancelled, refused or interrupted (docs/guard.md#calls-that-did-not-run), and the message ids that
group a model message's calls into one step (docs/trace-format.md)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import need
from conftest import read_clean as records
from looptrap.reading.outcome_kinds import claude_code_kind, codex_kind, crewai_kind, gemini_kind, refusal_words

DATA = Path(__file__).resolve().parent / "data" / "analyze"
CLAUDE_BATCH = DATA / "claude-code" / "-home-dev-cli" / "7b1e0c52-3d4f-4a6b-8c9d-0e1f2a3b4c5d.jsonl"

REFUSED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). To tell you how to proceed, the user said:\nnot yet"
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("<tool_use_error>Sibling tool call errored</tool_use_error>", "cancelled"),
        ("<tool_use_error>Cancelled: parallel tool call Bash(go test) errored</tool_use_error>", "cancelled"),
        (REFUSED, "refused"),
        ("Error: The user doesn't want to proceed with this tool use.", "refused"),
        ("User rejected tool use", "refused"),
        ("Permission for this tool use was denied. Try a different approach.", "refused"),
        ("[Request interrupted by user for tool use]", "interrupted"),
        ("The user doesn't want to take this action right now. STOP what you are doing.", "interrupted"),
        ("<tool_use_error>File does not exist.</tool_use_error>", None),
        ("Exit code 1\nFAIL", None),
        (None, None),
        ({"error": "x"}, None),
    ],
)
def test_claude_code_kinds(text: Any, kind: str | None) -> None:
    assert claude_code_kind(text) == kind


def test_the_users_words_in_a_refusal() -> None:
    assert refusal_words(REFUSED) == "not yet"
    assert refusal_words("User rejected tool use") is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("exec command rejected by user", "refused"),
        ("patch rejected by user", "refused"),
        ("Wall time: 3.2 seconds\naborted by user", "interrupted"),
        ("aborted by user after 1.5s", "interrupted"),
        ("aborted", "interrupted"),
        ("Exit code: 1\nWall time: 0.4 seconds\nOutput:\nerror: aborted build", None),
    ],
)
def test_codex_kinds(text: str, kind: str | None) -> None:
    assert codex_kind(text) == kind


@pytest.mark.parametrize(
    ("status", "text", "kind"),
    [
        ("cancelled", "[Operation Cancelled] Reason: User denied execution.", "refused"),
        ("cancelled", "[Operation Cancelled] Reason: User cancelled tool execution.", "interrupted"),
        ("cancelled", "[Operation Cancelled] Reason: User cancelled operation", "cancelled"),
        ("cancelled", None, "cancelled"),
        (None, "[Operation Cancelled] Reason: User cancelled tool execution.", "interrupted"),
        ("error", "ENOENT: no such file", None),
        ("success", "ok", None),
    ],
)
def test_gemini_kinds(status: Any, text: Any, kind: str | None) -> None:
    assert gemini_kind(status, text) == kind


def test_crewai_kind() -> None:
    said = "I tried reusing the same input, I must stop using this action input. I'll try something else instead.\n\n"
    assert crewai_kind(said) == "cancelled"
    assert crewai_kind("Search results: none") is None


# -- importers ------------------------------------------------------------------------------------------------

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)

from looptrap.analysis import iter_events, replay  # noqa: E402


def test_claude_code_batch_cancellations_refusals_and_interrupts() -> None:
    evs = records(CLAUDE_BATCH, "claude-code")
    calls = [e for e in evs if e["type"] == "tool_call"]
    results = [e for e in evs if e["type"] == "tool_result"]
    # the seven edits of one message, each answered before the next was written, share its message id
    assert [c["message_id"] for c in calls[:7]] == ["msg_01Batch"] * 7
    assert len({c["message_id"] for c in calls}) == 5
    assert [r.get("outcome") for r in results] == [None] + ["cancelled"] * 6 + [None, "refused", "interrupted", None]
    # one turn for the whole batch: no turn ends between its calls
    between = evs[evs.index(calls[0]) : evs.index(calls[6])]
    assert not [e for e in between if e["type"] == "turn_end"]


def test_a_recorded_batch_that_failed_together_is_not_a_loop(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in records(CLAUDE_BATCH, "claude-code")))
    (report,) = replay(iter_events(str(trace)))
    assert report.tool_calls == 11
    assert report.first_signal is None


def test_codex_and_gemini_outcomes_and_messages(tmp_path: Path) -> None:
    codex = tmp_path / "rollout.jsonl"
    lines = [
        {"timestamp": "2025-09-02T14:05:00Z", "type": "session_meta", "payload": {"id": "s-1"}},
        *(
            {
                "timestamp": "2025-09-02T14:05:01Z",
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps({"command": c}),
                    "call_id": f"c{i}",
                },
            }
            for i, c in enumerate((["rm", "-rf", "build"], ["ls"]))
        ),
        {
            "timestamp": "2025-09-02T14:05:02Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c0", "output": "exec command rejected by user"},
        },
        {
            "timestamp": "2025-09-02T14:05:03Z",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Wall time: 9.0 seconds\naborted by user",
            },
        },
    ]
    codex.write_text("".join(json.dumps(x) + "\n" for x in lines))
    evs = records(codex, "codex")
    calls = [e for e in evs if e["type"] == "tool_call"]
    assert calls[0]["message_id"] == calls[1]["message_id"]  # two calls of one response
    assert [e.get("outcome") for e in evs if e["type"] == "tool_result"] == ["refused", "interrupted"]

    gemini = tmp_path / "session.json"
    call = {"id": "t1", "name": "run_shell_command", "args": {"command": "make deploy"}, "status": "cancelled"}
    call["result"] = [
        {"functionResponse": {"response": {"error": "[Operation Cancelled] Reason: User denied execution."}}}
    ]
    gemini.write_text(
        json.dumps(
            {"sessionId": "g-1", "messages": [{"id": "m1", "type": "gemini", "content": "", "toolCalls": [call]}]}
        )
    )
    evs = records(gemini, "gemini-cli")
    assert [e["message_id"] for e in evs if e["type"] == "tool_call"] == ["m1"]
    assert [e.get("outcome") for e in evs if e["type"] == "tool_result"] == ["refused"]


def test_openai_chat_calls_of_one_message_share_its_id(tmp_path: Path) -> None:
    doc = tmp_path / "chat.json"
    tc = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "get_order", "arguments": json.dumps({"id": i})}}
        for i in range(3)
    ]
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "orders 0, 1, 2?"},
        {"role": "assistant", "content": None, "tool_calls": tc},
    ]
    msgs += [{"role": "tool", "tool_call_id": f"call_{i}", "content": "{}"} for i in range(3)]
    again = {"id": "call_9", "type": "function", "function": {"name": "get_order", "arguments": json.dumps({"id": 0})}}
    msgs.append({"role": "assistant", "content": None, "tool_calls": [again]})
    doc.write_text(json.dumps({"messages": msgs}))
    calls = [e for e in records(doc, "openai-chat") if e["type"] == "tool_call"]
    assert len(calls) == 4
    assert len({c["message_id"] for c in calls[:3]}) == 1  # the three calls of one message
    assert calls[3]["message_id"] != calls[0]["message_id"]  # the next message, after the results


def test_a_call_log_names_the_message_of_each_call(tmp_path: Path) -> None:
    log = tmp_path / "calls.csv"
    rows = ["seq,tool_name,arguments,result,is_error,response_id"]
    rows += [f'{i},read_file,"{{""path"": ""f{i % 2}""}}",EACCES,true,resp-{i // 4}' for i in range(12)]
    log.write_text("\n".join(rows) + "\n")
    evs = records(log, "csv")
    assert [e["message_id"] for e in evs if e["type"] == "tool_call"][:5] == ["resp-0"] * 4 + ["resp-1"]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in evs))
    (report,) = replay(iter_events(str(trace)))
    assert report.halted_at is None or report.halted_at["call_index"] > 8  # no halt inside a response
    steps = {s["call_index"]: s["action"] for s in report.signals}
    assert len({steps[i] for i in steps if 9 <= i <= 12}) <= 1  # the last response: one step, one action


# -- the agent frameworks' own answers for calls that did not run (the integrations record them) ------------------
def test_langchain_human_in_the_loop_decisions() -> None:
    from looptrap.reading.outcome_kinds import langchain_kind

    def hitl(decision: str) -> dict[str, Any]:
        return {"lc_source": "hitl_interrupt_decision", "lc_data": {"decision": decision}}

    assert langchain_kind(hitl("reject")) == "refused"
    assert langchain_kind(hitl("respond")) == "refused"  # the user answered in the tool's place
    assert langchain_kind(hitl("approve")) is None
    assert langchain_kind({"lc_source": "summarization"}) is None
    assert langchain_kind({"lc_source": "hitl_interrupt_decision"}) is None
    assert langchain_kind({}) is None
    assert langchain_kind("hitl_interrupt_decision") is None


@pytest.mark.parametrize(
    ("outcome", "kind"),
    [("denied", "refused"), ("interrupted", "interrupted"), ("success", None), ("failed", None), ("retried", None)],
)
def test_pydantic_ai_outcomes(outcome: str, kind: str | None) -> None:
    from looptrap.reading.outcome_kinds import pydantic_ai_kind

    assert pydantic_ai_kind(outcome) == kind


@pytest.mark.parametrize(
    ("result", "kind"),
    [
        ({"error": "This tool call is rejected."}, "refused"),
        ({"error": "This tool call requires confirmation, please approve or reject."}, "interrupted"),
        ({"error": "This tool call is rejected.", "detail": "x"}, None),  # the tool's own dict
        ({"error": "backend down"}, None),
        ({"result": "This tool call is rejected."}, None),
        ("This tool call is rejected.", None),
    ],
)
def test_adk_confirmation_answers(result: Any, kind: str | None) -> None:
    from looptrap.reading.outcome_kinds import adk_kind

    assert adk_kind(result) == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Tool execution for 'delete_file' was rejected by the user.", "refused"),
        ("Tool execution for 'delete_file' failed.", None),
        ("The user rejected it", None),
        (None, None),
    ],
)
def test_haystack_rejections(text: Any, kind: str | None) -> None:
    from looptrap.reading.outcome_kinds import haystack_kind

    assert haystack_kind(text) == kind


def test_ag2_denials() -> None:
    from looptrap.reading.outcome_kinds import ag2_kind

    assert ag2_kind("User denied the tool call request") == "refused"
    assert ag2_kind("User denied the tool call request, and said why") is None  # a message of its own
    assert ag2_kind("0 results") is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Tool execution cancelled", "cancelled"),
        ("tool cancelled by user", "cancelled"),
        ("Tool cancelled by hook", "cancelled"),
        ("Tool execution cancelled locally; remote execution may have continued", "interrupted"),
        ("Error: backend down", None),
        ("Tool execution cancelled by the weather", None),
    ],
)
def test_strands_cancellations(text: str, kind: str | None) -> None:
    from looptrap.reading.outcome_kinds import strands_kind

    assert strands_kind(text) == kind


REAL = sorted((Path(__file__).resolve().parent / "data" / "claude-code-real").glob("*.jsonl.gz"))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name.split("_")[0])
def test_real_claude_code_transcripts_are_read_right_and_left_alone(path: Path) -> None:
    """Three real transcripts (tests/data/claude-code-real/README.md): found as Claude Code though they open
    with a snapshot record; sibling cancellations read as calls that did not run; each message's calls one
    step; and no intervention at all (an earlier release halted two of them)."""
    from looptrap.analysis.analyze import AnalyzeOptions, analyze, detect_format
    from looptrap.analysis.analyze.sources import head

    assert detect_format(str(path), head(str(path))) == "claude-code"
    evs = records(path, "claude-code")
    calls = [e for e in evs if e["type"] == "tool_call"]
    cancelled = [e for e in evs if e["type"] == "tool_result" and e.get("outcome") == "cancelled"]
    with gzip.open(path, "rt", encoding="utf-8") as f:
        raw = f.read()
    siblings = raw.count("Sibling tool call errored")
    uses = 0
    for line in raw.splitlines():
        rec = json.loads(line)
        content = (rec.get("message") or {}).get("content") if rec.get("type") == "assistant" else None
        uses += sum(1 for b in content or () if isinstance(b, dict) and b.get("type") == "tool_use")
    assert len(calls) == uses  # every tool_use block of the conversation, once
    assert all(c["message_id"].startswith("msg_") for c in calls)
    assert len(cancelled) * 2 == siblings  # each appears twice in a record: the result and toolUseResult
    (a,) = analyze([str(path)], AnalyzeOptions()).sessions
    assert a.tool_calls == len(calls)
    assert a.replay["signals"] == []
    assert a.loop is None
