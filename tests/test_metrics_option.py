"""``--metrics HOST:PORT`` on ``looptrap mcp-proxy`` and ``looptrap dashboard``, and ``looptrap metrics serve``:
the real CLI in subprocesses, a real MCP server behind the proxy driven by the SDK's client, real SQLite and
Redis stores, ``/metrics`` scraped over HTTP and parsed with prometheus-client's own parser."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, need
from looptrap import Guard

need(
    "prometheus-client (pip install 'looptrap[prometheus]')", importlib.util.find_spec("prometheus_client") is not None
)

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
CLI = [sys.executable, "-m", "looptrap"]


def scrape(url: str) -> tuple[str, Samples]:
    """``url`` read over HTTP: the text, and every sample by name and sorted labels."""
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, samples


def served_at(line: str) -> str:
    """The URL of a ``... serving http://HOST:PORT/metrics ...`` line."""
    assert " serving http://" in line, line
    return line.split(" serving ", 1)[1].split()[0]


# -- the MCP proxy: the metrics of its own guard --------------------------------------------------------------
@pytest.mark.parametrize("config_too", [False, True], ids=["option", "option-and-config-file"])
def test_the_proxy_serves_its_guards_metrics(tmp_path: Path, config_too: bool) -> None:
    need("the mcp package (pip install 'looptrap[mcp]')", importlib.util.find_spec("mcp") is not None)
    import anyio

    from looptrap.engine.engine import BATCH_GAP
    from test_mcp_proxy import connect, proxied, run, text

    port = free_port()
    options = ["--metrics", f"127.0.0.1:{port}"]
    if config_too:  # [metrics] prometheus = true adds the same observer: each call is still counted once
        (tmp_path / "looptrap.toml").write_text("[metrics]\nprometheus = true\n")
        options += ["--config", str(tmp_path / "looptrap.toml")]
    errlog = (tmp_path / "proxy.err").open("w+")

    async def session() -> tuple[list[Any], str, Samples]:
        async with connect(proxied(*options), errlog=errlog) as s:
            echoes = [await s.call_tool("echo", {"text": f"note {i}"}) for i in range(3)]
            looped = []
            for _ in range(5):
                looped.append(await s.call_tool("search_docs", {"query": "refund policy"}))
                if looped[-1].is_error:  # the model reads the refusal before it calls again
                    await anyio.sleep(BATCH_GAP + 0.1)
            assert [text(e) for e in echoes] == ["note 0", "note 1", "note 2"]
            page, samples = await anyio.to_thread.run_sync(scrape, f"http://127.0.0.1:{port}/metrics")
            return looped, page, samples

    looped, page, samples = run(session)
    errlog.seek(0)
    lines = errlog.read().splitlines()
    errlog.close()
    assert f"looptrap mcp-proxy: serving http://127.0.0.1:{port}/metrics" in lines
    assert [r.is_error for r in looped] == [False, False, True, True, True]
    assert text(looped[-1]).startswith("Halted (loop_repeat)")
    assert samples[("looptrap_tool_calls_total", (("tool", "echo"),))] == 3
    assert samples[("looptrap_tool_calls_total", (("tool", "search_docs"),))] == len(looped)
    for action in ("advise", "block", "halt"):
        key = ("looptrap_signals_total", (("action", action), ("kind", "repeat"), ("tool", "search_docs")))
        assert samples[key] == 1, action
    assert samples[("looptrap_halts_total", (("reason", "loop_repeat"),))] == 1
    assert "refund" not in page  # no argument is ever a label


def test_the_proxy_will_not_start_without_its_metrics_address() -> None:
    need("the mcp package (pip install 'looptrap[mcp]')", importlib.util.find_spec("mcp") is not None)
    from test_mcp_proxy import proxied

    with listening() as port:  # the port is taken
        got = subprocess.run(
            proxied("--metrics", f"127.0.0.1:{port}"),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert got.returncode == 2
    assert got.stderr.startswith(f"looptrap mcp-proxy: cannot listen on 127.0.0.1:{port}: ")
    assert got.stderr.count("\n") == 1
    assert got.stdout == ""  # nothing on the MCP channel
    bad = subprocess.run(proxied("--metrics", "localhost:http"), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "--metrics: not a port number: 'http'" in bad.stderr
    assert "Traceback" not in bad.stderr


@contextmanager
def listening() -> Iterator[int]:
    """A loopback port some other socket listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


# -- the dashboard and metrics serve: figures read from the store ----------------------------------------------
@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    return f"sqlite:///{tmp_path / 'sessions.db'}"


@contextmanager
def serving(*args: str, lines: int) -> Iterator[list[str]]:
    """A CLI command that serves until stopped: its first ``lines`` lines of stderr."""
    proc = subprocess.Popen([*CLI, *args], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        yield [proc.stderr.readline().strip() for _ in range(lines)]
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


def drive(url: str) -> dict[str, int]:
    """Sessions written in this process, while the command reads the store in its own: calls per session."""
    from looptrap.stores import open_store

    store = open_store(url)
    try:
        busy = Guard(store=store, session="customer-4242-busy")
        for i in range(7):
            if busy.check("read_file", {"path": f"src/{i}.py"}).allowed:
                busy.record("read_file", {"path": f"src/{i}.py"}, f"contents {i}")
        quiet = Guard(store=store, session="customer-4242-quiet")
        for i in range(2):
            if quiet.check("read_file", {"path": f"docs/{i}.md"}).allowed:
                quiet.record("read_file", {"path": f"docs/{i}.md"}, f"doc {i}")
        halted = Guard(store=store, session="customer-4242-halted")
        for _ in range(8):
            v = halted.check("search_docs", {"query": "x"})
            if v.allowed:
                halted.record("search_docs", {"query": "x"}, "0 results")
            halted.end_turn()
        assert halted.halted is not None
        return {"busy": busy.state.calls, "quiet": quiet.state.calls}
    finally:
        store.close()


def assert_store_figures(url: str, calls: dict[str, int]) -> None:
    deadline = time.monotonic() + 20
    while True:  # the figures are read from the store at each scrape
        page, samples = scrape(url)
        if samples.get(("looptrap_store_sessions", ())) == 3:
            break
        assert time.monotonic() < deadline, page
        time.sleep(0.2)
    assert samples[("looptrap_store_up", ())] == 1
    assert samples[("looptrap_halted_sessions", ())] == 1
    assert samples[("looptrap_active_sessions", ())] == 2
    assert samples[("looptrap_top_session_tool_calls", (("rank", "1"),))] == calls["busy"]
    assert samples[("looptrap_top_session_tool_calls", (("rank", "2"),))] == calls["quiet"]
    assert "customer-4242" not in page  # no session id is a label


def test_the_dashboard_serves_the_store_metrics(store_url: str) -> None:
    port = free_port()
    with serving("dashboard", "--store", store_url, "--port", "0", "--metrics", str(port), lines=2) as lines:
        assert "dashboard of" in lines[0], lines
        assert served_at(lines[1]) == f"http://127.0.0.1:{port}/metrics"
        calls = drive(store_url)
        assert_store_figures(f"http://127.0.0.1:{port}/metrics", calls)
        dashboard = lines[0].rsplit(" at ", 1)[1]
        with urllib.request.urlopen(dashboard + "api/sessions", timeout=10) as r:  # and the page still serves
            assert r.status == 200


def test_metrics_serve_reads_the_store(store_url: str) -> None:
    with serving("metrics", "serve", "--store", store_url, "--port", "0", lines=1) as lines:
        where = served_at(lines[0])
        assert where.startswith("http://127.0.0.1:")
        assert_store_figures(where, drive(store_url))


def test_the_dashboard_will_not_start_without_its_metrics_address(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with listening() as port:
        got = subprocess.run(
            [*CLI, "dashboard", "--store", store, "--port", "0", "--metrics", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert got.returncode == 2
    assert got.stderr == f"looptrap: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    bad = subprocess.run([*CLI, "dashboard", "--metrics", "[::1:80"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "--metrics: not HOST:PORT: '[::1:80'" in bad.stderr


# -- requests for another host; the store the configuration file names; the prometheus extra missing ---------
def test_metrics_answer_requests_for_their_own_host_only(tmp_path: Path) -> None:
    from test_dashboard import assert_only_own_host

    url = f"sqlite:///{tmp_path / 's.db'}"
    drive(url)
    port = free_port()
    with serving("metrics", "serve", "--store", url, "--port", "0", lines=1) as lines:
        where = served_at(lines[0])
        assert_only_own_host(int(where.split(":")[2].split("/")[0]), "/metrics", "looptrap_store_sessions 3.0")
    with serving("dashboard", "--store", url, "--port", "0", "--metrics", str(port), lines=2):
        assert_only_own_host(port, "/metrics", "looptrap_store_sessions 3.0")


def test_the_configuration_file_names_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPTRAP_STORE", raising=False)
    url = f"sqlite:///{tmp_path / 'configured.db'}"
    calls = drive(url)
    config = tmp_path / "looptrap.toml"
    config.write_text(f'store = "{url}"\n')
    with serving("metrics", "serve", "--config", str(config), "--port", "0", lines=1) as lines:
        assert lines[0].endswith(f" for {url}"), lines
        assert_store_figures(served_at(lines[0]), calls)
    with serving("dashboard", "--config", str(config), "--port", "0", lines=1) as lines:
        assert f"dashboard of {url} at " in lines[0], lines
        with urllib.request.urlopen(lines[0].rsplit(" at ", 1)[1] + "api/sessions", timeout=10) as r:
            assert len(json.load(r)["sessions"]) == 3
    config.write_text("store = 42\n")
    for command in (["metrics", "serve"], ["dashboard"]):
        got = subprocess.run([*CLI, *command, "--config", str(config)], capture_output=True, text=True, timeout=60)
        assert got.returncode == 2
        assert got.stderr.startswith("looptrap: ")
        assert str(config) in got.stderr
        assert got.stderr.count("\n") == 1


def test_metrics_serve_without_the_extra_says_so_once() -> None:
    hidden = (
        "import sys; sys.modules['prometheus_client'] = None; from looptrap.cli.main import main; "
        "raise SystemExit(main(['metrics', 'serve', '--port', '0']))"
    )
    got = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True, timeout=60)
    assert got.returncode == 2
    assert got.stderr == "looptrap: metrics serve needs the prometheus extra: pip install 'looptrap[prometheus]'\n"


# -- the proxy: made-up tool names cannot take the real tools' labels ------------------------------------------
@pytest.mark.parametrize("report_tool", [True, False], ids=["report-tool", "no-report-tool"])
def test_made_up_tool_names_cannot_crowd_out_the_real_ones(tmp_path: Path, report_tool: bool) -> None:
    need("the mcp package (pip install 'looptrap[mcp]')", importlib.util.find_spec("mcp") is not None)
    from test_mcp_proxy import connect, proxied, run

    port = free_port()
    errlog = (tmp_path / "proxy.err").open("w+")

    async def session() -> Samples:
        import anyio

        options = ["--metrics", f"127.0.0.1:{port}"] + ([] if report_tool else ["--no-report-tool"])
        async with connect(proxied(*options), errlog=errlog) as s:
            await s.list_tools()  # as a client does when it connects
            for i in range(60):  # 60 tools the upstream never listed: more than the 50 label slots
                await s.call_tool(f"made_up_tool_{i}", {"text": f"{i}"})
            for i in range(3):
                await s.call_tool("echo", {"text": f"note {i}"})
            await s.call_tool("search_docs", {"query": "refund policy"})
            return (await anyio.to_thread.run_sync(scrape, f"http://127.0.0.1:{port}/metrics"))[1]

    samples = run(session)
    errlog.close()
    calls = {dict(labels)["tool"]: n for (name, labels), n in samples.items() if name == "looptrap_tool_calls_total"}
    assert calls == {"echo": 3, "search_docs": 1, "other": 60}
    signals = [dict(labels) for (name, labels), _ in samples.items() if name == "looptrap_signals_total"]
    assert all(not s["tool"].startswith("made_up") for s in signals)
