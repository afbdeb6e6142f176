"""``RedisStore`` and ``AsyncRedisStore``: guard state shared by a fleet, one round trip per update.

Keys per session (the braces are a Redis Cluster hash tag, so a session's keys share a slot):
``{prefix}:{<session>}:state``, a hash of ``rev``, ``gen`` (the record's generation) and ``updated``;
``...:data``, the encoded state; and, while writers contend for the session, ``...:turn``, ``...:waiters``
and ``...:wake``. The state and data keys get the TTL again on every write.

Updates are optimistic while one writer at a time works on a session: the guard keeps the snapshot it last
saw and computes the new state from it; it sends the new state to a staging key and, in the same round
trip, a server-side script that moves it into place only if the stored revision and generation still
match (the state's bytes never go through the script: Redis copies script arguments slowly). On a
conflict the script gives the writer the session's turn (a short lease), and the writer reads the current
state and computes its change again: its second attempt cannot conflict. A writer that finds the turn
taken blocks on the wake-up list (``BLPOP``) until a write hands the turn on: no polling, no state computed
in vain. While others wait, a writer in quick succession keeps the turn for a few writes in a row (its
snapshot stays current, so nothing is decoded), then hands it to the longest waiting writer.
Needs the ``redis`` package (``pip install looptrap[redis]``).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from looptrap.core.printable import one_line
from looptrap.core.state import SessionState
from looptrap.stores.base import (
    DEFAULT_TTL,
    AsyncStore,
    Change,
    Hint,
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
    shown_session,
    unreadable,
    valid_session,
    wanted,
    write_state,
)
from looptrap.stores.url import StoreURL, bool_option, parse, take_options, ttl_option
from looptrap.stores.url import redact as redact

__all__ = ["AsyncRedisStore", "RedisStore", "redact"]

# KEYS: 1 the record (rev, gen, updated), 2 the encoded state, 3 the turn ("<token> <writes in this turn>",
# with a lease), 4 the count of writers waiting for the turn, 5 the wake-up list, 6 the staged new state.
# ARGV: 1 expected rev, 2 expected generation, 3 TTL in ms (0: none), 4 time of the write, 5 the writer's
# token, 6 the generation of a record created now, 7 the turn's lease in ms, 8 writes per turn, 9 "1": the
# writer stopped waiting without being woken (it no longer counts as waiting), 10 "1": the writer is writing
# in quick succession (it may keep the turn), 11 "1": a new state is staged (else: the writer, back from
# waiting, asks whether its snapshot is still current before sending a state that is most likely stale).
# Returns {1, rev, gen, turn}: written (turn: 1 the writer keeps the turn, 0 it handed it to a waiting
# writer, -1 nobody waits); {0, rev}: a conflict, and the turn is now this writer's (it reads the
# state and tries again); {2, ms}: another writer has the turn (for at most ms more): wait on the wake-up
# list, then ask again; {3}: the snapshot is current, send the state.
_CAS = """
local waiting = tonumber(redis.call('GET', KEYS[4])) or 0
if ARGV[9] == '1' and waiting > 0 then
  waiting = redis.call('DECR', KEYS[4])
end
local turn = redis.call('GET', KEYS[3])
local streak = 0
if turn then
  local sp = string.find(turn, ' ', 1, true)
  if string.sub(turn, 1, sp - 1) ~= ARGV[5] then
    if ARGV[11] == '1' then redis.call('DEL', KEYS[6]) end
    redis.call('INCR', KEYS[4])
    redis.call('PEXPIRE', KEYS[4], 60000)
    return {2, redis.call('PTTL', KEYS[3])}
  end
  streak = tonumber(string.sub(turn, sp + 1))
end
local cur = redis.call('HMGET', KEYS[1], 'rev', 'gen')
local rev = tonumber(cur[1]) or 0
local gen = cur[2] or ''
if rev ~= tonumber(ARGV[1]) or gen ~= ARGV[2] then
  if ARGV[11] == '1' then redis.call('DEL', KEYS[6]) end
  redis.call('SET', KEYS[3], ARGV[5] .. ' ' .. streak, 'PX', ARGV[7])
  return {0, rev}
end
if ARGV[11] ~= '1' then return {3} end
if rev == 0 then gen = ARGV[6] end
redis.call('RENAME', KEYS[6], KEYS[2])
redis.call('HSET', KEYS[1], 'rev', rev + 1, 'gen', gen, 'updated', ARGV[4])
redis.call('HDEL', KEYS[1], 'state')
if tonumber(ARGV[3]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
else
  redis.call('PERSIST', KEYS[1])
  redis.call('PERSIST', KEYS[2])
end
if waiting > 0 and ARGV[10] == '1' and streak + 1 < tonumber(ARGV[8]) then
  redis.call('SET', KEYS[3], ARGV[5] .. ' ' .. (streak + 1), 'PX', ARGV[7])
  return {1, rev + 1, gen, 1}
end
if turn then redis.call('DEL', KEYS[3]) end
if waiting > 0 then
  redis.call('DECR', KEYS[4])
  redis.call('RPUSH', KEYS[5], 1)
  redis.call('PEXPIRE', KEYS[5], 60000)
  return {1, rev + 1, gen, 0}
end
return {1, rev + 1, gen, -1}
"""
# Gives the turn back (a writer that failed or closed while holding it). KEYS: the turn, the count of
# waiting writers, the wake-up list; ARGV[1]: the writer's token.
_RELEASE = """
local turn = redis.call('GET', KEYS[1])
if turn and string.sub(turn, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ' ' then
  redis.call('DEL', KEYS[1])
  if (tonumber(redis.call('GET', KEYS[2])) or 0) > 0 then
    redis.call('DECR', KEYS[2])
    redis.call('RPUSH', KEYS[3], 1)
    redis.call('PEXPIRE', KEYS[3], 60000)
  end
end
return 0
"""
_TURN_MS = 25  # a turn's lease: a writer that holds it longer (descheduled, crashed) loses it, nothing else
_WRITES_PER_TURN = 32  # writes in a row a writer may make while others wait for the session
_QUICK = 0.005  # seconds between two writes of a writer that make it "in quick succession"
_ASK_FOR = 1.0  # seconds after handing a session on during which a writer asks before it sends a state
_STAGE_MS = 10_000  # a staged state the script did not take (a dropped connection) goes away after this
_GIVE_UP = 10.0  # seconds of waiting before an update fails with StoreError
_DONE, _WAIT, _AGAIN, _READ = 0, 1, 2, 3
_CHUNK = 500  # keys per SCAN step and sessions per pipeline of a listing
C = TypeVar("C", bound="_Connected")
_PREFIX = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_OURS = ("ttl", "prefix", "previews")  # looptrap's own URL options (open_store); the rest go to redis-py
_CLIENT_STRINGS = frozenset(
    (
        "username",
        "password",
        "client_name",
        "ssl_keyfile",
        "ssl_certfile",
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ca_path",
        "ssl_ca_data",
        "ssl_password",
        "ssl_ciphers",
    )
)


def _import_redis() -> Any:
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("RedisStore needs the redis package: pip install 'looptrap[redis]'") from exc
    return redis


def _client_options(asyncio_client: bool) -> frozenset[str]:
    """The redis client's connection options a store URL may carry (its typed URL options, and strings)."""
    if asyncio_client:
        import redis.asyncio.connection as connection
    else:
        import redis.connection as connection  # type: ignore[no-redef]
    return frozenset(connection.URL_QUERY_ARGUMENT_PARSERS) | _CLIENT_STRINGS


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class _Cas(Generic[R]):
    """One update, as the sync and async stores both run it: compute the change on the last known snapshot
    and send it with the expected revision and generation; on a conflict, read the current state (the turn
    is then this writer's) and compute the change again; while another writer has the turn, wait to be
    woken. Without a snapshot, a new session is assumed (right for the first call of a session, one extra
    round trip otherwise)."""

    def __init__(self, store: _Connected, session: str, change: Change[R], cached: Snapshot | None) -> None:
        check_session(session)
        keys = store._keys_of(session)
        self.keys = [*keys, f"{keys[0][: -len('state')]}stage:{os.urandom(6).hex()}"]
        self.store = store
        self.session = session
        self.change = change
        self.hint = store.reset_hint
        self.holding = False  # whether this writer has the session's turn
        self.wait = 0.0  # seconds to wait on the wake-up list, after a _WAIT
        self.timed_out = False  # the last wait ended without a wake-up
        self.deadline = time.monotonic() + _GIVE_UP
        self.long_lived = cached is not None
        self.contended = False  # it met another writer: a conflict, or a wait
        self.snap = cached if cached is not None else Snapshot(0, SessionState(run_id=session), "")
        self.result = change(self.snap.state)
        # None: ask first, without the state (this writer handed the session on to others a moment ago,
        # so its snapshot is most likely stale: encoding and sending it would be in vain)
        ask = store._handed[0] == session and time.monotonic() - store._handed[1] < _ASK_FOR
        self.data: bytes | None = None if ask else write_state(self.snap.state, session, self.hint)

    @property
    def args(self) -> list[Any]:
        """The script's arguments for the next attempt."""
        snap, store = self.snap, self.store
        return [
            snap.rev,
            snap.gen,
            store._ttl_ms,
            repr(time.time()),
            store._token,
            new_gen(),
            _TURN_MS,
            _WRITES_PER_TURN,
            "1" if self.timed_out else "0",
            self._quick(),
            "0" if self.data is None else "1",
        ]

    def _quick(self) -> str:
        """Whether this writer is likely to write again soon: it wrote this session a moment ago, or it is a
        long-lived one (it had a snapshot) that met other writers. A fresh process (a hook) never is."""
        last = self.store._last
        recent = last[0] == self.session and time.monotonic() - last[1] < _QUICK
        return "1" if recent or (self.long_lived and self.contended) else "0"

    def waited(self, reply: Any) -> None:
        """The wait on the wake-up list ended (``reply``: ``None`` when it timed out). The next attempt asks
        before it sends a state: the snapshot is most likely stale by now."""
        self.timed_out = reply is None
        self.data = None

    def settle(self, reply: list[Any]) -> int:
        """Read the script's reply: ``_DONE`` (written), ``_WAIT`` (wait to be woken, then try again),
        ``_READ`` (read the current state, then call :meth:`read`) or ``_AGAIN`` (try again now)."""
        kind = int(reply[0])
        self.timed_out = False
        if kind == 1:
            self.holding = False
            self.snap = Snapshot(int(reply[1]), self.snap.state, _text(reply[2]))
            now = time.monotonic()
            self.store._last = (self.session, now)
            self.store._handed = (self.session, now) if int(reply[3]) == 0 else ("", 0.0)
            return _DONE
        if time.monotonic() > self.deadline:
            raise StoreError(
                f"Redis store {self.store.url}: session {shown_session(self.session)} stayed busy for {_GIVE_UP:.0f} s"
            )
        if kind == 3:  # the snapshot is current after all: send the state
            self.data = write_state(self.snap.state, self.session, self.hint)
            return _AGAIN
        self.contended = True
        if kind == 2:  # wait as long as the other writer's turn may last, or until it hands the turn on
            self.holding = False
            ms = int(reply[1])
            self.wait = (ms if ms > 0 else _TURN_MS) / 1000 + 0.002
            return _WAIT
        self.holding = True
        return _READ

    def read(self, fields: list[Any]) -> None:
        """The current record (read while this writer has the turn): compute the change on it."""
        snap = _snapshot(self.session, fields, self.hint) or Snapshot(0, SessionState(run_id=self.session), "")
        self.snap = snap
        self.result = self.change(snap.state)
        self.data = write_state(snap.state, self.session, self.hint)


def _snapshot(session: str, fields: list[Any], hint: Hint) -> Snapshot | None:
    """A record's ``rev``, ``gen``, legacy ``state`` field and data key as a snapshot (``None``: no record)."""
    rev, gen, legacy, data = fields
    data = data if data is not None else legacy  # a record written before the data key
    if rev is None and data is None:
        return None
    try:
        number = int(rev)
    except (TypeError, ValueError):
        raise unreadable(session, f"corrupt record: revision {one_line(_text(rev), 40)!r}", hint) from None
    return Snapshot(number, read_state(data, session, hint), _text(gen) if gen is not None else "")


class _Connected:
    """The connection, keys and scripts both stores set up alike (``_asyncio``: which redis client)."""

    _asyncio = False

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        client: Any = None,
        prefix: str = "looptrap",
        ttl: float | None = DEFAULT_TTL,
        socket_timeout: float = 2.0,
        previews: bool = False,
    ) -> None:
        u = None
        if client is None:
            _import_redis()
            u = parse(url)
            ours = [k for k in u.options if k in _OURS]
            if ours:
                raise ValueError(
                    f"store URL {u.shown}: {', '.join(ours)} belong to open_store() URLs; pass them to "
                    f"{type(self).__name__} as arguments"
                )
        self._setup(u, client, prefix, ttl, socket_timeout, previews)

    @classmethod
    def _from_url(cls: type[C], u: StoreURL) -> C:
        """The store of an ``open_store`` URL (looptrap's options read from it)."""
        _import_redis()
        opts = take_options(u, _OURS, _client_options(cls._asyncio))
        ttl = ttl_option(u, opts["ttl"]) if "ttl" in opts else DEFAULT_TTL
        previews = bool_option(u, "previews", opts.get("previews", "0"))
        store = cls.__new__(cls)
        rest = u._replace(options={k: v for k, v in u.options.items() if k not in _OURS})
        store._setup(rest, None, opts.get("prefix", "looptrap"), ttl, 2.0, previews)
        return store

    def _setup(
        self, u: StoreURL | None, client: Any, prefix: str, ttl: float | None, socket_timeout: float, previews: bool
    ) -> None:
        redis = _import_redis()
        self.ttl = check_ttl(ttl)
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ValueError(f"prefix must be 1 to 64 letters, digits or _.:- characters, got {prefix!r:.80}")
        check_seconds("socket_timeout", socket_timeout)
        if client is None:
            assert u is not None
            client = self._connect(u, socket_timeout)
            self.url = u.shown  # for messages: never the password
        else:
            kw = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {}) or {}
            self.url = f"redis://{kw.get('host', '?')}:{kw.get('port', '?')}/{kw.get('db', 0)}"
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._redis = client
        self._prefix = prefix
        self._ttl_ms = max(1, math.ceil(self.ttl * 1000)) if self.ttl else 0  # 0.0001 s is 1 ms, not "never"
        self._noscript: type[BaseException] = redis.exceptions.NoScriptError
        self._cas, self._release = (hashlib.sha1(src.encode()).hexdigest() for src in (_CAS, _RELEASE))
        self._token = os.urandom(8).hex()  # this store's writers, as the session's turn knows them
        self._last: tuple[str, float] = ("", 0.0)  # the session and time of this store's last write
        self._handed: tuple[str, float] = ("", 0.0)  # ...and of its last write that handed the turn on
        self.previews = bool(previews)

    def _connect(self, u: StoreURL, socket_timeout: float) -> Any:
        """A client for the URL: credentials go as arguments, never inside the URL redis-py parses (so no
        message of its own can quote them)."""
        from urllib.parse import unquote

        take_options(u, (), _client_options(self._asyncio))
        db = u.target.split("://", 1)[1].partition("/")[2]
        if u.scheme != "unix" and db and not db.isdigit():  # redis-py would quietly use database 0
            raise ValueError(f"store URL {u.shown}: the database after the host must be a number, got {db!r:.40}")
        options = dict(u.options)
        username = options.pop("username", None) or u.username
        password = options.pop("password", None) or u.password
        kwargs: dict[str, Any] = {"socket_timeout": socket_timeout, "socket_connect_timeout": socket_timeout}
        if username:
            kwargs["username"] = unquote(username)
        if password:
            kwargs["password"] = unquote(password)
        target = u.target + ("?" + "&".join(f"{k}={v}" for k, v in options.items()) if options else "")
        try:
            if self._asyncio:
                import redis.asyncio as redis_asyncio

                return redis_asyncio.Redis.from_url(target, **kwargs)
            return _import_redis().Redis.from_url(target, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a bad URL, as one line
            raise ValueError(f"store URL {u.shown}: {one_line(str(exc), 200)}") from None

    def reset_hint(self, session: str) -> str:
        """How to get rid of a session's unusable record."""
        return f"reset it: looptrap sessions reset {shown_session(session)} --store {self.url}"

    def _keys_of(self, session: str) -> list[str]:
        """The record, the encoded state, the turn, the count of waiting writers and the wake-up list."""
        base = f"{self._prefix}:{{{session}}}:"
        return [base + "state", base + "data", base + "turn", base + "waiters", base + "wake"]

    def _data_key(self, key: bytes | str) -> str:
        return _text(key)[: -len("state")] + "data"

    def _session_of(self, key: bytes | str) -> str:
        return _text(key)[len(self._prefix) + 2 : -len("}:state")]

    @property
    def _pattern(self) -> str:
        return f"{self._prefix}:{{*}}:state"

    def _fail(self, exc: BaseException) -> StoreError:
        return StoreError(f"Redis store {self.url}: {one_line(str(exc), 300)}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class RedisStore(_Connected, Store):
    """Sessions in Redis at ``url`` (``redis://[[user]:password@]host:port/db``, ``rediss://`` for TLS,
    ``unix:///path.sock``; query options go to the redis client), or through a ``client`` you built.
    ``ttl``: seconds a session lives after its last write (``None``: forever); ``prefix``: of every key;
    ``previews``: whether guards keep argument previews and result excerpts here (off: digests only)."""

    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        cas = _Cas(self, session, change, cached)
        try:
            while True:
                step = cas.settle(self._run(self._attempt, cas))
                if step == _DONE:
                    return cas.result, cas.snap
                if step == _WAIT:
                    cas.waited(self._run(self._redis.blpop, [cas.keys[4]], cas.wait))
                elif step == _READ:
                    cas.read(self._run(self._read, cas.keys))
        except BaseException:
            if cas.holding:  # give the turn back now rather than after its lease
                with contextlib.suppress(Exception):
                    self._script(self._release, cas.keys[2:5], [self._token])
            raise

    def load(self, session: str) -> Snapshot | None:
        if not valid_session(session):
            return None
        return _snapshot(session, self._run(self._read, self._keys_of(session)), self.reset_hint)

    def delete(self, session: str) -> bool:
        if not valid_session(session):
            return False
        keys = self._keys_of(session)

        def delete() -> Any:
            pipe = self._redis.pipeline()
            pipe.delete(keys[0])
            pipe.delete(*keys[1:])
            return pipe.execute()

        return bool(self._run(delete)[0])

    def sessions(self) -> Iterator[SessionInfo]:
        keys = self._run(lambda: list(self._redis.scan_iter(match=self._pattern, count=_CHUNK)))
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]

            def fetch(chunk: list[Any] = chunk) -> Any:
                pipe = self._redis.pipeline(transaction=False)
                for key in chunk:
                    pipe.hmget(key, ["rev", "updated", "state"])
                    pipe.get(self._data_key(key))
                return pipe.execute(raise_on_error=False)

            got = self._run(fetch)
            for j, key in enumerate(chunk):
                yield from _info(self._session_of(key), got[2 * j], got[2 * j + 1])

    def listing(self) -> list[Listed]:
        """See :meth:`Store.listing`: the record keys scanned, their ``rev``, ``gen`` and ``updated`` fields
        read in pipelines (no state read)."""
        keys = self._run(lambda: list(self._redis.scan_iter(match=self._pattern, count=_CHUNK)))
        out = []
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]

            def reads(pipe: Any, chunk: list[Any] = chunk) -> None:
                for key in chunk:
                    pipe.hmget(key, ["rev", "gen", "updated"])

            got = self._pipelined(reads)
            for key, fields in zip(chunk, got, strict=True):
                listed = _listed(self._session_of(key), fields)
                if listed is not None:
                    out.append(listed)
        return out

    def load_many(self, sessions: Iterable[str]) -> list[Loaded]:
        """See :meth:`Store.load_many`: the records and states of the sessions asked for, read in pipelines."""
        names, out = wanted(sessions), []
        for i in range(0, len(names), _CHUNK):
            chunk = names[i : i + _CHUNK]

            def reads(pipe: Any, chunk: list[str] = chunk) -> None:
                for session in chunk:
                    keys = self._keys_of(session)
                    pipe.hmget(keys[0], ["rev", "gen", "updated", "state"])
                    pipe.get(keys[1])

            got = self._pipelined(reads)
            for j, session in enumerate(chunk):
                fields, data = got[2 * j], got[2 * j + 1]
                bad = next((x for x in (fields, data) if isinstance(x, Exception)), None)
                if bad is not None:
                    out.append(Loaded(Listed(session, 0), None, f"unreadable record: {one_line(str(bad), 200)}"))
                    continue
                listed = _listed(session, fields[:3])
                if listed is not None:  # the state in its data key, else in the record (written before data keys)
                    out.append(loaded(listed, data if data is not None else fields[3]))
        return out

    def close(self) -> None:
        """Hand on the turn of the session this store last wrote (if it kept it), and disconnect."""
        if self._last[0]:
            with contextlib.suppress(Exception):
                self._script(self._release, self._keys_of(self._last[0])[2:5], [self._token])
        self._redis.close()

    def _attempt(self, cas: _Cas[Any]) -> Any:
        """One try: the staged state and the script in one round trip (or only the script, to ask)."""
        if cas.data is None:
            return self._script(self._cas, cas.keys, cas.args)

        def staged() -> Any:
            pipe = self._redis.pipeline(transaction=False)
            pipe.set(cas.keys[5], cas.data, px=_STAGE_MS)
            pipe.evalsha(self._cas, len(cas.keys), *cas.keys, *cas.args)
            return pipe.execute()[1]

        try:
            return staged()
        except self._noscript:
            self._load_scripts()
            return staged()

    def _script(self, sha: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return self._redis.evalsha(sha, len(keys), *keys, *args)
        except self._noscript:  # the server restarted, or its scripts were flushed
            self._load_scripts()
            return self._redis.evalsha(sha, len(keys), *keys, *args)

    def _load_scripts(self) -> None:
        for src in (_CAS, _RELEASE):
            self._redis.script_load(src)

    def _read(self, keys: list[str]) -> list[Any]:
        """The record's fields and its encoded state, read together (``MULTI``)."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.hmget(keys[0], ["rev", "gen", "state"])
        pipe.get(keys[1])
        fields, data = pipe.execute()
        return [*fields, data]

    def _run(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self._errors as exc:
            raise self._fail(exc) from exc

    def _pipelined(self, build: Callable[[Any], object]) -> list[Any]:
        """The replies of the commands ``build`` queues on a pipeline (an error as its exception, not raised)."""

        def run() -> list[Any]:
            pipe = self._redis.pipeline(transaction=False)
            build(pipe)
            return list(pipe.execute(raise_on_error=False))

        return list(self._run(run))


def _listed(session: str, fields: Any) -> Listed | None:
    """A record's ``rev``, ``gen`` and ``updated`` fields as listed (``None``: the record is gone). A record
    that cannot be read is listed all the same: :meth:`RedisStore.load_many` says what is wrong with it."""
    if isinstance(fields, Exception):
        return Listed(session, 0)
    rev, gen, updated = fields
    if rev is None and updated is None:
        return None
    try:
        number = int(rev) if rev is not None else 0
        when = float(updated) if updated is not None else None
    except ValueError:
        number, when = 0, None
    return Listed(session, number, _text(gen) if gen is not None else "", when)


def _info(session: str, fields: Any, data: Any) -> Iterator[SessionInfo]:
    """A listed session, or its unreadable record (nothing if it went away since the scan)."""
    for got in (fields, data):
        if isinstance(got, Exception):
            yield SessionInfo.unreadable(session, 0, None, f"unreadable record: {one_line(str(got), 200)}")
            return
    rev, updated, legacy = fields
    try:
        snap = _snapshot(session, [rev, b"", legacy, data], None)
        when = float(updated) if updated is not None else None
    except (UnreadableStateError, ValueError) as exc:
        number = int(rev) if isinstance(rev, bytes) and rev.isdigit() else 0
        yield SessionInfo.unreadable(session, number, None, one_line(str(exc), 300))
        return
    if snap is not None:
        yield SessionInfo.of(session, snap.rev, when or None, snap.state)


class AsyncRedisStore(_Connected, AsyncStore):
    """:class:`RedisStore` for asyncio code (``redis.asyncio``); the same keys and scripts."""

    _asyncio = True

    async def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        cas = _Cas(self, session, change, cached)
        try:
            while True:
                step = cas.settle(await self._run(self._attempt, cas))
                if step == _DONE:
                    return cas.result, cas.snap
                if step == _WAIT:
                    cas.waited(await self._run(self._redis.blpop, [cas.keys[4]], cas.wait))
                elif step == _READ:
                    cas.read(await self._run(self._read, cas.keys))
        except BaseException:
            if cas.holding:
                with contextlib.suppress(Exception):
                    await self._script(self._release, cas.keys[2:5], [self._token])
            raise

    async def load(self, session: str) -> Snapshot | None:
        if not valid_session(session):
            return None
        return _snapshot(session, await self._run(self._read, self._keys_of(session)), self.reset_hint)

    async def delete(self, session: str) -> bool:
        if not valid_session(session):
            return False
        keys = self._keys_of(session)
        gone = await self._run(self._redis.delete, keys[0])
        await self._run(self._redis.delete, *keys[1:])
        return bool(gone)

    async def close(self) -> None:
        """See :meth:`RedisStore.close`."""
        if self._last[0]:
            with contextlib.suppress(Exception):
                await self._script(self._release, self._keys_of(self._last[0])[2:5], [self._token])
        await self._redis.aclose()

    async def _attempt(self, cas: _Cas[Any]) -> Any:
        if cas.data is None:
            return await self._script(self._cas, cas.keys, cas.args)

        async def staged() -> Any:
            pipe = self._redis.pipeline(transaction=False)
            pipe.set(cas.keys[5], cas.data, px=_STAGE_MS)
            pipe.evalsha(self._cas, len(cas.keys), *cas.keys, *cas.args)
            return (await pipe.execute())[1]

        try:
            return await staged()
        except self._noscript:
            await self._load_scripts()
            return await staged()

    async def _script(self, sha: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return await self._redis.evalsha(sha, len(keys), *keys, *args)
        except self._noscript:
            await self._load_scripts()
            return await self._redis.evalsha(sha, len(keys), *keys, *args)

    async def _load_scripts(self) -> None:
        for src in (_CAS, _RELEASE):
            await self._redis.script_load(src)

    async def _read(self, keys: list[str]) -> list[Any]:
        pipe = self._redis.pipeline(transaction=True)
        pipe.hmget(keys[0], ["rev", "gen", "state"])
        pipe.get(keys[1])
        fields, data = await pipe.execute()
        return [*fields, data]

    async def _run(self, fn: Any, *args: Any) -> Any:
        try:
            return await fn(*args)
        except self._errors as exc:
            raise self._fail(exc) from exc
