"""Prometheus metrics: a real prometheus-client registry, served over HTTP and scraped, fed by real guards over
real stores (SQLite, and a real redis-server that goes away)."""

from __future__ import annotations

import importlib.util
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import RedisServer, need
from looptrap import Guard
from looptrap.detectors import default_detectors
from looptrap.observe import Callbacks, default_alerts

need(
    "prometheus-client (pip install 'looptrap[prometheus]')", importlib.util.find_spec("prometheus_client") is not None
)

from prometheus_client import CollectorRegistry  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from looptrap.observe.metrics import PrometheusMetrics, StoreCollector, serve  # noqa: E402


def scrape(registry: CollectorRegistry) -> tuple[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """``/metrics`` served over HTTP on loopback and read back: the text, and every sample by name and labels."""
    server, thread = serve(registry, port=0)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            assert r.status == 200
            text = r.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, samples


def drive(guard: Guard, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    verdicts = []
    for tool, args in calls:
        v = guard.check(tool, args)
        verdicts.append((tool, v))
        if v.action == "halt":
            break
        if v.allowed:
            guard.record(tool, args, "no results")
        guard.end_turn()  # one call per model turn: the ladder climbs while the loop goes on
    return verdicts


def test_counters_scraped_over_http_match_what_the_guards_did() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(registry, max_tools=3)
    secret_session = "customer-4242-session"
    looping = Guard(session=secret_session, observers=[metrics])
    looped = drive(looping, [("search_docs", {"query": "refund policy"})] * 12)
    healthy = Guard(session="healthy-run", observers=[metrics])
    calls = [(f"tool_{i % 5}", {"n": i}) for i in range(10)]  # 5 tools: 3 kept as labels, 2 under "other"
    healthy_verdicts = drive(healthy, calls)

    text, samples = scrape(registry)
    # tool calls per tool: the first 3 tool names seen keep their label, the rest are counted as "other"
    per_tool = Counter(t for t, _ in looped + healthy_verdicts)
    kept = ["search_docs", "tool_0", "tool_1"]
    for tool in kept:
        assert samples[("looptrap_tool_calls_total", (("tool", tool),))] == per_tool[tool]
    other = sum(n for t, n in per_tool.items() if t not in kept)
    assert other > 0
    assert samples[("looptrap_tool_calls_total", (("tool", "other"),))] == other
    # signals per kind/tool/action, halts per reason: as the verdicts said
    expected = Counter((s.kind, t, v.action) for t, v in looped if v.signals for s in v.signals)
    assert expected
    for (kind, tool, action), n in expected.items():
        key = ("looptrap_signals_total", (("action", action), ("kind", kind), ("tool", tool)))
        assert samples[key] == n
    halt = looped[-1][1]
    assert halt.action == "halt"
    assert samples[("looptrap_halts_total", (("reason", halt.reason),))] == 1
    # the halted session ended: its calls are in the histogram; the healthy one is still active
    assert samples[("looptrap_session_tool_calls_count", ())] == 1
    assert samples[("looptrap_session_tool_calls_sum", ())] == len(looped)
    assert samples[("looptrap_active_sessions", ())] == 1
    assert samples[("looptrap_top_session_tool_calls", (("rank", "1"),))] == len(calls)
    assert secret_session not in text
    assert "refund" not in text


def test_idle_sessions_end_and_alerts_count() -> None:
    now = [1000.0]
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(registry, idle_seconds=60, clock=lambda: now[0])
    alerts: list[str] = []
    config = dict(
        detectors=(*default_detectors(), *default_alerts(calls=5)),
        observers=[metrics, Callbacks(on_alert=lambda session, signal, state: alerts.append(signal.reason))],
    )
    guard = Guard(session="busy", **config)  # type: ignore[arg-type]
    for i in range(8):
        guard.check("read_file", {"path": f"f{i}.py"})
        guard.record("read_file", {"path": f"f{i}.py"}, f"content {i}")
    assert alerts == ["calls_per_session"]
    _, samples = scrape(registry)
    assert samples[("looptrap_alerts_total", (("alert", "calls_per_session"),))] == 1
    assert samples[("looptrap_signals_total", (("action", "warn"), ("kind", "alert"), ("tool", "read_file")))] == 1
    assert samples[("looptrap_active_sessions", ())] == 1
    now[0] += 61  # no call for longer than idle_seconds: the session has ended
    _, samples = scrape(registry)
    assert samples[("looptrap_active_sessions", ())] == 0
    assert samples[("looptrap_session_tool_calls_count", ())] == 1
    assert samples[("looptrap_session_tool_calls_bucket", (("le", "10.0"),))] == 1
    assert samples[("looptrap_session_tool_calls_bucket", (("le", "5.0"),))] == 0


def test_store_errors_from_a_redis_that_went_away(redis_server: RedisServer, redis_url: str) -> None:
    from looptrap.stores import open_store

    registry = CollectorRegistry()
    metrics = PrometheusMetrics(registry)
    errors: list[str] = []
    store = open_store(redis_url + "?socket_timeout=0.5&socket_connect_timeout=0.5")
    try:
        guard = Guard(
            store=store, session="s", observers=[metrics, Callbacks(on_store_error=lambda s, e: errors.append(e))]
        )
        assert guard.check("search", {"q": 1}).action == "allow"
        redis_server.stop()
        for _ in range(3):
            assert guard.check("search", {"q": 1}).action == "allow"  # fail-open, counted
    finally:
        store.close()
        redis_server.start()
    _, samples = scrape(registry)
    assert samples[("looptrap_store_errors_total", ())] == guard.store_errors == 3 == len(errors)
    assert all("\n" not in e for e in errors)


def test_a_failing_observer_never_takes_the_guard_down(caplog: pytest.LogCaptureFixture) -> None:
    def boom(*args: object) -> None:
        raise RuntimeError("observer bug")

    guard = Guard(observers=[Callbacks(on_check=boom)])
    for _ in range(3):
        assert guard.check("search", {"q": 1}).action in ("allow", "advise")
    assert sum("observer Callbacks failed" in r.getMessage() for r in caplog.records) == 1


def test_store_collector_over_a_real_sqlite_store(tmp_path: Path) -> None:
    from looptrap.stores import SQLiteStore

    store = SQLiteStore(tmp_path / "s.db")
    try:
        halted = Guard(store=store, session="runaway")
        drive(halted, [("search_docs", {"query": "x"})] * 12)
        assert halted.halted is not None
        busy = Guard(store=store, session="busy")
        drive(busy, [("read_file", {"path": f"{i}"}) for i in range(7)])
        quiet = Guard(store=store, session="quiet")
        drive(quiet, [("read_file", {"path": f"{i}"}) for i in range(2)])
        registry = CollectorRegistry()
        registry.register(StoreCollector(store))
        text, samples = scrape(registry)
    finally:
        store.close()
    assert samples[("looptrap_store_up", ())] == 1
    assert samples[("looptrap_store_sessions", ())] == 3
    assert samples[("looptrap_halted_sessions", ())] == 1
    assert samples[("looptrap_active_sessions", ())] == 2
    assert samples[("looptrap_top_session_tool_calls", (("rank", "1"),))] == busy.state.calls == 7
    assert samples[("looptrap_top_session_tool_calls", (("rank", "2"),))] == quiet.state.calls == 2
    assert "runaway" not in text
    assert "busy" not in text


def test_tools_listed_take_back_the_slots_of_made_up_names() -> None:
    """Names that took label slots before the list of the tools that exist came lose them (what they counted
    goes to ``other``: the totals stay right); later made-up names are ``other`` at once."""
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(registry, max_tools=3)
    guard = Guard(session="s", observers=[metrics])
    made_up = drive(guard, [("no_such_tool", {"q": 1})] * 4)  # the same call again: signals with the tool label
    drive(guard, [("made_up_2", {"q": 2}), ("search", {"q": 3})])
    _, before = scrape(registry)
    assert before[("looptrap_tool_calls_total", (("tool", "no_such_tool"),))] == 4
    signalled = sum(len(v.signals) for _, v in made_up)
    assert signalled > 0
    metrics.tools_listed(["search", "read_file", "write_file"])
    drive(Guard(session="t", observers=[metrics]), [("read_file", {"p": i}) for i in range(2)] + [("junk", {})])
    text, samples = scrape(registry)
    calls = {dict(k[1])["tool"]: n for k, n in samples.items() if k[0] == "looptrap_tool_calls_total"}
    assert calls == {"search": 1, "read_file": 2, "other": 4 + 1 + 1}
    tools = {dict(k[1])["tool"] for k in samples if k[0] == "looptrap_signals_total"}
    assert "no_such_tool" not in tools
    assert sum(n for k, n in samples.items() if k[0] == "looptrap_signals_total") == signalled
    assert "no_such_tool" not in text
    assert "made_up_2" not in text


def test_store_collector_reads_a_replaced_sqlite_file(tmp_path: Path) -> None:
    import os

    from looptrap.stores import SQLiteStore

    path = tmp_path / "s.db"
    writer = SQLiteStore(path)
    drive(Guard(store=writer, session="old"), [("read_file", {"path": "a"})])
    writer.close()
    store = SQLiteStore(path, create=False)
    registry = CollectorRegistry()
    registry.register(StoreCollector(store))
    try:
        assert scrape(registry)[1][("looptrap_store_sessions", ())] == 1
        other = tmp_path / "new.db"
        writer = SQLiteStore(other)
        for name in ("a", "b", "c"):
            drive(Guard(store=writer, session=name), [("read_file", {"path": "a"})])
        writer.close()
        os.replace(other, path)
        assert scrape(registry)[1][("looptrap_store_sessions", ())] == 3
    finally:
        store.close()
