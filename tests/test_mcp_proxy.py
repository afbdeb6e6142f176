"""``looptrap mcp-proxy``: a real MCP server (tests/mcp_upstream.py) behind the proxy, driven by the MCP SDK's
real client over stdio, exactly as a desktop client would run it."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import need

need("the mcp package (pip install 'looptrap[mcp]')", __import__("importlib").util.find_spec("mcp") is not None)

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from looptrap.core.engine import BATCH_GAP  # noqa: E402

UPSTREAM = [sys.executable, str(Path(__file__).parent / "mcp_upstream.py")]
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
    import subprocess

    proc = subprocess.run([*PROXY, "--"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "give the MCP server's command" in proc.stderr
