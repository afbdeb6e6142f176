"""``SQLiteStore``: guard state shared by the processes of one machine, in one SQLite file.

WAL mode, one ``BEGIN IMMEDIATE`` transaction per update (so concurrent processes queue for the write lock
instead of losing updates), a bounded wait for that lock, then :class:`StoreError`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from looptrap.core.state import SessionState
from looptrap.stores.base import (
    DEFAULT_TTL,
    Change,
    R,
    SessionInfo,
    Snapshot,
    Store,
    StoreError,
    check_session,
    decode_state,
    encode_state,
)

__all__ = ["SQLiteStore", "default_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS looptrap_sessions (
    session TEXT PRIMARY KEY,
    rev INTEGER NOT NULL,
    updated REAL NOT NULL,
    state BLOB NOT NULL
) WITHOUT ROWID
"""
_PURGE_EVERY = 300.0  # seconds between sweeps of expired sessions


def default_path() -> str:
    """Where the CLI keeps sessions by default: ``sessions.db`` in looptrap's folder of the user's cache
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows)."""
    # os.path, not pathlib: a hook process pays for every import, and pathlib pulls in urllib.
    home = os.path.expanduser("~")
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "looptrap", "sessions.db")


class SQLiteStore(Store):
    """Sessions in the SQLite file at ``path`` (created with its folder if missing).

    ``timeout``: seconds to wait for another process's write to finish before giving up with
    :class:`StoreError` (the guard then fails open or closed, as configured).
    """

    def __init__(self, path: str | os.PathLike[str], *, ttl: float | None = DEFAULT_TTL, timeout: float = 5.0) -> None:
        self.path: str = os.fspath(path)
        self.ttl = ttl
        self.timeout = timeout
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._purged = 0.0

    # -- connection -----------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._db is not None and self._pid == os.getpid():
            return self._db
        try:
            folder = os.path.dirname(self.path)
            if self.path != ":memory:" and folder:
                os.makedirs(folder, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open SQLite store {self.path}: {exc}") from exc
        self._db, self._pid = db, os.getpid()  # a forked child opens its own connection
        return db

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None

    # -- the contract ---------------------------------------------------------------------------------
    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        check_session(session)
        with self._lock:
            db = self._conn()
            try:
                db.execute("BEGIN IMMEDIATE")  # the write lock now: no lost update, no deadlocked upgrade
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path} is busy: {exc}") from exc
            try:
                now = time.time()
                row = db.execute("SELECT rev, updated FROM looptrap_sessions WHERE session = ?", (session,)).fetchone()
                if row is None or self._expired(row[1], now):
                    snap = Snapshot(0, SessionState(run_id=session))
                elif cached is not None and cached.rev == row[0]:
                    snap = cached  # still current: no need to read and decode it again
                else:
                    (data,) = db.execute("SELECT state FROM looptrap_sessions WHERE session = ?", (session,)).fetchone()
                    snap = Snapshot(row[0], decode_state(data))
                result = change(snap.state)
                new = Snapshot(snap.rev + 1, snap.state)
                db.execute(
                    "INSERT OR REPLACE INTO looptrap_sessions (session, rev, updated, state) VALUES (?, ?, ?, ?)",
                    (session, new.rev, now, encode_state(new.state)),
                )
                if self.ttl is not None and now - self._purged > _PURGE_EVERY:
                    self._purged = now
                    db.execute("DELETE FROM looptrap_sessions WHERE updated < ?", (now - self.ttl,))
                db.execute("COMMIT")
                return result, new
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"SQLite store {self.path}: {exc}") from exc
                raise

    def load(self, session: str) -> Snapshot | None:
        row = self._query("SELECT rev, updated, state FROM looptrap_sessions WHERE session = ?", (session,))
        if not row or self._expired(row[0][1], time.time()):
            return None
        rev, _, data = row[0]
        return Snapshot(rev, decode_state(data))

    def delete(self, session: str) -> bool:
        with self._lock:
            try:
                cur = self._conn().execute("DELETE FROM looptrap_sessions WHERE session = ?", (session,))
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path}: {exc}") from exc
            return cur.rowcount > 0

    def sessions(self) -> Iterator[SessionInfo]:
        now = time.time()
        for session, rev, updated, data in self._query(
            "SELECT session, rev, updated, state FROM looptrap_sessions ORDER BY updated", ()
        ):
            if not self._expired(updated, now):
                yield SessionInfo.of(session, rev, updated, decode_state(data))

    # -- internals ------------------------------------------------------------------------------------
    def _expired(self, updated: float, now: float) -> bool:
        return self.ttl is not None and now - updated > self.ttl

    def _query(self, sql: str, params: tuple[str, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path}: {exc}") from exc

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
