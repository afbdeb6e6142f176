"""``Guard``: one session's loop guard, a thin thread-safe driver around the decision engine."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from looptrap.core.config import GuardConfig
from looptrap.core.engine import Engine
from looptrap.core.report import parse_report
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import ALLOW, Call, Verdict

__all__ = ["Guard"]

log = logging.getLogger("looptrap")
log.addHandler(logging.NullHandler())
F = TypeVar("F", bound=Callable[..., Any])
_TURN_MEMORY = 256  # tool names and signals kept for the per-turn log record
_PENDING = 8192  # checked calls awaiting their result (parallel and async calls in flight)


class Guard:
    """Guards one session (one agent run, or one conversation across tasks).

    >>> guard = Guard()
    >>> v = guard.check("search_docs", {"query": "refund policy"})
    >>> v.action
    'allow'
    >>> guard.record("search_docs", {"query": "refund policy"}, "0 results")

    ``check`` before a tool runs, ``record`` after it ran, ``end_turn`` once per model turn (optional),
    ``new_task`` when a new user request starts. None of them raises: an internal error is logged and the
    call is allowed (``fail_closed=True`` halts instead, reason ``guard_error``).

    ``config`` (or keyword options, the fields of :class:`GuardConfig`) sets detectors, budgets, escalation
    and tool policies; ``clock`` returns seconds (``None`` disables time-based checks); ``state`` continues
    a saved session.
    """

    def __init__(
        self,
        config: GuardConfig | Engine | None = None,
        *,
        clock: Callable[[], float] | None = time.time,
        run_id: str | None = None,
        state: SessionState | None = None,
        logger: logging.Logger | None = None,
        **options: Any,
    ) -> None:
        if isinstance(config, Engine):
            engine = config if not options else Engine(config.config.replace(**options))
        else:
            cfg = config or GuardConfig()
            engine = Engine(cfg.replace(**options) if options else cfg)
        self._engine = engine
        self.config: GuardConfig = engine.config
        self._clock = clock
        self._lock = threading.Lock()
        self._log = logger or log
        self._state = state or SessionState()
        if not self._state.run_id:
            self._state.run_id = run_id or os.urandom(8).hex()
        self._pending: dict[tuple[str, int], tuple[Any, Call]] = {}
        self._pending_by_digest: dict[int, list[Call]] = {}
        self._turn_tools: list[str] = []
        self._turn_signals: list[str] = []
        self._turn_progress = False

    # -- the public contract ------------------------------------------------------------------------
    def check(self, tool: str, args: Any = None) -> Verdict:
        """Before a tool call runs: ``allow``/``warn`` (run it), ``advise``/``block`` (don't; hand the model
        ``verdict.message`` as the tool's error result), or ``halt`` (stop the run)."""
        if not self.config.enabled:
            return ALLOW
        try:
            now = self._now()
            call = self._engine.call(tool, args, at=now)
            with self._lock:
                call, verdict = self._engine.check(self._state, call, now)
                if verdict.allowed:
                    self._remember_pending(call.tool, args, call)
                if len(self._turn_tools) < _TURN_MEMORY:  # bounded even if end_turn is never called
                    self._turn_tools.append(call.tool)
                if verdict.signals and len(self._turn_signals) < _TURN_MEMORY:
                    self._turn_signals.append(verdict.reason or verdict.action)
            if verdict.signals:  # a sticky halt repeated on every later call is logged once, when it happened
                self._log_verdict(verdict, call)
            return verdict
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("check")

    def record(
        self, tool: str, args: Any = None, result: Any = None, *, is_error: bool = False, usage: Any = None
    ) -> None:
        """After a tool ran: its result (any value; an outcome-protocol dict is read for status/retryable),
        whether it failed, and optionally the usage it cost."""
        if not self.config.enabled:
            return
        try:
            now = self._now()
            engine = self._engine
            with self._lock:
                call = self._take_pending(tool, args)
                if call is not None:  # the same args object as at check: no re-hashing, one lock
                    self._note_progress(
                        engine.record(self._state, call, result, is_error=is_error, usage=usage, now=now)
                    )
                    return
            fresh = engine.call(tool, args, at=now)
            with self._lock:
                call = self._match_pending(fresh)
                entry = engine.record(self._state, call, result, is_error=is_error, usage=usage, now=now)
                self._note_progress(entry)
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            self._internal_error("record")

    def end_turn(
        self, state: Any = None, *, usage: Any = None, text: str | None = None, error: str | None = None
    ) -> Verdict:
        """Once per model turn. ``state``: anything describing the task's progress (same fingerprint 3 turns
        in a row is ``no_progress``); ``usage``: tokens/cost of the turn; ``text``: the model's words;
        ``error``: why the turn had no valid tool call, if so."""
        if not self.config.enabled:
            return ALLOW
        try:
            with self._lock:
                verdict = self._engine.end_turn(
                    self._state, progress=state, usage=usage, text=text, error=error, now=self._now()
                )
                if verdict.signals and len(self._turn_signals) < _TURN_MEMORY:
                    self._turn_signals.append(verdict.reason or verdict.action)
                self._log_turn()
            if verdict.signals:
                self._log_verdict(verdict, None)
            return verdict
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("end_turn")

    def new_task(self) -> None:
        """A new user request: repetition memory starts over, budgets do not."""
        with self._lock:
            self._engine.new_task(self._state)
            self._pending.clear()
            self._pending_by_digest.clear()

    # -- the honest way out -------------------------------------------------------------------------
    def report_blocked(self, tried: Iterable[str], needed: str) -> Verdict:
        """Record that the model cannot go on and halt cleanly (reason ``reported_blocked``)."""
        with self._lock:
            verdict = self._engine.report_blocked(self._state, list(tried), needed)
        self._log_verdict(verdict, None)
        return verdict

    def handle_report_blocked(self, arguments: Any) -> Verdict:
        """The ``report_blocked`` tool's handler: validates the arguments (an ``advise`` verdict explains a
        malformed call) and halts with reason ``reported_blocked``."""
        try:
            tried, needed = parse_report(arguments)
        except ValueError as exc:
            return Verdict(action="advise", kind="report_blocked", reason="invalid_report", message=str(exc))
        return self.report_blocked(tried, needed)

    @property
    def needed(self) -> list[str]:
        """What the model said it needed, in each ``report_blocked`` call so far."""
        return list(self._state.needed)

    @property
    def halted(self) -> Verdict | None:
        """The halting verdict, once the run is halted."""
        h = self._state.halted
        if h is None:
            return None
        return Verdict("halt", h.get("kind"), h.get("reason"), h.get("message", ""), h.get("summary", ""))

    @property
    def state(self) -> SessionState:
        """The session state (plain data; ``state.to_dict()`` saves it)."""
        return self._state

    @property
    def engine(self) -> Engine:
        """The decision engine (shareable between guards of the same configuration)."""
        return self._engine

    # -- wrapping tool functions ----------------------------------------------------------------------
    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        on_advice: Callable[[Verdict], Any] | None = None,
        result_is_error: Callable[[Any], bool] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        on_advice: Callable[[Verdict], Any] | None = None,
        result_is_error: Callable[[Any], bool] | None = None,
    ) -> F | Callable[[F], F]:
        """Decorate a sync or async tool function: check, run, record.

        Advice and blocks become the function's return value (``on_advice(verdict)``, by default the
        advice text); a halt raises :class:`looptrap.LoopHalted`. An exception from the tool is recorded
        as an error result and re-raised.
        """
        from looptrap.core.wrap import guarded

        def deco(f: F) -> F:
            return guarded(self, f, name=name, on_advice=on_advice, result_is_error=result_is_error)

        return deco(fn) if fn is not None else deco

    # -- internals ----------------------------------------------------------------------------------
    def _now(self) -> float | None:
        return self._clock() if self._clock is not None else None

    def _note_progress(self, entry: Entry) -> None:
        if entry.flags & (Flag.MUTATED | Flag.NOVEL) and not entry.flags & (Flag.ERROR | Flag.EMPTY):
            self._turn_progress = True

    def _remember_pending(self, tool: str, args: Any, call: Call) -> None:
        # Checked calls waiting for their result: by identity of the args object (no re-hashing when the
        # caller passes the same object to record), and by digest (when it passes an equal copy).
        p = self._pending
        if len(p) >= _PENDING:
            del p[next(iter(p))]
        p[(tool, id(args))] = (args, call)
        q = self._pending_by_digest.setdefault(call.digest, [])
        q.append(call)
        if len(self._pending_by_digest) > _PENDING:
            del self._pending_by_digest[next(iter(self._pending_by_digest))]

    def _take_pending(self, tool: str, args: Any) -> Call | None:
        hit = self._pending.pop((tool, id(args)), None)
        if hit is None or hit[0] is not args:
            return None
        self._drop_by_digest(hit[1])
        return hit[1]

    def _match_pending(self, call: Call) -> Call:
        q = self._pending_by_digest.get(call.digest)
        if not q:
            return call  # recorded without a check: the engine counts it as a call
        checked = q.pop(0)
        if not q:
            del self._pending_by_digest[call.digest]
        return checked

    def _drop_by_digest(self, call: Call) -> None:
        q = self._pending_by_digest.get(call.digest)
        if not q:
            return
        for i, c in enumerate(q):
            if c is call:  # by identity: comparing dataclasses field by field is slow
                del q[i]
                break
        if not q:
            del self._pending_by_digest[call.digest]

    def _internal_error(self, where: str) -> Verdict:
        self._log.exception(
            "looptrap: internal error in %s (%s)", where, "halting" if self.config.fail_closed else "allowing"
        )
        if self.config.fail_closed:
            return Verdict(action="halt", kind="guard", reason="guard_error", message="The loop guard failed.")
        return ALLOW

    def _log_verdict(self, verdict: Verdict, call: Call | None) -> None:
        level = logging.INFO if verdict.action == "warn" else logging.WARNING
        if not self._log.isEnabledFor(level):
            return
        extra: dict[str, Any] = {
            "run_id": self._state.run_id,
            "action": verdict.action,
            "kind": verdict.kind,
            "reason": verdict.reason,
            "call_index": verdict.call_index,
            "tool": call.tool if call else None,
            "call_digest": format(call.digest, "016x") if call else None,
            "signals": [
                {"kind": s.kind, "reason": s.reason, "count": s.count, "evidence": list(s.evidence)}
                for s in verdict.signals
            ],
        }
        if self.config.log_args:
            extra["advice"] = verdict.message
            extra["args_preview"] = call.preview if call else None
        self._log.log(level, "looptrap %s: %s", verdict.action, verdict.reason, extra=extra)

    def _log_turn(self) -> None:
        tools, signals, progressed = self._turn_tools, self._turn_signals, self._turn_progress
        self._turn_tools, self._turn_signals, self._turn_progress = [], [], False
        if not self._log.isEnabledFor(logging.INFO):
            return
        s = self._state
        counts = Counter(e.digest for e in s.history)
        extra = {
            "run_id": s.run_id,
            "turn": s.turn,
            "tools_called": tools,
            "repeat_max": max(counts.values(), default=0),
            "progressed": progressed,
            "signals": signals,
            "usage": {"tokens": s.tokens, "cost_usd": s.cost},
        }
        self._log.info("looptrap turn %d: %d tool call(s)", s.turn, len(tools), extra=extra)
