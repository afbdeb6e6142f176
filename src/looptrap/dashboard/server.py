"""The dashboard's web server: the standard library's ``ThreadingHTTPServer`` and Server-Sent Events.

No dependency: one page, three JSON/SSE endpoints and a poller thread are all it needs, and a hook user
gets it with the base install. ``/`` (the page), ``/app.js``, ``/app.css``, ``/api/sessions``,
``/api/session?id=...``, ``/events`` (the session list, pushed when it changes). With a token, every request
must carry it (``?token=`` or ``Authorization: Bearer``).
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from looptrap.dashboard.assets import APP_CSS, APP_JS, PAGE
from looptrap.dashboard.model import Board

if TYPE_CHECKING:
    from looptrap.stores.base import Store

__all__ = ["Dashboard", "is_loopback"]

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


class Dashboard:
    """A running dashboard over ``store``: ``start()`` serves in daemon threads, ``url`` is where (with the
    token), ``stop()`` ends it. ``poll``: seconds between two reads of the store."""

    def __init__(
        self, store: Store, *, host: str = "127.0.0.1", port: int = 8765, token: str | None = None, poll: float = 1.0
    ) -> None:
        if not is_loopback(host) and not token:
            raise ValueError(f"a token is required to listen on {host} (not loopback)")
        self.board = Board(store)
        self.token = token
        self.poll = poll
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self.httpd = ThreadingHTTPServer((host, port), _handler(self))
        self.httpd.daemon_threads = True
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}/" + (f"?token={self.token}" if self.token else "")

    def start(self) -> Dashboard:
        self.board.refresh()
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

    def _poller(self) -> None:
        while not self._stop.wait(self.poll):
            before = self.board.version
            self.board.refresh()
            if self.board.version != before:
                with self._changed:
                    self._changed.notify_all()

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


def _handler(dash: Dashboard) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "looptrap-dashboard"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: no request log on the terminal."""

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
                self._json(dash.board.view())
            elif url.path == "/api/session":
                sid = (query.get("id") or [""])[0]
                try:
                    got = dash.board.session(sid)
                except Exception:  # noqa: BLE001 - a bad id or an unreadable state: a 404, not a crash
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

        def _events(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            for k, v in _HEADERS.items():
                self.send_header(k, v)
            self.end_headers()
            version = -1
            last = time.monotonic()
            try:
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
            except (BrokenPipeError, ConnectionResetError):
                return  # the page went away

    return Handler
