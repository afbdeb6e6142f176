"""``GuardPool``: one guard per session id, for code that serves many sessions (a framework middleware keyed by
thread id, a server keyed by conversation)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from looptrap.drivers.guard import Guard
from looptrap.engine.config import GuardConfig
from looptrap.engine.engine import Engine

if TYPE_CHECKING:
    from looptrap.stores.base import Store

__all__ = ["GuardPool"]


class GuardPool:
    """Guards by session id, sharing one engine (and one store, if given).

    >>> pool = GuardPool()
    >>> pool.get("thread-1") is pool.get("thread-1")
    True

    ``config`` or keyword options (the fields of :class:`GuardConfig`) configure every guard. Without a
    store, each session's state lives in its guard, and the least recently used guards beyond
    ``max_sessions`` are dropped (their sessions start afresh if they come back); with a store, the state
    lives in the store and nothing is lost. ``guard_options`` go to each :class:`Guard` (``clock``,
    ``logger``, ``on_store_error``).
    """

    def __init__(
        self,
        config: GuardConfig | Engine | None = None,
        *,
        store: Store | None = None,
        max_sessions: int = 10_000,
        guard_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if isinstance(config, Engine):
            self.engine = config if not options else Engine(config.config.replace(**options))
        else:
            cfg = config or GuardConfig()
            self.engine = Engine(cfg.replace(**options) if options else cfg)
        self.store = store
        self.max_sessions = max_sessions
        self._guard_options = dict(guard_options or {})
        self._guards: OrderedDict[str, Guard] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session: str) -> Guard:
        """The guard of ``session`` (made on first use)."""
        with self._lock:
            guard = self._guards.get(session)
            if guard is not None:
                self._guards.move_to_end(session)
                return guard
            guard = Guard(self.engine, store=self.store, session=session, **self._guard_options)
            self._guards[session] = guard
            while len(self._guards) > self.max_sessions:
                self._guards.popitem(last=False)
            return guard

    __call__: Callable[[GuardPool, str], Guard] = get

    def forget(self, session: str) -> None:
        """Drop a session's guard (and, with a store, its stored state)."""
        with self._lock:
            self._guards.pop(session, None)
        if self.store is not None:
            self.store.delete(session)

    def __len__(self) -> int:
        return len(self._guards)

    def __contains__(self, session: object) -> bool:
        return session in self._guards
