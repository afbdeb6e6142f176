"""The store contract, run against every backend: memory, a real SQLite file, a real redis-server."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from looptrap import AsyncGuard, Guard, SessionState, StateVersionError
from looptrap.stores import (
    MemoryStore,
    SQLiteStore,
    Store,
    StoreError,
    ThreadedStore,
    open_async_store,
    open_store,
)

BACKENDS = ["memory", "sqlite", "redis"]


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest, **kw: Any) -> Store:
    if kind == "memory":
        return MemoryStore(**kw)
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "state" / "sessions.db", **kw)
    from looptrap.stores import RedisStore

    return RedisStore(request.getfixturevalue("redis_url"), **kw)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = make_store(request.param, tmp_path, request)
    yield s
    s.close()


def bump(state: SessionState) -> int:
    state.calls += 1
    return state.calls


# -- the contract --------------------------------------------------------------------------------------
def test_a_new_session_starts_empty_and_each_update_is_saved(store: Store) -> None:
    assert store.load("s1") is None
    result, snap = store.update("s1", bump)
    assert result == 1
    assert snap.rev == 1
    assert snap.state.run_id == "s1"
    result, snap = store.update("s1", bump, snap)
    assert result == 2
    assert snap.rev == 2
    loaded = store.load("s1")
    assert loaded is not None
    assert loaded.rev == 2
    assert loaded.state.calls == 2
    assert store.load("other") is None


def test_a_stale_snapshot_is_never_written_over_newer_state(store: Store) -> None:
    _, old = store.update("s1", bump)
    store.update("s1", bump)  # another process moved the session on
    store.update("s1", bump)
    result, snap = store.update("s1", bump, old)  # the caller's cache is behind: it must not win
    assert result == 4
    assert snap.rev == 4
    loaded = store.load("s1")
    assert loaded is not None
    assert loaded.state.calls == 4


def test_sessions_are_listed_and_reset(store: Store) -> None:
    store.update("a", bump)
    store.update("b:with:colons", bump)
    store.update("b:with:colons", bump)
    infos = {i.session: i for i in store.sessions()}
    assert set(infos) == {"a", "b:with:colons"}
    assert infos["b:with:colons"].calls == 2
    assert infos["b:with:colons"].rev == 2
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert [i.session for i in store.sessions()] == ["b:with:colons"]


def test_state_of_another_format_version_is_rejected_clearly(store: Store) -> None:
    def from_the_future(state: SessionState) -> None:
        state.version = 99

    store.update("s1", from_the_future)
    with pytest.raises(StateVersionError, match="format version 99"):
        store.load("s1")


def test_session_ids_are_checked(store: Store) -> None:
    with pytest.raises(ValueError, match="session id"):
        store.update("", bump)


@pytest.mark.parametrize("kind", BACKENDS)
def test_sessions_expire_after_their_ttl(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    s = make_store(kind, tmp_path, request, ttl=0.3)
    s.update("s1", bump)
    assert s.load("s1") is not None
    time.sleep(0.6)
    assert s.load("s1") is None
    _, snap = s.update("s1", bump)
    assert snap.state.calls == 1  # a new session


def test_stored_state_is_bounded(store: Store) -> None:
    guard = Guard(store=store, session="big", clock=None)
    for i in range(3000):
        args = {"path": f"f{i}.py"}
        assert guard.check("read_file", args).allowed
        guard.record("read_file", args, f"contents {i}")
    from looptrap.stores.base import encode_state

    snap = store.load("big")
    assert snap is not None
    assert snap.state.calls == 3000
    assert len(encode_state(snap.state)) < 200_000


# -- guards sharing a session through a store ------------------------------------------------------------
def test_guards_in_different_processes_see_one_session(store: Store) -> None:
    # Each call comes from a fresh guard, as from a hook process or a stateless worker.
    args = {"query": "refund policy"}
    actions = []
    for _ in range(3):
        g = Guard(store=store, session="conv-1")
        v = g.check("search_docs", args)
        actions.append(v.action)
        if v.allowed:
            Guard(store=store, session="conv-1").record("search_docs", dict(args), "0 results")
    assert actions == ["allow", "allow", "advise"]
    snap = store.load("conv-1")
    assert snap is not None
    assert snap.state.calls == 3  # a result recorded by another guard is matched to its check, not counted again
    assert snap.state.pending == []


def test_different_sessions_do_not_mix(store: Store) -> None:
    args = {"query": "refund policy"}
    for i in range(6):
        g = Guard(store=store, session=f"user-{i % 3}")
        assert g.check("search_docs", args).action == "allow"
        g.record("search_docs", args, "0 results")


# -- many processes, one session ---------------------------------------------------------------------------
def _hammer(url: str, session: str, n: int) -> None:
    store = open_store(url)
    guard = Guard(store=store, session=session, on_store_error="closed", clock=None)
    for i in range(n):
        args = {"path": f"{multiprocessing.current_process().name}-{i}.py"}
        verdict = guard.check("read_file", args)
        assert verdict.allowed, verdict
        guard.record("read_file", args, f"contents {i}")
    store.close()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_concurrent_processes_lose_no_update(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = f"sqlite:///{tmp_path}/shared.db" if kind == "sqlite" else request.getfixturevalue("redis_url")
    procs, per = 4, 150
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_hammer, args=(url, "hot", per), name=f"w{i}") for i in range(procs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    snap = open_store(url).load("hot")
    assert snap is not None
    assert snap.state.calls == procs * per
    assert snap.state.per_tool == {"read_file": procs * per}
    assert snap.rev == 2 * procs * per  # one write per check and per record
    assert snap.state.pending == []


# -- failure policy ----------------------------------------------------------------------------------------
def test_a_killed_redis_fails_open_then_recovers(redis_server: Any, redis_url: str, caplog: Any) -> None:
    from looptrap.stores import RedisStore

    store = RedisStore(redis_url, socket_timeout=0.5)
    guard = Guard(store=store, session="s1")
    closed = Guard(store=store, session="s2", on_store_error="closed")
    args = {"query": "refund policy"}
    assert guard.check("search_docs", args).action == "allow"
    guard.record("search_docs", args, "0 results")
    redis_server.stop()
    try:
        with caplog.at_level(logging.WARNING, logger="looptrap"):
            for _ in range(5):
                assert guard.check("search_docs", args).action == "allow"
                guard.record("search_docs", args, "0 results")
            halted = closed.check("search_docs", args)
        assert halted.action == "halt"
        assert halted.reason == "store_unavailable"
        assert guard.store_errors == 10
        warnings = [r for r in caplog.records if "store unavailable" in r.getMessage()]
        assert len(warnings) == 2  # once per interval per guard, not once per call
    finally:
        redis_server.start()
    # The server came back empty (no persistence): the guard starts the session afresh and works again.
    assert [guard.check("search_docs", args).action for _ in range(1)] == ["allow"]
    guard.record("search_docs", args, "0 results")
    for expected in ("allow", "advise"):
        v = guard.check("search_docs", args)
        assert v.action == expected
        if v.allowed:
            guard.record("search_docs", args, "0 results")


def test_a_locked_sqlite_file_fails_open_after_a_bounded_wait(tmp_path: Path, caplog: Any) -> None:
    path = tmp_path / "locked.db"
    store = SQLiteStore(path, timeout=0.2)
    guard = Guard(store=store, session="s1")
    assert guard.check("ls", {}).allowed
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="looptrap"):
            assert guard.check("ls", {}).action == "allow"
        assert time.monotonic() - started < 2
        assert guard.store_errors == 1
        assert any("store unavailable" in r.getMessage() for r in caplog.records)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert guard.check("ls", {}).action == "allow"
    snap = store.load("s1")
    assert snap is not None
    assert snap.state.calls == 2


def test_an_unusable_sqlite_path_fails_open(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    guard = Guard(store=SQLiteStore(blocker / "sub" / "x.db"), session="s1")
    assert guard.check("ls", {}).action == "allow"
    assert guard.store_errors == 1
    closed = Guard(store=SQLiteStore(blocker / "sub" / "x.db"), session="s1", on_store_error="closed")
    assert closed.check("ls", {}).reason == "store_unavailable"


def test_on_store_error_is_validated() -> None:
    with pytest.raises(ValueError, match="on_store_error"):
        Guard(store=MemoryStore(), on_store_error="maybe")  # type: ignore[arg-type]


# -- asyncio ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_async_guard_over_a_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = f"sqlite:///{tmp_path}/a.db" if kind == "sqlite" else request.getfixturevalue("redis_url")

    async def run() -> list[str]:
        store = open_async_store(url)
        guard = AsyncGuard(store=store, session="s1")

        @guard.tool
        async def search_docs(query: str) -> str:
            await asyncio.sleep(0)
            return "0 results"

        out = [await search_docs(query="refund policy") for _ in range(3)]
        await store.close()
        return out

    out = asyncio.run(run())
    assert out[:2] == ["0 results", "0 results"]
    assert "3 times" in out[2]
    snap = open_store(url).load("s1")
    assert snap is not None
    assert snap.state.calls == 3


def test_threaded_store_wraps_a_sync_store() -> None:
    async def run() -> int:
        store = ThreadedStore(MemoryStore())
        _, snap = await store.update("s", bump)
        _, snap = await store.update("s", bump, snap)
        loaded = await store.load("s")
        assert loaded is not None
        assert await store.delete("s")
        return loaded.state.calls

    assert asyncio.run(run()) == 2


def test_an_async_guard_refuses_a_sync_function() -> None:
    guard = AsyncGuard()
    with pytest.raises(TypeError, match="async functions only"):
        guard.tool(lambda: 1)


# -- URLs --------------------------------------------------------------------------------------------------
def test_store_urls(tmp_path: Path) -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    s = open_store(f"sqlite:///{tmp_path}/x.db?ttl=60")
    assert isinstance(s, SQLiteStore)
    assert s.path == str(tmp_path / "x.db")
    assert s.ttl == 60
    bare = open_store(str(tmp_path / "y.db"))
    assert isinstance(bare, SQLiteStore)
    assert bare.ttl == 86400
    assert open_store("memory://?ttl=0").ttl is None
    with pytest.raises(ValueError, match="unknown store URL scheme"):
        open_store("postgres://db")
    with pytest.raises(ValueError, match="ttl must be a number"):
        open_store("memory://?ttl=soon")
    with pytest.raises(StoreError):
        SQLiteStore(tmp_path).update("s", bump)  # a folder, not a database file


def test_redis_over_tls_with_a_password(secure_redis_url: str) -> None:
    store = open_store(secure_redis_url + "&ttl=60")
    guard = Guard(store=store, session="tls", on_store_error="closed")
    args = {"query": "refund policy"}
    actions = []
    for _ in range(3):
        v = guard.check("search_docs", args)
        actions.append(v.action)
        if v.allowed:
            guard.record("search_docs", args, "0 results")
    assert actions == ["allow", "allow", "advise"]
    assert store.ttl == 60
    wrong = open_store(secure_redis_url.replace("s3cret", "wrong"))
    with pytest.raises(StoreError) as err:
        wrong.load("tls")
    assert "wrong" not in str(err.value)  # the password never reaches a message or a log
    assert ":***@127.0.0.1" in str(err.value)
    store.close()
