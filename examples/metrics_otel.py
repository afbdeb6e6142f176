"""OpenTelemetry metrics and span events of a guard (docs/metrics.md). Needs looptrap[otel] and opentelemetry-sdk;
in production the providers export over OTLP (to Langfuse, or any OTLP backend) instead of to memory."""

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from looptrap import Guard
from looptrap.observe.otel import OTelMetrics, execute_tool

reader, spans = InMemoryMetricReader(), InMemorySpanExporter()
meters = MeterProvider(metric_readers=[reader])
tracers = TracerProvider()
tracers.add_span_processor(SimpleSpanProcessor(spans))
guard = Guard(observers=[OTelMetrics(meters)])

for _ in range(4):
    with execute_tool("search_docs", tracer_provider=tracers):  # a framework usually opens this span
        verdict = guard.check("search_docs", {"query": "refund policy"})
        if verdict.allowed:
            guard.record("search_docs", {"query": "refund policy"}, "0 results")
    guard.end_turn()

for span in spans.get_finished_spans():
    for event in span.events:
        attrs = event.attributes or {}
        print(span.name, event.name, attrs["looptrap.action"], attrs["looptrap.reason"])
data = reader.get_metrics_data()
for metric in data.resource_metrics[0].scope_metrics[0].metrics:  # type: ignore[union-attr]
    print(metric.name, [p.value for p in metric.data.data_points if hasattr(p, "value")])
