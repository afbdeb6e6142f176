"""Observers: what a guard tells the outside world besides its logs (metrics, traces, alert callbacks).

An observer is any object with some of these methods (a subclass of :class:`Observer` documents them):

* ``on_check(session, tool, verdict, state)``: after every ``check``, whatever the verdict;
* ``on_verdict(session, tool, verdict, state)``: after every verdict that carries signals (from ``check``,
  ``end_turn``, ``feed_text`` or ``report_blocked``; ``tool`` is ``None`` outside ``check``);
* ``on_store_error(session, error)``: the store could not apply a change (``error`` is one line, no secret).

Observers are part of the configuration (``GuardConfig(observers=(...,))``, or ``Guard(observers=[...])``), so
every guard of a pool and every framework integration reports to them. An observer that raises is logged once
and never takes the guard down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from looptrap.core.state import SessionState
    from looptrap.core.types import Verdict

__all__ = ["Callbacks", "Observer", "notify_check", "notify_store_error", "notify_verdict"]

log = logging.getLogger("looptrap")
_FAILED: set[int] = set()  # observers whose failure was logged (once each)


class Observer:
    """Base class for observers: override the moments you need (every method does nothing here)."""

    def on_check(self, session: str, tool: str, verdict: Verdict, state: SessionState) -> None:
        """After every ``check`` (``state``: the session state as of this call)."""

    def on_verdict(self, session: str, tool: str | None, verdict: Verdict, state: SessionState) -> None:
        """After every verdict that carries signals (``warn`` included)."""

    def on_store_error(self, session: str, error: str) -> None:
        """The store could not apply a change."""


class Callbacks(Observer):
    """Plain functions as an observer: ``Callbacks(on_verdict=page_me)``; alert rules arrive here as signals of
    kind ``alert`` (``on_alert`` gets only those, one call per alert signal)."""

    def __init__(
        self,
        *,
        on_check: Callable[[str, str, Verdict, SessionState], Any] | None = None,
        on_verdict: Callable[[str, str | None, Verdict, SessionState], Any] | None = None,
        on_alert: Callable[[str, Any, SessionState], Any] | None = None,
        on_store_error: Callable[[str, str], Any] | None = None,
    ) -> None:
        self._check, self._verdict, self._alert, self._store = on_check, on_verdict, on_alert, on_store_error

    def on_check(self, session: str, tool: str, verdict: Verdict, state: SessionState) -> None:
        if self._check is not None:
            self._check(session, tool, verdict, state)

    def on_verdict(self, session: str, tool: str | None, verdict: Verdict, state: SessionState) -> None:
        if self._verdict is not None:
            self._verdict(session, tool, verdict, state)
        if self._alert is not None:
            for s in verdict.signals:
                if s.kind == "alert":
                    self._alert(session, s, state)

    def on_store_error(self, session: str, error: str) -> None:
        if self._store is not None:
            self._store(session, error)


def _call(observer: Any, method: str, *args: Any) -> None:
    fn = getattr(observer, method, None)
    if fn is None:
        return
    try:
        fn(*args)
    except Exception:  # an observer must never take the guard down (logged below)
        if id(observer) not in _FAILED:
            _FAILED.add(id(observer))
            log.exception("looptrap: observer %s failed in %s (logged once)", type(observer).__name__, method)


def notify_check(observers: Iterable[Any], session: str, tool: str, verdict: Verdict, state: SessionState) -> None:
    """Tell each observer about a checked call (and about its verdict, when it carries signals)."""
    for o in observers:
        _call(o, "on_check", session, tool, verdict, state)
        if verdict.signals:
            _call(o, "on_verdict", session, tool, verdict, state)


def notify_verdict(observers: Iterable[Any], session: str, verdict: Verdict, state: SessionState) -> None:
    """Tell each observer about a verdict outside ``check`` (a turn end, the model's text, a report)."""
    for o in observers:
        _call(o, "on_verdict", session, None, verdict, state)


def notify_store_error(observers: Iterable[Any], session: str, error: str) -> None:
    """Tell each observer that the store failed."""
    for o in observers:
        _call(o, "on_store_error", session, error)
