"""The process's metrics observers for the configuration file's ``[metrics]`` table: one of each, however many
times the file is read (a metric registers once in the global Prometheus registry)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from looptrap.observe.metrics import PrometheusMetrics
    from looptrap.observe.otel import OTelMetrics

__all__ = ["otel", "prometheus"]

_lock = threading.Lock()
_prometheus: PrometheusMetrics | None = None
_otel: OTelMetrics | None = None


def prometheus(max_tools: int = 50) -> PrometheusMetrics:
    """The process's :class:`PrometheusMetrics` on the global registry (made on first use)."""
    global _prometheus
    with _lock:
        if _prometheus is None:
            from looptrap.observe.metrics import PrometheusMetrics

            _prometheus = PrometheusMetrics(max_tools=max_tools)
        return _prometheus


def otel(max_tools: int = 50) -> OTelMetrics:
    """The process's :class:`OTelMetrics` on the global providers (made on first use)."""
    global _otel
    with _lock:
        if _otel is None:
            from looptrap.observe.otel import OTelMetrics

            _otel = OTelMetrics(max_tools=max_tools)
        return _otel
