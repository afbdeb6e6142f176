"""GuardPool: one guard per session id, one shared engine, bounded when there is no store."""

from __future__ import annotations

import threading

from looptrap import GuardPool
from looptrap.stores import MemoryStore

ARGS = {"query": "refund policy"}


def loop(guard: object, n: int) -> list[str]:
    out = []
    for _ in range(n):
        v = guard.check("search_docs", ARGS)  # type: ignore[attr-defined]
        out.append(v.action)
        if v.allowed:
            guard.record("search_docs", ARGS, "0 results")  # type: ignore[attr-defined]
    return out


def test_sessions_are_kept_apart_and_share_one_engine() -> None:
    pool = GuardPool(guard_options={"clock": None})
    assert loop(pool.get("a"), 2) == ["allow", "allow"]
    assert loop(pool.get("b"), 2) == ["allow", "allow"]
    assert loop(pool("a"), 1) == ["advise"]
    assert pool.get("a").engine is pool.get("b").engine
    assert len(pool) == 2
    assert "a" in pool


def test_config_options_reach_every_guard() -> None:
    pool = GuardPool(report_tool=None)
    assert pool.get("x").config.report_tool is None


def test_least_recently_used_sessions_are_dropped_without_a_store() -> None:
    pool = GuardPool(max_sessions=2)
    a = pool.get("a")
    pool.get("b")
    pool.get("a")  # a is now the most recent
    pool.get("c")
    assert "b" not in pool
    assert pool.get("a") is a


def test_with_a_store_nothing_is_lost_when_a_guard_is_dropped() -> None:
    store = MemoryStore()
    pool = GuardPool(store=store, max_sessions=1)
    assert loop(pool.get("a"), 2) == ["allow", "allow"]
    pool.get("b")  # drops the guard of a
    assert "a" not in pool
    assert loop(pool.get("a"), 1) == ["advise"]  # its state was in the store
    pool.forget("a")
    assert store.load("a") is None


def test_threads_get_one_guard_per_session() -> None:
    pool = GuardPool()
    seen: list[object] = []

    def work() -> None:
        seen.append(pool.get("shared"))

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(g) for g in seen}) == 1
