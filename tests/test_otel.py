"""OpenTelemetry: the SDK's in-memory metric reader and span exporter, fed by real guards."""

from __future__ import annotations

import importlib.util
from collections import Counter
from typing import Any

import pytest

from conftest import need
from looptrap import Guard
from looptrap.detectors import default_detectors
from looptrap.observe import default_alerts

need(
    "opentelemetry-sdk (pip install 'looptrap[otel]' opentelemetry-sdk)",
    importlib.util.find_spec("opentelemetry.sdk") is not None,
)

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from looptrap.observe.otel import OTelMetrics, execute_tool  # noqa: E402


@pytest.fixture(autouse=True)
def _sdk_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another suite's framework may have turned the SDK off for the process (``OTEL_SDK_DISABLED``)."""
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == "looptrap"
            for m in sm.metrics:
                out[m.name] = list(m.data.data_points)
    return out


def test_metrics_and_span_events_follow_the_genai_conventions() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    exporter = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    otel = OTelMetrics(meters)
    guard = Guard(session="s-1", detectors=(*default_detectors(), *default_alerts(calls=3)), observers=[otel])
    verdicts = []
    for _ in range(10):
        with execute_tool("search_docs", tracer_provider=tracers):
            v = guard.check("search_docs", {"query": "refund policy"})
            verdicts.append(v)
            if v.allowed:
                guard.record("search_docs", {"query": "refund policy"}, "no results")
        guard.end_turn()
        if v.action == "halt":
            break
    assert verdicts[-1].action == "halt"

    got = points(reader)
    (calls,) = got["looptrap.tool_calls"]
    assert calls.attributes == {"gen_ai.tool.name": "search_docs"}
    assert calls.value == len(verdicts)
    expected = Counter((s.kind, v.action if not s.warn_only else "warn") for v in verdicts for s in v.signals)
    seen = Counter(
        {
            (p.attributes["looptrap.signal.kind"], p.attributes["looptrap.action"]): p.value
            for p in got["looptrap.signals"]
        }
    )
    assert seen == expected
    (halts,) = got["looptrap.halts"]
    assert halts.attributes == {"looptrap.reason": verdicts[-1].reason}
    assert halts.value == 1
    (alerts,) = got["looptrap.alerts"]
    assert alerts.attributes == {"looptrap.alert": "calls_per_session"}
    assert alerts.value == 1
    (hist,) = got["looptrap.session.tool_calls"]
    assert hist.count == 1
    assert hist.sum == len(verdicts)
    (active,) = got["looptrap.sessions.active"]
    assert active.value == 0  # halted: ended

    spans = exporter.get_finished_spans()
    assert len(spans) == len(verdicts)
    for span, v in zip(spans, verdicts, strict=True):
        assert span.name == "execute_tool search_docs"
        assert span.attributes is not None
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "search_docs"
        events = [e for e in span.events if e.name == "looptrap.verdict"]
        if v.action == "allow":
            assert events == []
            assert "looptrap.action" not in span.attributes
            continue
        (event,) = events
        assert event.attributes is not None
        assert event.attributes["looptrap.action"] == v.action == span.attributes["looptrap.action"]
        assert event.attributes["looptrap.reason"] == v.reason
        assert event.attributes["gen_ai.tool.name"] == "search_docs"
        assert list(event.attributes["looptrap.signals"]) == [s.reason for s in v.signals]
    alerted = [
        e
        for span in spans
        for e in span.events
        if "calls_per_session" in (e.attributes or {}).get("looptrap.signals", ())
    ]
    assert len(alerted) == 1  # the alert rode along on its call's span
    meters.shutdown()
    tracers.shutdown()


def test_tools_listed_keep_made_up_names_out_of_the_tool_slots() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    metrics = OTelMetrics(meters, max_tools=3)
    guard = Guard(observers=[metrics])
    for tool in ("no_such_tool", "search"):
        guard.check(tool, {})
        guard.record(tool, {}, "ok")
    metrics.tools_listed(["search", "read_file", "write_file"])
    for tool in ("made_up_2", "made_up_3", "no_such_tool", "read_file", "write_file"):
        guard.check(tool, {"n": 1})
        guard.record(tool, {"n": 1}, "ok")
    by_tool = {p.attributes["gen_ai.tool.name"]: p.value for p in points(reader)["looptrap.tool_calls"]}
    # the made-up names took no slot from the real tools; the first one keeps what it counted before the list
    assert by_tool == {"no_such_tool": 1, "search": 1, "read_file": 1, "write_file": 1, "other": 3}
    meters.shutdown()


def test_no_span_no_error_and_tool_names_bounded() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    guard = Guard(observers=[OTelMetrics(meters, max_tools=2)])
    for i in range(6):  # no current span: metrics only
        guard.check(f"tool_{i}", {})
        guard.record(f"tool_{i}", {}, "ok")
    got = points(reader)
    by_tool = {p.attributes["gen_ai.tool.name"]: p.value for p in got["looptrap.tool_calls"]}
    assert by_tool == {"tool_0": 1, "tool_1": 1, "other": 4}
    (active,) = got["looptrap.sessions.active"]
    assert active.value == 1
    meters.shutdown()
