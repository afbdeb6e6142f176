"""Conversation logs: OpenAI Chat Completions messages, OpenAI Responses items and Anthropic Messages, as a
JSON document (a list of messages, a request or response body) or JSON Lines (one request, response, or
``{"request": ..., "response": ...}`` pair per line; or one message per line).

A request log repeats the history at every request: calls and results already read (by id) and messages
already read (by position) are skipped, so each call counts once. A model turn ends where the next model
output starts after a result or the user's words, and at the end of the conversation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any

import orjson
import xxhash

from looptrap.analysis.analyze.importers.common import (
    SHAPE_ERRORS,
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
from looptrap.analysis.analyze.prices import estimate_cost
from looptrap.core.printable import one_line
from looptrap.core.types import OutcomeKind

__all__ = ["Builder", "KindOf", "read_conversation", "session_of"]

#: Told of a message that cannot be read (where, why): it is skipped.
Skip = Callable[[str, BaseException], None]
#: Reads a failed result's text for the agent program's own message (``None``: the tool's own result).
KindOf = Callable[[str], "OutcomeKind | None"]

_CALL_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "mcp_call"}
_RESULT_ITEMS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


class Builder:
    """Builds the trace events of one conversation: calls, results, text, the user's words, turn ends."""

    def __init__(self, session: str, *, dedup: bool = True) -> None:
        self.session = session
        self.turns = 0  # model turns opened so far (a turn's calls share a message id)
        self.message: str | None = None  # the id the source gave the open turn's message, if any
        self.turn_open = False
        self.fed = False  # a result or the user's words since the last model output
        self.usage: dict[str, float] = {}
        self.model_name: str | None = None  # the model of the turns, where the log says
        self.names: dict[str, str] = {}  # emitted call id -> tool
        # ``dedup``: a call or result whose id was read already is a copy (a log that writes the history
        # again); without it, an id used again is another call (models that reuse call ids), paired with its
        # result by position: the oldest open call with that id.
        self.dedup = dedup
        self.uses: dict[str, int] = {}  # source call id -> calls read with it
        self.open: dict[str, list[str]] = {}  # source call id -> emitted ids awaiting their result
        self.answered: set[str] = set()  # source call ids whose result was read
        self.done = 0  # messages read so far (request logs repeat the history)
        self.last = 0  # a digest of the last message read (is a new request's history an extension?)
        self.anonymous = 0
        self.anon_open: list[tuple[str, str]] = []  # calls without an id, awaiting their result

    def _base(self, etype: str, seq: int | None, ts: float | None) -> Record:
        rec: Record = {"session": self.session, "type": etype}
        if seq is not None:
            rec["seq"] = seq
        if ts is not None:
            rec["ts"] = ts
        return rec

    def _end(self, seq: int | None, ts: float | None) -> list[Record]:
        if not self.turn_open:
            return []
        rec = self._base("turn_end", seq, ts)
        usage: dict[str, Any] = dict(self.usage)
        if usage and "cost_usd" not in usage:
            estimate = estimate_cost(self.model_name, usage)
            if estimate is not None:  # no cost in the log: its price from the tokens, marked as an estimate
                usage["cost_usd"] = round(estimate, 8)
                usage["cost_estimated"] = True
        rec["usage"] = usage or None
        self.usage = {}
        self.turn_open = False
        return [rec]

    def add_usage(self, usage: Any, model: Any = None) -> None:
        """Add a usage report (any provider's keys) to the current model turn, and the model that spent it.
        Input tokens count the cached ones (Anthropic reports those apart); the cache reads and writes are
        kept apart too, for the price of a turn whose cost the log does not record."""
        if isinstance(model, str) and model:
            self.model_name = model
        if not isinstance(usage, dict):
            return
        got = self.usage
        read = _count(usage, "cache_read_input_tokens", "cached_input_tokens", "cached", "cachedContentTokenCount")
        if not read:
            details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
            read = _count(details, "cached_tokens") if isinstance(details, dict) else 0
        write = _count(usage, "cache_creation_input_tokens")
        given = _count(usage, "input_tokens", "prompt_tokens", "input", "prompt_token_count", "promptTokenCount")
        anthropic = "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage
        for key, n in (
            ("input_tokens", given + read + write if anthropic else given),
            ("output_tokens", _count(usage, "output_tokens", "completion_tokens", "output", "candidates_token_count")),
            ("cache_read_tokens", read),
            ("cache_write_tokens", write),
        ):
            if n:
                got[key] = got.get(key, 0) + n
        for k in ("cost_usd", "cost", "costUSD"):
            v = usage.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
                got["cost_usd"] = got.get("cost_usd", 0) + v
                break

    def model(
        self,
        seq: int | None,
        ts: float | None,
        text: str,
        calls: list[tuple[str | None, str, Any]],
        message: str | None = None,
    ) -> list[Record]:
        """A model output: its words and its calls ``(id, tool, args)``; a new turn if input came between, or
        if the source names another message (``message``: the message id the source gives). Every call of a
        turn gets the turn's ``message_id``: the source's id, else one numbered per turn."""
        out: list[Record] = []
        same = message is not None and self.turn_open and message == self.message
        if not same and (self.fed or not self.turn_open or message is not None):
            out += self._end(seq, ts)  # results of an earlier call of the same message do not end its turn
            self.turn_open = True
            self.turns += 1
            self.message = message
        self.fed = False
        if text.strip():
            rec = self._base("text", seq, ts)
            rec["text"] = text
            out.append(rec)
        for call_id, tool, args in calls:
            if call_id is not None:
                used = self.uses.get(call_id, 0)
                if used and self.dedup:
                    continue
                self.uses[call_id] = used + 1
                source, call_id = call_id, call_id if not used else f"{call_id}#{used + 1}"
                self.open.setdefault(source, []).append(call_id)
                self.names[call_id] = tool
            else:
                self.anonymous += 1
                call_id = f"anon-{self.anonymous}"
                self.names[call_id] = tool
                self.anon_open.append((call_id, tool))
                del self.anon_open[:-64]
            rec = self._base("tool_call", seq, ts)
            rec.update(
                tool=tool or "(unnamed)",
                args=maybe_json(args),
                call_id=call_id,
                message_id=self.message or f"turn-{self.turns}",
            )
            out.append(rec)
        return out

    def result(
        self,
        seq: int | None,
        ts: float | None,
        call_id: str | None,
        output: Any,
        is_error: bool = False,
        tool: str | None = None,
        outcome: OutcomeKind | None = None,
    ) -> list[Record]:
        """A tool's result, paired with its call by id (without one: the latest open call of ``tool``, else
        the oldest open call without an id); ``outcome`` when the source says the call did not run."""
        if call_id is not None:
            source = call_id
            waiting = self.open.get(source)
            if waiting:  # the oldest call with this id that has no result yet
                call_id = waiting.pop(0)
                if not waiting:
                    del self.open[source]
            elif source in self.answered:
                return []  # no call with this id is waiting: a copy of a result already read
            self.answered.add(source)
            name = self.names.get(call_id) or tool
        else:
            pick = None
            for i in range(len(self.anon_open) - 1, -1, -1):
                if tool is None or self.anon_open[i][1] == tool:
                    pick = i if tool is not None else 0
                    break
            if pick is not None:
                call_id, name = self.anon_open.pop(pick)
            else:
                name = tool
        rec = self._base("tool_result", seq, ts)
        rec.update(tool=name or "(unknown)", output=output, is_error=bool(is_error))
        if call_id is not None:
            rec["call_id"] = call_id
        if outcome is not None:
            rec["outcome"] = outcome
        self.fed = True
        return [rec]

    def user(self, seq: int | None, ts: float | None, text: str) -> list[Record]:
        """The user's words: the model turn before them ends."""
        out = self._end(seq, ts)
        rec = self._base("user_message", seq, ts)
        rec["text"] = text
        out.append(rec)
        self.fed = True
        return out

    def close(self, seq: int | None = None, ts: float | None = None) -> list[Record]:
        """The end of the conversation: its last turn ends."""
        return self._end(seq, ts)


def _count(d: Any, *keys: str) -> int:
    """The first of ``keys`` that ``d`` holds as a number of tokens (0 if none does)."""
    for k in keys:
        v = d.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return int(v)
    return 0


def _arguments(fn: Any) -> tuple[str, Any]:
    if not isinstance(fn, dict):
        return "(unnamed)", None
    return str(fn.get("name") or "(unnamed)"), fn.get("arguments", fn.get("input"))


def feed_message(
    b: Builder, msg: Any, seq: int | None, ts: float | None, kind_of: KindOf | None = None
) -> list[Record]:
    """One message or item of any of the three APIs. ``kind_of`` reads a failed result's text for the agent
    program's own messages (a cancelled or refused call, see :mod:`looptrap.reading.outcome_kinds`)."""
    if not isinstance(msg, dict):
        return []
    ts = seconds(msg.get("timestamp") or msg.get("created_at")) if ts is None else ts
    itype = msg.get("type")
    role = msg.get("role")
    if itype in _CALL_ITEMS:
        if itype == "local_shell_call":
            action = obj(msg.get("action"))
            return b.model(seq, ts, "", [(_str(msg.get("call_id")), "local_shell", {"command": action.get("command")})])
        args = msg.get("arguments", msg.get("input"))
        return b.model(seq, ts, "", [(_str(msg.get("call_id") or msg.get("id")), str(msg.get("name") or ""), args)])
    if itype in _RESULT_ITEMS:
        out = msg.get("output")
        if isinstance(out, list):
            out = content_text(out)
        return b.result(seq, ts, _str(msg.get("call_id")), maybe_json(out) if isinstance(out, str) else out)
    if itype == "reasoning":
        return []
    if role in ("system", "developer"):
        return []
    content = msg.get("content")
    if role == "tool":
        text = content if isinstance(content, str) else content_text(content)
        return b.result(seq, ts, _str(msg.get("tool_call_id")), text, bool(msg.get("is_error")), _str(msg.get("name")))
    if role == "function":
        return b.result(seq, ts, None, content_text(content), False, _str(msg.get("name")))
    blocks = content if isinstance(content, list) else []
    if role == "assistant" or role == "model":
        calls: list[tuple[str | None, str, Any]] = []
        for tc in msg.get("tool_calls") or []:
            if isinstance(tc, dict):
                name, args = _arguments(tc.get("function") or tc)
                calls.append((_str(tc.get("id")), name, args))
        if isinstance(msg.get("function_call"), dict):
            name, args = _arguments(msg["function_call"])
            calls.append((None, name, args))
        texts = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype in ("tool_use", "server_tool_use"):
                calls.append((_str(block.get("id")), str(block.get("name") or ""), block.get("input")))
            elif btype in ("text", "output_text") and isinstance(block.get("text"), str):
                texts.append(block["text"])
        text = content if isinstance(content, str) else "\n".join(texts)
        made = b.model(seq, ts, text, calls, _str(msg.get("id")) if blocks else None)  # Anthropic: the message id
        b.add_usage(msg.get("usage"), msg.get("model"))
        return made
    if role == "user":
        got: list[Record] = []
        texts = [content] if isinstance(content, str) else []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                body = block.get("content")
                body = body if isinstance(body, str) else content_text(body)
                failed = bool(block.get("is_error"))
                kind = kind_of(body) if failed and kind_of is not None else None
                got += b.result(seq, ts, _str(block.get("tool_use_id")), body, failed, outcome=kind)
            elif block.get("type") in ("text", "input_text") and isinstance(block.get("text"), str):
                texts.append(block["text"])
        text = "\n".join(t for t in texts if t.strip())
        if text:
            got += b.user(seq, ts, text)
        return got
    return []


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def session_of(record: dict[str, Any]) -> str | None:
    """A conversation's id as logs usually carry it (top level or ``metadata``)."""
    for holder in (record, obj(record.get("metadata"))):
        for key in ("session", "session_id", "sessionId", "conversation_id", "thread_id", "conversation"):
            v = holder.get(key)
            if isinstance(v, dict):
                v = v.get("id")
            if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
                return str(v)
    return None


def _messages(obj: Any) -> list[Any] | None:
    """The history a document or request carries (``None``: it carries none)."""
    if isinstance(obj, list):
        return obj
    if not isinstance(obj, dict):
        return None
    for key in ("messages", "input", "history", "conversation"):
        v = obj.get(key)
        if isinstance(v, list):
            return v
    return None


def _outputs(obj: dict[str, Any]) -> list[Any]:
    """What a response body adds: Responses ``output``, Chat ``choices[].message``, an Anthropic message."""
    if isinstance(obj.get("output"), list):
        return list(obj["output"])
    if isinstance(obj.get("choices"), list):
        return [c.get("message") for c in obj["choices"] if isinstance(c, dict) and isinstance(c.get("message"), dict)]
    if obj.get("type") == "message" and obj.get("role") == "assistant":
        return [obj]
    return []


def _feed_snapshot(b: Builder, obj: Any, seq: int | None, ts: float | None, skip: Skip | None = None) -> list[Record]:
    """A request, response or document: the messages not read yet, and the outputs. ``skip(where, error)``
    is told of a message it cannot read (skipped; without ``skip``, the error is raised)."""
    out: list[Record] = []
    msgs = _messages(obj)
    if msgs is not None:
        if not b.done:  # the first history: every message once, ids as they come
            start, b.dedup = 0, False
        elif len(msgs) >= b.done and _digest(msgs[b.done - 1]) == b.last:
            start, b.dedup = b.done, False  # the history read so far, extended: read what is new
        else:  # a rewritten history (trimmed, summarised): calls and results already read are skipped by id
            start, b.dedup = (b.done if len(msgs) >= b.done else 0), True
        for i, m in enumerate(msgs):
            if i < start and (not b.dedup or not _has_id(m)):
                continue
            try:
                out += feed_message(b, m, seq, ts)
            except SHAPE_ERRORS as exc:
                if skip is None:
                    raise
                skip(f"message {i + 1}", exc)
        b.done = len(msgs)
        b.last = _digest(msgs[-1]) if msgs else 0
    if isinstance(obj, dict):
        response = obj.get("response")
        body = response if isinstance(response, dict) else obj
        out += _feed_outputs(b, _outputs(body), seq, ts)
        b.add_usage(body.get("usage"), body.get("model"))
        if msgs is None and "role" in obj:
            out += feed_message(b, obj, seq, ts)
    return out


def _feed_outputs(b: Builder, outputs: list[Any], seq: int | None, ts: float | None) -> list[Record]:
    """A response's output: read, and counted as history read (the next request's history repeats it)."""
    out: list[Record] = []
    for m in outputs:
        out += feed_message(b, m, seq, ts)
    if outputs:
        b.done += len(outputs)
        b.last = _digest(outputs[-1])
    return out


def _digest(message: Any) -> int:
    try:
        return xxhash.xxh3_64_intdigest(orjson.dumps(message, option=orjson.OPT_SORT_KEYS))
    except (TypeError, orjson.JSONEncodeError):
        return 0


def _runs(doc: Any) -> list[dict[str, Any]] | None:
    """A JSON array of runs, each holding its conversation (``traj`` in tau-bench's results, or
    ``messages``), or ``None`` when the document is something else."""
    if not isinstance(doc, list) or not doc:
        return None
    for run in doc:
        if not isinstance(run, dict) or "role" in run or not isinstance(run.get("traj", run.get("messages")), list):
            return None
    return doc


def _run_name(run: dict[str, Any], i: int) -> str:
    """A run's session name: its task and trial where it says them, else its position."""
    task = run.get("task_id", run.get("id"))
    if isinstance(task, (str, int)) and not isinstance(task, bool):
        trial = run.get("trial")
        return f"task-{task}" + (f"-trial-{trial}" if isinstance(trial, int) and not isinstance(trial, bool) else "")
    return f"run-{i + 1}"


def _has_id(m: Any) -> bool:
    if not isinstance(m, dict):
        return False
    if m.get("tool_calls") or m.get("call_id") or m.get("tool_call_id"):
        return True
    content = m.get("content")
    return isinstance(content, list) and any(
        isinstance(c, dict) and c.get("type") in ("tool_use", "tool_result") for c in content
    )


def read_conversation(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from a conversation log (a JSON document, or JSON Lines)."""
    default = options.session or name
    head = stream.peek(1 << 16)[: 1 << 16] if hasattr(stream, "peek") else b""
    lines = looks_like_lines(head)
    builders: dict[str, Builder] = {}
    if not lines:
        doc = json_document(stream, name, problems)
        if doc is None:
            return
        runs = _runs(doc)

        def skip(where: str, exc: BaseException) -> None:
            why = one_line(f"{type(exc).__name__}: {exc}", 160)
            problems.add(f"{name}:{where}", f"a record of an unexpected shape: skipped ({why})")

        if runs is not None:  # a benchmark's results: one conversation per run (tau-bench)
            for i, run in enumerate(runs):
                b = Builder(f"{default}/{_run_name(run, i)}")
                yield from _feed_snapshot(b, run.get("traj", run.get("messages")), None, None, skip)
                yield from b.close()
            return
        session = (session_of(doc) if isinstance(doc, dict) else None) or default
        b = Builder(session)
        if _messages(doc) is None and not (isinstance(doc, dict) and _outputs(doc)):
            problems.add(f"{name}:1", "no messages, input items or response output in this JSON document")
            return
        yield from _feed_snapshot(b, doc, None, None, skip)
        yield from b.close()
        return

    def one(n: int, line: Any) -> list[Record]:
        if not isinstance(line, (dict, list)):
            problems.add(f"{name}:{n}", f"expected a JSON object, got {type(line).__name__}")
            return []
        where = line.get("request") if isinstance(line, dict) and isinstance(line.get("request"), dict) else line
        session = (
            (session_of(line) if isinstance(line, dict) else None)
            or (session_of(where) if isinstance(where, dict) else None)
            or default
        )
        b = builders.get(session) or builders.setdefault(session, Builder(session))
        ts = (
            seconds(line.get("timestamp") or line.get("ts") or line.get("created_at") or line.get("created"))
            if isinstance(line, dict)
            else None
        )
        got = _feed_snapshot(b, where, n, ts)
        if isinstance(line, dict) and where is not line and isinstance(line.get("response"), dict):
            got += _feed_outputs(b, _outputs(line["response"]), n, ts)
            b.add_usage(line["response"].get("usage"), line["response"].get("model"))
        if (
            not got
            and _messages(where) is None
            and not (isinstance(where, dict) and (_outputs(where) or "role" in where))
        ):
            problems.add(f"{name}:{n}", "not a conversation record (no messages, input, output or role)")
        return got

    yield from each(json_lines(stream, name, problems), name, problems, one)
    for b in builders.values():
        yield from b.close()
