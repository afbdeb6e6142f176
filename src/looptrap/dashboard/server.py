"""The dashboard's web server: the standard library's threading HTTP server (hardened: see
:mod:`looptrap.observe.serving`) and Server-Sent Events.

No dependency: one page, three JSON/SSE endpoints and a poller thread are all it needs, and a hook user
gets it with the base install. ``/`` (the page), ``/app.js``, ``/app.css``, ``/api/sessions``,
``/api/session?id=...``, ``/events`` (the session list, pushed when it changes). With a token, every request
must carry it (``?token=`` or ``Authorization: Bearer``).

The store is read only while someone looks: every ``poll`` seconds while a page is open (``/events``), and
on a request for ``/api/sessions`` when the last read is older than ``poll``; with nobody looking, the
server reads nothing.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import math
import socket
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from looptrap.dashboard.assets import APP_CSS, APP_JS, PAGE
from looptrap.dashboard.model import Board
from looptrap.observe.serving import GuardedHandler, Server

if TYPE_CHECKING:
    from looptrap.stores.base import Store

__all__ = ["MAX_POLL", "MIN_POLL", "Dashboard", "is_loopback"]

MIN_POLL = 0.1  # seconds: a shorter poll reads the store more often than a page can show
MAX_POLL = 3600.0
_HEARTBEAT = 15.0
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_poll(poll: float) -> float:
    """``poll`` if it is a number of seconds from :data:`MIN_POLL` to :data:`MAX_POLL`."""
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not math.isfinite(poll):
        raise ValueError(f"the poll must be a number of seconds from {MIN_POLL:g} to {MAX_POLL:g}, got {poll!r}")
    if not MIN_POLL <= poll <= MAX_POLL:
        raise ValueError(f"the poll must be a number of seconds from {MIN_POLL:g} to {MAX_POLL:g}, got {poll:g}")
    return float(poll)


class Dashboard:
    """A running dashboard over ``store``: ``start()`` serves in daemon threads, ``url`` is where (with the
    token), ``stop()`` ends it. ``poll``: seconds between two reads of the store while a page is open (from
    :data:`MIN_POLL` to :data:`MAX_POLL`)."""

    def __init__(
        self, store: Store, *, host: str = "127.0.0.1", port: int = 8765, token: str | None = None, poll: float = 1.0
    ) -> None:
        if not is_loopback(host) and not token:
            raise ValueError(f"a token is required to listen on {host} (not loopback)")
        self.poll = check_poll(poll)
        self.board = Board(store)
        self.token = token
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._streams = 0  # pages open (/events)
        self.httpd = Server((host, port), _handler(self))
        self.max_streams = self.httpd.max_connections // 2  # the other half for plain requests
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}/" + (f"?token={self.token}" if self.token else "")

    def start(self) -> Dashboard:
        for target in (self.httpd.serve_forever, self._poller):
            t = threading.Thread(target=target, daemon=True, name="looptrap-dashboard")
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.board.close()

    def _poller(self) -> None:
        """Read the store every ``poll`` seconds while a page is open; wait, reading nothing, while none is."""
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._streams > 0 or self._stop.is_set())
            if self._stop.is_set():
                return
            self.refresh(self.poll / 2)  # a page that just opened had it read
            self._stop.wait(self.poll)

    def refresh(self, max_age: float = 0.0) -> dict[str, Any]:
        """Read the store unless it was read less than ``max_age`` seconds ago; wake the pages if the view
        changed. Returns the view."""
        before = self.board.version
        view = self.board.refresh(max_age)
        if self.board.version != before:
            with self._changed:
                self._changed.notify_all()
        return view

    def open_stream(self) -> bool:
        """Count a page in (``False``: as many are open as the server takes)."""
        with self._changed:
            if self._streams >= self.max_streams:
                return False
            self._streams += 1
            self._changed.notify_all()
            return True

    def close_stream(self) -> None:
        with self._changed:
            self._streams -= 1

    def wait_change(self, version: int, timeout: float) -> int:
        """Block until the view's version differs from ``version`` (or ``timeout``, or stop)."""
        with self._changed:
            self._changed.wait_for(lambda: self.board.version != version or self._stop.is_set(), timeout)
        return self.board.version

    def authorised(self, query: dict[str, list[str]], header: str | None) -> bool:
        if not self.token:
            return True
        given = (query.get("token") or [""])[0]
        if not given and header and header.startswith("Bearer "):
            given = header[7:]
        return hmac.compare_digest(given.encode(), self.token.encode())


def _handler(dash: Dashboard) -> type[GuardedHandler]:
    class Handler(GuardedHandler):
        server_version = "looptrap-dashboard"
        sys_version = ""

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            if not dash.authorised(query, self.headers.get("Authorization")):
                self._send(403, "text/plain; charset=utf-8", b"a valid token is required\n")
                return
            if url.path == "/":
                self._send(200, "text/html; charset=utf-8", PAGE.encode())
            elif url.path == "/app.js":
                self._send(200, "text/javascript; charset=utf-8", APP_JS.encode())
            elif url.path == "/app.css":
                self._send(200, "text/css; charset=utf-8", APP_CSS.encode())
            elif url.path == "/favicon.ico":
                self._send(204, "image/x-icon", b"")
            elif url.path == "/api/sessions":
                self._json(dash.refresh(dash.poll))
            elif url.path == "/api/session":
                sid = (query.get("id") or [""])[0]  # exactly as given: the page sends the id it was given
                try:
                    got = dash.board.session(sid)
                except Exception:  # noqa: BLE001 - an unreadable state or an unreachable store: a 404, not a crash
                    got = None
                if got is None:
                    self._send(404, "application/json", b'{"error": "no such session"}')
                else:
                    self._json(got)
            elif url.path == "/events":
                self._events()
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found\n")

        def _send(self, code: int, kind: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for k, v in _HEADERS.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, obj: Any) -> None:
            self._send(200, "application/json", json.dumps(obj).encode())

        def _closed(self) -> bool:
            """Whether the page closed the connection (so that a page gone stops the reads at once, not at the
            next write)."""
            sock = self.connection
            timeout = sock.gettimeout()
            try:
                sock.settimeout(0)  # a look, no wait
                return bool(sock.recv(1, socket.MSG_PEEK) == b"")
            except BlockingIOError:
                return False  # open, nothing sent
            except OSError:
                return True
            finally:
                with contextlib.suppress(OSError):
                    sock.settimeout(timeout)

        def _events(self) -> None:
            if not dash.open_stream():
                self._send(503, "text/plain; charset=utf-8", b"too many pages open\n")
                return
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                for k, v in _HEADERS.items():
                    self.send_header(k, v)
                self.end_headers()
                dash.refresh(dash.poll)  # nobody was looking: the view may be old
                version = -1
                last = time.monotonic()
                while not dash._stop.is_set():
                    if dash.board.version != version:
                        version = dash.board.version
                        data = json.dumps(dash.board.view())
                        self.wfile.write(f"event: sessions\ndata: {data}\n\n".encode())
                        self.wfile.flush()
                        last = time.monotonic()
                    elif time.monotonic() - last >= _HEARTBEAT:
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                        last = time.monotonic()
                    dash.wait_change(version, 1.0)
                    if self._closed():
                        return
            except OSError:
                return  # the page went away, or stopped reading
            finally:
                dash.close_stream()

    return Handler
