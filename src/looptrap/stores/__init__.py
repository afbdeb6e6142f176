"""Stores: where a session's guard state lives when processes share it.

``MemoryStore`` (one process), ``SQLiteStore`` (one machine), ``RedisStore`` / ``AsyncRedisStore`` (a fleet).
:func:`open_store` builds one from a URL, as the CLI's ``--store`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from looptrap.stores.base import (
    DEFAULT_TTL,
    AsyncStore,
    Listed,
    Loaded,
    SessionIdError,
    SessionInfo,
    Snapshot,
    Store,
    StoreError,
    UnreadableStateError,
)
from looptrap.stores.memory import MemoryStore
from looptrap.stores.sqlite import SQLiteStore

if TYPE_CHECKING:
    from looptrap.stores.redis import AsyncRedisStore, RedisStore
    from looptrap.stores.threaded import ThreadedStore

__all__ = [
    "DEFAULT_TTL",
    "AsyncRedisStore",
    "AsyncStore",
    "Listed",
    "Loaded",
    "MemoryStore",
    "RedisStore",
    "SQLiteStore",
    "SessionIdError",
    "SessionInfo",
    "Snapshot",
    "Store",
    "StoreError",
    "ThreadedStore",
    "UnreadableStateError",
    "open_async_store",
    "open_store",
]


def __getattr__(name: str) -> Any:
    if name in ("RedisStore", "AsyncRedisStore"):  # imported on first use: redis is an optional extra
        from looptrap.stores import redis

        return getattr(redis, name)
    if name == "ThreadedStore":  # asyncio takes longer to import than a hook process should spend
        from looptrap.stores.threaded import ThreadedStore

        return ThreadedStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_store(url: str, *, create: bool = True) -> Store:
    """A store from a URL: ``memory://``, ``sqlite:///abs/path.db`` (or ``sqlite:////abs/path.db``,
    ``sqlite://rel/path.db``, or a plain file path), ``redis://[[user]:password@]host:port/db``,
    ``rediss://...`` or ``unix:///path/redis.sock``. Options (``?name=value&...``): ``ttl`` and ``previews``
    for every store, ``timeout`` for SQLite, ``prefix`` and the redis client's connection options for
    Redis; anything else, or a bad value, is a one-line :class:`ValueError` here. ``create=False``: a
    missing SQLite file (or its folder) is not created; the store then holds no sessions."""
    from looptrap.stores import url as urls

    u = urls.parse(url)
    if u.scheme in urls.REDIS_SCHEMES:
        from looptrap.stores.redis import RedisStore

        return RedisStore._from_url(u)
    if u.scheme == "memory":
        opts = urls.take_options(u, ("ttl", "previews"))
        return MemoryStore(ttl=_ttl(u, opts), previews=urls.bool_option(u, "previews", opts.get("previews", "1")))
    if u.scheme == "sqlite":
        path = u.target[len("sqlite://") :]
        path = "/" + path.lstrip("/") if path.startswith("/") else path
    elif len(u.scheme) > 1:  # "C:\\..." is a path, not a scheme
        raise ValueError(f"unknown store URL scheme {u.scheme!r} (use memory://, sqlite:///path or redis://host)")
    else:
        path = u.target
    opts = urls.take_options(u, ("ttl", "timeout", "previews"))
    timeout = urls.seconds_option(u, "timeout", opts["timeout"]) if "timeout" in opts else 5.0
    previews = urls.bool_option(u, "previews", opts.get("previews", "0"))
    return SQLiteStore(path, ttl=_ttl(u, opts), timeout=timeout, previews=previews, create=create)


def _ttl(u: Any, opts: dict[str, str]) -> float | None:
    from looptrap.stores.url import ttl_option

    return ttl_option(u, opts["ttl"]) if "ttl" in opts else DEFAULT_TTL


def open_async_store(url: str) -> AsyncStore:
    """An asyncio store from a URL: :class:`AsyncRedisStore` for ``redis://``, otherwise the synchronous
    store of :func:`open_store` run in a worker thread."""
    from looptrap.stores import url as urls

    u = urls.parse(url)
    if u.scheme in urls.REDIS_SCHEMES:
        from looptrap.stores.redis import AsyncRedisStore

        return AsyncRedisStore._from_url(u)
    from looptrap.stores.threaded import ThreadedStore

    return ThreadedStore(open_store(url))
