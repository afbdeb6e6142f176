"""The store interface: where a session's guard state lives when several processes share it.

A store keeps, per session id, the session's state (plain, versioned data: see
:class:`looptrap.core.state.SessionState`) and a revision number that grows with every write. All a guard
asks of it is :meth:`Store.update`: read the session's state, apply a change, write it back, atomically.
Each backend does that its own best way (a lock, a transaction, an optimistic compare-and-set).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator
from typing import NamedTuple, TypeVar

import orjson

from looptrap.core.errors import LooptrapError
from looptrap.core.state import SessionState

__all__ = [
    "DEFAULT_TTL",
    "AsyncStore",
    "SessionInfo",
    "Snapshot",
    "Store",
    "StoreError",
    "decode_state",
    "encode_state",
]

R = TypeVar("R")
Change = Callable[[SessionState], R]
DEFAULT_TTL = 86400.0  # seconds a session's state is kept after its last write


class StoreError(LooptrapError):
    """The store could not be reached, or did not answer in time."""


# NamedTuples, not dataclasses: cheaper to define, and a hook process pays for every definition it imports.
class Snapshot(NamedTuple):
    """A session's state as of one revision (what a guard caches between calls)."""

    rev: int
    state: SessionState


class SessionInfo(NamedTuple):
    """One stored session, as listed by ``looptrap sessions list``."""

    session: str
    rev: int
    updated: float | None
    calls: int
    turn: int
    level: int
    halted: str | None

    @classmethod
    def of(cls, session: str, rev: int, updated: float | None, state: SessionState) -> SessionInfo:
        halted = state.halted.get("reason") if state.halted else None
        return cls(session, rev, updated, state.calls, state.turn, state.level, halted)


def encode_state(state: SessionState) -> bytes:
    """The state as compact JSON bytes."""
    return orjson.dumps(state.to_dict())


def decode_state(data: bytes | str) -> SessionState:
    """Read state written by :func:`encode_state` (:class:`looptrap.StateVersionError` for another format)."""
    return SessionState.from_dict(orjson.loads(data))


def check_session(session: str) -> str:
    """A session id is a non-empty string of at most 512 characters."""
    if not isinstance(session, str) or not session or len(session) > 512:
        raise ValueError(f"session id must be a non-empty string of at most 512 characters, got {session!r:.80}")
    return session


class Store(ABC):
    """Holds guard state per session for processes that share it (synchronous API).

    ``ttl`` (seconds, ``None`` = forever): a session not written for that long is forgotten.
    """

    ttl: float | None = DEFAULT_TTL

    @abstractmethod
    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        """Apply ``change`` to the session's current state and save it, atomically; return what ``change``
        returned and the new snapshot. ``cached`` is the caller's last snapshot: when it is still current,
        backends skip decoding it again. ``change`` may run more than once (on a write conflict), each time
        on the then-current state. Raises :class:`StoreError` when the store is unreachable."""

    @abstractmethod
    def load(self, session: str) -> Snapshot | None:
        """The session's current snapshot, or ``None``."""

    @abstractmethod
    def delete(self, session: str) -> bool:
        """Forget a session; ``True`` if it existed."""

    @abstractmethod
    def sessions(self) -> Iterator[SessionInfo]:
        """Every stored session (for inspection; order unspecified)."""

    def close(self) -> None:  # noqa: B027 - optional for backends that hold nothing
        """Release connections."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncStore(ABC):
    """The same contract as :class:`Store`, for asyncio code."""

    ttl: float | None = DEFAULT_TTL

    @abstractmethod
    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> Awaitable[tuple[R, Snapshot]]:
        """See :meth:`Store.update`."""

    @abstractmethod
    def load(self, session: str) -> Awaitable[Snapshot | None]:
        """See :meth:`Store.load`."""

    @abstractmethod
    def delete(self, session: str) -> Awaitable[bool]:
        """See :meth:`Store.delete`."""

    async def close(self) -> None:  # noqa: B027 - optional for backends that hold nothing
        """Release connections."""

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def expired(updated: float | None, ttl: float | None, now: float | None = None) -> bool:
    """Whether a session last written at ``updated`` is past its ``ttl``."""
    if ttl is None or updated is None:
        return False
    return (now if now is not None else time.time()) - updated > ttl
