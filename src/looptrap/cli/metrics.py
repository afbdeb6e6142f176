"""``looptrap metrics serve``: Prometheus ``/metrics`` over a store (the sessions of hooks and proxies); and
``--metrics HOST:PORT``, the same endpoint beside another command (``mcp-proxy``, ``dashboard``)."""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING, Any

from looptrap.core.printable import one_line

if TYPE_CHECKING:
    import argparse

    from prometheus_client import CollectorRegistry

    from looptrap.engine.config import GuardConfig
    from looptrap.stores.base import Store

__all__ = [
    "MetricsUnavailable",
    "add_metrics_option",
    "add_parser",
    "guard_metrics",
    "listen",
    "run",
    "store_metrics",
    "store_of",
]

_EXTRA = "needs the prometheus extra: pip install 'looptrap[prometheus]'"


class MetricsUnavailable(Exception):
    """``/metrics`` cannot be served: the prometheus extra is missing, or the address cannot be listened on
    (the message is one line)."""


def add_parser(sub: Any) -> None:
    """Add the ``metrics`` sub-command to the CLI's sub-parsers."""
    from looptrap.cli.sessions import add_store_option

    m = sub.add_parser("metrics", help="serve Prometheus metrics of the sessions a store holds")
    actions = m.add_subparsers(dest="metrics_command", required=True)
    s = actions.add_parser(
        "serve",
        help="serve /metrics (default http://127.0.0.1:9464/metrics)",
        description="Serve Prometheus /metrics read from a store at each scrape: sessions held, active and "
        "halted, and the tool calls of the busiest active sessions by rank (no session id is a label). The "
        "store: --store, else $LOOPTRAP_STORE, else the configuration file's (--config), else the SQLite file "
        "in the user's cache folder. Requests for another host name are refused (421). Needs the prometheus "
        "extra. See: looptrap docs metrics.",
    )
    add_store_option(s)
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, loopback only)")
    s.add_argument("--port", type=int, default=9464, help="port (default: 9464; 0: any free port)")
    s.add_argument(
        "--active-seconds",
        type=float,
        default=300.0,
        metavar="S",
        help="a session written within this many seconds is active (default: 300)",
    )


def add_metrics_option(parser: Any, what: str) -> None:
    """Add ``--metrics HOST:PORT`` to another command's parser (``what``: the metrics it serves)."""
    from looptrap.cli.argtypes import address

    parser.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        type=address,
        help=f"also serve Prometheus /metrics at this address ({what}; a port alone: on 127.0.0.1; 0: any free "
        "port). Needs the prometheus extra",
    )


def need_prometheus(command: str) -> None:
    """Raise :class:`MetricsUnavailable` when prometheus-client is not installed."""
    if importlib.util.find_spec("prometheus_client") is None:
        raise MetricsUnavailable(f"{command} {_EXTRA}")


def listen(registry: CollectorRegistry | None, host: str, port: int) -> tuple[Any, str]:
    """Serve ``/metrics`` of ``registry`` (default: the global one) in a daemon thread: the server
    (``shutdown()`` stops it) and its URL. Raises :class:`MetricsUnavailable` when the address is not usable."""
    from looptrap.observe.metrics import serve

    try:
        server, _ = serve(registry, host=host, port=port)
    except OSError as exc:
        raise MetricsUnavailable(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound, got = server.server_address[:2]
    shown = f"[{bound}]" if ":" in str(bound) else str(bound)
    return server, f"http://{shown}:{got}/metrics"


def store_of(args: argparse.Namespace) -> str:
    """The store URL of a command with ``--store`` and ``--config``: ``--store``, else ``$LOOPTRAP_STORE``,
    else the configuration file's store, else the SQLite file in the user's cache folder (the order the hooks
    use). Raises :class:`ValueError` (one line) for a configuration file that cannot be used."""
    import os

    from looptrap.cli.sessions import store_url

    configured = None
    if not args.store and not os.environ.get("LOOPTRAP_STORE"):
        from looptrap.config_file import ConfigError, resolve

        try:
            configured = resolve(getattr(args, "config", None)).store
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    return store_url(args.store, configured)


def store_metrics(store: Store, active_seconds: float = 300.0) -> CollectorRegistry:
    """A registry of the figures read from ``store`` at each scrape (:class:`StoreCollector`)."""
    from prometheus_client import CollectorRegistry

    from looptrap.observe.metrics import StoreCollector

    registry = CollectorRegistry()
    registry.register(StoreCollector(store, active_seconds=active_seconds))
    return registry


def guard_metrics(config: GuardConfig, command: str, host: str, port: int) -> tuple[GuardConfig, Any, str]:
    """``config`` with the process's :class:`PrometheusMetrics` among its observers (the one ``[metrics]
    prometheus = true`` adds, added once), and ``/metrics`` of the global registry served: (config, server,
    URL). Raises :class:`MetricsUnavailable`."""
    need_prometheus(command)
    from looptrap.observe import shared

    metrics = shared.prometheus()
    if not any(o is metrics for o in config.observers):
        config = config.replace(observers=(*config.observers, metrics))
    server, url = listen(None, host, port)
    return config, server, url


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; a one-line error (exit 2) when it cannot start."""
    try:
        need_prometheus("metrics serve")
    except MetricsUnavailable as exc:
        return _error(str(exc))
    import threading

    from looptrap.stores import open_store
    from looptrap.stores.url import redact

    try:
        url = store_of(args)
        store = open_store(url, create=False)
    except (ValueError, ImportError) as exc:
        return _error(str(exc))
    try:
        server, where = listen(store_metrics(store, args.active_seconds), args.host, args.port)
    except MetricsUnavailable as exc:
        store.close()
        return _error(str(exc))
    print(f"looptrap: serving {where} for {redact(url)}", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    finally:
        server.shutdown()
        store.close()
    return 0


def _error(message: str) -> int:
    print(f"looptrap: {one_line(message, 1000)}", file=sys.stderr)
    return 2
