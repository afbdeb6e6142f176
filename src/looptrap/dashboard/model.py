"""What the dashboard shows, read from a store: the sessions, busiest runaway first, and one session's detail.

Everything here is plain data (JSON-ready); every text from a state goes through
:mod:`looptrap.core.printable`, and the page sets it as text, never as markup. A session id is kept exactly
as stored (``id``: what the page asks for again, byte for byte) and shown with its invisible characters
written out (``shown``: see :func:`visible`).

A read lists the sessions with their revisions (:mod:`looptrap.dashboard.source`) and decodes only the states
that changed since the previous read: at 10,000 sessions a read that finds nothing new decodes nothing.
"""

from __future__ import annotations

import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from looptrap.core.printable import one_line
from looptrap.core.state import VERDICTS, Flag, SessionState
from looptrap.dashboard.source import Entry, rows_of

if TYPE_CHECKING:
    from looptrap.stores.base import Store

__all__ = ["Board", "session_alerts", "visible"]

_FLAGS = [(v, k.lower()) for k, v in vars(Flag).items() if isinstance(v, int) and not k.startswith("_")]
_LEVELS = {1: "advised", 2: "blocked"}
_RATE_WINDOW = 60.0  # seconds of samples the call rate is measured over
_ID_CHARS = 160  # characters of a session id shown in the list (the session view shows all of it)
# Characters that show as nothing (or as a blank) though they are letters or symbols: Hangul fillers, the
# blank Braille pattern.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible(text: str, limit: int | None = None) -> str:
    """``text`` with every character that does not show written out as an escape: control, format
    (zero-width, bidirectional), separator and unassigned characters as ``\\xNN``, ``\\uNNNN`` or
    ``\\UNNNNNNNN``, a space at either end as ``\\x20``, a backslash as ``\\\\``; so two ids that differ
    look different. At most ``limit`` characters (cut with "...")."""
    out = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == " ":
            out.append("\\x20" if i in (0, last) else " ")
        elif ch in _BLANK_LETTERS or unicodedata.category(ch)[0] in "CZ":
            n = ord(ch)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
        else:
            out.append(ch)
        if limit is not None and len(out) > limit:
            break
    shown = "".join(out)
    return shown if limit is None or len(shown) <= limit else shown[: max(0, limit - 3)] + "..."


def session_alerts(
    state: SessionState, *, calls: int = 50, window: int = 10, share: float = 0.5, stale: int = 5
) -> list[str]:
    """The alert rules (see :mod:`looptrap.observe.alerts`) as far as a stored state shows them."""
    out = []
    if state.calls > calls:
        out.append("calls_per_session")
    recent = [e.digest for e in list(state.history)[-window:]]
    if len(recent) >= window and len(recent) - len(set(recent)) > share * window:
        out.append("repeat_share")
    if state.stale_run >= stale:
        out.append("nothing_new")
    return out


def _signals(state: SessionState) -> list[str]:
    out = []
    if state.halted:
        out.append(f"halted: {one_line(str(state.halted.get('reason')), 60)}")
    elif state.level:
        out.append(_LEVELS.get(state.level, f"escalated x{state.level}"))
    out += session_alerts(state)
    return out


class _Seen(NamedTuple):
    """A session as last decoded: the listing's entry then, and its row (without rate and last write)."""

    entry: Entry
    row: dict[str, Any]


def _session_row(session: str, state: SessionState | None) -> dict[str, Any]:
    if state is None:
        return {
            "id": session,
            "shown": visible(session, _ID_CHARS),
            "calls": 0,
            "turns": 0,
            "level": 0,
            "halted": None,
            "unreadable": True,
            "signals": [],
            "stale": 0,
            "needed": 0,
        }
    halted = state.halted.get("reason") if state.halted else None
    return {
        "id": session,
        "shown": visible(session, _ID_CHARS),
        "calls": state.calls,
        "turns": state.turn,
        "level": state.level,
        "halted": one_line(str(halted), 80) if halted else None,
        "unreadable": False,
        "signals": _signals(state),
        "stale": state.stale_run,
        "needed": len(state.needed),
    }


class _Rate:
    """A session's call rate over the last minute, from the points where its call count changed (an idle
    session keeps one); started over when the session was reset (another generation, or a lower revision
    or fewer calls than before)."""

    def __init__(self) -> None:
        self.points: deque[tuple[float, int]] = deque()  # (time, calls); the first at or before the window
        self.first = 0.0  # when the counting started
        self.gen, self.rev = "", 0

    def add(self, now: float, entry: Entry, calls: int) -> float:
        p = self.points
        if p and (entry.gen != self.gen or entry.rev < self.rev or calls < p[-1][1]):
            p.clear()  # a reset: the rate starts over
        self.gen, self.rev = entry.gen, entry.rev
        if not p:
            self.first = now
        if not p or p[-1][1] != calls:
            p.append((now, calls))
        start = max(self.first, now - _RATE_WINDOW)
        while len(p) > 1 and p[1][0] <= start:
            p.popleft()
        return max(0.0, round((calls - p[0][1]) * 60.0 / (now - start), 1)) if now > start else 0.0


class Board:
    """The store as of the last :meth:`refresh`: ``view()`` is the session list, ``version`` grows when it
    changes. ``decoded``: states decoded so far (only those that changed between two reads); ``refreshes``:
    reads of the store so far."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.rows = rows_of(store)
        self.clock = clock
        self._lock = threading.Lock()  # one store read at a time
        self._seen: dict[str, _Seen] = {}
        self._rates: dict[str, _Rate] = {}
        self._epoch = self.rows.epoch
        self._view: dict[str, Any] = {"sessions": [], "at": 0.0, "error": None}
        self._read_at: float | None = None
        self.version = 0
        self.decoded = 0
        self.refreshes = 0

    def refresh(self, max_age: float = 0.0) -> dict[str, Any]:
        """Read the store (unless it was read less than ``max_age`` seconds ago); returns the view (and bumps
        ``version`` when it changed)."""
        with self._lock:
            now = self.clock()
            if self._read_at is not None and 0 <= now - self._read_at < max_age:
                return self._view
            self._read_at = now
            self.refreshes += 1
            try:
                listing = self._read()
                error = None
            except Exception as exc:  # noqa: BLE001 - shown on the page, the server keeps running
                listing, error = [], one_line(str(exc), 300)
            rows = []
            for entry in listing:
                seen = self._seen.get(entry.session)
                if seen is None:
                    continue  # gone between the listing and the read of its state
                rate = self._rates.get(entry.session)
                if rate is None:
                    rate = self._rates[entry.session] = _Rate()
                rows.append({**seen.row, "updated": entry.updated, "rate": rate.add(now, entry, seen.row["calls"])})
            # A runaway first: running (not halted) with signals, then by call rate, then by calls.
            rows.sort(key=lambda r: (r["halted"] is None and bool(r["signals"]), r["rate"], r["calls"]), reverse=True)
            view = {"sessions": rows, "at": now, "error": error}
            if {k: v for k, v in view.items() if k != "at"} != {k: v for k, v in self._view.items() if k != "at"}:
                self.version += 1
            self._view = view
            return view

    def _read(self) -> list[Entry]:
        """List the sessions and decode the states that changed; forget the sessions that are gone."""
        listing = self.rows.listing()
        if self.rows.epoch != self._epoch:  # another file: nothing seen before applies
            self._epoch = self.rows.epoch
            self._seen.clear()
            self._rates.clear()
        changed = {}
        for entry in listing:
            seen = self._seen.get(entry.session)
            if seen is None or seen.entry.token != entry.token:
                changed[entry.session] = entry
        for got in self.rows.states(list(changed)):
            self.decoded += 1
            session = got.entry.session
            self._seen[session] = _Seen(changed[session], _session_row(session, got.state))
        live = {e.session for e in listing}
        for gone in [s for s in self._seen if s not in live]:
            del self._seen[gone]
            self._rates.pop(gone, None)
        return listing

    def view(self) -> dict[str, Any]:
        """The latest session list (as of the last :meth:`refresh`)."""
        return self._view

    def session(self, session: str) -> dict[str, Any] | None:
        """The session whose id is exactly ``session``: its counters, calls per tool, what the model said it
        needed, recent calls with their verdicts (``None``: no such session)."""
        with self._lock:
            got = self.rows.one(session)
        if got is None:
            return None
        s = got.state
        if s is None:
            raise ValueError(got.error or "unreadable")
        return {
            "id": session,
            "shown": visible(session),
            "rev": got.entry.rev,
            "calls": s.calls,
            "turns": s.turn,
            "level": s.level,
            "halted": {k: one_line(str(v), 500) for k, v in s.halted.items()} if s.halted else None,
            "signals": _signals(s),
            "stale": s.stale_run,
            "per_tool": [[one_line(t, 80), n] for t, n in sorted(s.per_tool.items(), key=lambda x: -x[1])[:20]],
            "needed": [one_line(n, 500) for n in s.needed],
            "recent": recent_calls(s),
        }

    def close(self) -> None:
        """Release the board's own connection (not the store)."""
        with self._lock:
            self.rows.close()


def recent_calls(s: SessionState) -> list[dict[str, Any]]:
    """The calls of the history window and the calls intervened on, newest first, each with its verdict.

    A call's ``verdict`` is the intervention the state keeps for it, else ``allow``; ``None`` (not known)
    for a call older than the oldest intervention kept once the state keeps as many as it can. A call that
    was not run (advised, blocked, halted) has no result and no flags.
    """
    kept = {v.call_index: v for v in s.verdicts}
    known_from = s.verdicts[0].call_index if len(s.verdicts) >= VERDICTS else 0
    rows: dict[int, dict[str, Any]] = {}
    for e in s.history:
        rows[e.call_index] = _row(s, e.call_index, e.tool, e.digest, f"{e.result:016x}", e.flags)
    for index, v in kept.items():
        if index not in rows:
            rows[index] = _row(s, index, v.tool, v.digest, None, 0)
    for index, row in rows.items():
        got = kept.get(index)
        if got is not None:
            row["verdict"] = {
                "action": one_line(got.action, 16),
                "kind": one_line(got.kind, 64),
                "reason": one_line(got.reason, 64),
            }
        elif index >= known_from:
            row["verdict"] = {"action": "allow", "kind": "", "reason": ""}
        else:
            row["verdict"] = None
    return [rows[i] for i in sorted(rows, reverse=True)]


def _row(s: SessionState, index: int, tool: str, digest: int, result: str | None, flags: int) -> dict[str, Any]:
    preview = s.previews.get(digest)
    return {
        "index": index,
        "tool": one_line(tool, 80),
        "call": one_line(preview, 120) if preview else f"{digest:016x}",
        "result": result,
        "flags": [name for bit, name in _FLAGS if flags & bit],
    }
