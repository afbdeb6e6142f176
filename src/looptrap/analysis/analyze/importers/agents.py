"""Coding-agent CLI session logs: Claude Code transcripts, Codex CLI rollouts, Gemini CLI sessions.

* Claude Code: ``~/.claude/projects/<project>/<session>.jsonl``, one JSON object per line: ``user`` and
  ``assistant`` lines carry an Anthropic Messages ``message`` (``tool_use`` blocks in the assistant's,
  ``tool_result`` blocks in the user's), with ``sessionId``, ``timestamp`` and ``uuid``; one assistant
  message may be split over several lines sharing ``message.id``. Sub-agent lines (``isSidechain``) are a
  session of their own (``<session>~sidechain``); ``isMeta`` lines are not the user's words.
* Codex CLI: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, lines ``{timestamp, type, payload}``:
  ``session_meta`` (the session id), ``response_item`` (``message``, ``function_call`` with JSON
  ``arguments`` and ``call_id``, ``function_call_output``, ``custom_tool_call``, ``local_shell_call``...),
  ``event_msg`` (``token_count`` with the last request's usage). Older rollouts (the items themselves on
  each line, after a first ``{id, timestamp, instructions}`` line) are read too.
* Gemini CLI: ``~/.gemini/tmp/<project>/chats/session-*.json`` (``{sessionId, messages: [...]}``) or
  ``.jsonl`` (a header line, ``{"$set": ...}`` updates, messages written again when they change: the last
  copy of each ``id`` counts); a ``gemini`` message has ``toolCalls`` (``id``, ``name``, ``args``,
  ``result``, ``status``) and ``tokens``. Headless ``--output-format stream-json`` output (``init``,
  ``tool_use``, ``tool_result`` events) is read too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from looptrap.analysis.analyze.importers.common import (
    ImportOptions,
    Problems,
    Record,
    content_text,
    each,
    json_document,
    json_lines,
    looks_like_lines,
    maybe_json,
    obj,
    seconds,
)
from looptrap.analysis.analyze.importers.conversation import Builder
from looptrap.reading.outcome_kinds import claude_code_kind, codex_kind, gemini_kind

__all__ = ["read_claude_code", "read_codex", "read_gemini"]


def read_claude_code(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from a Claude Code session transcript."""
    builders: dict[str, Builder] = {}
    counted: set[str] = set()  # message ids whose usage was added

    def one(n: int, rec: Any) -> list[Record]:
        if not isinstance(rec, dict):
            problems.add(f"{name}:{n}", f"expected a JSON object, got {type(rec).__name__}")
            return []
        kind = rec.get("type")
        if kind != "user" and kind != "assistant":
            return []  # summary, system, file-history-snapshot, attachment...: bookkeeping
        msg = rec.get("message")
        if not isinstance(msg, dict):
            problems.add(f"{name}:{n}", f"a {kind} line without a 'message' object")
            return []
        session = str(rec.get("sessionId") or options.session or name)
        if rec.get("isSidechain"):
            session += "~sidechain" + (f"-{rec['agentId']}" if isinstance(rec.get("agentId"), str) else "")
        b = builders.get(session) or builders.setdefault(session, Builder(session))
        ts = seconds(rec.get("timestamp"))
        if kind == "user" and rec.get("isMeta"):
            content = msg.get("content")
            if not isinstance(content, list):
                return []
            msg = {**msg, "content": [c for c in content if isinstance(c, dict) and c.get("type") == "tool_result"]}
        mid = msg.get("id")
        usage = msg.pop("usage", None) if kind == "assistant" else None
        out = _feed(b, {**msg, "role": "assistant" if kind == "assistant" else "user"}, n, ts)
        if kind == "assistant" and (not isinstance(mid, str) or mid not in counted):
            if isinstance(mid, str):
                counted.add(mid)
            b.add_usage(usage, msg.get("model"))
            if isinstance(rec.get("costUSD"), (int, float)):
                b.add_usage({"cost_usd": rec["costUSD"]})
        return out

    yield from each(json_lines(stream, name, problems), name, problems, one)
    for b in builders.values():
        yield from b.close()


def _feed(b: Builder, msg: dict[str, Any], seq: int, ts: float | None) -> list[Record]:
    from looptrap.analysis.analyze.importers.conversation import feed_message

    return feed_message(b, msg, seq, ts, claude_code_kind)


_CODEX_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_CODEX_RESULTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def read_codex(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from a Codex CLI rollout."""
    b: Builder | None = None
    session = options.session or name

    def builder() -> Builder:
        nonlocal b
        if b is None:
            b = Builder(session)
        return b

    def one(n: int, rec: Any) -> list[Record]:
        nonlocal session
        if not isinstance(rec, dict):
            problems.add(f"{name}:{n}", f"expected a JSON object, got {type(rec).__name__}")
            return []
        ts = seconds(rec.get("timestamp"))
        kind = rec.get("type")
        payload = rec.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            if isinstance(payload.get("id"), str) and b is None:
                session = payload["id"]
            return []
        if n == 1 and "instructions" in rec and isinstance(rec.get("id"), str):
            session = rec["id"]  # the older format's first line
            return []
        if kind == "turn_context" and isinstance(payload, dict):
            builder().add_usage(None, payload.get("model"))  # the model of the turns that follow
            return []
        if kind == "event_msg" and isinstance(payload, dict):
            if payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
                builder().add_usage(payload["info"].get("last_token_usage"))
            return []
        if kind == "response_item" and isinstance(payload, dict):
            item = payload
        elif isinstance(kind, str) and (kind in _CODEX_CALLS or kind in _CODEX_RESULTS or kind == "message"):
            item = rec  # the older format: the item itself
        else:
            return []
        return _codex_item(builder(), item, n, ts)

    yield from each(json_lines(stream, name, problems), name, problems, one)
    if b is not None:
        yield from b.close()


def _codex_item(b: Builder, item: dict[str, Any], n: int, ts: float | None) -> list[Record]:
    itype = item.get("type")
    if itype == "message":
        text = content_text(item.get("content"))
        if item.get("role") == "assistant":
            return b.model(n, ts, text, [])
        if item.get("role") == "user" and text.strip() and not text.lstrip().startswith("<"):
            return b.user(n, ts, text)  # not the <environment_context> and instructions Codex sends
        return []
    call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
    if itype == "function_call":
        return b.model(n, ts, "", [(call_id, str(item.get("name") or ""), item.get("arguments"))])
    if itype == "custom_tool_call":
        return b.model(n, ts, "", [(call_id, str(item.get("name") or ""), {"input": item.get("input")})])
    if itype == "local_shell_call":
        action = obj(item.get("action"))
        return b.model(n, ts, "", [(call_id, "local_shell", {"command": action.get("command")})])
    if itype in _CODEX_RESULTS:
        output = item.get("output")
        failed = False
        if isinstance(output, dict):  # {"content": ..., "success": bool}
            failed = output.get("success") is False
            output = output.get("content", output)
        parsed = maybe_json(output)
        said: Any = parsed
        if isinstance(parsed, dict) and isinstance(parsed.get("metadata"), dict):
            code = parsed["metadata"].get("exit_code")
            failed = failed or (isinstance(code, int) and code != 0)
            said = parsed.get("output")
        return b.result(n, ts, call_id, parsed, failed, outcome=codex_kind(said))
    return []


def read_gemini(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from a Gemini CLI session (JSON or JSON Lines) or headless stream-json output."""
    head = stream.peek(1 << 16)[: 1 << 16] if hasattr(stream, "peek") else b""
    session = options.session or name
    if not looks_like_lines(head):
        doc = json_document(stream, name, problems)
        if isinstance(doc, dict):
            yield from _gemini_messages(str(doc.get("sessionId") or session), doc.get("messages") or [], name, problems)
        elif doc is not None:
            problems.add(f"{name}:1", "a Gemini CLI session is a JSON object with 'messages'")
        return
    messages: dict[str, tuple[int, dict[str, Any]]] = {}
    stream_b: Builder | None = None

    def one(n: int, rec: Any) -> list[Record]:
        nonlocal session, stream_b
        if not isinstance(rec, dict):
            problems.add(f"{name}:{n}", f"expected a JSON object, got {type(rec).__name__}")
            return []
        if "messages" in rec and isinstance(rec["messages"], list):  # a whole session on one line
            session = str(rec.get("sessionId") or session)
            for i, m in enumerate(rec["messages"]):
                if isinstance(m, dict):
                    messages[str(m.get("id") or f"{n}.{i}")] = (n, m)
            return []
        if "sessionId" in rec and "type" not in rec:
            session = str(rec["sessionId"])  # the header line
            return []
        if "$set" in rec:
            return []
        etype = rec.get("type")
        if etype in _GEMINI_STREAM and "id" not in rec:
            if stream_b is None:
                stream_b = Builder(str(rec.get("session_id") or session))
            return _gemini_stream(stream_b, rec, n)
        if etype in _GEMINI_MESSAGES:
            messages[str(rec.get("id") or n)] = (n, rec)  # the last copy of a message counts
            return []
        problems.add(f"{name}:{n}", "not a Gemini CLI session record")
        return []

    yield from each(json_lines(stream, name, problems), name, problems, one)
    if messages:
        ordered = sorted(messages.values(), key=lambda t: t[0])
        yield from _gemini_messages(session, [m for _, m in ordered], name, problems, [n for n, _ in ordered])
    if stream_b is not None:
        yield from stream_b.close()


_GEMINI_STREAM = ("init", "tool_use", "tool_result", "message", "result", "error")
_GEMINI_MESSAGES = ("user", "gemini", "info", "error", "warning")


def _gemini_messages(
    session: str, messages: list[Any], name: str, problems: Problems, lines: list[int] | None = None
) -> Iterator[Record]:
    b = Builder(session)

    def one(seq: int, m: Any) -> list[Record]:
        if not isinstance(m, dict):
            problems.add(f"{name}:{seq}", "a message must be a JSON object")
            return []
        ts = seconds(m.get("timestamp"))
        mtype = m.get("type")
        out: list[Record] = []
        if mtype == "user":
            text = content_text(m.get("content"))
            if text.strip():
                out += b.user(seq, ts, text)
        elif mtype == "gemini":
            calls = [tc for tc in m.get("toolCalls") or [] if isinstance(tc, dict)]
            out += b.model(
                seq,
                ts,
                content_text(m.get("content")),
                [(str(tc.get("id") or ""), str(tc.get("name") or ""), tc.get("args")) for tc in calls],
                str(m["id"]) if isinstance(m.get("id"), str) and m["id"] else None,
            )
            tokens = m.get("tokens")
            if isinstance(tokens, dict):
                spent = sum(v for k in ("output", "thoughts") if isinstance(v := tokens.get(k), int))
                b.add_usage(
                    {"input": tokens.get("input"), "output": spent, "cached": tokens.get("cached")}, m.get("model")
                )
            for tc in calls:
                status = str(tc.get("status") or "success")
                output = _gemini_output(tc)
                out += b.result(
                    seq,
                    seconds(tc.get("timestamp")) or ts,
                    str(tc.get("id") or ""),
                    output,
                    status != "success",
                    outcome=gemini_kind(status, output),
                )
        return out

    numbered = ((lines[i] if lines else i + 1, m) for i, m in enumerate(messages))
    yield from each(numbered, name, problems, one)
    yield from b.close()


def _gemini_output(tc: dict[str, Any]) -> Any:
    """A tool call's result: the ``functionResponse`` output (or error) it recorded, else its display text."""
    result = tc.get("result")
    parts = result if isinstance(result, list) else [result]
    for part in parts:
        if isinstance(part, dict):
            fr = part.get("functionResponse")
            if isinstance(fr, dict) and isinstance(fr.get("response"), dict):
                resp = fr["response"]
                return resp.get("output", resp.get("error", resp))
    display = tc.get("resultDisplay")
    return display if display is not None else result


def _gemini_stream(b: Builder, rec: dict[str, Any], n: int) -> list[Record]:
    ts = seconds(rec.get("timestamp"))
    etype = rec.get("type")
    if etype == "tool_use":
        return b.model(
            n, ts, "", [(str(rec.get("tool_id") or ""), str(rec.get("tool_name") or ""), rec.get("parameters"))]
        )
    if etype == "tool_result":
        out = rec.get("output")
        if out is None and isinstance(rec.get("error"), dict):
            out = rec["error"].get("message")
        status = rec.get("status")
        return b.result(
            n, ts, str(rec.get("tool_id") or ""), out, status not in (None, "success"), outcome=gemini_kind(status, out)
        )
    if etype == "message":
        text = content_text(rec.get("content"))
        if rec.get("role") == "user":
            return b.user(n, ts, text) if text.strip() else []
        return b.model(n, ts, text, [])
    if etype == "result" and isinstance(rec.get("stats"), dict):
        b.add_usage(rec["stats"])
    return []
