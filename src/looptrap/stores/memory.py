"""``MemoryStore``: sessions shared by the guards of one process (and the reference for the store contract)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator

from looptrap.core.printable import one_line
from looptrap.core.state import SessionState
from looptrap.stores.base import (
    DEFAULT_TTL,
    MAX_SESSION,
    Change,
    Listed,
    Loaded,
    R,
    SessionInfo,
    Snapshot,
    Store,
    UnreadableStateError,
    check_session,
    check_ttl,
    expired,
    loaded,
    new_gen,
    read_state,
    valid_session,
    wanted,
    write_state,
)

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """Session states kept in this process, encoded as the other backends keep them (so a guard never shares
    mutable objects with another). Nothing leaves the process, so guards keep previews here by default."""

    url = "memory://"

    def __init__(self, *, ttl: float | None = DEFAULT_TTL, previews: bool = True) -> None:
        self.ttl = check_ttl(ttl)
        self.previews = bool(previews)
        self._lock = threading.Lock()
        self._data: dict[str, tuple[int, bytes, float, str]] = {}  # rev, state, updated, generation

    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        check_session(session)
        with self._lock:
            hit = self._entry(session)
            if hit is None:
                snap = Snapshot(0, SessionState(run_id=session), new_gen())
            elif cached is not None and cached.rev == hit[0] and cached.gen == hit[3]:
                snap = cached
            else:
                snap = Snapshot(hit[0], read_state(hit[1], session, self.reset_hint), hit[3])
            result = change(snap.state)
            new = Snapshot(snap.rev + 1, snap.state, snap.gen)
            data = write_state(new.state, session, self.reset_hint)
            self._data[session] = (new.rev, data, time.time(), new.gen)
            return result, new

    def load(self, session: str) -> Snapshot | None:
        if not valid_session(session):
            return None
        with self._lock:
            hit = self._entry(session)
        return Snapshot(hit[0], read_state(hit[1], session, self.reset_hint), hit[3]) if hit else None

    def delete(self, session: str) -> bool:
        with self._lock:
            return self._data.pop(session, None) is not None

    def sessions(self) -> Iterator[SessionInfo]:
        with self._lock:
            items = list(self._data.items())
        for session, (rev, data, updated, _) in items:
            if not expired(updated, self.ttl):
                try:
                    yield SessionInfo.of(session, rev, updated, read_state(data, session, None))
                except UnreadableStateError as exc:
                    yield SessionInfo.unreadable(session, rev, updated, str(exc))

    def listing(self) -> list[Listed]:
        with self._lock:
            items = list(self._data.items())
        return [Listed(s, rev, gen, updated) for s, (rev, _, updated, gen) in items if not expired(updated, self.ttl)]

    def load_many(self, sessions: Iterable[str]) -> list[Loaded]:
        names = wanted(sessions)
        with self._lock:
            hits = [(s, self._data.get(s)) for s in names]
        return [
            loaded(Listed(s, hit[0], hit[3], hit[2]), hit[1])
            for s, hit in hits
            if hit is not None and not expired(hit[2], self.ttl)
        ]

    def reset_hint(self, session: str) -> str:
        return f"reset it: store.delete({one_line(session, MAX_SESSION)!r})"

    def _entry(self, session: str) -> tuple[int, bytes, float, str] | None:
        hit = self._data.get(session)
        if hit is not None and expired(hit[2], self.ttl):
            del self._data[session]
            return None
        return hit
