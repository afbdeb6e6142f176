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


# -- revisions never repeat for a session id ---------------------------------------------------------------
def mark(state: SessionState) -> int:
    state.turn = 7  # what other processes did after the reset
    state.calls += 1
    return state.calls


def test_a_snapshot_from_before_a_reset_is_never_written_back(store: Store) -> None:
    _, old = store.update("s1", bump)
    _, old = store.update("s1", bump, old)  # a long-lived process caches revision 2
    assert store.delete("s1")
    _, snap = store.update("s1", mark)  # other processes start the session afresh...
    _, snap = store.update("s1", mark, snap)  # ...and reach the same revision number
    assert snap.rev == old.rev
    result, _ = store.update("s1", bump, old)  # the stale cache must not win
    assert result == 3
    loaded = store.load("s1")
    assert loaded is not None
    assert (loaded.state.calls, loaded.state.turn) == (3, 7)


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_snapshot_from_before_an_expiry_is_never_written_back(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    s = make_store(kind, tmp_path, request, ttl=0.3)
    _, old = s.update("s1", bump)
    _, old = s.update("s1", bump, old)
    time.sleep(0.6)  # the session expires
    _, snap = s.update("s1", mark)
    _, snap = s.update("s1", mark, snap)
    result, _ = s.update("s1", bump, old)
    assert result == 3
    loaded = s.load("s1")
    assert loaded is not None
    assert loaded.state.turn == 7
    s.close()


def test_a_long_lived_guard_does_not_undo_a_reset(store: Store) -> None:
    args = {"query": "refund policy"}
    long_lived = Guard(store=store, session="conv", clock=None)
    for _ in range(2):
        assert long_lived.check("search_docs", args).action == "allow"
        long_lived.record("search_docs", args, "0 results")
    assert store.delete("conv")  # `looptrap sessions reset conv`
    for i in range(2):  # fresh hook processes after the reset
        g = Guard(store=store, session="conv", clock=None)
        assert g.check("read_file", {"path": f"f{i}"}).allowed
        Guard(store=store, session="conv", clock=None).record("read_file", {"path": f"f{i}"}, f"text {i}")
    assert long_lived.check("search_docs", args).action == "allow"  # the first since the reset
    snap = store.load("conv")
    assert snap is not None
    assert snap.state.per_tool == {"read_file": 2, "search_docs": 1}


# -- a state the guard cannot read fails open, counted, and says what to do --------------------------------
def spoil(kind: str, store: Store, session: str, how: str) -> None:
    """Leave an unreadable state behind: one of another format version, or a corrupt record."""

    def from_the_future(state: SessionState) -> None:
        state.version = 99

    store.update(session, from_the_future)
    if how == "future":
        return
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE looptrap_sessions SET state = ? WHERE session = ?", (b"{not json", session))
    elif kind == "redis":
        store._redis.set(f"looptrap:{{{session}}}:data", b"{not json")  # type: ignore[attr-defined]
    else:
        pytest.skip("a memory store's records cannot be corrupted from outside")


@pytest.mark.parametrize("how", ["future", "corrupt"])
@pytest.mark.parametrize("kind", BACKENDS)
def test_an_unreadable_state_never_raises_into_the_agent(
    kind: str, how: str, tmp_path: Path, request: pytest.FixtureRequest, caplog: Any
) -> None:
    store = make_store(kind, tmp_path, request)
    spoil(kind, store, "s1", how)
    guard = Guard(store=store, session="s1")
    with caplog.at_level(logging.WARNING, logger="looptrap"):
        assert guard.check("ls", {}).action == "allow"
        guard.record("ls", {}, "ok")
        assert guard.end_turn().action == "allow"
        assert guard.feed_text("a few words of the model").action == "allow"
        guard.user_message("and the user answers")
        guard.new_task()
        assert guard.report_blocked(["ls"], "access to the share").reason == "reported_blocked"
        assert guard.handle_report_blocked({"tried": ["ls"], "needed": "x"}).reason == "reported_blocked"
    assert guard.store_errors == 8
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "store" in r.getMessage()]
    assert warned
    assert ("store.delete('s1')" if kind == "memory" else "looptrap sessions reset s1 --store") in warned[0]
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    closed = Guard(store=store, session="s1", on_store_error="closed")
    assert closed.check("ls", {}).reason == "store_unavailable"
    closed.new_task()
    assert closed.store_errors == 2
    store.close()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_an_unreadable_state_never_raises_into_an_async_agent(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = make_store(kind, tmp_path, request)
    spoil(kind, store, "s1", "corrupt")
    url = f"sqlite:///{store.path}" if isinstance(store, SQLiteStore) else request.getfixturevalue("redis_url")

    async def run() -> int:
        astore = open_async_store(url)
        guard = AsyncGuard(store=astore, session="s1")
        assert (await guard.check("ls", {})).action == "allow"
        await guard.record("ls", {}, "ok")
        assert (await guard.end_turn()).action == "allow"
        assert (await guard.feed_text("a few words of the model")).action == "allow"
        await guard.user_message("and the user answers")
        await guard.new_task()
        assert (await guard.report_blocked(["ls"], "access")).reason == "reported_blocked"
        await astore.close()
        return guard.store_errors

    assert asyncio.run(run()) == 7
    store.close()


def test_a_session_id_over_the_limit_fails_open(store: Store) -> None:
    guard = Guard(store=store, session="x" * 600)
    guard.new_task()
    assert guard.check("ls", {}).action == "allow"
    guard.record("ls", {}, "ok")
    assert guard.report_blocked(["ls"], "a shorter id").reason == "reported_blocked"
    assert guard.store_errors == 4
    assert list(store.sessions()) == []
    closed = Guard(store=store, session="x" * 600, on_store_error="closed")
    assert closed.check("ls", {}).reason == "store_unavailable"


class _Broken(MemoryStore):
    def update(self, session: str, change: Any, cached: Any = None) -> Any:
        raise RuntimeError("the disk is on fire")


def test_any_failure_of_a_store_is_counted_as_a_store_error(caplog: Any) -> None:
    guard = Guard(store=_Broken(), session="s1")
    with caplog.at_level(logging.WARNING, logger="looptrap"):
        assert guard.check("ls", {}).action == "allow"
        guard.new_task()
    assert guard.store_errors == 2
    assert any("the disk is on fire" in r.getMessage() for r in caplog.records)
    assert Guard(store=_Broken(), session="s1", on_store_error="closed").check("ls", {}).reason == "store_unavailable"


# -- options are checked up front ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "query", ["ttl=-1", "ttl=nan", "ttl=inf", "ttl=", "ttl=soon", "bogus_option=1", "ttl=60&ttl=70"]
)
@pytest.mark.parametrize("kind", BACKENDS)
def test_bad_store_url_options_are_refused_up_front(kind: str, query: str, tmp_path: Path) -> None:
    base = {"memory": "memory://", "sqlite": f"sqlite:///{tmp_path}/db/x.db", "redis": "redis://127.0.0.1:1/0"}[kind]
    for opener in (open_store, open_async_store):
        with pytest.raises(ValueError, match="store URL") as err:
            opener(f"{base}?{query}")
        assert "\n" not in str(err.value)
    assert not (tmp_path / "db").exists()


def test_store_options_are_checked_when_a_store_is_made(tmp_path: Path) -> None:
    from looptrap.stores import RedisStore

    for bad in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="ttl"):
            SQLiteStore(tmp_path / "x.db", ttl=bad)
        with pytest.raises(ValueError, match="ttl"):
            MemoryStore(ttl=bad)
        with pytest.raises(ValueError, match="ttl"):
            RedisStore("redis://127.0.0.1:1/0", ttl=bad)
    with pytest.raises(ValueError, match="timeout"):
        SQLiteStore(tmp_path / "x.db", timeout=-1)
    with pytest.raises(ValueError, match="prefix"):
        RedisStore("redis://127.0.0.1:1/0", prefix="a*b")
    with pytest.raises(ValueError, match="bogus_option"):
        RedisStore("redis://127.0.0.1:1/0?bogus_option=1")
    assert not (tmp_path / "x.db").exists()
    assert open_store(f"sqlite:///{tmp_path}/y.db?ttl=0&timeout=0.5").ttl is None


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_tiny_ttl_still_expires(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    s = make_store(kind, tmp_path, request, ttl=0.0001)
    s.update("s1", bump)
    time.sleep(0.05)
    assert s.load("s1") is None
    s.close()


# -- what is stored stays small ------------------------------------------------------------------------------
def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def test_a_session_fed_huge_names_and_ids_stays_small(store: Store) -> None:
    huge = "x" * 100_000
    session = "s" * 512
    guard = Guard(store=store, session=session, clock=None, previews=True)
    for i in range(300):
        tool = f"{i}{huge}"
        args = {"id": f"{i}{huge}", "command": f"prog{i}{huge} --flag"}
        guard.check(tool, args)
        guard.record(tool, args, f"error {i}: {huge}", is_error=i % 2 == 0)
        guard.check("Bash", {"command": f"prog{i}{huge} --x"})
        guard.record("Bash", {"command": f"prog{i}{huge} --x"}, huge, is_error=True)
        if i % 10 == 0:
            guard.end_turn(f"state {i}{huge}", text=f"I will try again {i}. {huge}", error=huge)
            guard.feed_text(huge + "\n" + huge)
            guard.report_blocked([huge] * 50, huge)
            guard.new_task()
    assert guard.store_errors == 0
    from looptrap.stores.base import encode_state

    snap = store.load(session)
    assert snap is not None
    assert len(encode_state(snap.state)) < 100_000
    longest = max(len(s) for s in _strings(snap.state.to_dict()))
    assert longest <= 512
    assert [len(i.session) for i in store.sessions()] == [512]
    assert store.load(session + "y") is None


# -- passwords never reach a message -------------------------------------------------------------------------
def test_passwords_never_reach_a_message_or_a_log(secure_redis_url: str, caplog: Any) -> None:
    from looptrap.stores import RedisStore
    from looptrap.stores.redis import redact

    host = secure_redis_url.split("@", 1)[1]  # 127.0.0.1:PORT/0?ssl_ca_certs=...
    good = open_store(f"rediss://{host}&password=s3cret")  # the password as a query parameter
    assert good.load("none") is None
    seen = [repr(good), str(getattr(good, "url", ""))]
    good.close()
    secret = "Wr0ngPassw0rd"
    for url in (
        f"rediss://:{secret}@{host}",
        f"rediss://user:{secret}@{host}",
        f"rediss://{host}&password={secret}",
        f"rediss://{host}&PASSWORD={secret}",
    ):
        store = open_store(url)
        seen += [repr(store), redact(url)]
        with pytest.raises(StoreError) as err:
            store.load("s")
        seen.append(str(err.value))
        guard = Guard(store=store, session="s")
        with caplog.at_level(logging.DEBUG, logger="looptrap"):
            guard.check("ls", {})
        store.close()
    for url in (
        f"rediss://:{secret}@{host}&ttl=soon",
        f"rediss://:{secret}@{host}&bogus_option=1",
        f"rediss://{host}&password={secret}&ttl=-1",
        f"redis://:{secret}@127.0.0.1:1/zero",
        f"redis://:{secret}@127.0.0.1:port/0",
    ):
        with pytest.raises(ValueError, match="store URL") as verr:
            open_store(url)
        seen.append(str(verr.value))
    with pytest.raises(ValueError, match="store URL") as verr:
        RedisStore(f"redis://127.0.0.1:1/0?password={secret}&nope=1")
    seen.append(str(verr.value))
    seen += [r.getMessage() for r in caplog.records]
    seen += [redact("redis://:ab/cd?ef#gh@127.0.0.1/0"), redact("redis://:x?y=Wr0ngPassw0rd@host/0")]
    assert all(secret not in s and "s3cret" not in s for s in seen), [s for s in seen if secret in s]
    assert not any(part in s for s in seen[-2:] for part in ("ab/cd", "ef#gh"))


# -- what a persisted store keeps -------------------------------------------------------------------------
def _raw(kind: str, store: Store, tmp_path: Path) -> bytes:
    if isinstance(store, SQLiteStore):
        return b"".join(p.read_bytes() for p in Path(store.path).parent.iterdir() if p.is_file())
    if kind == "redis":
        r = store._redis  # type: ignore[attr-defined]
        values = [r.get(k) if r.type(k) == b"string" else b"".join(r.hgetall(k).values()) for k in r.keys("*")]
        return b"".join(v or b"" for v in values)
    return b"".join(data for _, data, *_ in store._data.values())  # type: ignore[attr-defined]


TOKEN = "sk-LEAKED-a1b2c3d4"


def _leaky_call(guard: Guard) -> None:
    args = {"command": f"curl -H 'Authorization: Bearer {TOKEN}' https://api.example.com"}
    guard.check("Bash", args)
    guard.record("Bash", args, f"401 Unauthorized: token {TOKEN} is invalid", is_error=True)


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_persisted_store_keeps_digests_not_arguments(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = make_store(kind, tmp_path, request)
    _leaky_call(Guard(store=store, session="s1"))
    snap = store.load("s1")
    assert snap is not None
    assert snap.state.previews == {}
    assert TOKEN.encode() not in _raw(kind, store, tmp_path)
    store.close()
    opted = make_store(kind, tmp_path, request)
    _leaky_call(Guard(store=opted, session="s2", previews=True))  # asked for: previews and excerpts kept
    raw = _raw(kind, opted, tmp_path)
    assert b"curl -H" in raw  # the preview is there, the token in it masked (docs/analyze.md#safety)
    assert TOKEN.encode() not in raw
    assert b"[redacted]" in raw
    opted.close()


def test_previews_can_be_asked_of_the_store_and_stay_in_memory_stores(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/p.db?previews=1")
    _leaky_call(Guard(store=store, session="s1"))
    snap = store.load("s1")
    assert snap is not None
    assert any("curl -H 'Authorization: Bearer [redacted]'" in p for p in snap.state.previews.values())
    assert not any(TOKEN in p for p in snap.state.previews.values())
    memory = MemoryStore()  # nothing leaves the process: previews as without a store
    _leaky_call(Guard(store=memory, session="s1"))
    snap = memory.load("s1")
    assert snap is not None
    assert snap.state.previews
    no = Guard(store=SQLiteStore(tmp_path / "q.db", previews=True), session="s1", previews=False)
    _leaky_call(no)
    assert no.state.previews == {}


def test_a_new_sqlite_store_is_private(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        store = SQLiteStore(tmp_path / "new" / "deeper" / "sessions.db")
        store.update("s1", bump)
        folder = tmp_path / "new" / "deeper"
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        files = list(folder.iterdir())
        assert {p.name for p in files} >= {"sessions.db", "sessions.db-wal", "sessions.db-shm"}
        assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: 0o600 for p in files}
        store.close()
    finally:
        os.umask(old)


def test_a_read_only_sqlite_store_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "x.db"
    store = SQLiteStore(path, create=False)
    assert store.load("s1") is None
    assert list(store.sessions()) == []
    assert store.delete("s1") is False
    store.close()
    assert not (tmp_path / "no").exists()
    assert open_store(f"sqlite:///{path}", create=False).load("s1") is None
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_an_unreadable_session_is_listed_as_such(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = make_store(kind, tmp_path, request)
    store.update("good", bump)
    spoil(kind, store, "bad", "corrupt")
    spoil(kind, store, "old", "future")
    infos = {i.session: i for i in store.sessions()}
    assert set(infos) == {"good", "bad", "old"}
    assert infos["good"].error is None
    assert infos["bad"].error
    assert "format version 99" in (infos["old"].error or "")
    store.close()


def test_a_state_over_the_size_limit_is_never_written(store: Store) -> None:
    from looptrap.stores.base import MAX_STATE_BYTES

    store.update("s1", bump)

    def bloat(state: SessionState) -> None:  # a custom detector that keeps too much
        state.slots["custom"] = "y" * MAX_STATE_BYTES

    with pytest.raises(StoreError, match="over the limit"):
        store.update("s1", bloat)
    snap = store.load("s1")
    assert snap is not None
    assert snap.state.calls == 1
    assert "custom" not in snap.state.slots


@pytest.mark.parametrize("kind", BACKENDS)
def test_threads_sharing_a_store_lose_no_update(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    import threading

    store = make_store(kind, tmp_path, request)

    def work(name: str) -> None:
        guard = Guard(store=store, session="hot", on_store_error="closed", clock=None)
        for i in range(100):
            args = {"path": f"{name}-{i}.py"}
            assert guard.check("read_file", args).allowed
            guard.record("read_file", args, f"contents {i}")

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    snap = store.load("hot")
    assert snap is not None
    assert (snap.state.calls, snap.rev) == (400, 800)
    store.close()


def test_a_crashed_writer_holds_a_redis_session_for_its_lease_only(redis_url: str) -> None:
    import redis

    store = open_store(redis_url)
    store.update("s1", bump)
    redis.Redis.from_url(redis_url).set("looptrap:{s1}:turn", "gone 0", px=300)  # its holder died
    started = time.monotonic()
    result, _ = store.update("s1", bump)
    assert result == 2
    assert time.monotonic() - started < 2
    store.close()


def test_a_redis_record_of_the_previous_layout_is_read_and_moved(redis_url: str) -> None:
    import redis

    from looptrap.stores.base import encode_state

    r = redis.Redis.from_url(redis_url)
    old = SessionState(run_id="s1")
    old.calls = 5
    r.hset("looptrap:{s1}:state", mapping={"rev": 7, "updated": time.time(), "state": encode_state(old)})
    store = open_store(redis_url)
    snap = store.load("s1")
    assert snap is not None
    assert (snap.rev, snap.state.calls) == (7, 5)
    assert [i.calls for i in store.sessions()] == [5]
    result, snap = store.update("s1", bump, snap)
    assert (result, snap.rev) == (6, 8)
    assert r.hget("looptrap:{s1}:state", "state") is None  # the state now lives in the data key
    loaded = store.load("s1")
    assert loaded is not None
    assert loaded.state.calls == 6
    store.close()


# -- listing without decoding, and loading many ---------------------------------------------------------
def test_a_listing_names_each_write_and_load_many_decodes_only_what_is_asked(store: Store) -> None:
    store.update("a", bump)
    store.update("b", bump)
    before = {x.session: x.token for x in store.listing()}
    assert set(before) == {"a", "b"}
    store.update("b", bump)
    after = {x.session: x.token for x in store.listing()}
    assert after["a"] == before["a"]
    assert after["b"] != before["b"]
    got = store.load_many(["b", "missing", "a", "b", "bad id\n"])
    assert [(x.listed.session, x.state.calls if x.state else None) for x in got] == [("b", 2), ("a", 1)]
    assert store.delete("a")
    assert [x.session for x in store.listing()] == ["b"]


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_load_many_gives_an_unreadable_state_as_an_error(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = make_store(kind, tmp_path, request)
    store.update("good", bump)
    spoil(kind, store, "bad", "corrupt")
    assert {x.session for x in store.listing()} == {"good", "bad"}
    got = {x.listed.session: x for x in store.load_many(["good", "bad"])}
    assert got["good"].state is not None
    assert got["good"].error is None
    assert got["bad"].state is None
    assert got["bad"].error
    store.close()


def test_a_store_of_your_own_lists_and_loads_through_its_own_api() -> None:
    class Mine(MemoryStore):
        listing = Store.listing  # the defaults, built on sessions() and load()
        load_many = Store.load_many

    store = Mine()
    store.update("a", bump)
    assert [(x.session, x.rev) for x in store.listing()] == [("a", 1)]
    assert [x.state.calls for x in store.load_many(["a", "zz"]) if x.state] == [1]


def test_a_reader_follows_a_replaced_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    writer = SQLiteStore(path)
    writer.update("old", bump)
    reader = SQLiteStore(path, create=False)  # as the CLI, the dashboard and /metrics open it
    assert [x.session for x in reader.listing()] == ["old"]
    writer.close()
    for leftover in tmp_path.glob("s.db*"):
        leftover.unlink()
    assert reader.listing() == []
    assert reader.load("old") is None
    assert not path.exists()
    fresh = SQLiteStore(path)
    fresh.update("new", bump)
    assert [x.session for x in reader.listing()] == ["new"]  # the file now at the path
    assert [x.listed.session for x in reader.load_many(["new", "old"])] == ["new"]
    fresh.update("new", bump)  # another connection's commit: listed anew
    assert [x.rev for x in reader.listing()] == [2]
    fresh.close()
    reader.close()


def test_a_read_only_sqlite_reader_never_writes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    writer = SQLiteStore(path)
    writer.update("a", bump)
    writer.close()
    data = path.read_bytes()
    reader = SQLiteStore(path, create=False)
    assert [x.session for x in reader.listing()] == ["a"]
    assert [x.state.calls for x in reader.load_many(["a"]) if x.state] == [1]
    reader.close()
    assert path.read_bytes() == data  # not a byte written (SQLite may leave an empty -wal beside it)
    wal = tmp_path / "s.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
