"""How the dashboard reads a store: list every session without decoding its state, then decode only the states
that changed since the last read.

:func:`rows_of` gives a :class:`Rows` for a store. ``listing()`` names each session with its revision,
generation and last write (what changes with every write); ``states(sessions)`` decodes the few that
changed; ``one(session)`` reads one session by its exact id. A SQLite file is read on a connection of the
dashboard's own, reopened when the file at the path is another one (deleted and created again, or moved
over: its device and inode change); Redis through the store's client, with pipelined reads of the record
fields. Any other store goes through its own API (which decodes every state to list the sessions).

(The stores' own ``sessions()`` decodes every state; this reads their tables and keys as the stores lay them
out, see looptrap/stores/sqlite.py and redis.py.)
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

from looptrap.core.printable import one_line
from looptrap.stores.base import StoreError, UnreadableStateError, read_state, valid_session

if TYPE_CHECKING:
    from looptrap.core.state import SessionState
    from looptrap.stores.base import Store
    from looptrap.stores.redis import RedisStore
    from looptrap.stores.sqlite import SQLiteStore

__all__ = ["Entry", "Loaded", "Rows", "rows_of"]

_CHUNK = 500  # sessions per query or pipeline
_LIST = "SELECT session, rev, updated, {gen} FROM looptrap_sessions"


class Entry(NamedTuple):
    """One stored session as listed: ``token`` changes with every write of it (revision, generation, time)."""

    session: str
    rev: int
    gen: str
    updated: float | None

    @property
    def token(self) -> tuple[int, str, float | None]:
        return self.rev, self.gen, self.updated


class Loaded(NamedTuple):
    """A session's decoded state (``error``: why it could not be decoded, and ``state`` is ``None``)."""

    entry: Entry
    state: SessionState | None
    error: str | None = None


class Rows:
    """A store as the dashboard reads it (any store: through its own API). ``epoch`` grows when the store
    became another one (a replaced SQLite file): every token seen before then means nothing."""

    epoch = 0

    def __init__(self, store: Store) -> None:
        self.store = store

    def listing(self) -> list[Entry]:
        return [Entry(i.session, i.rev, "", i.updated) for i in self.store.sessions()]

    def states(self, sessions: Sequence[str]) -> list[Loaded]:
        out = []
        for session in sessions:
            try:
                snap = self.store.load(session)
            except UnreadableStateError as exc:
                out.append(Loaded(Entry(session, 0, "", None), None, one_line(str(exc), 300)))
                continue
            if snap is not None:
                out.append(Loaded(Entry(session, snap.rev, snap.gen, None), snap.state))
        return out

    def one(self, session: str) -> Loaded | None:
        """The session named exactly ``session`` (``None``: there is none); raises :class:`StoreError`."""
        if not valid_session(session):
            return None
        got = self.states([session])
        return got[0] if got else None

    def close(self) -> None:
        """Release what this reader holds of its own (not the store)."""


class _SQLite(Rows):
    """A SQLite store's file on a read connection of its own, reopened when the file at the path changes."""

    def __init__(self, store: SQLiteStore) -> None:
        super().__init__(store)
        self.path, self.ttl, self.timeout = store.path, store.ttl, store.timeout
        self._db: sqlite3.Connection | None = None
        self._ident: tuple[int, int] | None = None
        self._gen: str | None = None  # the generation column's SQL; None: no table yet
        self._listed: tuple[int, list[Entry]] | None = None  # the last listing, and the data version it read

    def listing(self) -> list[Entry]:
        now = time.time()
        try:
            db = self._conn()
            if db is None or self._gen is None:  # no file, or a file looptrap never wrote to: no sessions
                return []
            version = int(db.execute("PRAGMA data_version").fetchone()[0])  # changes with others' commits
            if self._listed is None or self._listed[0] != version:
                rows = db.execute(_LIST.format(gen=self._gen)).fetchall()
                self._listed = (version, [Entry(s, r, g or "", u) for s, r, u, g in rows])
        except (sqlite3.Error, OSError) as exc:
            self.close()  # opened again at the next read
            raise StoreError(f"SQLite store {self.store.url}: {one_line(str(exc), 300)}") from exc
        return [e for e in self._listed[1] if not self._expired(e.updated or 0.0, now)]

    def states(self, sessions: Sequence[str]) -> list[Loaded]:
        now, out = time.time(), []
        for i in range(0, len(sessions), _CHUNK):
            chunk = list(sessions[i : i + _CHUNK])
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT session, rev, updated, {{gen}}, state FROM looptrap_sessions WHERE session IN ({marks})"
            for s, r, u, g, data in self._query(sql, *chunk):
                if not self._expired(u, now):
                    out.append(_decoded(Entry(s, r, g or "", u), data))
        return out

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db, self._ident, self._gen, self._listed = None, None, None, None

    def _expired(self, updated: float, now: float) -> bool:
        return self.ttl is not None and now - updated > self.ttl

    def _conn(self) -> sqlite3.Connection | None:
        """The connection to the file now at the path (``None``: no file there)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._db is not None:
                self.close()
                self.epoch += 1
            return None
        ident = (st.st_dev, st.st_ino)
        if self._db is not None and ident != self._ident:  # another file: deleted and made again, or moved over
            self.close()
            self.epoch += 1
        if self._db is None:
            # read-only: never creates the file, never writes, checkpoints or removes its WAL
            uri = f"file:{quote(os.path.abspath(self.path))}?mode=ro"
            self._db = sqlite3.connect(
                uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            self._ident = ident
        if self._gen is None:
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(looptrap_sessions)")}
            self._gen = ("gen" if "gen" in columns else "''") if columns else None
        return self._db

    def _query(self, sql: str, *params: str) -> list[tuple[Any, ...]]:
        try:
            db = self._conn()
            if db is None or self._gen is None:  # no file, or a file looptrap never wrote to: no sessions
                return []
            return db.execute(sql.format(gen=self._gen), params).fetchall()
        except (sqlite3.Error, OSError) as exc:
            self.close()  # opened again at the next read
            raise StoreError(f"SQLite store {self.store.url}: {one_line(str(exc), 300)}") from exc


class _Redis(Rows):
    """A Redis store: its record keys scanned, their fields read in pipelines (the encoded state only for
    the sessions asked for)."""

    def __init__(self, store: RedisStore) -> None:
        super().__init__(store)
        self.redis: RedisStore = store

    def listing(self) -> list[Entry]:
        s = self.redis
        keys = s._run(lambda: list(s._redis.scan_iter(match=s._pattern, count=_CHUNK)))
        out = []
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]
            got = self._pipelined(lambda p, chunk=chunk: [p.hmget(k, ["rev", "gen", "updated"]) for k in chunk])
            for key, fields in zip(chunk, got, strict=True):
                entry = _redis_entry(s._session_of(key), fields)
                if entry is not None:
                    out.append(entry)
        return out

    def states(self, sessions: Sequence[str]) -> list[Loaded]:
        s, out = self.redis, []
        for i in range(0, len(sessions), _CHUNK):
            chunk = [x for x in sessions[i : i + _CHUNK] if valid_session(x)]

            def reads(p: Any, chunk: list[str] = chunk) -> None:
                for session in chunk:
                    keys = s._keys_of(session)
                    p.hmget(keys[0], ["rev", "gen", "updated", "state"])
                    p.get(keys[1])

            got = self._pipelined(reads)
            for j, session in enumerate(chunk):
                fields, data = got[2 * j], got[2 * j + 1]
                bad = next((x for x in (fields, data) if isinstance(x, Exception)), None)
                if bad is not None:
                    out.append(
                        Loaded(Entry(session, 0, "", None), None, f"unreadable record: {one_line(str(bad), 200)}")
                    )
                    continue
                listed = _redis_entry(session, fields[:3])
                if listed is not None:  # the state in its data key, else in the record (written before data keys)
                    out.append(_decoded(listed, data if data is not None else fields[3]))
        return out

    def _pipelined(self, build: Any) -> list[Any]:
        def run() -> list[Any]:
            pipe = self.redis._redis.pipeline(transaction=False)
            build(pipe)
            return list(pipe.execute(raise_on_error=False))

        return list(self.redis._run(run))


def _redis_entry(session: str, fields: Any) -> Entry | None:
    """A record's ``rev``, ``gen`` and ``updated`` fields as an entry (``None``: the record is gone)."""
    if isinstance(fields, Exception):
        return Entry(session, 0, "", None)  # listed, and unreadable when its state is read
    rev, gen, updated = fields
    if rev is None and updated is None:
        return None
    try:
        number = int(rev) if rev is not None else 0
        when = float(updated) if updated is not None else None
    except ValueError:
        number, when = 0, None
    text = gen.decode("utf-8", "replace") if isinstance(gen, bytes) else str(gen or "")
    return Entry(session, number, text, when)


def _decoded(entry: Entry, data: Any) -> Loaded:
    try:
        return Loaded(entry, read_state(data, entry.session, None))
    except UnreadableStateError as exc:
        return Loaded(entry, None, one_line(str(exc), 300))


def rows_of(store: Store) -> Rows:
    """The reader for ``store``."""
    from looptrap.stores.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore) and store.path != ":memory:":
        return _SQLite(store)
    redis = sys.modules.get("looptrap.stores.redis")  # loaded if the store is a Redis one
    if redis is not None and isinstance(store, redis.RedisStore):
        return _Redis(store)
    return Rows(store)
