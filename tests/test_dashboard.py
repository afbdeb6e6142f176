"""``looptrap dashboard`` in headless Chromium: the real CLI serving a real store (SQLite, Redis), a looping
agent in another process, the page driven over the DevTools protocol."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, need
from looptrap.core.state import VERDICTS
from looptrap.dashboard import Dashboard
from looptrap.stores import SQLiteStore

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"


class Browser:
    """Headless Chromium over the DevTools protocol: evaluate, click, screenshot, and every console message."""

    def __init__(self, profile: Path, *flags: str) -> None:
        need("Chromium (apt-get install chromium)", shutil.which("chromium") is not None)
        need("websocket-client (the dev extra)", importlib.util.find_spec("websocket") is not None)
        import websocket

        port = free_port()
        self.proc = subprocess.Popen(
            [
                shutil.which("chromium") or "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                f"--remote-debugging-port={port}",
                f"--user-data-dir={profile}",
                "--window-size=1100,800",
                *flags,
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        target = None
        deadline = time.monotonic() + 30
        while target is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    target = next((t for t in json.load(r) if t.get("type") == "page"), None)
            except OSError:
                pass
            if target is None:
                assert time.monotonic() < deadline, "Chromium did not start"
                time.sleep(0.2)
        self.ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0
        self.console: list[str] = []
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mine:
                assert "error" not in msg, msg
                return msg.get("result", {})
            self._event(msg)

    def _event(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.console.append(f"console.{p['type']}: {[a.get('value') for a in p.get('args', [])]}")
        elif method == "Runtime.exceptionThrown":
            self.console.append(f"exception: {p['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded":
            self.console.append(f"log {p['entry']['level']}: {p['entry']['text']}")

    def eval(self, expression: str) -> Any:
        got = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in got, got
        return got["result"].get("value")

    def awaited(self, expression: str) -> Any:
        """The value of a promise the page's script makes."""
        got = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in got, got
        return got["result"].get("value")

    def wait(self, expression: str, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"
            time.sleep(0.2)

    def close(self) -> None:
        self.ws.close()
        self.proc.kill()
        self.proc.wait()


Verdicts = dict[int, list[str]]  # call index -> [action, kind, reason], as the guard gave them


class Driver:
    """tests/dashboard_driver.py in a process of its own; ``looped``: the verdicts of its looping session."""

    def __init__(self, url: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "dashboard_driver.py"), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        word, _, looped = self.read().partition(" ")
        assert word == "looping", word
        self.looped = self.verdicts(looped)
        assert self.read() == "ready"

    @staticmethod
    def verdicts(text: str) -> Verdicts:
        return {int(k): v for k, v in json.loads(text).items()}

    def read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def burst(self, n: int) -> tuple[int, Verdicts]:
        """N more calls of the runaway: its calls, and the verdicts of all its calls so far."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"burst {n}\n")
        self.proc.stdin.flush()
        word, calls, verdicts = self.read().split(" ", 2)
        assert word == "at", word
        return int(calls), self.verdicts(verdicts)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def serve_cli(store: str, *options: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "looptrap",
            "dashboard",
            "--store",
            store,
            "--port",
            str(port),
            "--poll",
            "0.3",
            *options,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "dashboard of" in line, line
    return proc, line.rsplit(" at ", 1)[1].strip()


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    return f"sqlite:///{tmp_path / 'sessions.db'}"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def test_a_runaway_is_at_the_top_and_counts_live(store_url: str, browser: Browser, tmp_path: Path) -> None:
    driver = Driver(store_url)
    server, url = serve_cli(store_url)
    try:
        calls, _ = driver.burst(60)
        browser.send("Page.navigate", url=url)
        top = "document.querySelector('#sessions tbody tr')"
        browser.wait(f"{top} && {top}.dataset.session === 'runaway-agent' && {top}.dataset.calls === '{calls}'")
        assert browser.eval("document.querySelectorAll('#sessions tbody tr').length") == 4
        signals = browser.eval(f"{top}.querySelector('.signals').textContent")
        assert "calls_per_session" in signals  # 60 calls: past the alert at 50
        assert "repeat_share" in signals
        rows = browser.eval(
            "[...document.querySelectorAll('#sessions tbody tr')].map(r => [r.dataset.session, r.dataset.calls])"
        )
        assert sorted(rows[1:]) == [
            ["healthy-reader", "4"],
            ["healthy-writer", "3"],
            ["looping-agent", str(len(driver.looped))],
        ]

        # live: more calls from the other process show up without a reload
        browser.eval("window.sameDocument = true")
        updates = int(browser.eval("document.body.dataset.updates"))
        calls, runaway = driver.burst(25)
        browser.wait(f"{top}.dataset.calls === '{calls}'")
        assert browser.eval("window.sameDocument") is True
        assert int(browser.eval("document.body.dataset.updates")) > updates
        assert float(browser.eval(f"{top}.querySelector('.rate').textContent")) > 0

        # the session views: recent calls of the runaway, what the healthy writer said it needed
        browser.eval(f"{top}.click()")
        browser.wait("document.querySelector('#detail-calls tbody tr') !== null")
        assert browser.eval("document.getElementById('detail-id').textContent") == "runaway-agent"
        tools = browser.eval(
            "[...document.querySelectorAll('#detail-calls tbody tr')].map(r => r.children[1].textContent)"
        )
        assert set(tools) == {"search_docs"}
        assert_verdicts(browser, runaway)
        shot = browser.send("Page.captureScreenshot", format="png")
        png = base64.b64decode(shot["data"])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(png) > 20_000
        if os.environ.get("LOOPTRAP_UPDATE_SCREENSHOT") and store_url.startswith("sqlite"):
            (DOCS / "dashboard.png").write_bytes(png)
        # the looping session: advised, blocked, halted, each call with the verdict the guard gave it
        browser.eval("document.querySelector('tr[data-session=\"looping-agent\"]').click()")
        browser.wait("document.getElementById('detail-id').textContent === 'looping-agent'")
        shown = assert_verdicts(browser, driver.looped)
        assert sorted(shown) == sorted(driver.looped)  # every call, the ones that were not run too
        assert [driver.looped[i][0] for i in sorted(driver.looped)][-3:] == ["advise", "block", "halt"]
        browser.eval("document.querySelector('tr[data-session=\"healthy-writer\"]').click()")
        browser.wait("document.getElementById('detail-id').textContent === 'healthy-writer'")
        browser.wait("document.getElementById('detail-needed').textContent.includes('the API key for staging')")
        assert browser.console == []
    finally:
        driver.close()
        server.terminate()
        server.wait(10)
        assert server.stderr is not None
        server.stderr.close()


def verdict_text(action: str, kind: str, reason: str) -> str:
    """What the verdict column shows for a verdict."""
    return action + (f": {kind}" if kind else "") + (f" ({reason})" if reason and reason != kind else "")


def assert_verdicts(browser: Browser, given: Verdicts) -> dict[int, str]:
    """The session view's verdict column says what the guard gave each call, from the newest call down to the
    oldest verdict the state keeps; older calls show "-". Returns the column by call index."""
    rows = browser.eval(
        "[...document.querySelectorAll('#detail-calls tbody tr')].map(r => [r.dataset.index, r.cells[3].textContent])"
    )
    shown = {int(i): text for i, text in rows}
    known = [i for i, text in shown.items() if text != "-"]
    assert known, shown
    assert min(known) > max((i for i, text in shown.items() if text == "-"), default=0)
    for i in known:
        assert shown[i] == verdict_text(*given[i]), (i, shown[i], given[i])
    # the verdicts kept cover the last interventions and every call since (VERDICTS of them, or all)
    interventions = [i for i in sorted(given) if given[i][0] != "allow"]
    assert set(interventions[-VERDICTS:]) <= set(known)
    return shown


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_token_required_away_from_loopback(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        with pytest.raises(ValueError, match=r"a token is required to listen on 0\.0\.0\.0"):
            Dashboard(store, host="0.0.0.0", port=0)
        dash = Dashboard(store, port=0, token="s3cret-token").start()
        try:
            base = dash.url.split("?")[0]
            assert get(base)[0] == 403
            assert get(base + "api/sessions?token=wrong")[0] == 403
            status, body = get(base + "api/sessions?token=s3cret-token")
            assert status == 200
            assert json.loads(body)["sessions"] == []
            assert get(dash.url)[0] == 200
            assert get(base + "api/session?id=nobody&token=s3cret-token")[0] == 404
        finally:
            dash.stop()
    finally:
        store.close()


def test_cli_errors_are_one_line() -> None:
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run
    got = run([sys.executable, "-m", "looptrap", "dashboard", "--store", "nosuch://x"], capture_output=True, text=True)
    assert got.returncode == 2
    assert got.stderr.count("\n") == 1
    assert got.stderr.startswith("looptrap: ")


# -- requests for another host (DNS rebinding), and from other sites ------------------------------------------
def raw_get(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """``GET path`` on 127.0.0.1:``port`` with exactly these headers (no ``Host`` unless given)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def assert_only_own_host(port: int, path: str, secret: str) -> None:
    """The server at ``port`` answers ``path`` (which shows ``secret``) for its own host names only."""
    own = f"127.0.0.1:{port}"
    for host in (own, f"localhost:{port}", f"LOCALHOST.:{port}", f"[::1]:{port}", f"127.0.0.2:{port}"):
        status, body = raw_get(port, path, {"Host": host})
        assert (status, secret in body.decode()) == (200, True), host
    for host in (f"rebind.test:{port}", f"127.0.0.1.rebind.test:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}", ""):
        status, body = raw_get(port, path, {"Host": host} if host else {})
        assert status == 421, host
        assert secret not in body.decode()
    for origin in (f"http://rebind.test:{port}", "null", f"https://127.0.0.1:{port}"):
        status, body = raw_get(port, path, {"Host": own, "Origin": origin})
        assert status == 403, origin
        assert secret not in body.decode()
    assert raw_get(port, path, {"Host": own, "Origin": f"http://{own}"})[0] == 200


def test_requests_for_another_host_are_refused(tmp_path: Path) -> None:
    """A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) reads nothing: its requests
    carry its own name as Host."""
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    write_sessions(url, {"customer-4242-secret": 2})
    server, page = serve_cli(url)
    browser = Browser(tmp_path / "profile", "--host-resolver-rules=MAP rebind.test 127.0.0.1")
    try:
        port = int(page.rsplit(":", 1)[1].strip("/"))
        assert_only_own_host(port, "/api/sessions", "customer-4242-secret")
        assert raw_get(port, "/events", {"Host": f"rebind.test:{port}"})[0] == 421
        # the attacker's page, served from the name it rebound: its own requests are refused
        browser.send("Page.navigate", url=f"http://rebind.test:{port}/")
        browser.wait("document.readyState === 'complete' && document.body !== null")
        assert "customer-4242-secret" not in browser.eval("document.documentElement.outerHTML")
        assert browser.awaited("fetch('/api/sessions').then((r) => r.status)") == 421
        # the dashboard itself, at its own address, works
        browser.send("Page.navigate", url=page)
        browser.wait("document.querySelector('tr[data-session=\"customer-4242-secret\"]') !== null")
    finally:
        browser.close()
        server.terminate()
        server.wait(10)
        assert server.stderr is not None
        server.stderr.close()


# -- session ids: exactly as stored ---------------------------------------------------------------------------
def write_sessions(url: str, calls: dict[str, int]) -> None:
    """Sessions with these ids, each with this many calls (distinct reads: no loop)."""
    from looptrap import Guard
    from looptrap.stores import open_store

    store = open_store(url)
    try:
        for session, n in calls.items():
            g = Guard(store=store, session=session)
            for i in range(n):
                if g.check("read_file", {"path": f"src/{i}.py"}).allowed:
                    g.record("read_file", {"path": f"src/{i}.py"}, f"contents {i}")
    finally:
        store.close()


#: ids that differ from another one only in what does not show, or that a URL or markup would change:
#: session id -> (calls, as the list shows it)
TRICKY = {
    "victim": (3, "victim"),
    "vic\u200btim": (4, "vic\\u200btim"),  # a zero-width space
    "victim ": (5, "victim\\x20"),  # a trailing space
    " victim": (6, "\\x20victim"),
    "vic  tim\t": (7, "vic  tim\\x09"),
    "line\nbreak": (8, "line\\x0abreak"),
    "\u202evictim": (9, "\\u202evictim"),  # a right-to-left override
    "+&=%25?#/ a+b": (10, "+&=%25?#/ a+b"),  # URL syntax
    "<b>bold</b>&amp;": (11, "<b>bold</b>&amp;"),  # markup
    "back\\u200bslash": (12, "back\\\\u200bslash"),  # a backslash: not the escape of a zero-width space
    "x" * 300: (13, "x" * 157 + "..."),  # past the 160 characters the list shows
}


def test_session_ids_round_trip_exactly(store_url: str, browser: Browser) -> None:
    write_sessions(store_url, {k: n for k, (n, _) in TRICKY.items()})
    server, url = serve_cli(store_url)
    try:
        browser.send("Page.navigate", url=url)
        browser.wait(f"document.querySelectorAll('#sessions tbody tr').length === {len(TRICKY)}")
        assert browser.eval("document.querySelector('#sessions b') === null")  # markup shown as text
        for session, (calls, shown) in TRICKY.items():
            rows = "[...document.querySelectorAll('#sessions tbody tr')]"
            row = f"{rows}.find(r => r.dataset.session === {json.dumps(session)})"
            assert browser.eval(f"{row}.dataset.calls") == str(calls), session
            assert browser.eval(f"{row}.querySelector('.id').textContent") == shown
            browser.eval(f"{row}.click()")
            detail = "document.getElementById('detail-id')"
            browser.wait(f"{detail}.dataset.session === {json.dumps(session)}")
            browser.wait(f"document.getElementById('detail-summary').textContent.startsWith('{calls} calls')")
            if len(session) > 160:
                assert browser.eval(f"{detail}.textContent") == session  # all of it in the session view
        # asked for over HTTP: the exact id, not one that looks the same
        from urllib.parse import quote

        base = url.rstrip("/")
        for session, (calls, _) in TRICKY.items():
            status, body = get(f"{base}/api/session?id={quote(session, safe='')}")
            assert status == 200, session
            got = json.loads(body)
            assert (got["id"], got["calls"]) == (session, calls)
        assert get(f"{base}/api/session?id=vic%E2%80%8Ctim")[0] == 404  # a zero-width non-joiner: no such session
        assert browser.console == []
    finally:
        server.terminate()
        server.wait(10)
        assert server.stderr is not None
        server.stderr.close()


# -- the store's file replaced; the call rate after a reset ---------------------------------------------------
def listed(dash: Dashboard) -> dict[str, int]:
    status, body = get(dash.url + "api/sessions")
    assert status == 200
    return {s["id"]: s["calls"] for s in json.loads(body)["sessions"]}


def wait_for(what: Callable[[], Any], expected: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (got := what()) != expected:
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def test_a_replaced_sqlite_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    write_sessions(f"sqlite:///{path}", {"first-file": 2})
    store = SQLiteStore(path, create=False)  # as the CLI opens it
    dash = Dashboard(store, port=0, poll=0.1).start()
    try:
        assert listed(dash) == {"first-file": 2}
        for f in tmp_path.glob("sessions.db*"):  # deleted, and made again
            f.unlink()
        write_sessions(f"sqlite:///{path}", {"made-again": 3})
        wait_for(lambda: listed(dash), {"made-again": 3})
        assert get(dash.url + "api/session?id=made-again")[0] == 200
        other = tmp_path / "elsewhere" / "new.db"
        write_sessions(f"sqlite:///{other}", {"moved-over": 4, "and-another": 1})
        os.replace(other, path)  # moved over it
        wait_for(lambda: listed(dash), {"moved-over": 4, "and-another": 1})
        assert get(dash.url + "api/session?id=made-again")[0] == 404
        for f in tmp_path.glob("sessions.db*"):  # gone: no sessions, no error
            f.unlink()
        wait_for(lambda: listed(dash), {})
        write_sessions(f"sqlite:///{path}", {"back-again": 5})
        wait_for(lambda: listed(dash), {"back-again": 5})
    finally:
        dash.stop()
        store.close()


def test_the_call_rate_starts_over_after_a_reset(tmp_path: Path) -> None:
    from looptrap.dashboard.model import Board

    url = f"sqlite:///{tmp_path / 's.db'}"
    now = [1000.0]
    store = SQLiteStore(tmp_path / "s.db", create=False)
    board = Board(store, clock=lambda: now[0])

    def rate() -> float:
        (row,) = board.refresh()["sessions"]
        return float(row["rate"])

    write_sessions(url, {"agent": 30})
    assert rate() == 0.0
    now[0] += 30
    write_sessions(url, {"agent": 40})  # the same session, 40 distinct reads: 10 new calls... and more
    first = rate()
    assert first > 0
    writer = SQLiteStore(tmp_path / "s.db")
    assert writer.delete("agent")  # looptrap sessions reset agent
    writer.close()
    write_sessions(url, {"agent": 2})
    now[0] += 10
    assert rate() == 0.0  # started over: not (2 - 30) calls a minute
    now[0] += 30
    write_sessions(url, {"agent": 5})  # a fresh guard reads the state and adds the calls it makes
    assert rate() > 0
    for _ in range(5):  # and never below 0, however the count moves
        now[0] += 7
        assert rate() >= 0
    board.close()
    store.close()


# -- the server under load: backlog, read deadline, bounded threads --------------------------------------------
def threads_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))


def test_many_connections_and_half_sent_requests(tmp_path: Path) -> None:
    import socket
    import threading

    need("/proc (Linux)", os.path.exists(f"/proc/{os.getpid()}/status"))
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    write_sessions(url, {"agent": 2})
    server, page = serve_cli(url)
    port = int(page.rsplit(":", 1)[1].strip("/"))
    host = f"127.0.0.1:{port}"
    request = f"GET /api/sessions HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()

    def answer(timeout: float = 15.0) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(request)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return data[:12]

    try:
        # 600 connections at once: every one answered (the backlog holds them until a thread is free)
        got: list[Any] = []
        gate = threading.Barrier(600)

        def one() -> None:
            gate.wait()
            try:
                got.append(answer())
            except OSError as exc:
                got.append(type(exc).__name__)

        clients = [threading.Thread(target=one) for _ in range(600)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        assert got == [b"HTTP/1.0 200"] * 600, {str(g) for g in got}
        # 300 requests sent in half: a bounded number of threads, and a whole request still answered
        half = []
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(f"GET /api/sessions HTTP/1.1\r\nHost: {host}\r\n".encode())  # no blank line: not done
            half.append(s)
        time.sleep(1)
        assert threads_of(server.pid) <= 64 + 4
        start = time.monotonic()
        assert answer() == b"HTTP/1.0 200"
        assert time.monotonic() - start < 10
        for s in half:
            s.close()
    finally:
        server.terminate()
        server.wait(10)
        assert server.stderr is not None
        server.stderr.close()


def test_a_request_must_arrive_within_the_read_deadline(tmp_path: Path) -> None:
    import socket

    store = SQLiteStore(tmp_path / "s.db")
    dash = Dashboard(store, port=0)
    dash.httpd.read_seconds = 1.0
    dash.start()
    port = dash.httpd.server_address[1]
    try:
        for trickle in (False, True):  # silent, or a byte now and then (each read within the deadline)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                start = time.monotonic()
                s.sendall(b"GET /api/sessions HTTP/1.1\r\n")
                closed = False
                while time.monotonic() - start < 6 and not closed:
                    if trickle:
                        try:
                            s.sendall(b"X")
                        except OSError:
                            closed = True
                            break
                    s.settimeout(0.3)
                    try:
                        closed = s.recv(4096) == b"" or closed
                    except TimeoutError:
                        continue
                    except OSError:
                        closed = True
                assert closed, trickle
                assert time.monotonic() - start < 3, trickle
    finally:
        dash.stop()
        store.close()


# -- --poll, and reading the store only while someone looks ---------------------------------------------------
def test_the_poll_has_a_floor(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    for poll in ("1e-9", "0.05", "0", "-1", "nan", "inf", "1e9"):
        got = subprocess.run(
            [sys.executable, "-m", "looptrap", "dashboard", "--store", store, "--port", "0", "--poll", poll],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert got.returncode == 2, poll
        assert got.stderr.startswith("looptrap: --poll must be a number of seconds from 0.1 to 3600, got "), got.stderr
    helped = subprocess.run([sys.executable, "-m", "looptrap", "dashboard", "--help"], capture_output=True, text=True)
    assert "0.1 to 3600" in " ".join(helped.stdout.split())
    description = " ".join(helped.stdout.split("Serve", 1)[1].split("options:", 1)[0].split())
    assert "--config" in description  # which store it serves
    with pytest.raises(ValueError, match=r"from 0\.1 to 3600"):
        Dashboard(SQLiteStore(tmp_path / "s.db"), port=0, poll=1e-9)


def next_event(fp: Any) -> Any:
    """The data of the next Server-Sent Event read from ``fp``."""
    while True:
        line = fp.readline().decode()
        assert line, "the stream ended"
        if line.startswith("data: "):
            return json.loads(line[6:])


def test_the_store_is_read_while_a_page_is_open_and_only_what_changed(tmp_path: Path) -> None:
    import http.client

    url = f"sqlite:///{tmp_path / 's.db'}"
    write_sessions(url, {f"agent-{i}": 1 + i % 3 for i in range(300)})
    store = SQLiteStore(tmp_path / "s.db", create=False)
    dash = Dashboard(store, port=0, poll=0.1).start()
    board = dash.board
    try:
        time.sleep(1)
        assert board.refreshes == 0  # nobody looking: no read
        conn = http.client.HTTPConnection("127.0.0.1", dash.httpd.server_address[1], timeout=10)
        conn.request("GET", "/events")
        events = conn.getresponse()
        assert events.status == 200
        first = next_event(events.fp)
        assert len(first["sessions"]) == 300
        assert board.decoded == 300  # each state once
        wait_for(lambda: board.refreshes >= 5, True)
        assert board.decoded == 300  # read again and again: nothing changed, nothing decoded
        write_sessions(url, {"agent-7": 2, "agent-8": 2, "new-one": 1})
        wait_for(lambda: {s["id"]: s["calls"] for s in dash.board.view()["sessions"]}.get("new-one"), 1)
        # the three that changed, once for each of their writes a read came between at most
        assert 303 <= board.decoded <= 300 + 2 * (2 + 2 + 1)
        decoded, reads = board.decoded, board.refreshes
        wait_for(lambda: board.refreshes >= reads + 5, True)
        assert board.decoded == decoded
        events.fp.raw._sock.shutdown(2)  # type: ignore[attr-defined] # the page goes away
        conn.close()
        time.sleep(2)  # noticed within a second
        reads = board.refreshes
        time.sleep(1)
        assert board.refreshes == reads  # nobody looking again: no read
        write_sessions(url, {"newer-one": 1})
        assert listed(dash)["newer-one"] == 1  # a request reads the store when its view is old
        assert board.refreshes == reads + 1
    finally:
        dash.stop()
        store.close()
