"""Prometheus metrics (``pip install "looptrap[prometheus]"``): an observer for guards, and a collector over a store.

``Guard(observers=[PrometheusMetrics()])`` (or ``[metrics] prometheus = true`` in the configuration file) counts,
in this process: tool calls per tool, signals per kind, tool and action, halts per reason, alerts per rule,
store errors; a histogram of tool calls per session (observed when a session ends: it halts, or makes no call
for ``idle_seconds``); the active sessions, and the tool calls of the busiest ones by rank. :func:`serve` (or
``looptrap metrics serve``) exposes ``/metrics`` on loopback, answering only requests addressed to it
(see :mod:`looptrap.observe.serving`: host check, backlog, read deadline, bounded threads).

Label values are bounded: no session id, argument or free text is ever a label; tool names (and kinds,
reasons) beyond the first ``max_tools`` seen go under ``other``. Once told which tools exist
(:meth:`PrometheusMetrics.tools_listed`: the MCP proxy passes on the upstream server's ``tools/list``), only
those get a label of their own: made-up names cannot take the slots. The busiest sessions are labelled by
rank (``rank="1"`` ...), not by id: ``looptrap dashboard`` names them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from looptrap.core.printable import one_line
from looptrap.observe.base import Observer

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric

    from looptrap.core.state import SessionState
    from looptrap.core.types import Verdict
    from looptrap.stores.base import Listed, Store

__all__ = ["CALL_BUCKETS", "LabelCap", "PrometheusMetrics", "StoreCollector", "serve"]

#: Buckets of the calls-per-session histogram (the practitioners' alert is at 50).
CALL_BUCKETS = (5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0, 500.0, 1000.0)
OTHER = "other"
_LABEL_CHARS = 64
_SESSIONS = 10_000  # sessions followed at once for the per-session figures (the oldest is let go)
_LISTED = 10_000  # names a list of known values keeps at most


class LabelCap:
    """Bounded label values: the first ``limit`` distinct values as they are (one line, at most 64
    characters), every later one as ``other``. After :meth:`only`, a value not in the lists given has no
    label of its own (``other``), so values nobody listed cannot keep or take the slots."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the label limit must be at least 1, got {limit}")
        self.limit = limit
        self._known: dict[str, str] = {}
        self._listed: set[str] | None = None  # None: every value may take a slot
        self._lock = threading.Lock()

    def only(self, values: Iterable[str]) -> set[str]:
        """From now on, only values given here (in this call or an earlier one, at most 10,000 in all) have
        a slot: the ones that took a slot without being listed lose it. Returns the labels lost."""
        with self._lock:
            listed = self._listed if self._listed is not None else set()
            for v in values:
                if len(listed) >= _LISTED:
                    break
                if isinstance(v, str) and v:
                    listed.add(v)
            self._listed = listed
            lost = {self._known.pop(v) for v in [v for v in self._known if v not in listed]}
            return lost - set(self._known.values())

    def __call__(self, value: str | None) -> str:
        v = value or "none"
        got = self._known.get(v)
        if got is not None:
            return got
        with self._lock:
            if len(self._known) >= self.limit or (self._listed is not None and v not in self._listed):
                return OTHER
            got = self._known[v] = one_line(v, _LABEL_CHARS) or "none"
            return got


class _Sessions:
    """Calls per session in this process, for the histogram, the active count and the top ranks."""

    def __init__(self, idle: float, clock: Callable[[], float], ended: Callable[[int], None]) -> None:
        self.idle, self.clock, self.ended = idle, clock, ended
        self.calls: dict[str, list[float]] = {}  # session -> [calls, last call], oldest call first
        self.lock = threading.Lock()

    def call(self, session: str, calls: int) -> None:
        now = self.clock()
        with self.lock:
            got = self.calls.pop(session, None)
            if got is None and len(self.calls) >= _SESSIONS:
                self.ended(int(self.calls.pop(next(iter(self.calls)))[0]))
            self.calls[session] = [float(calls), now]  # re-inserted at the end: the dict stays in call order

    def end(self, session: str) -> None:
        with self.lock:
            got = self.calls.pop(session, None)
        if got is not None:
            self.ended(int(got[0]))

    def active(self) -> list[float]:
        """The call counts of the active sessions (idle ones are ended here)."""
        cutoff = self.clock() - self.idle
        with self.lock:
            while self.calls:
                first = next(iter(self.calls))
                if self.calls[first][1] >= cutoff:
                    break
                self.ended(int(self.calls.pop(first)[0]))
            return [c for c, _ in self.calls.values()]


def _top_family(namespace: str, counts: list[float], top: int) -> Metric:
    from prometheus_client.core import GaugeMetricFamily

    fam = GaugeMetricFamily(
        f"{namespace}_top_session_tool_calls",
        "Tool calls of the busiest active sessions, by rank (1: the busiest; the dashboard names them).",
        labels=["rank"],
    )
    for rank, n in enumerate(sorted(counts, reverse=True)[:top], 1):
        fam.add_metric([str(rank)], n)
    return fam


class PrometheusMetrics(Observer):
    """An observer that keeps Prometheus metrics of every guard it is given to.

    ``registry``: where the metrics are registered (default: ``prometheus_client.REGISTRY``, which
    ``start_http_server`` serves); ``namespace``: the metric name prefix; ``max_tools``: distinct tool names
    kept as labels (the rest are ``other``); ``idle_seconds``: a session without a call for this long has
    ended; ``top``: how many of the busiest sessions are exported by rank.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        namespace: str = "looptrap",
        max_tools: int = 50,
        idle_seconds: float = 300.0,
        top: int = 10,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from prometheus_client import REGISTRY, Counter, Histogram

        self.registry = registry if registry is not None else REGISTRY
        self.namespace = namespace
        self.top = top
        self._tool = LabelCap(max_tools)
        self._kind = LabelCap(64)
        self._reason = LabelCap(64)
        # what each series with a tool label counted, so that a tool label lost to a list of the tools that
        # exist (tools_listed) can be folded into "other"; bounded as the labels are
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, ...], float] = {}
        self._signals: dict[tuple[str, ...], float] = {}
        r = self.registry
        self.tool_calls = Counter(f"{namespace}_tool_calls", "Tool calls checked, per tool.", ["tool"], registry=r)
        self.signals = Counter(
            f"{namespace}_signals", "Signals raised, per kind, tool and action.", ["kind", "tool", "action"], registry=r
        )
        self.halts = Counter(f"{namespace}_halts", "Runs halted, per reason.", ["reason"], registry=r)
        self.alerts = Counter(f"{namespace}_alerts", "Alert rules fired, per rule.", ["alert"], registry=r)
        self.store_errors = Counter(
            f"{namespace}_store_errors", "Changes the session store could not apply.", registry=r
        )
        self.calls_per_session = Histogram(
            f"{namespace}_session_tool_calls",
            "Tool calls per session, observed when the session ends (halted, or idle).",
            buckets=CALL_BUCKETS,
            registry=None,
        )
        self._sessions = _Sessions(idle_seconds, clock, self.calls_per_session.observe)
        # Scraped in order of registration: the live figures first, so that the sessions they find idle
        # are in the histogram of the same scrape.
        r.register(_LiveCollector(self))
        r.register(self.calls_per_session)

    def on_check(self, session: str, tool: str, verdict: Verdict, state: SessionState) -> None:
        with self._lock:
            _count(self.tool_calls, self._calls, (self._tool(tool),))
        if verdict.action == "halt" and not verdict.signals:
            return  # a halted session's later calls: it has ended
        self._sessions.call(session, state.calls)

    def on_verdict(self, session: str, tool: str | None, verdict: Verdict, state: SessionState) -> None:
        for s in verdict.signals:
            action = "warn" if s.warn_only or verdict.action == "allow" else verdict.action
            named = s.tool or tool
            with self._lock:
                labels = (self._kind(s.kind), self._tool(named) if named is not None else "none", action)
                _count(self.signals, self._signals, labels)
            if s.kind == "alert":
                self.alerts.labels(self._reason(s.reason)).inc()
        if verdict.action == "halt":
            self.halts.labels(self._reason(verdict.reason)).inc()
            self._sessions.end(session)

    def on_store_error(self, session: str, error: str) -> None:
        self.store_errors.inc()

    def tools_listed(self, names: Iterable[str]) -> None:
        """The tools that exist (an MCP server's ``tools/list``; called again, the lists add up): from now on
        only these have a ``tool`` label of their own. A name that took one of the ``max_tools`` slots before
        without being listed loses it: its series are removed and what they counted is added to ``other``
        (the totals stay right); every later name not listed is counted as ``other``."""
        with self._lock:
            lost = self._tool.only(names)
            if lost:
                _fold(self.tool_calls, self._calls, 0, lost)
                _fold(self.signals, self._signals, 1, lost)

    def active_sessions(self) -> list[float]:
        """The call counts of the sessions active now."""
        return self._sessions.active()


def _count(counter: Any, counts: dict[tuple[str, ...], float], labels: tuple[str, ...]) -> None:
    counter.labels(*labels).inc()
    counts[labels] = counts.get(labels, 0.0) + 1


def _fold(counter: Any, counts: dict[tuple[str, ...], float], at: int, lost: set[str]) -> None:
    """The series whose label ``at`` is one of ``lost``, removed and added to the same series with ``other``."""
    for labels in [k for k in counts if k[at] in lost]:
        n = counts.pop(labels)
        counter.remove(*labels)
        other = (*labels[:at], OTHER, *labels[at + 1 :])
        counter.labels(*other).inc(n)
        counts[other] = counts.get(other, 0.0) + n


class _LiveCollector:
    """The figures computed when scraped: active sessions and the busiest ones by rank."""

    def __init__(self, metrics: PrometheusMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # computed at scrape time: nothing to check against other collectors' names up front

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        m = self.metrics
        counts = m.active_sessions()
        yield GaugeMetricFamily(
            f"{m.namespace}_active_sessions", "Sessions with a recent tool call.", value=len(counts)
        )
        yield _top_family(m.namespace, counts, m.top)


class _Figures(NamedTuple):
    """What the collector keeps of a session's state, as of the write ``token`` names."""

    token: tuple[int, str, float | None]
    calls: int
    halted: bool
    readable: bool


class StoreCollector:
    """Metrics read from a store when scraped (for ``looptrap metrics serve --store URL``: hooks and proxies
    are other processes): sessions in the store, active ones (written within ``active_seconds``), halted
    ones, and the tool calls of the busiest active sessions by rank. A scrape lists the sessions
    (:meth:`Store.listing <looptrap.stores.base.Store.listing>`) and decodes only the states written since the
    last one."""

    def __init__(
        self,
        store: Store,
        *,
        namespace: str = "looptrap",
        active_seconds: float = 300.0,
        top: int = 10,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.namespace, self.active_seconds, self.top, self.clock = (
            store,
            namespace,
            active_seconds,
            top,
            clock,
        )
        self._lock = threading.Lock()
        self._known: dict[str, _Figures] = {}  # the figures of each session as of its last write read
        self.scrape_errors = 0

    def describe(self) -> list[Metric]:
        return []

    def _read(self) -> list[tuple[Listed, _Figures]]:
        """Every stored session with its figures, decoding only the states written since the last read."""
        listing = self.store.listing()
        known = self._known
        changed = {x.session: x for x in listing if (k := known.get(x.session)) is None or k.token != x.token}
        for got in self.store.load_many(list(changed)):
            s, token = got.state, changed[got.listed.session].token
            figures = _Figures(token, s.calls, bool(s.halted), True) if s else _Figures(token, 0, False, False)
            known[got.listed.session] = figures
        self._known = {x.session: known[x.session] for x in listing if x.session in known}
        return [(x, self._known[x.session]) for x in listing if x.session in self._known]

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        ns = self.namespace
        with self._lock:  # one store read at a time (a store connection is not shared between threads)
            try:
                sessions = self._read()
                ok = True
            except Exception:  # noqa: BLE001 - an unreachable store is a figure, not a crashed endpoint
                self.scrape_errors += 1
                sessions, ok = [], False
        yield GaugeMetricFamily(f"{ns}_store_up", "1 if the store could be read at this scrape.", value=int(ok))
        yield CounterMetricFamily(
            f"{ns}_store_scrape_errors", "Scrapes that could not read the store.", value=self.scrape_errors
        )
        cutoff = self.clock() - self.active_seconds
        active = [
            float(f.calls) for x, f in sessions if f.readable and x.updated and x.updated >= cutoff and not f.halted
        ]
        yield GaugeMetricFamily(f"{ns}_store_sessions", "Sessions the store holds.", value=len(sessions))
        yield GaugeMetricFamily(f"{ns}_active_sessions", "Sessions with a recent tool call.", value=len(active))
        yield GaugeMetricFamily(
            f"{ns}_halted_sessions", "Halted sessions the store holds.", value=sum(1 for _, f in sessions if f.halted)
        )
        yield _top_family(ns, active, self.top)


def serve(
    registry: CollectorRegistry | None = None, *, host: str = "127.0.0.1", port: int = 9464
) -> tuple[Any, threading.Thread]:
    """Serve ``/metrics`` of ``registry`` (default: the global one) in a daemon thread, on loopback by default;
    returns the server (``server.server_address`` has the port when ``port=0``; ``server.shutdown()`` stops
    it) and its thread. The server answers only requests addressed to it (``Host``: a loopback name or
    address, or ``host``, with its port; 421 otherwise), reads each request within 10 seconds and runs at
    most 64 connection threads (:mod:`looptrap.observe.serving`)."""
    from prometheus_client import REGISTRY, make_wsgi_app

    from looptrap.observe.serving import serve_wsgi

    server = serve_wsgi(make_wsgi_app(registry if registry is not None else REGISTRY), host, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="looptrap-metrics")
    thread.start()
    return server, thread
