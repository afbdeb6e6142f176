"""``Guard`` and ``AsyncGuard``: one session's loop guard, thin drivers around the decision engine.

Each public operation is one change to the session state, computed by the engine: applied under a lock to
the guard's own state, or, with a store, by the store (atomically, shared with other processes). The sync
and async drivers share everything but the awaiting.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import ALLOW, Call, OutcomeKind, Verdict, more_severe
from looptrap.engine.config import GuardConfig
from looptrap.engine.engine import Engine
from looptrap.reading.report import parse_report

if TYPE_CHECKING:
    from looptrap.stores.base import AsyncStore, Snapshot, Store

__all__ = ["AsyncGuard", "Guard"]

log = logging.getLogger("looptrap")
log.addHandler(logging.NullHandler())
F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")
StoreErrorPolicy = Literal["open", "closed"]
_TURN_MEMORY = 256  # tool names and signals kept for the per-turn log record
_PENDING = 8192  # checked calls awaiting their result (parallel and async calls in flight)
_STORE_WARN_EVERY = 60.0  # seconds between two warnings about an unreachable store
_TRIED = 20  # items of report_blocked's ``tried`` taken: all that Engine.report_blocked keeps


class _Failed:
    """The store could not apply a change (see ``on_store_error``)."""


FAILED = _Failed()


class _GuardBase:
    """What :class:`Guard` and :class:`AsyncGuard` share: configuration, the cached session state, the
    per-process bookkeeping around each operation, logging and the store failure policy."""

    def __init__(
        self,
        config: GuardConfig | Engine | None = None,
        *,
        clock: Callable[[], float] | None = time.time,
        run_id: str | None = None,
        state: SessionState | None = None,
        logger: logging.Logger | None = None,
        session: str | None = None,
        on_store_error: StoreErrorPolicy = "open",
        store: Store | AsyncStore | None = None,
        **options: Any,
    ) -> None:
        if isinstance(config, Engine):
            engine = config if not options else Engine(config.config.replace(**options))
        else:
            cfg = config or GuardConfig()
            engine = Engine(cfg.replace(**options) if options else cfg)
        if store is not None and "previews" not in options and not store.previews and engine.config.previews:
            engine = engine.without_previews()  # a store that persists states keeps digests unless asked
        if on_store_error not in ("open", "closed"):
            raise ValueError(f"on_store_error must be 'open' or 'closed', got {on_store_error!r}")
        self._engine = engine
        self.config: GuardConfig = engine.config
        self._observers = engine.config.observers  # see looptrap.observe (metrics, traces, alert callbacks)
        self._clock = clock
        self._lock = threading.Lock()
        self._log = logger or log
        self._state = state or SessionState()
        if not self._state.run_id:
            self._state.run_id = run_id or session or os.urandom(8).hex()
        self.session: str = session or self._state.run_id
        self.on_store_error: StoreErrorPolicy = on_store_error
        self.store_errors = 0  # operations the store could not apply
        self.last_store_error: str | None = None  # why the last one failed (no password: see looptrap.stores)
        self._store_warned = float("-inf")
        self._snap: Snapshot | None = None
        self._pending: dict[tuple[str, int], tuple[Any, Call]] = {}
        self._turn_tools: list[str] = []
        self._turn_signals: list[str] = []
        self._turn_progress = False

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
        """The session state (plain data; ``state.to_dict()`` saves it). With a store: as of the last call."""
        return self._state

    @property
    def engine(self) -> Engine:
        """The decision engine (shareable between guards of the same configuration)."""
        return self._engine

    # -- each operation: prepare (outside any lock), change (the state), finish (bookkeeping, logs) ------
    # Changes are closures, not functools.partial with keywords: this is the per-call path, and a partial
    # merges its keywords into a new dict on every call.
    def _check_change(
        self, tool: str, args: Any, message_id: str | None
    ) -> Callable[[SessionState], tuple[Call, Verdict]]:
        now = self._now()
        call = self._engine.call(tool, args, at=now)
        check = self._engine.check
        return lambda state: check(state, call, now, message_id)

    def _checked(self, args: Any, got: tuple[Call, Verdict] | _Failed) -> Verdict:
        if isinstance(got, _Failed):
            return self._store_verdict()
        call, verdict = got
        with self._lock:
            self._note_check(args, call, verdict)
        if verdict.signals:  # a sticky halt repeated on every later call is logged once, when it happened
            self._log_verdict(verdict, call)
        if self._observers:
            self._observe_check(call.tool, verdict)
        return verdict

    def _note_check(self, args: Any, call: Call, verdict: Verdict) -> None:
        """This turn's bookkeeping of a checked call (the caller holds the lock)."""
        if verdict.allowed:
            self._remember_pending(call.tool, args, call)
        if len(self._turn_tools) < _TURN_MEMORY:  # bounded even if end_turn is never called
            self._turn_tools.append(call.tool)
        if verdict.signals and len(self._turn_signals) < _TURN_MEMORY:
            self._turn_signals.append(verdict.reason or verdict.action)

    def _record_change(
        self, tool: str, args: Any, result: Any, is_error: bool, usage: Any, outcome: OutcomeKind | None
    ) -> Callable[[SessionState], Entry]:
        now = self._now()
        call = self._call_to_record(tool, args, now)
        record = self._engine.record
        return lambda state: record(state, call, result, is_error=is_error, usage=usage, now=now, outcome=outcome)

    def _call_to_record(self, tool: str, args: Any, now: float | None) -> Call:
        call = self._take_pending(tool, args)
        if call is None:  # an equal copy of the arguments, or another process's check: matched by digest
            call = self._engine.call(tool, args, at=now)
        return call

    def _recorded(self, entry: Entry | _Failed) -> None:
        if isinstance(entry, _Failed):
            return
        if entry.flags & (Flag.MUTATED | Flag.NOVEL) and not entry.flags & (Flag.ERROR | Flag.EMPTY):
            self._turn_progress = True

    def _turn_change(
        self, state: Any, usage: Any, text: str | None, error: str | None, tool_calls: int | None
    ) -> Callable[..., Verdict]:
        engine, now = self._engine, self._now()

        def change(session: SessionState) -> Verdict:
            said = engine.text(session, text, final=True) if text else ALLOW
            ended = engine.end_turn(
                session, progress=state, usage=usage, text=text, error=error, tool_calls=tool_calls, now=now
            )
            return said if more_severe(said.action, ended.action) else ended

        return change

    def _text_change(self, text: str) -> Callable[[SessionState], Verdict]:
        text_of = self._engine.text
        return lambda session: text_of(session, text)

    def _text_read(self, got: Verdict | _Failed) -> Verdict:
        verdict = self._store_verdict() if isinstance(got, _Failed) else got
        if verdict.signals:
            with self._lock:
                if len(self._turn_signals) < _TURN_MEMORY:
                    self._turn_signals.append(verdict.reason or verdict.action)
            self._log_verdict(verdict, None)
            if self._observers:
                self._observe_verdict(verdict)
        return verdict

    def _turn_ended(self, got: Verdict | _Failed) -> Verdict:
        verdict = self._store_verdict() if isinstance(got, _Failed) else got
        with self._lock:
            if verdict.signals and len(self._turn_signals) < _TURN_MEMORY:
                self._turn_signals.append(verdict.reason or verdict.action)
            self._log_turn()
        if verdict.signals:
            self._log_verdict(verdict, None)
            if self._observers:
                self._observe_verdict(verdict)
        return verdict

    def _new_task_started(self) -> None:
        with self._lock:
            self._pending.clear()

    def _report_change(self, tried: Iterable[str], needed: str) -> Callable[[SessionState], Verdict]:
        return partial(self._engine.report_blocked, tried=list(tried), needed=needed)

    def _reported(self, got: Verdict | _Failed, tried: Iterable[str], needed: str) -> Verdict:
        if isinstance(got, _Failed):  # the store failed: the model's report still ends this run
            got = self._engine.report_blocked(SessionState(), list(tried), needed)
        self._log_verdict(got, None)
        if self._observers:
            self._observe_verdict(got)
        return got

    def _report_failed(self, tried: Any, needed: Any) -> Verdict:
        """``report_blocked`` failed inside looptrap: log it, and halt anyway if the report can be read."""
        verdict = self._internal_error("report_blocked")
        try:
            return self._engine.report_blocked(SessionState(), [str(t) for t in islice(tried, _TRIED)], str(needed))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return verdict

    # -- the store ----------------------------------------------------------------------------------
    def _saved(self, snap: Snapshot) -> None:
        self._snap = snap
        self._state = snap.state

    def _store_failed(self, exc: BaseException) -> _Failed:
        """The store could not apply a change (unreachable, an unreadable state, a bad session id, or any
        other failure of the store's own code): counted, logged at most once a minute, policy applied."""
        from looptrap.core.printable import one_line
        from looptrap.stores.base import StoreError

        self._snap = None
        self.store_errors += 1
        why = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
        self.last_store_error = why = one_line(why, 1000)
        now = time.monotonic()
        if now - self._store_warned >= _STORE_WARN_EVERY:
            self._store_warned = now
            self._log.warning(
                "looptrap: session store unavailable (%s); %s",
                why,
                "halting" if self.on_store_error == "closed" else "allowing calls unguarded",
                extra={"run_id": self.session, "store_errors": self.store_errors},
            )
        if self._observers:
            from looptrap.observe.base import notify_store_error

            notify_store_error(self._observers, self.session, why)
        return FAILED

    def _store_verdict(self) -> Verdict:
        if self.on_store_error == "closed":
            return Verdict(
                action="halt", kind="store", reason="store_unavailable", message="The loop guard's store is down."
            )
        return ALLOW

    # -- internals ----------------------------------------------------------------------------------
    def _observe_check(self, tool: str, verdict: Verdict) -> None:
        from looptrap.observe.base import notify_check

        notify_check(self._observers, self.session, tool, verdict, self._state)

    def _observe_verdict(self, verdict: Verdict) -> None:
        from looptrap.observe.base import notify_verdict

        notify_verdict(self._observers, self.session, verdict, self._state)

    def _now(self) -> float | None:
        return self._clock() if self._clock is not None else None

    def _remember_pending(self, tool: str, args: Any, call: Call) -> None:
        # Checked calls waiting for their result, by identity of the args object: when the caller passes
        # the same object to record, it needs no re-hashing. Equal copies are matched by digest in the state.
        p = self._pending
        if len(p) >= _PENDING:
            del p[next(iter(p))]
        p[(tool, id(args))] = (args, call)

    def _take_pending(self, tool: str, args: Any) -> Call | None:
        hit = self._pending.pop((tool, id(args)), None)  # one atomic dict operation: no lock needed
        if hit is None or hit[0] is not args:
            return None
        return hit[1]

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


class Guard(_GuardBase):
    """Guards one session (one agent run, or one conversation across tasks).

    >>> guard = Guard()
    >>> v = guard.check("search_docs", {"query": "refund policy"})
    >>> v.action
    'allow'
    >>> guard.record("search_docs", {"query": "refund policy"}, "0 results")

    ``check`` before a tool runs, ``record`` after it ran, ``end_turn`` once per model turn (optional: with
    it, the parallel calls of a turn share one step of the escalation ladder), ``user_message`` when the
    user says something, ``new_task`` when a new user request starts. None of them raises: an internal
    error is logged and the call is allowed (``fail_closed=True`` halts instead, reason ``guard_error``).

    ``config`` (or keyword options, the fields of :class:`GuardConfig`) sets detectors, budgets, escalation
    and tool policies; ``clock`` returns seconds (``None`` disables time-based checks); ``state`` continues
    a saved session. ``store`` keeps the state where other processes share it (see :mod:`looptrap.stores`),
    under the id ``session``; when the store fails (unreachable, an unreadable state, a bad session id),
    ``on_store_error="open"`` allows the call and ``"closed"`` halts it (reason ``store_unavailable``);
    either way ``store_errors`` counts it and ``last_store_error`` says why. A store that persists states
    (SQLite, Redis) gets digests only: argument previews and result excerpts are kept only with
    ``previews=True`` here or a store opened with ``previews=True``.
    """

    def __init__(
        self,
        config: GuardConfig | Engine | None = None,
        *,
        store: Store | None = None,
        session: str | None = None,
        on_store_error: StoreErrorPolicy = "open",
        **options: Any,
    ) -> None:
        super().__init__(config, session=session, on_store_error=on_store_error, store=store, **options)
        self._store = store

    # -- the public contract ------------------------------------------------------------------------
    def check(self, tool: str, args: Any = None, *, message_id: str | None = None) -> Verdict:
        """Before a tool call runs: ``allow``/``warn`` (run it), ``advise``/``block`` (don't; hand the model
        ``verdict.message`` as the tool's error result), or ``halt`` (stop the run). ``message_id``: the model
        message that asked for the call, when known (calls of one message share one step of the ladder)."""
        if not self.config.enabled:
            return ALLOW
        try:
            if self._store is None:  # the common case, on every tool call: no closure, one lock, one clock read
                clock = self._clock
                now = clock() if clock is not None else None
                engine = self._engine
                call = engine.call(tool, args, at=now)
                with self._lock:
                    call, verdict = engine.check(self._state, call, now, message_id)
                    turn_tools = self._turn_tools
                    if verdict is ALLOW and len(turn_tools) < _TURN_MEMORY:  # _note_check's common case, inlined
                        pending = self._pending
                        if len(pending) >= _PENDING:
                            del pending[next(iter(pending))]
                        pending[(call.tool, id(args))] = (args, call)  # _remember_pending
                        turn_tools.append(call.tool)
                    else:
                        self._note_check(args, call, verdict)
                if verdict.signals:
                    self._log_verdict(verdict, call)
                if self._observers:
                    self._observe_check(call.tool, verdict)
                return verdict
            return self._checked(args, self._apply(self._check_change(tool, args, message_id)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("check")

    def record(
        self,
        tool: str,
        args: Any = None,
        result: Any = None,
        *,
        is_error: bool = False,
        usage: Any = None,
        outcome: OutcomeKind | None = None,
    ) -> None:
        """After a tool ran: its result (any value; an outcome-protocol dict is read for status/retryable),
        whether it failed, and optionally the usage it cost. ``outcome`` says what happened when the call
        did not simply succeed or fail: ``cancelled`` (by the agent program), ``refused`` (by the user) or
        ``interrupted``: such a call did not run, and says nothing about the tool."""
        if not self.config.enabled:
            return
        try:
            if self._store is None:  # the common case, as in check
                clock = self._clock
                now = clock() if clock is not None else None
                hit = self._pending.pop((tool, id(args)), None)  # the call checked with these very arguments
                call = hit[1] if hit is not None and hit[0] is args else self._engine.call(tool, args, at=now)
                with self._lock:
                    entry = self._engine.record(
                        self._state, call, result, is_error=is_error, usage=usage, now=now, outcome=outcome
                    )
                if entry.flags & (Flag.MUTATED | Flag.NOVEL) and not entry.flags & (Flag.ERROR | Flag.EMPTY):
                    self._turn_progress = True  # as in _recorded
                return
            self._recorded(self._apply(self._record_change(tool, args, result, is_error, usage, outcome)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            self._internal_error("record")

    def end_turn(
        self,
        state: Any = None,
        *,
        usage: Any = None,
        text: str | None = None,
        error: str | None = None,
        tool_calls: int | None = None,
    ) -> Verdict:
        """Once per model turn. ``state``: anything describing the task's progress (same fingerprint 3 turns
        in a row is ``no_progress``); ``usage``: tokens/cost of the turn; ``text``: the model's words;
        ``error``: why the turn had no valid tool call, if so; ``tool_calls``: how many tool calls the turn
        asked for, when the turn is ended as the model's response arrives, before they run (by default: the
        calls checked since the last ``end_turn``)."""
        if not self.config.enabled:
            return ALLOW
        try:
            return self._turn_ended(self._apply(self._turn_change(state, usage, text, error, tool_calls)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("end_turn")

    def feed_text(self, text: str) -> Verdict:
        """The model's own words as they stream (any chunk size) or a whole message: the ``repeated_text``
        detector watches them. ``end_turn(text=...)`` feeds a turn's text too; don't pass the same text both
        ways."""
        if not self.config.enabled:
            return ALLOW
        try:
            if not text:  # inside the try: a hostile __bool__ is an internal error, not the agent's
                return ALLOW
            return self._text_read(self._apply(self._text_change(text)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("feed_text")

    def user_message(self, text: str | None = None) -> None:
        """New input from the user within the task (an answer, a follow-up, a correction): what the agent does
        next answers it, so a reply to the user is not idleness, calls before it are not repeated by calls
        after it, and the ladder starts over. ``text`` is what the user said (not kept). For a new request
        whose repetition memory should start over, call :meth:`new_task` (both, for a new request)."""
        if not self.config.enabled:
            return
        try:
            self._apply(partial(self._engine.user_message, text=text))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            self._internal_error("user_message")

    def new_task(self) -> None:
        """A new user request: repetition memory starts over, budgets do not."""
        try:
            self._apply(self._engine.new_task)
            self._new_task_started()
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            self._internal_error("new_task")

    # -- the honest way out -------------------------------------------------------------------------
    def report_blocked(self, tried: Iterable[str], needed: str) -> Verdict:
        """Record that the model cannot go on and halt cleanly (reason ``reported_blocked``). Only the first
        20 items of ``tried`` are read (all that is kept), so any iterable will do, an endless one too."""
        try:
            tried = list(islice(tried, _TRIED))  # an endless iterable is not exhausted
            return self._reported(self._apply(self._report_change(tried, needed)), tried, needed)
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._report_failed(tried, needed)

    def handle_report_blocked(self, arguments: Any) -> Verdict:
        """The ``report_blocked`` tool's handler: validates the arguments (an ``advise`` verdict explains a
        malformed call) and halts with reason ``reported_blocked``."""
        try:
            tried, needed = parse_report(arguments)
        except ValueError as exc:
            return Verdict(action="advise", kind="report_blocked", reason="invalid_report", message=str(exc))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("handle_report_blocked")
        return self.report_blocked(tried, needed)

    def _apply(self, change: Callable[[SessionState], R]) -> R | _Failed:
        store = self._store
        with self._lock:  # with a store too: this process's updates to the session would only conflict
            if store is None:
                return change(self._state)
            tracked, failed = _tracked(change)
            try:
                result, snap = store.update(self.session, tracked, self._snap)
            except Exception as exc:
                if not failed:  # the store failed, not the change: the failure policy applies
                    return self._store_failed(exc)
                self._snap = None  # the cached state may hold a half-applied change
                raise
            except BaseException:
                self._snap = None
                raise
            self._saved(snap)
            return result

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
        from looptrap.drivers.wrap import guarded

        def deco(f: F) -> F:
            return guarded(self, f, name=name, on_advice=on_advice, result_is_error=result_is_error)

        return deco(fn) if fn is not None else deco


class AsyncGuard(_GuardBase):
    """:class:`Guard` for asyncio code whose store does I/O (``await guard.check(...)``).

    The same options and behaviour; ``store`` is an :class:`looptrap.stores.AsyncStore` (a synchronous
    store is run in a worker thread). Without a store, a plain :class:`Guard` is faster and works in async
    code too (it never blocks).
    """

    def __init__(
        self,
        config: GuardConfig | Engine | None = None,
        *,
        store: AsyncStore | Store | None = None,
        session: str | None = None,
        on_store_error: StoreErrorPolicy = "open",
        **options: Any,
    ) -> None:
        super().__init__(config, session=session, on_store_error=on_store_error, store=store, **options)
        from looptrap.stores.base import Store
        from looptrap.stores.threaded import ThreadedStore

        self._store: AsyncStore | None = ThreadedStore(store) if isinstance(store, Store) else store
        self._alock: Any = None  # an asyncio.Lock, made in the running loop on first use

    async def check(self, tool: str, args: Any = None, *, message_id: str | None = None) -> Verdict:
        """See :meth:`Guard.check`."""
        if not self.config.enabled:
            return ALLOW
        try:
            return self._checked(args, await self._apply(self._check_change(tool, args, message_id)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("check")

    async def record(
        self,
        tool: str,
        args: Any = None,
        result: Any = None,
        *,
        is_error: bool = False,
        usage: Any = None,
        outcome: OutcomeKind | None = None,
    ) -> None:
        """See :meth:`Guard.record`."""
        if not self.config.enabled:
            return
        try:
            self._recorded(await self._apply(self._record_change(tool, args, result, is_error, usage, outcome)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            self._internal_error("record")

    async def end_turn(
        self,
        state: Any = None,
        *,
        usage: Any = None,
        text: str | None = None,
        error: str | None = None,
        tool_calls: int | None = None,
    ) -> Verdict:
        """See :meth:`Guard.end_turn`."""
        if not self.config.enabled:
            return ALLOW
        try:
            return self._turn_ended(await self._apply(self._turn_change(state, usage, text, error, tool_calls)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("end_turn")

    async def feed_text(self, text: str) -> Verdict:
        """See :meth:`Guard.feed_text`."""
        if not self.config.enabled:
            return ALLOW
        try:
            if not text:
                return ALLOW
            return self._text_read(await self._apply(self._text_change(text)))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("feed_text")

    async def user_message(self, text: str | None = None) -> None:
        """See :meth:`Guard.user_message`."""
        if not self.config.enabled:
            return
        try:
            await self._apply(partial(self._engine.user_message, text=text))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            self._internal_error("user_message")

    async def new_task(self) -> None:
        """See :meth:`Guard.new_task`."""
        try:
            await self._apply(self._engine.new_task)
            self._new_task_started()
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            self._internal_error("new_task")

    async def report_blocked(self, tried: Iterable[str], needed: str) -> Verdict:
        """See :meth:`Guard.report_blocked`."""
        try:
            tried = list(islice(tried, _TRIED))  # an endless iterable is not exhausted
            return self._reported(await self._apply(self._report_change(tried, needed)), tried, needed)
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._report_failed(tried, needed)

    async def handle_report_blocked(self, arguments: Any) -> Verdict:
        """See :meth:`Guard.handle_report_blocked`."""
        try:
            tried, needed = parse_report(arguments)
        except ValueError as exc:
            return Verdict(action="advise", kind="report_blocked", reason="invalid_report", message=str(exc))
        except Exception:  # noqa: BLE001 - the guard must never take the agent down
            return self._internal_error("handle_report_blocked")
        return await self.report_blocked(tried, needed)

    def tool(self, fn: F, /) -> F:
        """Decorate an async tool function: check, run, record (see :meth:`Guard.tool`)."""
        from looptrap.drivers.wrap import guarded

        return guarded(self, fn)

    async def _apply(self, change: Callable[[SessionState], R]) -> R | _Failed:
        store = self._store
        if store is None:
            with self._lock:
                return change(self._state)
        import asyncio

        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            tracked, failed = _tracked(change)
            try:
                result, snap = await store.update(self.session, tracked, self._snap)
            except Exception as exc:
                if not failed:
                    return self._store_failed(exc)
                self._snap = None
                raise
            except BaseException:
                self._snap = None
                raise
            self._saved(snap)
            return result


def _tracked(change: Callable[[SessionState], R]) -> tuple[Callable[[SessionState], R], list[bool]]:
    """``change``, and a list that gets an item if it raises: an exception from the store's ``update``
    is then looptrap's own (an internal error), not the store's."""
    failed: list[bool] = []

    def tracked(state: SessionState) -> R:
        try:
            return change(state)
        except BaseException:
            failed.append(True)
            raise

    return tracked, failed
