"""The HTTP server of the dashboard and of ``/metrics``: the standard library's threading server, made fit for
a port that every local program, and every web page the user opens, can reach.

* **Host check** (DNS rebinding: a page can point a name it controls at 127.0.0.1, then read what a loopback
  server answers). A request is answered only if its ``Host`` names this server: ``localhost``, a loopback
  address, or the address it was told to bind (and the one it bound), with its port; bound to a wildcard
  address (``0.0.0.0``, ``::``), also any IP address and this machine's own name. Anything else (no
  ``Host`` too) gets 421. A request whose ``Origin`` is another site gets 403 (every endpoint is a plain
  ``GET``; other methods get 501).
* **Backlog** of :data:`BACKLOG` connections waiting to be accepted (the kernel caps it at
  ``net.core.somaxconn``), where the standard library keeps 5.
* **Read deadline**: a request's line and headers must arrive within :data:`READ_SECONDS` in all (not per
  read: a byte now and then does not keep a connection), and a write the client does not take within as
  long ends the connection.
* **Bounded threads**: at most :data:`MAX_CONNECTIONS` connection threads. When all are taken, the
  connections that have waited longer than :data:`GRACE_SECONDS` for their request head are dropped to make
  room, so half-sent requests cannot hold the server; the others wait in the backlog.

Standard library only (``http.server``, ``socketserver``, ``wsgiref``): the dashboard comes with the base
install, and ``/metrics`` needs nothing beyond prometheus-client.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

__all__ = [
    "BACKLOG",
    "GRACE_SECONDS",
    "MAX_CONNECTIONS",
    "READ_SECONDS",
    "GuardedHandler",
    "Hosts",
    "Server",
    "serve_wsgi",
]

BACKLOG = 1024
READ_SECONDS = 10.0
MAX_CONNECTIONS = 64
GRACE_SECONDS = 0.25
_WILDCARDS = ("0.0.0.0", "::", "")


def _name(host: str) -> str:
    """A host name or address as compared: lower case, without IPv6 brackets or one trailing dot."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host[:-1] if host.endswith(".") else host


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def split_host(value: str, default_port: int = 80) -> tuple[str, int] | None:
    """``host[:port]`` or ``[v6][:port]`` as (name, port); ``None`` when it is not one."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:]
    else:
        name, _, port = value.partition(":")
        if ":" in port:
            return None  # an IPv6 address without brackets
    if not name:
        return None
    if not port:
        return _name(name), default_port
    if not (port.isascii() and port.isdigit() and len(port) <= 5):
        return None
    return _name(name), int(port)


class Hosts:
    """Which ``Host`` and ``Origin`` values name a server bound at ``bound`` (told ``bind``) on ``port``."""

    def __init__(self, bind: str, bound: str, port: int, own_names: tuple[str, ...] = ()) -> None:
        self.port = port
        self.wildcard = _name(bind) in _WILDCARDS or _name(bound) in _WILDCARDS
        self.names = {"localhost", _name(bind), _name(bound)}
        if self.wildcard:
            self.names |= {_name(n) for n in own_names if n}
        self.names.discard("")

    def host(self, value: str | None) -> bool:
        """Whether a ``Host`` header names this server."""
        got = split_host(value.strip()) if value else None
        if got is None or got[1] != self.port:
            return False
        name, _ = got
        if name in self.names:
            return True
        ip = _ip(name)
        return ip is not None and (ip.is_loopback or self.wildcard)

    def origin(self, value: str | None) -> bool:
        """Whether an ``Origin`` header is absent or this server's own (``null`` is not)."""
        if value is None:
            return True
        try:
            url = urlsplit(value.strip())
        except ValueError:
            return False
        return url.scheme == "http" and not url.path.strip("/") and self.host(url.netloc)


class _Deadline(io.RawIOBase):
    """A connection's socket for reading, every read within what is left of a deadline that
    :meth:`start` sets; the socket's own timeout (for writes) is put back after each read."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        super().__init__()
        self.sock, self.seconds = sock, seconds
        self.deadline = time.monotonic() + seconds

    def start(self) -> None:
        self.deadline = time.monotonic() + self.seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        try:
            return self.sock.recv_into(buffer)
        finally:
            self.sock.settimeout(self.seconds)


class Server(ThreadingHTTPServer):
    """A threading HTTP server with a backlog, a read deadline, a bound on its connection threads and a
    host check (module docstring). ``read_seconds``, ``max_connections``: per instance (set before
    serving)."""

    request_queue_size = BACKLOG
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: Callable[..., Any]) -> None:
        self.address_family = family(address[0])
        self.read_seconds = READ_SECONDS
        self.max_connections = MAX_CONNECTIONS
        self._taken = 0  # connection threads running
        self._reading: dict[socket.socket, float] = {}  # connections still sending their head -> since
        self._cond = threading.Condition()
        self._closing = False
        super().__init__(address, handler)
        bound, port = self.server_address[:2]
        name = bound.decode() if isinstance(bound, bytes) else str(bound)
        own = (socket.gethostname(), self.server_name) if _name(address[0]) in _WILDCARDS else ()
        self.hosts = Hosts(address[0], name, int(port), own)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Start the connection's thread once one is free (dropping stale head readers to free one)."""
        with self._cond:
            while self._taken >= self.max_connections and not self._closing:
                self._evict()
                self._cond.wait(0.05)
            if self._closing:
                self.shutdown_request(request)
                return
            self._taken += 1
            self._reading[request] = time.monotonic()
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._done(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._done(request)

    def head_read(self, request: Any) -> None:
        """The connection's request head has arrived: it is no longer one to drop for room."""
        with self._cond:
            self._reading.pop(request, None)

    def _done(self, request: Any) -> None:
        with self._cond:
            self._reading.pop(request, None)
            self._taken -= 1
            self._cond.notify_all()

    def _evict(self) -> None:
        """Drop the connections waiting for their request head longer than the grace time (their threads
        then end)."""
        cutoff = time.monotonic() - GRACE_SECONDS
        for sock in [s for s, since in self._reading.items() if since < cutoff]:
            del self._reading[sock]
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that went away or timed out is no error of the server's."""

    def shutdown(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        super().shutdown()


class GuardedHandler(BaseHTTPRequestHandler):
    """A request handler that reads its request within the server's deadline and answers only requests for
    this server (:class:`Hosts`)."""

    server: Server

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.read_seconds)  # writes the client does not take
        self.rfile.close()  # the socket's own file: its reads would have no deadline
        self._deadline = _Deadline(self.connection, self.server.read_seconds)
        self.rfile = io.BufferedReader(self._deadline)

    def handle_one_request(self) -> None:
        self._deadline.start()
        super().handle_one_request()

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        self.server.head_read(self.connection)
        hosts = self.server.hosts
        if not hosts.host(self.headers.get("Host")):
            self.send_error(421, "Misdirected Request", "this server answers requests for its own address only")
            return False
        if not hosts.origin(self.headers.get("Origin")):
            self.send_error(403, "Forbidden", "requests from other sites are refused")
            return False
        return True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no request log on the terminal."""


def family(host: str) -> socket.AddressFamily:
    """The address family to listen on ``host`` with: IPv4 where the name has an IPv4 address, else IPv6."""
    if ":" in host:
        return socket.AF_INET6
    try:
        infos = socket.getaddrinfo(host or None, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return socket.AF_INET  # the bind says what is wrong
    families = [i[0] for i in infos]
    return socket.AF_INET if socket.AF_INET in families or not families else families[0]


class _WSGIServer(Server, WSGIServer):
    """:class:`Server` running a WSGI application."""


class _WSGIHandler(GuardedHandler, WSGIRequestHandler):
    server: _WSGIServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no request log on the terminal."""


def serve_wsgi(app: Callable[..., Any], host: str, port: int) -> Any:
    """A :class:`Server` for the WSGI ``app`` at ``host``:``port`` (not serving yet: ``serve_forever()``)."""
    server = _WSGIServer((host, port), _WSGIHandler)
    server.set_app(app)
    return server
