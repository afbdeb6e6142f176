"""Seeing loops from outside: observers (callbacks), Prometheus and OpenTelemetry metrics, alert rules.

Everything heavy is imported by the module that needs it: ``looptrap.observe.metrics`` needs
``prometheus-client`` (``pip install "looptrap[prometheus]"``), ``looptrap.observe.otel`` needs
``opentelemetry-api`` (``pip install "looptrap[otel]"``); this package and ``looptrap.observe.alerts`` need
nothing.
"""

from looptrap.observe.alerts import CallsPerSession, NothingNew, Overtime, RepeatShare, default_alerts
from looptrap.observe.base import Callbacks, Observer

__all__ = [
    "Callbacks",
    "CallsPerSession",
    "NothingNew",
    "Observer",
    "Overtime",
    "RepeatShare",
    "default_alerts",
]
