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

    def __init__(self, profile: Path) -> None:
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


def serve_cli(store: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "looptrap", "dashboard", "--store", store, "--port", str(port), "--poll", "0.3"],
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
