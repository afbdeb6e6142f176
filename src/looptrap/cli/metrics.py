"""``looptrap metrics serve``: Prometheus ``/metrics`` over a store (the sessions of hooks and proxies)."""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING, Any

from looptrap.core.printable import one_line

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``metrics`` sub-command to the CLI's sub-parsers."""
    from looptrap.cli.sessions import add_store_option

    m = sub.add_parser("metrics", help="serve Prometheus metrics of the sessions a store holds")
    actions = m.add_subparsers(dest="metrics_command", required=True)
    s = actions.add_parser(
        "serve",
        help="serve /metrics (default http://127.0.0.1:9464/metrics)",
        description="Serve Prometheus /metrics read from a store at each scrape: sessions held, active and "
        "halted, and the tool calls of the busiest active sessions by rank (no session id is a label). Needs "
        "the prometheus extra. See docs/metrics.md.",
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


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; a one-line error (exit 2) when it cannot start."""
    if importlib.util.find_spec("prometheus_client") is None:
        return _error("looptrap metrics serve needs the prometheus extra: pip install 'looptrap[prometheus]'")
    import threading

    from prometheus_client import CollectorRegistry

    from looptrap.cli.sessions import store_url
    from looptrap.observe.metrics import StoreCollector, serve
    from looptrap.stores import open_store
    from looptrap.stores.url import redact

    url = store_url(args.store)
    try:
        store = open_store(url, create=False)
    except (ValueError, ImportError) as exc:
        return _error(str(exc))
    registry = CollectorRegistry()
    registry.register(StoreCollector(store, active_seconds=args.active_seconds))
    try:
        server, _ = serve(registry, host=args.host, port=args.port)
    except OSError as exc:
        store.close()
        return _error(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    host, port = server.server_address[:2]
    print(f"looptrap: serving http://{host}:{port}/metrics for {redact(url)}", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    finally:
        server.shutdown()
        store.close()
    return 0


def _error(message: str) -> int:
    print(f"looptrap: {one_line(message, 1000)}", file=sys.stderr)
    return 2
