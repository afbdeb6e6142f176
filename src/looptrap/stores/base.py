"""The store interface: where a session's guard state lives when several processes share it.

A store keeps, per session id, the session's state (plain, versioned data: see
:class:`looptrap.core.state.SessionState`), a revision number that grows with every write and a
generation: a random token drawn when the session's record is created, so that a revision number seen
before a reset or an expiry never matches the record made after it. All a guard asks of a store is
:meth:`Store.update`: read the session's state, apply a change, write it back, atomically. Each backend
does that its own best way (a lock, a transaction, an optimistic compare-and-set).
"""

from __future__ import annotations

import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import NamedTuple, TypeVar

import orjson

from looptrap.core.errors import LooptrapError
from looptrap.core.printable import one_line
from looptrap.core.state import SessionState, StateVersionError

__all__ = [
    "DEFAULT_TTL",
    "MAX_SESSION",
    "MAX_STATE_BYTES",
    "AsyncStore",
    "Listed",
    "Loaded",
    "SessionIdError",
    "SessionInfo",
    "Snapshot",
    "Store",
    "StoreError",
    "UnreadableStateError",
    "decode_state",
    "encode_state",
]

R = TypeVar("R")
Change = Callable[[SessionState], R]
Hint = Callable[[str], str] | None  # how to reset a session (a store's reset_hint), asked only on failure
DEFAULT_TTL = 86400.0  # seconds a session's state is kept after its last write
MAX_SESSION = 512  # characters of a session id
MAX_STATE_BYTES = 4 << 20  # a larger encoded state is refused (the engine keeps states well below it)


class StoreError(LooptrapError):
    """The store could not apply an update or read a session: unreachable, timed out, or the session's
    record is unusable (the message says which, and what to do)."""


class SessionIdError(StoreError, ValueError):
    """A session id the stores cannot keep (empty, not a string, or over :data:`MAX_SESSION` characters)."""


class UnreadableStateError(StoreError, StateVersionError):
    """A session's stored state cannot be read (another format version, a corrupt record): reset the session."""


# NamedTuples, not dataclasses: cheaper to define, and a hook process pays for every definition it imports.
class Snapshot(NamedTuple):
    """A session's state as of one revision of one generation of its record (what a guard caches)."""

    rev: int
    state: SessionState
    gen: str = ""


class SessionInfo(NamedTuple):
    """One stored session, as listed by ``looptrap sessions list`` (``error``: why its state is unreadable)."""

    session: str
    rev: int
    updated: float | None
    calls: int
    turn: int
    level: int
    halted: str | None
    error: str | None = None

    @classmethod
    def of(cls, session: str, rev: int, updated: float | None, state: SessionState) -> SessionInfo:
        halted = state.halted.get("reason") if state.halted else None
        return cls(session, rev, updated, state.calls, state.turn, state.level, halted)

    @classmethod
    def unreadable(cls, session: str, rev: int, updated: float | None, error: str) -> SessionInfo:
        return cls(session, rev, updated, 0, 0, 0, None, error)


class Listed(NamedTuple):
    """One stored session as :meth:`Store.listing` names it, its state not read: the revision, the record's
    generation (``""``: not known) and the time of the last write (``None``: not known)."""

    session: str
    rev: int
    gen: str = ""
    updated: float | None = None

    @property
    def token(self) -> tuple[int, str, float | None]:
        """What changes with every write of the session: a token unlike the last one seen means it was written."""
        return self.rev, self.gen, self.updated


class Loaded(NamedTuple):
    """A session's decoded state as :meth:`Store.load_many` gives it (``state`` ``None``: it cannot be
    read, and ``error`` says why)."""

    listed: Listed
    state: SessionState | None
    error: str | None = None


def encode_state(state: SessionState) -> bytes:
    """The state as compact JSON bytes."""
    return orjson.dumps(state.to_dict())


def decode_state(data: bytes | str) -> SessionState:
    """Read state written by :func:`encode_state` (:class:`looptrap.StateVersionError` for another format)."""
    return SessionState.from_dict(orjson.loads(data))


def new_gen() -> str:
    """A fresh generation token for a session record being created."""
    return os.urandom(8).hex()


def check_session(session: str) -> str:
    """A session id is a non-empty string of at most :data:`MAX_SESSION` characters."""
    if not isinstance(session, str) or not session or len(session) > MAX_SESSION:
        got = f"{len(session)} characters" if isinstance(session, str) else type(session).__name__
        raise SessionIdError(f"session id must be a non-empty string of at most {MAX_SESSION} characters, got {got}")
    return session


def valid_session(session: object) -> bool:
    """Whether a store could hold ``session`` (reads of any other id find nothing)."""
    return isinstance(session, str) and 0 < len(session) <= MAX_SESSION


def check_ttl(ttl: float | None) -> float | None:
    """``ttl`` if it is ``None`` (keep sessions) or a finite number of seconds above 0."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"ttl must be a finite number of seconds above 0, or None to keep sessions, got {ttl!r}")
    return float(ttl)


def check_seconds(name: str, value: float) -> float:
    """``value`` if it is a finite number of seconds, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of seconds, 0 or more, got {value!r}")
    return float(value)


def shown_session(session: str) -> str:
    """A session id as messages show it: one line, quoted for a shell."""
    import shlex  # only on the error path

    return shlex.quote(one_line(session, MAX_SESSION))


class Store(ABC):
    """Holds guard state per session for processes that share it (synchronous API).

    ``ttl`` (seconds, ``None`` = forever): a session not written for that long is forgotten. ``previews``:
    whether guards keep argument previews and result excerpts in this store's states (off for stores that
    persist them; see ``docs/stores.md``). ``url``: the store, as messages show it (never a password).
    """

    ttl: float | None = DEFAULT_TTL
    previews: bool = False
    url: str = ""

    @abstractmethod
    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> tuple[R, Snapshot]:
        """Apply ``change`` to the session's current state and save it, atomically; return what ``change``
        returned and the new snapshot. ``cached`` is the caller's last snapshot: when it is still current
        (same revision, same generation), backends skip decoding it again. ``change`` may run more than
        once (on a write conflict), each time on the then-current state. Raises :class:`StoreError` when
        the store cannot apply it (unreachable, a bad session id, an unreadable state)."""

    @abstractmethod
    def load(self, session: str) -> Snapshot | None:
        """The session's current snapshot, or ``None`` (:class:`UnreadableStateError` if it cannot be read)."""

    @abstractmethod
    def delete(self, session: str) -> bool:
        """Forget a session; ``True`` if it existed."""

    @abstractmethod
    def sessions(self) -> Iterator[SessionInfo]:
        """Every stored session (for inspection; order unspecified; unreadable ones with ``error`` set)."""

    def listing(self) -> list[Listed]:
        """Every stored session, without decoding its state (order unspecified; expired ones left out, an
        unreadable one listed): what a reader that follows many sessions compares with its last listing
        (:attr:`Listed.token`) to decode only the sessions written since, with :meth:`load_many`. This
        default lists them through :meth:`sessions`, which decodes every state: backends override it."""
        return [Listed(i.session, i.rev, "", i.updated) for i in self.sessions()]

    def load_many(self, sessions: Iterable[str]) -> list[Loaded]:
        """The decoded states of ``sessions``, in the order asked, each once; a session not stored is left out,
        one whose state cannot be read is given with ``error`` set (never raised). Raises
        :class:`StoreError` when the store cannot be read. This default loads them one by one (:meth:`load`)."""
        out = []
        for session in wanted(sessions):
            try:
                snap = self.load(session)
            except UnreadableStateError as exc:
                out.append(Loaded(Listed(session, 0), None, one_line(str(exc), 300)))
                continue
            if snap is not None:
                out.append(Loaded(Listed(session, snap.rev, snap.gen), snap.state))
        return out

    def reset_hint(self, session: str) -> str:
        """How to get rid of a session's unusable record."""
        return f"reset it: looptrap sessions reset {shown_session(session)} --store {self.url}"

    def close(self) -> None:  # noqa: B027 - optional for backends that hold nothing
        """Release connections."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncStore(ABC):
    """The same contract as :class:`Store`, for asyncio code."""

    ttl: float | None = DEFAULT_TTL
    previews: bool = False
    url: str = ""

    @abstractmethod
    def update(self, session: str, change: Change[R], cached: Snapshot | None = None) -> Awaitable[tuple[R, Snapshot]]:
        """See :meth:`Store.update`."""

    @abstractmethod
    def load(self, session: str) -> Awaitable[Snapshot | None]:
        """See :meth:`Store.load`."""

    @abstractmethod
    def delete(self, session: str) -> Awaitable[bool]:
        """See :meth:`Store.delete`."""

    def reset_hint(self, session: str) -> str:
        """See :meth:`Store.reset_hint`."""
        return f"reset it: looptrap sessions reset {shown_session(session)} --store {self.url}"

    async def close(self) -> None:  # noqa: B027 - optional for backends that hold nothing
        """Release connections."""

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def unreadable(session: str, why: str, hint: Hint) -> UnreadableStateError:
    """The error for a session whose record cannot be read: which session, why, and how to reset it."""
    return UnreadableStateError(
        f"session {shown_session(session)}: its stored state cannot be read ({one_line(why, 300)})"
        + (f"; {hint(session)}" if hint else "")
    )


def wanted(sessions: Iterable[str]) -> list[str]:
    """The session ids a store could hold among ``sessions``, each once, in order."""
    return list(dict.fromkeys(s for s in sessions if valid_session(s)))


def loaded(listed: Listed, data: bytes | str | None) -> Loaded:
    """A listed session with its stored state decoded (or why it cannot be)."""
    try:
        return Loaded(listed, read_state(data, listed.session, None))
    except UnreadableStateError as exc:
        return Loaded(listed, None, one_line(str(exc), 300))


def read_state(data: bytes | str | None, session: str, hint: Hint) -> SessionState:
    """Decode a stored state; anything unreadable (another format version, a corrupt record) becomes an
    :class:`UnreadableStateError` that names the session and says how to reset it (``hint(session)``)."""
    try:
        if data is None:
            raise ValueError("the record has no state")
        return decode_state(data)
    except Exception as exc:  # noqa: BLE001 - whatever is wrong with the record, the answer is the same
        why = str(exc) if isinstance(exc, StateVersionError) else f"corrupt record: {type(exc).__name__}: {exc}"
        raise unreadable(session, why, hint) from None


def write_state(state: SessionState, session: str, hint: Hint) -> bytes:
    """Encode a state to store, refusing one over :data:`MAX_STATE_BYTES` (the engine keeps states far
    smaller: a bigger one is a bug, and storing it would let the record grow without bound)."""
    data = encode_state(state)
    if len(data) > MAX_STATE_BYTES:
        raise StoreError(
            f"session {shown_session(session)}: its state encodes to {len(data):,} bytes, over the limit of "
            f"{MAX_STATE_BYTES:,}; not written" + (f" ({hint(session)})" if hint else "")
        )
    return data


def expired(updated: float | None, ttl: float | None, now: float | None = None) -> bool:
    """Whether a session last written at ``updated`` is past its ``ttl``."""
    if ttl is None or updated is None:
        return False
    return (now if now is not None else time.time()) - updated > ttl
