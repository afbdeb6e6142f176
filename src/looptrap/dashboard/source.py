"""How the dashboard reads a store: list every session without decoding its state, then decode only the states
that changed since the last read.

:func:`rows_of` gives a :class:`Rows` for a store. ``listing()`` names each session with its revision,
generation and last write (what changes with every write); ``states(sessions)`` decodes the few that
changed; ``one(session)`` reads one session by its exact id. All of it goes through the store's public API
(:meth:`Store.listing <looptrap.stores.base.Store.listing>` and :meth:`~looptrap.stores.base.Store.load_many`),
for every kind of store: each backend reads its records its own best way (one query on SQLite, pipelined reads
of the record fields on Redis), and a store of your own works through the defaults built on its
``sessions()`` and ``load()``.

There is no SQLite connection of the dashboard's own: what it was for, ``SQLiteStore`` does for every reader.
A store opened with ``create=False`` (as the CLI opens it) reads on a read-only connection (nothing created,
written or checkpointed, no WAL removed); it opens the file now at its path again when that file was
replaced (deleted and made again, or moved over: its device and inode change), so the dashboard, ``/metrics``
and ``looptrap sessions`` see the same file; and it lists again only after a commit (``PRAGMA
data_version``). Kept here, that logic would read the table as the store lays it out, and the two would have
to change together. A replaced file needs nothing more from the dashboard: the sessions of the new file have
records of other generations, so their tokens differ from every token seen before and they are decoded anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from looptrap.stores.base import Listed, valid_session

if TYPE_CHECKING:
    from looptrap.core.state import SessionState
    from looptrap.stores.base import Store

__all__ = ["Entry", "Loaded", "Rows", "rows_of"]

#: One stored session as listed: ``token`` changes with every write of it (revision, generation, time).
Entry = Listed


class Loaded(NamedTuple):
    """A session's decoded state (``error``: why it could not be decoded, and ``state`` is ``None``)."""

    entry: Entry
    state: SessionState | None
    error: str | None = None


class Rows:
    """A store as the dashboard reads it. ``epoch`` would grow when the store became another one, so that every
    token seen before meant nothing; it stays 0: the stores follow a replaced file themselves, and its
    sessions' tokens are new ones."""

    epoch = 0

    def __init__(self, store: Store) -> None:
        self.store = store

    def listing(self) -> list[Entry]:
        """Every stored session, its state not decoded; raises :class:`~looptrap.stores.base.StoreError`."""
        return self.store.listing()

    def states(self, sessions: Sequence[str]) -> list[Loaded]:
        """The decoded states of ``sessions`` (one that is gone is left out); raises ``StoreError``."""
        return [Loaded(got.listed, got.state, got.error) for got in self.store.load_many(sessions)]

    def one(self, session: str) -> Loaded | None:
        """The session named exactly ``session`` (``None``: there is none); raises ``StoreError``."""
        if not valid_session(session):
            return None
        got = self.states([session])
        return got[0] if got else None

    def close(self) -> None:
        """Release what this reader holds of its own (nothing: the store's connection is the store's)."""


def rows_of(store: Store) -> Rows:
    """The reader for ``store``."""
    return Rows(store)
