"""``SQLiteStore``: guard state shared by the processes of one machine, in one SQLite file.

WAL mode, one ``BEGIN IMMEDIATE`` transaction per update (so concurrent processes queue for the write lock
instead of losing updates), a bounded wait for that lock, then :class:`StoreError`. A folder the store
creates is private to the user (0700), and so is the database file it creates (0600; SQLite gives its
``-wal`` and ``-shm`` files the database file's mode). The store works on the file now at its path: one
deleted and made again, or another moved over it, is opened afresh at the next call (device and inode).
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

from looptrap.core.state import SessionState
from looptrap.stores.base import (
    DEFAULT_TTL,
    Change,
    Listed,
    Loaded,
    R,
    SessionInfo,
    Snapshot,
    Store,
    StoreError,
    UnreadableStateError,
    check_seconds,
    check_session,
    check_ttl,
    loaded,
    new_gen,
    read_state,
    valid_session,
    wanted,
    write_state,
)

__all__ = ["SQLiteStore", "default_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS looptrap_sessions (
    session TEXT PRIMARY KEY,
    rev INTEGER NOT NULL,
    updated REAL NOT NULL,
    state BLOB NOT NULL,
    gen TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID
"""
_PURGE_EVERY = 300.0  # seconds between sweeps of expired sessions
# SQLite's own wait for a lock sleeps longer and longer (up to 100 ms a try), so under steady contention a
# waiting process keeps missing the short gaps between other processes' writes and can starve. Its wait is
# cut to slices of this many seconds, with a short random pause between them, until ``timeout`` is spent.
_BUSY_SLICE = 0.1
_CHUNK = 500  # sessions per query of load_many (SQLite allows 999 parameters before 3.32)
T = TypeVar("T")


def default_path() -> str:
    """Where the CLI keeps sessions by default: ``sessions.db`` in looptrap's folder of the user's cache
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows)."""
    from looptrap.core.locations import user_cache

    return os.path.join(user_cache(), "looptrap", "sessions.db")


class SQLiteStore(Store):
    """Sessions in the SQLite file at ``path``, created (with its folder) if missing unless ``create=False``:
    then a missing file holds no sessions, nothing is created on disk, and reads go through a read-only
    connection (reopened for writing at the first write: ``delete``, ``update``).

    ``timeout``: seconds to wait for another process's write to finish before giving up with
    :class:`StoreError` (the guard then fails open or closed, as configured). ``previews``: whether guards
    keep argument previews and result excerpts in the file (off: digests only).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl: float | None = DEFAULT_TTL,
        timeout: float = 5.0,
        previews: bool = False,
        create: bool = True,
    ) -> None:
        self.path: str = os.fspath(path)
        self.ttl = check_ttl(ttl)
        self.timeout = check_seconds("timeout", timeout)
        self.previews = bool(previews)
        self.create = bool(create)
        self.url = f"sqlite://{self.path}"  # sqlite:///abs/path.db or sqlite://rel/path.db
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._gen = ""  # the generation column's SQL ("''" in a file that predates it and is only read)
        self._ready = False  # schema made sure of on this connection
        self._pid = 0
        self._file: tuple[int, int] | None = None  # the file the connection was opened on (device, inode)
        self._read_only = False  # the connection is read-only (a store opened without create, only reading)
        self._listed: tuple[int, list[Listed]] | None = None  # the last listing and the data_version it read
        self._purged = 0.0

    # -- connection -----------------------------------------------------------------------------------
    def _conn(self, write: bool = True, *, delete: bool = False) -> sqlite3.Connection | None:
        """The connection to the file now at the path (``None``: a store opened with ``create=False`` whose file
        does not exist). A connection that writes first makes sure of the schema; one that only reads
        (``create=False``) is read-only: it never creates, writes or checkpoints the file, nor removes its WAL.
        ``delete``: only reads, but may delete rows (a writable connection; no schema made)."""
        memory = self.path == ":memory:"
        db = self._db if self._pid == os.getpid() else None  # a forked child opens its own connection
        try:
            # stat before connecting: a file replaced in between is then caught at the next call, not missed
            ident = None if memory else _identity(self.path)
            if db is not None and (ident != self._file or ((write or delete) and self._read_only)):
                db.close()  # (SQLite neither checkpoints nor removes the WAL of a file no longer at its path)
                self._db = db = None
            if db is None:
                if not self.create and not memory and ident is None:
                    if write:
                        raise StoreError(f"SQLite store {self.url}: no such file (opened without create)")
                    return None
                if self.create and not memory:
                    self._make_private_file()
                    ident = _identity(self.path)
                read_only = not (self.create or write or delete or memory)
                target = f"file:{quote(os.path.abspath(self.path))}?mode=ro" if read_only else self.path
                db = sqlite3.connect(
                    target,
                    uri=read_only,
                    timeout=min(self.timeout, _BUSY_SLICE),
                    isolation_level=None,
                    check_same_thread=False,
                )
                self._db, self._pid, self._ready, self._gen = db, os.getpid(), False, ""
                self._file, self._read_only, self._listed = ident, read_only, None
            if not self._ready and (self.create or write):
                self._waiting(db.execute, "PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                self._waiting(db.execute, _SCHEMA)
                if not self._has_gen(db):  # a file written before generations
                    self._waiting(db.execute, "ALTER TABLE looptrap_sessions ADD COLUMN gen TEXT NOT NULL DEFAULT ''")
                self._ready, self._gen = True, "gen"
            elif not self._gen:  # only reading: a file that predates generations is read as it is
                self._gen = "gen" if self._has_gen(db) else "''"
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open SQLite store {self.url}: {exc}") from exc
        return db

    @staticmethod
    def _has_gen(db: sqlite3.Connection) -> bool:
        columns = {row[1] for row in db.execute("PRAGMA table_info(looptrap_sessions)")}
        return not columns or "gen" in columns

    def _make_private_file(self) -> None:
        """Create the folder (0700) and the database file (0600) if missing: states hold what the agent
        did, and a cache folder is often readable by every user of the machine."""
        folder = os.path.dirname(self.path)
        if folder and not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        if not os.path.exists(self.path):
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db, self._listed = None, None

    def _waiting(self, execute: Callable[..., T], *args: Any) -> T:
        """``execute(*args)``, tried again while the database is locked by another writer, for up to
        ``timeout`` seconds (see ``_BUSY_SLICE``)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return execute(*args)
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0, 0.002))

    # -- the contract ---------------------------------------------------------------------------------
    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        check_session(session)
        hint = self.reset_hint
        with self._lock:
            db = self._conn()
            assert db is not None
            self._listed = None  # data_version does not change with this connection's own commits
            try:
                self._waiting(db.execute, "BEGIN IMMEDIATE")  # the write lock now: no lost update, no deadlock
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.url} is busy: {exc}") from exc
            try:
                now = time.time()
                row = db.execute(
                    "SELECT rev, updated, gen FROM looptrap_sessions WHERE session = ?", (session,)
                ).fetchone()
                if row is None or self._expired(row[1], now):
                    snap = Snapshot(0, SessionState(run_id=session), new_gen())
                elif cached is not None and cached.rev == row[0] and cached.gen == row[2]:
                    snap = cached  # still current: no need to read and decode it again
                else:
                    (data,) = db.execute("SELECT state FROM looptrap_sessions WHERE session = ?", (session,)).fetchone()
                    snap = Snapshot(row[0], read_state(data, session, hint), row[2] or new_gen())
                result = change(snap.state)
                new = Snapshot(snap.rev + 1, snap.state, snap.gen)
                db.execute(
                    "INSERT OR REPLACE INTO looptrap_sessions (session, rev, updated, state, gen)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (session, new.rev, now, write_state(new.state, session, hint), new.gen),
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
                    raise StoreError(f"SQLite store {self.url}: {exc}") from exc
                raise

    def load(self, session: str) -> Snapshot | None:
        if not valid_session(session):
            return None
        rows = self._query("SELECT rev, updated, state, {gen} FROM looptrap_sessions WHERE session = ?", session)
        if not rows or self._expired(rows[0][1], time.time()):
            return None
        rev, _, data, gen = rows[0]
        return Snapshot(rev, read_state(data, session, self.reset_hint), gen)

    def delete(self, session: str) -> bool:
        if not valid_session(session):
            return False
        with self._lock:
            try:
                db = self._conn(write=False, delete=True)
                if db is None:
                    return False
                self._listed = None
                cur = self._waiting(db.execute, "DELETE FROM looptrap_sessions WHERE session = ?", (session,))
            except sqlite3.Error as exc:
                if _no_table(exc):
                    return False
                raise StoreError(f"SQLite store {self.url}: {exc}") from exc
            return cur.rowcount > 0

    def sessions(self) -> Iterator[SessionInfo]:
        now = time.time()
        for session, rev, updated, data in self._query(
            "SELECT session, rev, updated, state FROM looptrap_sessions ORDER BY updated"
        ):
            if not self._expired(updated, now):
                try:
                    yield SessionInfo.of(session, rev, updated, read_state(data, session, None))
                except UnreadableStateError as exc:
                    yield SessionInfo.unreadable(session, rev, updated, str(exc))

    def listing(self) -> list[Listed]:
        """See :meth:`Store.listing`: one query of the record columns (no state read). The listing is read
        again only when another connection committed since the last one (``PRAGMA data_version``)."""
        now = time.time()
        with self._lock:
            try:
                db = self._conn(write=False)
                if db is None:
                    return []
                version = self._waiting(lambda: db.execute("PRAGMA data_version").fetchone()[0])
                if self._listed is None or self._listed[0] != version:
                    sql = f"SELECT session, rev, updated, {self._gen} FROM looptrap_sessions ORDER BY updated"
                    rows = self._waiting(lambda: db.execute(sql).fetchall())
                    self._listed = (version, [Listed(s, r, g or "", u) for s, r, u, g in rows])
                listed = self._listed[1]
            except sqlite3.Error as exc:
                if _no_table(exc):  # a file looptrap never wrote to: no sessions
                    return []
                raise StoreError(f"SQLite store {self.url}: {exc}") from exc
        return [x for x in listed if not self._expired(x.updated or 0.0, now)]

    def load_many(self, sessions: Iterable[str]) -> list[Loaded]:
        """See :meth:`Store.load_many`: one query per 500 sessions."""
        names, found, now = wanted(sessions), {}, time.time()
        for i in range(0, len(names), _CHUNK):
            chunk = names[i : i + _CHUNK]
            sql = "SELECT session, rev, updated, {gen}, state FROM looptrap_sessions WHERE session IN (%s)"
            for s, r, u, g, data in self._query(sql % ",".join("?" * len(chunk)), *chunk):
                if not self._expired(u, now):
                    found[s] = loaded(Listed(s, r, g or "", u), data)
        return [found[s] for s in names if s in found]

    # -- internals ------------------------------------------------------------------------------------
    def _expired(self, updated: float, now: float) -> bool:
        return self.ttl is not None and now - updated > self.ttl

    def _query(self, sql: str, *params: str) -> list[tuple[Any, ...]]:
        """Rows of a read (``{gen}`` in ``sql``: the generation column)."""
        with self._lock:
            try:
                db = self._conn(write=False)
                if db is None:
                    return []
                return self._waiting(lambda: db.execute(sql.format(gen=self._gen), params).fetchall())
            except sqlite3.Error as exc:
                if _no_table(exc):  # a file looptrap never wrote to (opened without create): no sessions
                    return []
                raise StoreError(f"SQLite store {self.url}: {exc}") from exc

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"


def _identity(path: str) -> tuple[int, int] | None:
    """The regular file at ``path`` (device, inode), or ``None`` if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _no_table(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "no such table" in str(exc)


def _busy(exc: sqlite3.Error) -> bool:
    """Whether an error says another connection holds the lock."""
    text = str(exc)
    return "locked" in text or "busy" in text
