"""``RedisStore`` and ``AsyncRedisStore``: guard state shared by a fleet, one round trip per update.

Optimistic concurrency: the guard keeps the snapshot it last saw and computes the new state from it; a
server-side script writes it only if the stored revision still matches, and otherwise returns the current
state, from which the change is computed again. One key per session, ``{prefix}:{<session>}:state`` (the
braces are a Redis Cluster hash tag), a hash of ``rev``, ``updated`` and ``state``, with a TTL renewed on
every write. A writer that loses several conflicts in a row claims the session's turn (a short-lived lock
key beside it), so fast writers cannot starve a slow one. Needs the ``redis`` package (``pip install looptrap[redis]``).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Iterator
from typing import Any, Generic

from looptrap.core.state import SessionState
from looptrap.stores.base import (
    DEFAULT_TTL,
    AsyncStore,
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

__all__ = ["AsyncRedisStore", "RedisStore"]

# KEYS[1]: the session's state, KEYS[2]: its turn lock.
# ARGV: expected rev, new state, TTL in ms (0: none), time of the write, this writer's token, "1" to claim the turn.
# Returns {1, new rev} when written; {0, current rev, current state} on a conflict; {2} while another writer,
# after losing repeatedly, holds the turn (so a slow writer is never starved by fast ones).
_CAS = """
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[5] then return {2} end
local cur = redis.call('HMGET', KEYS[1], 'rev', 'state')
local rev = tonumber(cur[1]) or 0
if rev ~= tonumber(ARGV[1]) then
  if ARGV[6] == '1' then redis.call('SET', KEYS[2], ARGV[5], 'PX', 2000) end
  if cur[2] then return {0, rev, cur[2]} end
  return {0, rev}
end
redis.call('HSET', KEYS[1], 'rev', rev + 1, 'state', ARGV[2], 'updated', ARGV[4])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
if holder then redis.call('DEL', KEYS[2]) end
return {1, rev + 1}
"""
_CLAIM_AFTER = 2  # conflicts in a row before a writer claims the turn
_GIVE_UP = 10.0  # seconds of conflicts and waiting before an update fails with StoreError


def _import_redis() -> Any:
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("RedisStore needs the redis package: pip install 'looptrap[redis]'") from exc
    return redis


class _Keys:
    """What the sync and async stores share: key names, the script's arguments and reading its reply."""

    def __init__(self, prefix: str, ttl: float | None) -> None:
        self.prefix = prefix
        self.ttl = ttl

    def key(self, session: str) -> str:
        return f"{self.prefix}:{{{check_session(session)}}}:state"

    def session_of(self, key: bytes | str) -> str:
        k = key.decode() if isinstance(key, bytes) else key
        return k[len(self.prefix) + 2 : -len("}:state")]

    @property
    def pattern(self) -> str:
        return f"{self.prefix}:{{*}}:state"

    @staticmethod
    def snapshot(fields: list[Any]) -> Snapshot | None:
        rev, data = fields[0], fields[1]
        return Snapshot(int(rev), decode_state(data)) if rev is not None and data is not None else None


class _Cas(Generic[R]):
    """One optimistic update, as the sync and async stores both run it: compute the change on the last
    known snapshot, send it with the expected revision, and on a conflict start again from the state the
    server returned. Without a snapshot, a new session is assumed (right for the first call of a session,
    one extra round trip otherwise)."""

    def __init__(self, keys: _Keys, session: str, change: Change[R], cached: Snapshot | None) -> None:
        self.keys = [keys.key(session), keys.key(session)[: -len("state")] + "turn"]
        self.ttl_ms = int(keys.ttl * 1000) if keys.ttl else 0
        self.session = session
        self.change = change
        self.token = os.urandom(8).hex()
        self.conflicts = 0
        self.waits = 0
        self.deadline = time.monotonic() + _GIVE_UP
        self.snap = cached if cached is not None else Snapshot(0, SessionState(run_id=session))
        self.result = change(self.snap.state)
        self.args = self._args()

    def _args(self) -> list[Any]:
        claim = "1" if self.conflicts >= _CLAIM_AFTER else "0"
        return [self.snap.rev, encode_state(self.snap.state), self.ttl_ms, repr(time.time()), self.token, claim]

    def settle(self, reply: list[Any]) -> float | None:
        """Read the server's reply: ``None`` when written, else seconds to wait before sending ``args`` again."""
        kind = int(reply[0])
        if kind == 1:
            self.snap = Snapshot(int(reply[1]), self.snap.state)
            return None
        if time.monotonic() > self.deadline:
            raise StoreError(f"session {self.session!r}: could not write it for {_GIVE_UP:.0f} s (write conflicts)")
        if kind == 2:  # another writer has the turn
            self.waits += 1
            return random.uniform(0.0002, 0.001) * min(self.waits, 10)
        self.conflicts += 1
        state = decode_state(reply[2]) if len(reply) > 2 else SessionState(run_id=self.session)
        self.snap = Snapshot(int(reply[1]), state)
        self.result = self.change(state)
        self.args = self._args()
        return 0.0


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not sep or not at:
        return url
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}"


def _client_options(socket_timeout: float) -> dict[str, Any]:
    return {"socket_timeout": socket_timeout, "socket_connect_timeout": socket_timeout}


class _Connected:
    """The connection, keys and script both stores set up alike (``_asyncio``: which redis client)."""

    _asyncio = False

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        client: Any = None,
        prefix: str = "looptrap",
        ttl: float | None = DEFAULT_TTL,
        socket_timeout: float = 2.0,
    ) -> None:
        redis = _import_redis()
        if client is None:
            if self._asyncio:
                import redis.asyncio as redis_asyncio

                client = redis_asyncio.Redis.from_url(url, **_client_options(socket_timeout))
            else:
                client = redis.Redis.from_url(url, **_client_options(socket_timeout))
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._redis = client
        self._keys = _Keys(prefix, ttl)
        self._cas = client.register_script(_CAS)
        self.ttl = ttl
        self.url = redact(url)  # for messages: never the password


class RedisStore(_Connected, Store):
    """Sessions in Redis at ``url`` (``redis://[:password@]host:port/db``, ``rediss://`` for TLS, or a
    ``client`` you built). ``ttl``: seconds a session lives after its last write (``None``: forever)."""

    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        cas = _Cas(self._keys, session, change, cached)
        while (wait := cas.settle(self._run(self._cas, cas.keys, cas.args))) is not None:
            if wait:
                time.sleep(wait)
        return cas.result, cas.snap

    def load(self, session: str) -> Snapshot | None:
        return self._keys.snapshot(self._run(self._redis.hmget, self._keys.key(session), ["rev", "state"]))

    def delete(self, session: str) -> bool:
        return bool(self._run(self._redis.delete, self._keys.key(session)))

    def sessions(self) -> Iterator[SessionInfo]:
        for key in self._run(lambda: list(self._redis.scan_iter(match=self._keys.pattern, count=500))):
            rev, updated, data = self._run(self._redis.hmget, key, ["rev", "updated", "state"])
            if rev is not None and data is not None:
                session = self._keys.session_of(key)
                yield SessionInfo.of(session, int(rev), float(updated or 0) or None, decode_state(data))

    def close(self) -> None:
        self._redis.close()

    def _run(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self._errors as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from exc

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"


class AsyncRedisStore(_Connected, AsyncStore):
    """:class:`RedisStore` for asyncio code (``redis.asyncio``); the same keys and script."""

    _asyncio = True

    async def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        cas = _Cas(self._keys, session, change, cached)
        while (wait := cas.settle(await self._run(self._cas, cas.keys, cas.args))) is not None:
            if wait:
                await asyncio.sleep(wait)
        return cas.result, cas.snap

    async def load(self, session: str) -> Snapshot | None:
        return self._keys.snapshot(await self._run(self._redis.hmget, self._keys.key(session), ["rev", "state"]))

    async def delete(self, session: str) -> bool:
        return bool(await self._run(self._redis.delete, self._keys.key(session)))

    async def close(self) -> None:
        await self._redis.aclose()

    async def _run(self, fn: Any, *args: Any) -> Any:
        try:
            return await fn(*args)
        except self._errors as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from exc
