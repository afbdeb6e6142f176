"""Replay: run recorded sessions through the same engine the live guard uses, and report when and why it
would have intervened. What-if semantics: the recorded run goes on after advice and blocks (each is
reported); after a halt the session's calls are still counted but no further signals are reported."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from looptrap.analysis.trace import Event, TraceError, iter_events, lines_of, open_trace
from looptrap.core.state import SessionState
from looptrap.core.types import ALLOW, OUTCOME_KINDS, Call, Verdict
from looptrap.engine.config import GuardConfig
from looptrap.engine.engine import Engine

if TYPE_CHECKING:
    from looptrap.analysis.deal import Batch

__all__ = ["Replayer", "SessionReport", "replay", "replay_file"]

log = logging.getLogger("looptrap.replay")
MAX_SIGNALS = 200


@dataclass(slots=True)
class SessionReport:
    """What the guard would have done in one session."""

    session: str
    tool_calls: int = 0
    signals: list[dict[str, Any]] = field(default_factory=list)
    first_signal: dict[str, Any] | None = None
    first_intervention: dict[str, Any] | None = None
    halted_at: dict[str, Any] | None = None
    signals_dropped: int = 0
    orphan_results: int = 0
    first_line: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` line for this session (the public report format)."""
        out: dict[str, Any] = {
            "session": self.session,
            "tool_calls": self.tool_calls,
            "first_signal": self.first_signal,
            "first_intervention": self.first_intervention,
            "halted_at": self.halted_at,
            "signals": self.signals,
        }
        if self.signals_dropped:
            out["signals_dropped"] = self.signals_dropped
        if self.orphan_results:
            out["orphan_results"] = self.orphan_results
        return out


class _Session:
    __slots__ = ("by_id", "by_tool", "first_line", "report", "state", "text")

    def __init__(self, name: str, first_line: int = 0) -> None:
        self.first_line = first_line
        self.state = SessionState(run_id=name)
        self.report = SessionReport(name)
        self.by_id: dict[str, Call] = {}
        self.by_tool: dict[str, list[Call]] = {}
        self.text: str | None = None


class Replayer:
    """Feeds events to per-session states sharing one engine. Memory: one bounded state per session."""

    def __init__(self, config: GuardConfig | None = None, *, warn: Callable[[str], None] | None = None) -> None:
        self.engine = Engine(config)
        self.sessions: dict[str, _Session] = {}
        self.unknown_types: set[str] = set()
        self._warn = warn or log.warning

    def feed(self, event: Event) -> None:
        """Process one event."""
        handler = _HANDLERS.get(event.type)
        if handler is None:
            if event.type not in self.unknown_types:
                self.unknown_types.add(event.type)
                self._warn(f"unknown event type {event.type!r} skipped (warned once per type)")
            return
        s = self.sessions.get(event.session)
        if s is None:
            s = self.sessions[event.session] = _Session(event.session, event.line)
        handler(self, s, event)

    def reports(self) -> list[SessionReport]:
        """Per-session reports, in order of first appearance."""
        return [s.report for s in self.sessions.values()]

    # -- handlers -----------------------------------------------------------------------------------
    def _tool_call(self, s: _Session, ev: Event) -> None:
        d = ev.data
        tool = d["tool"]
        call = self.engine.call(tool, d.get("args"), at=ev.ts)
        call, verdict = self.engine.check(s.state, call, ev.ts, _message_id(d.get("message_id")))
        s.report.tool_calls += 1
        call_id = d.get("call_id")
        if isinstance(call_id, str) and call_id:
            s.by_id[call_id] = call
            if len(s.by_id) > 1024:
                del s.by_id[next(iter(s.by_id))]
        else:
            stack = s.by_tool.setdefault(tool, [])
            stack.append(call)
            del stack[:-64]
        self._note(s, ev, verdict, tool)

    def _tool_result(self, s: _Session, ev: Event) -> None:
        d = ev.data
        call_id = d.get("call_id")
        call = s.by_id.pop(call_id, None) if isinstance(call_id, str) else None
        if call is None:
            stack = s.by_tool.get(d["tool"])
            if stack:
                call = stack.pop()
        if call is None:
            s.report.orphan_results += 1
            return
        outcome = d.get("outcome")
        self.engine.record(
            s.state,
            call,
            d.get("output"),
            is_error=bool(d.get("is_error")),
            usage=d.get("usage"),
            now=ev.ts,
            outcome=outcome if outcome in OUTCOME_KINDS else None,
        )

    def _turn_end(self, s: _Session, ev: Event) -> None:
        d = ev.data
        err = d.get("error")
        if s.text is not None:  # the turn's text is complete: its last sentence counts now
            self._note(s, ev, self.engine.text(s.state, "", final=True), None)
        verdict = self.engine.end_turn(
            s.state,
            progress=d.get("state"),
            usage=d.get("usage"),
            text=s.text,
            error=str(err) if err else None,
            now=ev.ts,
        )
        s.text = None
        self._note(s, ev, verdict, None)

    def _text(self, s: _Session, ev: Event) -> None:
        t = ev.data.get("text")
        if not isinstance(t, str):
            return
        s.text = t
        self._note(s, ev, self.engine.text(s.state, t), None)  # a chunk of the model's words, maybe streamed

    def _user_message(self, s: _Session, ev: Event) -> None:
        t = ev.data.get("text")
        self.engine.user_message(s.state, t if isinstance(t, str) else None)

    def _note(self, s: _Session, ev: Event, verdict: Verdict, tool: str | None) -> None:
        r = s.report
        if verdict is ALLOW or r.halted_at is not None:
            return
        item = {
            "call_index": verdict.call_index,
            "seq": ev.seq if ev.seq is not None else ev.line,
            "kind": verdict.kind,
            "action": verdict.action,
            "reason": verdict.reason,
            "tool": tool,
            "message": verdict.message,
        }
        if r.first_signal is None:
            r.first_signal = item
        if r.first_intervention is None and verdict.intervenes:
            r.first_intervention = item
        if verdict.action == "halt":
            r.halted_at = item
        if len(r.signals) < MAX_SIGNALS:
            r.signals.append(item)
        else:
            r.signals_dropped += 1


def _message_id(value: Any) -> str | None:
    """A ``tool_call``'s ``message_id``: a non-empty string or an integer (anything else: not known)."""
    if type(value) is str:
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


_HANDLERS = {
    "tool_call": Replayer._tool_call,
    "tool_result": Replayer._tool_result,
    "turn_end": Replayer._turn_end,
    "text": Replayer._text,
    "user_message": Replayer._user_message,
}


Lines = Callable[[Iterable[bytes], IO[bytes]], Iterable[bytes]]


def replay_file(
    path: str,
    *,
    jobs: int = 1,
    skip_invalid: bool = False,
    config: GuardConfig | None = None,
    warn: Callable[[str], None] | None = None,
    lines: Lines | None = None,
) -> tuple[list[SessionReport], list[TraceError]]:
    """Replay a trace file (``-``: stdin; gzip and zstd are read as such), with ``jobs`` processes (sessions
    are independent: this process reads the input once and deals each line to the process its session
    hashes to, see :mod:`looptrap.analysis.deal`). Returns the reports in order of first appearance and the
    skipped invalid lines, in file order. Raises :class:`TraceError` on the first malformed line unless
    ``skip_invalid``, ``OSError`` when the file cannot be opened. ``lines(lines, raw)`` wraps the lines read
    (a progress bar; ``raw`` is the file as stored). Warnings (unknown event types) reach ``warn`` once
    each, from every process."""
    name = "<stdin>" if path == "-" else path
    if jobs <= 1:
        reports, errors, _, fatal = _replay_one(path, name, skip_invalid, config, warn or log.warning, lines)
        if fatal is not None:
            raise fatal
        return reports, errors
    from looptrap.analysis.deal import deal

    dealt = deal([(path, name)], jobs, partial(_replay_dealt, (name, skip_invalid, config)), lines=lines)
    parts = dealt.results
    fatals = [fatal for *_, fatal in parts if fatal is not None] + dealt.read_errors
    if fatals:
        raise min(fatals, key=_line_of)  # each process stops at its first bad line: the earliest is the file's
    said: dict[str, None] = {}
    for _, _, warnings, _ in parts:
        said.update(dict.fromkeys(warnings))
    for text in said:
        (warn or log.warning)(text)
    errors = sorted((e for _, part_errors, _, _ in parts for e in part_errors), key=_line_of)
    reports = sorted((r for part, *_ in parts for r in part), key=lambda r: r.first_line)
    return reports, errors


def _line_of(error: TraceError) -> int:
    line = error.where.rsplit(":", 1)[-1]
    return int(line) if line.isdigit() else 0


_Shard = tuple[list[SessionReport], list[TraceError], list[str], "TraceError | None"]


def _replay_one(
    path: str,
    name: str,
    skip_invalid: bool,
    config: GuardConfig | None,
    warn: Callable[[str], None],
    lines: Lines | None,
) -> _Shard:
    """The whole file in this process."""
    errors: list[TraceError] = []
    r = Replayer(config, warn=warn)
    fatal = None
    try:
        with open_trace(path) as (stream, raw):
            source: Iterable[bytes] = lines(lines_of(stream), raw) if lines is not None else lines_of(stream)
            for ev in iter_events(source, name=name, skip_invalid=skip_invalid, errors=errors):
                r.feed(ev)
    except TraceError as exc:
        fatal = exc
    return _reports(r), errors, [], fatal


def _replay_dealt(job: tuple[str, bool, GuardConfig | None], _worker: int, batches: Iterator[Batch]) -> _Shard:
    """One process's part of a replay: its reports, its skipped lines, its warnings and the malformed line
    that stopped it, if any."""
    from looptrap.analysis.deal import dealt_events

    name, skip_invalid, config = job
    errors: list[TraceError] = []
    warnings: list[str] = []
    r = Replayer(config, warn=warnings.append)
    fatal = None
    try:
        for _, ev in dealt_events(batches, [name], skip_invalid=skip_invalid, errors=errors):
            r.feed(ev)
    except TraceError as exc:
        fatal = exc
    return _reports(r), errors, warnings, fatal


def _reports(r: Replayer) -> list[SessionReport]:
    reports = r.reports()
    for rep, sess in zip(reports, r.sessions.values(), strict=True):
        rep.first_line = sess.first_line
    return reports


def replay(events: Iterable[Event], config: GuardConfig | None = None) -> list[SessionReport]:
    """Replay events (from :func:`looptrap.analysis.trace.iter_events`) and return per-session reports."""
    r = Replayer(config)
    for ev in events:
        r.feed(ev)
    return r.reports()
