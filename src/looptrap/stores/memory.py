"""``MemoryStore``: sessions shared by the guards of one process (and the reference for the store contract)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from looptrap.core.state import SessionState
from looptrap.stores.base import (
    DEFAULT_TTL,
    Change,
    R,
    SessionInfo,
    Snapshot,
    Store,
    check_session,
    decode_state,
    encode_state,
    expired,
)

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """Session states kept in this process, encoded as the other backends keep them (so a guard never shares
    mutable objects with another)."""

    def __init__(self, *, ttl: float | None = DEFAULT_TTL) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._data: dict[str, tuple[int, bytes, float]] = {}

    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        check_session(session)
        with self._lock:
            hit = self._entry(session)
            if hit is None:
                snap = Snapshot(0, SessionState(run_id=session))
            elif cached is not None and cached.rev == hit[0]:
                snap = cached
            else:
                snap = Snapshot(hit[0], decode_state(hit[1]))
            result = change(snap.state)
            new = Snapshot(snap.rev + 1, snap.state)
            self._data[session] = (new.rev, encode_state(new.state), time.time())
            return result, new

    def load(self, session: str) -> Snapshot | None:
        with self._lock:
            hit = self._entry(session)
        return Snapshot(hit[0], decode_state(hit[1])) if hit is not None else None

    def delete(self, session: str) -> bool:
        with self._lock:
            return self._data.pop(session, None) is not None

    def sessions(self) -> Iterator[SessionInfo]:
        with self._lock:
            items = list(self._data.items())
        for session, (rev, data, updated) in items:
            if not expired(updated, self.ttl):
                yield SessionInfo.of(session, rev, updated, decode_state(data))

    def _entry(self, session: str) -> tuple[int, bytes, float] | None:
        hit = self._data.get(session)
        if hit is not None and expired(hit[2], self.ttl):
            del self._data[session]
            return None
        return hit
