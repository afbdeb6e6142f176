"""Stores: where a session's guard state lives when processes share it.

``MemoryStore`` (one process), ``SQLiteStore`` (one machine), ``RedisStore`` / ``AsyncRedisStore`` (a fleet).
:func:`open_store` builds one from a URL, as the CLI's ``--store`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from looptrap.stores.base import DEFAULT_TTL, AsyncStore, SessionInfo, Snapshot, Store, StoreError
from looptrap.stores.memory import MemoryStore
from looptrap.stores.sqlite import SQLiteStore

if TYPE_CHECKING:
    from looptrap.stores.redis import AsyncRedisStore, RedisStore
    from looptrap.stores.threaded import ThreadedStore

__all__ = [
    "DEFAULT_TTL",
    "AsyncRedisStore",
    "AsyncStore",
    "MemoryStore",
    "RedisStore",
    "SQLiteStore",
    "SessionInfo",
    "Snapshot",
    "Store",
    "StoreError",
    "ThreadedStore",
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


def _split(url: str) -> tuple[str, str, float | None]:
    """Scheme, the URL without a ``ttl`` query parameter, and that TTL (``DEFAULT_TTL`` if absent,
    ``ttl=0`` or ``ttl=none`` for no expiry). Plain string work: ``urllib.parse`` costs a hook process
    more time to import than this takes."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    base, _, query = url.partition("?")
    ttl: float | None = DEFAULT_TTL
    rest = []
    for pair in query.split("&") if query else ():
        k, _, v = pair.partition("=")
        if k == "ttl":
            try:
                ttl = None if v.lower() in ("", "0", "none") else float(v)
            except ValueError:
                raise ValueError(f"store URL {url!r}: ttl must be a number of seconds, got {v!r}") from None
        else:
            rest.append(pair)
    return scheme, base + ("?" + "&".join(rest) if rest else ""), ttl


def open_store(url: str) -> Store:
    """A store from a URL: ``memory://``, ``sqlite:///abs/path.db`` (or ``sqlite:////abs/path.db``,
    ``sqlite://rel/path.db``, or a plain file path), ``redis://[:password@]host:port/db`` or
    ``rediss://...``. Any of them takes ``?ttl=SECONDS``."""
    scheme, clean, ttl = _split(url)
    if scheme == "memory":
        return MemoryStore(ttl=ttl)
    if scheme in ("redis", "rediss", "unix"):
        from looptrap.stores.redis import RedisStore

        return RedisStore(clean, ttl=ttl)
    if scheme == "sqlite":
        path = url.split("?", 1)[0][len("sqlite://") :]
        return SQLiteStore("/" + path.lstrip("/") if path.startswith("/") else path, ttl=ttl)
    if scheme and len(scheme) > 1:  # "C:\\..." is a path, not a scheme
        raise ValueError(f"unknown store URL scheme {scheme!r} (use memory://, sqlite:///path or redis://host)")
    return SQLiteStore(url.split("?", 1)[0], ttl=ttl)


def open_async_store(url: str) -> AsyncStore:
    """An asyncio store from a URL: :class:`AsyncRedisStore` for ``redis://``, otherwise the synchronous
    store of :func:`open_store` run in a worker thread."""
    scheme, clean, ttl = _split(url)
    if scheme in ("redis", "rediss", "unix"):
        from looptrap.stores.redis import AsyncRedisStore

        return AsyncRedisStore(clean, ttl=ttl)
    from looptrap.stores.threaded import ThreadedStore

    return ThreadedStore(open_store(url))
