"""``looptrap mcp-proxy``: a real MCP server (tests/mcp_upstream.py) behind the proxy, driven by the MCP SDK's
real client over stdio, exactly as a desktop client would run it, or by a raw JSON-RPC client that writes
lines to the proxy's stdin (for what the SDK's client would never send or wait for)."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import need

need("the mcp package (pip install 'looptrap[mcp]')", importlib.util.find_spec("mcp") is not None)

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from looptrap.engine.engine import BATCH_GAP  # noqa: E402

UPSTREAM = [sys.executable, str(Path(__file__).parent / "mcp_upstream.py")]
RAW_UPSTREAM = [*UPSTREAM, "--raw"]
PROXY = [sys.executable, "-m", "looptrap.cli.main", "mcp-proxy"]


@asynccontextmanager
async def connect(command: list[str], errlog: Any = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    log = errlog if errlog is not None else sys.stderr
    async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def proxied(*options: str) -> list[str]:
    return [*PROXY, *options, "--", *UPSTREAM]


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        with anyio.fail_after(60):
            return await fn()

    return anyio.run(bounded)


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_everything_passes_through_unchanged() -> None:
    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        out = []
        for command in (UPSTREAM, proxied()):
            async with connect(command) as s:
                tools = await s.list_tools()
                echo = await s.call_tool("echo", {"text": "héllo {} \n"})
                res = await s.read_resource("test://readme")  # type: ignore[arg-type]
                prompt = await s.get_prompt("greet", {"name": "Ada"})
                unknown = await s.call_tool("nope", {})
                out.append(
                    {
                        "tools": {t.name: t.model_dump() for t in tools.tools},
                        "echo": echo.model_dump(),
                        "resources": [r.model_dump() for r in (await s.list_resources()).resources],
                        "readme": res.contents[0].model_dump(),
                        "prompts": [p.model_dump() for p in (await s.list_prompts()).prompts],
                        "prompt": prompt.model_dump(),
                        "unknown": unknown.model_dump(),
                    }
                )
        return out[0], out[1]

    direct, through = run(both)
    report = through["tools"].pop("report_blocked")
    assert through == direct
    assert report["input_schema"]["required"] == ["tried", "needed"]
    assert "correct" in report["description"]


def test_a_looping_client_gets_advice_then_a_block_then_a_halt(tmp_path: Path, monkeypatch: Any) -> None:
    ran = tmp_path / "ran.log"
    monkeypatch.setenv("MCP_UPSTREAM_LOG", str(ran))

    async def loop() -> tuple[list[Any], str]:
        async with connect(proxied()) as s:
            results = []
            for _ in range(6):
                results.append(await s.call_tool("search_docs", {"query": "refund policy"}))
                if results[-1].is_error:  # the model reads the refusal: refusals closer than BATCH_GAP
                    await anyio.sleep(BATCH_GAP + 0.1)  # are the parallel calls of one turn
            after = text(await s.call_tool("echo", {"text": "still there?"}))
        return results, after

    results, after = run(loop)
    made = str(len(ran.read_text().splitlines()))
    assert [r.is_error for r in results] == [False, False, True, True, True, True]
    assert [text(r) for r in results[:2]] == ["0 results", "0 results"]
    assert text(results[2]).startswith("You have called search_docs with these exact arguments 3 times")
    assert "report_blocked" in text(results[2])
    assert text(results[3]).startswith("Blocked: this call was not run.")
    assert text(results[4]).startswith("Halted (loop_repeat)")
    assert "Do not call more tools" in text(results[4])
    assert 'tried: search_docs {"query":"refund policy"}' in text(results[4])
    assert made == "2"  # the tool body ran only for the two allowed calls
    assert after.startswith("Halted (loop_repeat)")  # halted stays halted


def test_back_to_back_identical_calls_climb_the_ladder_without_a_pause(tmp_path: Path, monkeypatch: Any) -> None:
    """A client that sends the same call again as soon as it gets each answer, with no pause at all: each
    call after the one the guard intercepted is the next step (the client got its answer), not a parallel call
    of the same turn, so the loop is advised, blocked and halted at calls 3, 4 and 5."""
    ran = tmp_path / "ran.log"
    monkeypatch.setenv("MCP_UPSTREAM_LOG", str(ran))

    async def loop() -> list[Any]:
        async with connect(proxied()) as s:
            return [await s.call_tool("search_docs", {"query": "refund policy"}) for _ in range(5)]

    results = run(loop)
    assert [r.is_error for r in results] == [False, False, True, True, True]
    assert text(results[2]).startswith("You have called search_docs with these exact arguments 3 times")
    assert text(results[3]).startswith("Blocked: this call was not run.")
    assert text(results[4]).startswith("Halted (loop_repeat)")
    assert len(ran.read_text().splitlines()) == 2


def test_a_client_that_changes_course_is_left_alone() -> None:
    async def course() -> list[Any]:
        async with connect(proxied()) as s:
            out = [await s.call_tool("search_docs", {"query": "refund policy"}) for _ in range(3)]
            out.append(await s.call_tool("echo", {"text": "the refund policy is in the FAQ"}))
            out.append(await s.call_tool("count", {}))
            return out

    results = run(course)
    assert [r.is_error for r in results] == [False, False, True, False, False]
    assert text(results[3]) == "the refund policy is in the FAQ"


def test_report_blocked_ends_the_run_cleanly() -> None:
    async def report() -> tuple[Any, Any, Any]:
        async with connect(proxied()) as s:
            bad = await s.call_tool("report_blocked", {"tried": []})
            good = await s.call_tool(
                "report_blocked", {"tried": ["search_docs 'refund policy'"], "needed": "access to the billing docs"}
            )
            after = await s.call_tool("echo", {"text": "x"})
            return bad, good, after

    bad, good, after = run(report)
    assert bad.is_error
    assert "'tried' must be a non-empty list" in text(bad)
    assert not good.is_error
    assert "access to the billing docs" in text(good)
    assert after.is_error
    assert text(after).startswith("Reported blocked")


def test_the_report_tool_can_be_renamed_or_left_out() -> None:
    async def names(*options: str) -> list[str]:
        async with connect(proxied(*options)) as s:
            return [t.name for t in (await s.list_tools()).tools]

    assert run(lambda: names("--no-report-tool")) == ["echo", "search_docs", "slow", "count", "crash"]
    assert "give_up" in run(lambda: names("--report-tool", "give_up"))


def test_calls_stay_concurrent_and_cancellation_passes_through() -> None:
    async def concurrent() -> tuple[dict[str, str], float, str]:
        async with connect(proxied()) as s:
            got: dict[str, str] = {}

            async def one(tag: str) -> None:
                got[tag] = text(await s.call_tool("slow", {"seconds": 1.0, "tag": tag}))

            start = time.monotonic()
            async with anyio.create_task_group() as tg:
                for tag in ("a", "b", "c"):
                    tg.start_soon(one, tag)
            elapsed = time.monotonic() - start
            with anyio.move_on_after(0.3):  # the client gives up: it sends notifications/cancelled
                await s.call_tool("slow", {"seconds": 5.0, "tag": "abandoned"})
            after = text(await s.call_tool("echo", {"text": "next"}))
            return got, elapsed, after

    got, elapsed, after = run(concurrent)
    assert got == {"a": "a", "b": "b", "c": "c"}
    assert elapsed < 2.5  # three 1 s calls in flight at once, not one after another
    assert after == "next"


def test_an_upstream_crash_is_an_error_not_a_hang(tmp_path: Path) -> None:
    async def crash() -> tuple[MCPError, float]:
        async with connect(proxied()) as s:
            await s.call_tool("echo", {"text": "warm"})
            start = time.monotonic()
            with pytest.raises(MCPError) as err:
                await s.call_tool("crash", {})
            return err.value, time.monotonic() - start

    err, elapsed = run(crash)
    assert elapsed < 10
    assert "exited" in str(err) or "Connection closed" in str(err)


def test_two_proxies_naming_one_session_share_it(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/shared.db"

    async def twice() -> list[Any]:
        out = []
        for _ in range(2):  # two clients, each with its own proxy process, one after the other
            async with connect(proxied("--store", store, "--session", "team-1")) as s:
                out.append(await s.call_tool("search_docs", {"query": "refund policy"}))
        async with connect(proxied("--store", store, "--session", "team-1")) as s:
            out.append(await s.call_tool("search_docs", {"query": "refund policy"}))
        return out

    results = run(twice)
    assert [r.is_error for r in results] == [False, False, True]


def test_without_a_command_it_says_what_is_missing() -> None:
    proc = subprocess.run([*PROXY, "--"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "give the MCP server's command" in proc.stderr


def test_without_a_command_it_asks_for_the_command_even_without_the_mcp_package(tmp_path: Path) -> None:
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    for argv in ([*PROXY], [*PROXY, "--"]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 2
        assert proc.stderr == "looptrap mcp-proxy: give the MCP server's command after --\n"


def test_a_server_that_cannot_start_is_one_line_and_exit_2(tmp_path: Path) -> None:
    not_executable = tmp_path / "server.sh"
    not_executable.write_text("#!/bin/sh\n")
    for command, why in (("/no/such/server", "No such file or directory"), (str(not_executable), "Permission denied")):
        proc = subprocess.run([*PROXY, "--", command, "--flag"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert proc.stderr == f"looptrap mcp-proxy: cannot start {command}: {why}\n"


class Raw:
    """A raw JSON-RPC client: ``command`` as a subprocess, lines written to its stdin, its stdout read line
    by line by a thread, its stderr kept in a file (``errors()``)."""

    def __init__(self, command: list[str], stderr: Path) -> None:
        self.stderr = stderr
        with stderr.open("wb") as err:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        self.got: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.got.put(json.loads(line))
        self.got.put(None)

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def receive(self, timeout: float = 30) -> dict[str, Any] | None:
        """The next message from the proxy (``None`` once its stdout is closed)."""
        return self.got.get(timeout=timeout)

    def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request, return the next message (the answer, as nothing else is in flight)."""
        self.send(request(rid, method, params))
        got = self.receive()
        assert got is not None, "the proxy closed its stdout"
        return got

    def initialize(self) -> None:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        got = self.request(0, "initialize", params)
        assert "result" in got, got
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def errors(self) -> list[str]:
        return self.stderr.read_text().splitlines()

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(timeout=30)
            assert self.proc.stdout is not None
            self.proc.stdout.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def request(rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params is not None else {})}


def call(rid: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return request(rid, "tools/call", {"name": tool, "arguments": arguments})


def test_once_the_upstream_is_gone_the_proxy_answers_what_is_pending_and_exits(tmp_path: Path) -> None:
    with Raw(proxied(), tmp_path / "stderr") as client:
        client.initialize()
        client.send(call(1, "slow", {"seconds": 30, "tag": "never"}), call(2, "crash", {}))
        answers = {m["id"]: m for m in (client.receive(), client.receive()) if m is not None}
        assert client.proc.wait(timeout=20) == 1  # the client still holds the proxy's stdin open
        assert client.receive() is None
    why = "the MCP server behind looptrap exited before answering"
    assert {rid: m["error"]["message"] for rid, m in answers.items()} == {1: why, 2: why}
    assert client.errors() == ["looptrap mcp-proxy: the upstream MCP server exited"]


def test_an_upstream_that_exits_at_once_ends_the_proxy(tmp_path: Path) -> None:
    with Raw([*PROXY, "--", sys.executable, "-c", "pass"], tmp_path / "stderr") as client:
        assert client.proc.wait(timeout=20) == 1
    assert client.errors() == ["looptrap mcp-proxy: the upstream MCP server exited"]


def test_tools_that_are_not_objects_are_forwarded_as_they_are(tmp_path: Path) -> None:
    with Raw([*PROXY, "--", *RAW_UPSTREAM], tmp_path / "stderr") as client:
        client.initialize()
        first = client.request(1, "tools/list")
        second = client.request(2, "tools/list", {"cursor": "2"})
        pong = client.request(3, "ping")
        assert client.close() == 0
    tools = first["result"]["tools"]
    assert tools[:4] == [1, "x", None, {"name": "echo", "inputSchema": {"type": "object"}}]
    assert [t["name"] for t in tools[4:]] == ["report_blocked"]
    assert second["result"] == {"tools": {"not": "a list"}}
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_what_the_proxy_quotes_from_the_upstream_is_one_printable_line(tmp_path: Path) -> None:
    with Raw([*PROXY, "--", *RAW_UPSTREAM], tmp_path / "stderr") as client:
        client.initialize()
        answer = client.request(1, "tools/call", {"name": "garble", "arguments": {"text": "abc"}})
        assert client.close() == 0
    assert answer["result"]["content"][0]["text"] == "3"
    [line] = client.errors()
    assert line.startswith("looptrap mcp-proxy: unreadable message from the upstream server: ")
    assert line.isprintable()
    assert len(line) <= 300


def never_answering_store() -> tuple[socket.socket, str]:
    """A store URL whose server accepts connections and never answers, as a hung Redis does."""
    need("the redis package (pip install 'looptrap[redis]')", importlib.util.find_spec("redis") is not None)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    return listener, f"redis://127.0.0.1:{listener.getsockname()[1]}/0?socket_timeout=1&socket_connect_timeout=1"


def test_a_hung_store_holds_up_only_the_calls_that_wait_for_it(tmp_path: Path, monkeypatch: Any) -> None:
    ran = tmp_path / "ran.log"
    monkeypatch.setenv("MCP_UPSTREAM_LOG", str(ran))
    listener, store = never_answering_store()
    with listener, Raw(proxied("--store", store), tmp_path / "stderr") as client:
        client.initialize()
        client.send(
            *(call(rid, "echo", {"text": str(rid)}) for rid in range(1, 6)),
            call(6, "search_docs", {"query": "cancelled before it ran"}),
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6, "reason": "user"}},
            request(7, "ping"),
            request(8, "tools/list"),
        )
        first = [client.receive(), client.receive()]
        client.send(call(9, "echo", {"text": "after"}))  # queued behind the five: no answer to 6 comes first
        rest = [client.receive(timeout=120) for _ in range(6)]
    assert [m["id"] for m in first if m is not None] == [7, 8]  # the calls wait for the store, the rest does not
    answers = {m["id"]: m["result"]["content"][0]["text"] for m in rest if m is not None}
    assert answers == {1: "1", 2: "2", 3: "3", 4: "4", 5: "5", 9: "after"}  # the store is down: allowed
    assert not ran.exists()  # the cancelled call never reached the upstream


def test_a_large_request_costs_about_what_it_costs_without_the_proxy(tmp_path: Path) -> None:
    """A 32 MB request through the proxy against the same request sent straight to the upstream, in this run:
    reading a line in time quadratic in its length made it 25 times slower; linear, under 3 times."""
    size = 32 << 20

    def fastest(command: list[str]) -> float:
        times = []
        with Raw(command, tmp_path / "stderr") as client:
            client.initialize()
            for rid, letter in enumerate("xy", 1):  # two different calls: the best of two
                start = time.monotonic()
                answer = client.request(rid, "tools/call", {"name": "size", "arguments": {"text": letter * size}})
                times.append(time.monotonic() - start)
                assert answer["result"]["content"][0]["text"] == str(size)
        return min(times)

    direct = fastest(RAW_UPSTREAM)
    through = fastest([*PROXY, "--", *RAW_UPSTREAM])
    assert through < 8 * direct, (through, direct)


def test_the_configuration_file_sets_the_proxys_guard(tmp_path: Path) -> None:
    config = tmp_path / "looptrap.toml"
    config.write_text('report_tool = "give_up"\n\n[detectors.repeat]\nthreshold = 4\n')

    async def loop() -> tuple[list[str], list[Any]]:
        async with connect(proxied("--config", str(config))) as s:
            names = [t.name for t in (await s.list_tools()).tools]
            return names, [await s.call_tool("search_docs", {"query": "refund policy"}) for _ in range(4)]

    names, results = run(loop)
    assert "give_up" in names  # the file's report_tool
    assert "report_blocked" not in names
    assert [r.is_error for r in results] == [False, False, False, True]  # the 4th identical call, as the file says
    assert "give_up" in text(results[3])
    config.write_text("[detectors.repeat]\nthreshhold = 4\n")
    proc = subprocess.run(proxied("--config", str(config)), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(
        f"{config}:2: detectors.repeat.threshhold: unknown key (known: "
        "enabled, non_retryable_threshold, pending_threshold, threshold, warn_only)"
    )
