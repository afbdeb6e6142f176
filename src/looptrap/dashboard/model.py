"""What the dashboard shows, read from a store: the sessions, busiest runaway first, and one session's detail.

Everything here is plain data (JSON-ready); every text from a state goes through
:mod:`looptrap.core.printable`, and the page sets it as text, never as markup.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from looptrap.core.printable import one_line
from looptrap.core.state import VERDICTS, Flag, SessionState

if TYPE_CHECKING:
    from looptrap.stores.base import Store

__all__ = ["Board", "session_alerts"]

_FLAGS = [(v, k.lower()) for k, v in vars(Flag).items() if isinstance(v, int) and not k.startswith("_")]
_LEVELS = {1: "advised", 2: "blocked"}
_RATE_WINDOW = 60.0  # seconds of samples the call rate is measured over
_LOADED = 200  # sessions loaded in full at each poll (the most recently written)
_ID_CHARS = 160


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


class Board:
    """The store, read every ``poll`` seconds by :meth:`refresh`; ``view()`` is the latest session list."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self._lock = threading.Lock()  # one store read at a time
        self._samples: dict[str, deque[tuple[float, int]]] = {}
        self._view: dict[str, Any] = {"sessions": [], "at": 0.0, "error": None}
        self.version = 0

    def refresh(self) -> dict[str, Any]:
        """Read the store once; returns the new view (and bumps ``version`` when it changed)."""
        with self._lock:
            now = self.clock()
            try:
                infos = sorted(self.store.sessions(), key=lambda i: -(i.updated or 0))
                error = None
            except Exception as exc:  # noqa: BLE001 - shown on the page, the server keeps running
                infos, error = [], one_line(str(exc), 300)
            rows = []
            for n, info in enumerate(infos):
                row: dict[str, Any] = {
                    "id": one_line(info.session, _ID_CHARS),
                    "calls": info.calls,
                    "turns": info.turn,
                    "level": info.level,
                    "halted": one_line(info.halted, 80) if info.halted else None,
                    "updated": info.updated,
                    "unreadable": info.error is not None,
                    "rate": self._rate(info.session, now, info.calls),
                    "signals": [],
                    "stale": 0,
                    "needed": 0,
                }
                if n < _LOADED and info.error is None:
                    try:
                        snap = self.store.load(info.session)
                    except Exception:  # noqa: BLE001 - an unreadable session is marked, the rest shown
                        snap, row["unreadable"] = None, True
                    if snap is not None:
                        row["signals"] = _signals(snap.state)
                        row["stale"] = snap.state.stale_run
                        row["needed"] = len(snap.state.needed)
                rows.append(row)
            live = {i.session for i in infos}
            for gone in [s for s in self._samples if s not in live]:
                del self._samples[gone]
            # A runaway first: running (not halted) with signals, then by call rate, then by calls.
            rows.sort(key=lambda r: (r["halted"] is None and bool(r["signals"]), r["rate"], r["calls"]), reverse=True)
            view = {"sessions": rows, "at": now, "error": error}
            if {k: v for k, v in view.items() if k != "at"} != {k: v for k, v in self._view.items() if k != "at"}:
                self.version += 1
            self._view = view
            return view

    def view(self) -> dict[str, Any]:
        """The latest session list (as of the last :meth:`refresh`)."""
        return self._view

    def _rate(self, session: str, now: float, calls: int) -> float:
        """Calls per minute over the last minute of samples."""
        s = self._samples.get(session)
        if s is None:
            s = self._samples[session] = deque()
        s.append((now, calls))
        while len(s) > 2 and now - s[0][0] > _RATE_WINDOW:
            s.popleft()
        t0, c0 = s[0]
        return round((calls - c0) * 60.0 / (now - t0), 1) if now > t0 else 0.0

    def session(self, session: str) -> dict[str, Any] | None:
        """One session's detail: counters, calls per tool, what the model said it needed, recent calls with
        their verdicts."""
        with self._lock:
            snap = self.store.load(session)
        if snap is None:
            return None
        s = snap.state
        return {
            "id": one_line(session, _ID_CHARS),
            "rev": snap.rev,
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
