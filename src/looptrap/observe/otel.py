"""OpenTelemetry (``pip install "looptrap[otel]"``): the Prometheus instruments as OTel metrics, and verdicts on spans.

``Guard(observers=[OTelMetrics()])`` (or ``[metrics] otel = true``) uses the global meter and tracer providers
(or the ones given). Metrics: ``looptrap.tool_calls``, ``looptrap.signals``, ``looptrap.halts``,
``looptrap.alerts``, ``looptrap.store_errors`` (counters), ``looptrap.session.tool_calls`` (a histogram, when a
session ends), ``looptrap.sessions.active`` (a gauge). Tracing: every verdict that is not ``allow`` adds a
``looptrap.verdict`` event, and ``looptrap.*`` attributes, to the current span, following the GenAI semantic
conventions for tool execution (``gen_ai.operation.name = "execute_tool"``, ``gen_ai.tool.name``). Frameworks that
open ``execute_tool`` spans (the OpenAI Agents SDK, LangChain through OpenInference or OpenLLMetry, Pydantic AI
through Logfire) then show loops in any OTLP backend; :func:`execute_tool` opens such a span where none is.
Labels are bounded as in :mod:`looptrap.observe.metrics`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from looptrap.observe.base import Observer
from looptrap.observe.metrics import CALL_BUCKETS, LabelCap, _Sessions

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
    from opentelemetry.trace import Span, TracerProvider

    from looptrap.core.state import SessionState
    from looptrap.core.types import Verdict

__all__ = ["OTelMetrics", "execute_tool"]

TOOL = "gen_ai.tool.name"
OPERATION = "gen_ai.operation.name"
EVENT = "looptrap.verdict"


def _version() -> str:
    from looptrap import __version__

    return __version__


class OTelMetrics(Observer):
    """An observer that records OpenTelemetry metrics and span events (see the module's documentation).

    ``meter_provider`` / ``tracer_provider``: default the global ones; ``spans=False``: metrics only;
    ``max_tools``: distinct tool names kept as attribute values (the rest are ``other``); ``idle_seconds``: a
    session without a call for this long has ended.
    """

    def __init__(
        self,
        meter_provider: MeterProvider | None = None,
        *,
        spans: bool = True,
        max_tools: int = 50,
        idle_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from opentelemetry import metrics

        meter = metrics.get_meter("looptrap", _version(), meter_provider=meter_provider)
        self.spans = spans
        self._tool = LabelCap(max_tools)
        self._kind = LabelCap(64)
        self._reason = LabelCap(64)
        self.tool_calls = meter.create_counter("looptrap.tool_calls", "{call}", "Tool calls checked, per tool.")
        self.signals = meter.create_counter(
            "looptrap.signals", "{signal}", "Signals raised, per kind, tool and action."
        )
        self.halts = meter.create_counter("looptrap.halts", "{run}", "Runs halted, per reason.")
        self.alerts = meter.create_counter("looptrap.alerts", "{alert}", "Alert rules fired, per rule.")
        self.store_errors = meter.create_counter(
            "looptrap.store_errors", "{error}", "Changes the session store could not apply."
        )
        self.calls_per_session = meter.create_histogram(
            "looptrap.session.tool_calls",
            "{call}",
            "Tool calls per session, recorded when the session ends (halted, or idle).",
            explicit_bucket_boundaries_advisory=list(CALL_BUCKETS),
        )
        self._sessions = _Sessions(idle_seconds, clock, self._ended)
        meter.create_observable_gauge(
            "looptrap.sessions.active", [self._active], "{session}", "Sessions with a recent tool call."
        )

    def _ended(self, calls: int) -> None:
        self.calls_per_session.record(calls)

    def _active(self, options: CallbackOptions) -> Iterable[Observation]:
        from opentelemetry.metrics import Observation

        return [Observation(len(self._sessions.active()))]

    def on_check(self, session: str, tool: str, verdict: Verdict, state: SessionState) -> None:
        self.tool_calls.add(1, {TOOL: self._tool(tool)})
        if verdict.action == "halt" and not verdict.signals:
            return
        self._sessions.call(session, state.calls)

    def on_verdict(self, session: str, tool: str | None, verdict: Verdict, state: SessionState) -> None:
        t = self._tool(tool) if tool is not None else "none"
        for s in verdict.signals:
            action = "warn" if s.warn_only or verdict.action == "allow" else verdict.action
            tool_of = self._tool(s.tool) if s.tool else t
            self.signals.add(1, {"looptrap.signal.kind": self._kind(s.kind), TOOL: tool_of, "looptrap.action": action})
            if s.kind == "alert":
                self.alerts.add(1, {"looptrap.alert": self._reason(s.reason)})
        if verdict.action == "halt":
            self.halts.add(1, {"looptrap.reason": self._reason(verdict.reason)})
            self._sessions.end(session)
        if self.spans and verdict.action != "allow":
            _on_span(tool, verdict)

    def tools_listed(self, names: Iterable[str]) -> None:
        """The tools that exist (an MCP server's ``tools/list``; called again, the lists add up): from now on
        only these have a tool name of their own; a name that took one of the ``max_tools`` slots without
        being listed is counted as ``other`` from now on. (What was exported under it stays: an OpenTelemetry
        counter cannot take back what it counted.)"""
        self._tool.only(names)

    def on_store_error(self, session: str, error: str) -> None:
        self.store_errors.add(1)


def _on_span(tool: str | None, verdict: Verdict) -> None:
    from opentelemetry import trace

    span = trace.get_current_span()
    if not span.is_recording():
        return
    attrs: dict[str, Any] = {
        "looptrap.action": verdict.action,
        "looptrap.kind": verdict.kind or "",
        "looptrap.reason": verdict.reason or "",
        "looptrap.call_index": verdict.call_index,
        "looptrap.signals": [s.reason for s in verdict.signals],
    }
    if tool is not None:
        attrs[TOOL] = tool
    span.add_event(EVENT, attrs)
    span.set_attributes({k: v for k, v in attrs.items() if k != "looptrap.signals"})


@contextmanager
def execute_tool(
    tool: str, *, tracer_provider: TracerProvider | None = None, attributes: dict[str, Any] | None = None
) -> Iterator[Span]:
    """A GenAI ``execute_tool`` span around a tool call, for code that no framework instruments: the guard's
    verdicts inside it land on it. ``with execute_tool("search_docs"): guard.check(...)``."""
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    tracer = trace.get_tracer("looptrap", _version(), tracer_provider=tracer_provider)
    attrs: dict[str, Any] = {OPERATION: "execute_tool", TOOL: tool, **(attributes or {})}
    with tracer.start_as_current_span(f"execute_tool {tool}", kind=SpanKind.INTERNAL, attributes=attrs) as span:
        yield span
