"""``ThreadedStore``: any synchronous store, for asyncio code (each call runs in a worker thread)."""

from __future__ import annotations

import asyncio

from looptrap.stores.base import AsyncStore, Change, R, Snapshot, Store

__all__ = ["ThreadedStore"]


class ThreadedStore(AsyncStore):
    """Wraps a :class:`Store` (SQLite, memory) so that asyncio code awaits it without blocking its loop."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.ttl = store.ttl
        self.previews = store.previews
        self.url = store.url

    async def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        return await asyncio.to_thread(self.store.update, session, change, cached)

    async def load(self, session: str) -> Snapshot | None:
        return await asyncio.to_thread(self.store.load, session)

    async def delete(self, session: str) -> bool:
        return await asyncio.to_thread(self.store.delete, session)

    async def close(self) -> None:
        await asyncio.to_thread(self.store.close)
