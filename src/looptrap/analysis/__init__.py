"""Offline analysis: read recorded traces and replay them through the guard."""

from looptrap.analysis.replay import Replayer, SessionReport, replay
from looptrap.analysis.trace import Event, TraceError, iter_events, parse_event

__all__ = ["Event", "Replayer", "SessionReport", "TraceError", "iter_events", "parse_event", "replay"]
