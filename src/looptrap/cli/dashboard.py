"""``looptrap dashboard``: a live web page over the sessions of a store (see docs/dashboard.md)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from looptrap.core.printable import one_line

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run"]

TOKEN_ENV = "LOOPTRAP_DASHBOARD_TOKEN"


def add_parser(sub: Any) -> None:
    """Add the ``dashboard`` sub-command to the CLI's sub-parsers."""
    from looptrap.cli.metrics import add_metrics_option
    from looptrap.cli.sessions import add_store_option
    from looptrap.dashboard.server import MAX_POLL, MIN_POLL

    d = sub.add_parser(
        "dashboard",
        help="a live web page over the sessions of a store",
        description="Serve a small live web page over a SQLite or Redis store (--store, else $LOOPTRAP_STORE, "
        "else the store of the configuration file that --config names or that is found, else the SQLite file in "
        "the user's cache folder): active sessions with their calls, call rate, signals and stale stretch, a "
        "runaway first; one session's recent calls with their verdicts and what the model said it needed. The "
        "store is read only while someone looks (a page open, an API request). On 127.0.0.1 by default; "
        f"elsewhere a token is required (--token, ${TOKEN_ENV}, or one made up and printed). Requests for "
        "another host name are refused (421). "
        "See: looptrap docs dashboard.",
    )
    add_store_option(d)
    d.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    d.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0: any free port)")
    d.add_argument(
        "--token",
        help=f"require this token in every request (default: ${TOKEN_ENV}, which keeps it off the command line)",
    )
    d.add_argument(
        "--poll",
        type=float,
        default=1.0,
        metavar="S",
        help=f"seconds between store reads while a page is open ({MIN_POLL:g} to {MAX_POLL:g}; default: 1)",
    )
    add_metrics_option(d, "read from the store, as looptrap metrics serve does")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; a one-line error (exit 2) when it cannot start."""
    import secrets
    import threading

    from looptrap.cli.metrics import MetricsUnavailable, listen, need_prometheus, store_metrics, store_of
    from looptrap.dashboard import Dashboard, is_loopback
    from looptrap.dashboard.server import MAX_POLL, MIN_POLL, check_poll
    from looptrap.stores import open_store
    from looptrap.stores.url import redact

    try:
        check_poll(args.poll)
    except ValueError:
        return _error(f"--poll must be a number of seconds from {MIN_POLL:g} to {MAX_POLL:g}, got {args.poll:g}")
    if args.metrics:
        try:
            need_prometheus("--metrics")
        except MetricsUnavailable as exc:
            return _error(str(exc))
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(args.host):
        token = secrets.token_urlsafe(18)
    try:
        url = store_of(args)
        store = open_store(url, create=False)
    except (ValueError, ImportError) as exc:
        return _error(str(exc))
    metrics, where = None, ""
    try:
        if args.metrics:  # first: a dashboard that cannot serve its metrics does not start
            metrics, where = listen(store_metrics(store), *args.metrics)
        dash = Dashboard(store, host=args.host, port=args.port, token=token, poll=args.poll)
    except (MetricsUnavailable, OSError, ValueError) as exc:
        if metrics is not None:
            metrics.shutdown()
            metrics.server_close()
        store.close()
        if isinstance(exc, OSError):
            return _error(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
        return _error(str(exc))
    dash.start()
    print(f"looptrap: dashboard of {redact(url)} at {dash.url}", file=sys.stderr, flush=True)
    if metrics is not None:
        print(f"looptrap: serving {where} for {redact(url)}", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    finally:
        if metrics is not None:
            metrics.shutdown()
        dash.stop()
        store.close()
    return 0


def _error(message: str) -> int:
    print(f"looptrap: {one_line(message, 1000)}", file=sys.stderr)
    return 2
