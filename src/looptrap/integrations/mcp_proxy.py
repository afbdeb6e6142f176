"""``looptrap mcp-proxy -- <command> [args...]``: an MCP server over stdio that guards another one.

The proxy starts the upstream MCP server as a child process and forwards every JSON-RPC message both ways as
it is (initialize, tools/list, resources, prompts, notifications, cancellation, methods it does not know),
except ``tools/call``: each call is checked by the guard first. Advice and blocks are answered with a tool
result that has ``isError: true`` and the advice, without calling the upstream tool; a halt is answered the
same way with text that tells the model to stop and report. Results coming back are recorded. A
``report_blocked`` tool is added to ``tools/list``. Messages are handled in arrival order, and calls stay
in flight concurrently: the proxy never waits for one call's result before forwarding the next message.

Built on the ``mcp`` SDK's stdio transports and message types (``pip install "looptrap[mcp]"``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp.types as types
from mcp import StdioServerParameters, stdio_client, stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

from looptrap.core.guard import AsyncGuard
from looptrap.core.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema
from looptrap.core.types import Verdict

__all__ = ["GuardedSession", "run_proxy"]

log = logging.getLogger("looptrap.mcp_proxy")
_TRACKED = 4096  # requests in flight to the upstream that the proxy remembers (bounded)


def _text_result(text: str, *, is_error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _result_value(result: dict[str, Any]) -> Any:
    """What the model reads of a tool result: its text content, else its structured or raw content."""
    content = result.get("content")
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        if texts and len(texts) == len(content):
            return "\n".join(str(t) for t in texts)
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    return content


def refusal_text(verdict: Verdict) -> str:
    """The tool result the model reads when the guard does not run its call (a halt's message already says
    to stop and what was tried)."""
    return verdict.message


class GuardedSession:
    """The proxy's decisions for one client connection: which messages to forward and which to answer.

    Pure message logic over the guard, no I/O of its own: ``from_client`` and ``from_upstream`` return the
    messages to send each way, so the transport loop in :func:`run_proxy` stays small.
    """

    def __init__(self, guard: AsyncGuard, report_tool: str | None = "report_blocked") -> None:
        self.guard = guard
        self.report_tool = report_tool
        self._calls: dict[Any, tuple[str, Any]] = {}  # tools/call id -> (tool, arguments)
        self._lists: set[Any] = set()  # tools/list ids
        self._inflight: dict[Any, str] = {}  # every forwarded request id -> method

    async def from_client(self, msg: Any) -> tuple[list[Any], list[Any]]:
        """A message from the client: (messages for the upstream, answers for the client)."""
        if not isinstance(msg, JSONRPCRequest):
            return [msg], []
        if msg.method == "tools/call":
            params = msg.params or {}
            name, arguments = params.get("name"), params.get("arguments")
            if not isinstance(name, str):
                return [msg], []  # malformed: the upstream answers it as it would without the proxy
            if self.report_tool and name == self.report_tool:
                return [], [await self._report(msg.id, arguments)]
            verdict = await self.guard.check(name, arguments)
            if not verdict.allowed:
                text = refusal_text(verdict)
                return [], [JSONRPCResponse(jsonrpc="2.0", id=msg.id, result=_text_result(text, is_error=True))]
            self._remember(self._calls, msg.id, (name, arguments))
        elif msg.method == "tools/list" and self.report_tool:
            self._lists.add(msg.id)
        self._remember(self._inflight, msg.id, msg.method)
        return [msg], []

    async def from_upstream(self, msg: Any) -> Any:
        """A message from the upstream, as the client should get it (``tools/list`` gains the report tool)."""
        if not isinstance(msg, JSONRPCResponse | JSONRPCError):
            return msg  # notifications, and the upstream's own requests to the client (ids of its own)
        self._inflight.pop(msg.id, None)
        call = self._calls.pop(msg.id, None)
        if call is not None:
            name, arguments = call
            if isinstance(msg, JSONRPCResponse):
                failed = bool(msg.result.get("isError"))
                await self.guard.record(name, arguments, _result_value(msg.result), is_error=failed)
            else:
                await self.guard.record(name, arguments, msg.error.message, is_error=True)
        if msg.id in self._lists:
            self._lists.discard(msg.id)
            if isinstance(msg, JSONRPCResponse) and not msg.result.get("nextCursor"):  # the last page only
                tools = msg.result.setdefault("tools", [])
                if isinstance(tools, list) and not any(t.get("name") == self.report_tool for t in tools):
                    tools.append(self._report_tool_definition())
        return msg

    def orphaned(self, why: str) -> list[Any]:
        """Errors for every request still waiting on an upstream that is gone."""
        out = [
            JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=types.INTERNAL_ERROR, message=why))
            for rid in self._inflight
        ]
        self._inflight.clear()
        self._calls.clear()
        return out

    async def _report(self, rid: Any, arguments: Any) -> Any:
        verdict = await self.guard.handle_report_blocked(arguments)
        if verdict.action != "halt":  # malformed arguments: the advice says what is missing
            return JSONRPCResponse(jsonrpc="2.0", id=rid, result=_text_result(verdict.message, is_error=True))
        text = f"{verdict.message}. Recorded. Stop calling tools and give the user your answer with what you found."
        return JSONRPCResponse(jsonrpc="2.0", id=rid, result=_text_result(text, is_error=False))

    def _report_tool_definition(self) -> dict[str, Any]:
        return {
            "name": self.report_tool,
            "description": REPORT_BLOCKED_DESCRIPTION,
            "inputSchema": report_blocked_schema(),
        }

    @staticmethod
    def _remember(d: dict[Any, Any], key: Any, value: Any) -> None:
        if len(d) >= _TRACKED:
            del d[next(iter(d))]
        d[key] = value


def _stdin_lines() -> tuple[threading.Event, AsyncIterator[str]]:
    """Our stdin, line by line, read by a daemon thread.

    The SDK's own stdin reader is a worker thread that cannot be cancelled: if the upstream dies while the
    client keeps our stdin open, the proxy could never exit. Setting the returned event ends this one.
    Raw ``os.read`` on a copy of fd 0: a daemon thread blocked in ``sys.stdin.buffer`` aborts shutdown.
    """
    send, receive = anyio.create_memory_object_stream[str](0)
    token = anyio.lowlevel.current_token()
    fd = os.dup(0)
    stop = threading.Event()

    def feed(line: str) -> None:
        if not stop.is_set():  # the loop may be shutting down: don't hand it work it will never run
            anyio.from_thread.run(send.send, line, token=token)

    def pump() -> None:
        buffer = b""
        try:
            while not stop.is_set() and (chunk := os.read(fd, 65536)):
                *complete, buffer = (buffer + chunk).split(b"\n")
                for raw in complete:
                    feed(raw.decode("utf-8", "replace") + "\n")
            if buffer:
                feed(buffer.decode("utf-8", "replace"))
            if not stop.is_set():
                anyio.from_thread.run(send.aclose, token=token)
        except Exception:  # noqa: BLE001 - the event loop or the stream is gone: nothing left to feed
            return

    threading.Thread(target=pump, name="looptrap-stdin", daemon=True).start()

    async def lines() -> AsyncIterator[str]:
        async with receive:
            async for line in receive:
                if stop.is_set():
                    break
                yield line

    return stop, lines()


async def run_proxy(command: list[str], session: GuardedSession) -> int:
    """Serve MCP on stdin/stdout in front of the server started by ``command``; returns the exit code
    (0 when the client closed the connection, 1 when the upstream exited first)."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ), cwd=os.getcwd())
    stop_reading, lines = _stdin_lines()
    rc = 0
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (client_read, client_write):
        async with stdio_client(params) as (up_read, up_write), anyio.create_task_group() as tg:

            async def client_to_upstream() -> None:
                async for item in client_read:
                    if isinstance(item, Exception):  # a line that is not a JSON-RPC message
                        err = types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {item}"[:200])
                        await client_write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=err)))
                        continue
                    forward, answers = await session.from_client(item.message)
                    for m in answers:
                        await client_write.send(SessionMessage(m))
                    for m in forward:
                        try:
                            await up_write.send(SessionMessage(m, metadata=item.metadata))
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                            break  # the upstream is gone: upstream_to_client answers what is pending
                tg.cancel_scope.cancel()  # the client left: stop the upstream

            async def upstream_to_client() -> None:
                nonlocal rc
                async for item in up_read:
                    if isinstance(item, Exception):
                        log.warning("looptrap mcp-proxy: unreadable message from the upstream server: %s", item)
                        continue
                    await client_write.send(SessionMessage(await session.from_upstream(item.message)))
                rc = 1
                for m in session.orphaned("the MCP server behind looptrap exited before answering"):
                    await client_write.send(SessionMessage(m))
                log.warning("looptrap mcp-proxy: the upstream MCP server exited")
                tg.cancel_scope.cancel()

            tg.start_soon(client_to_upstream)
            tg.start_soon(upstream_to_client)
        stop_reading.set()
        await client_write.aclose()
    return rc


def main(
    command: list[str],
    *,
    store_url: str | None,
    session_id: str | None,
    report_tool: str | None,
    fail_closed: bool,
) -> int:
    """The ``looptrap mcp-proxy`` command."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    if not command:
        print("looptrap mcp-proxy: give the MCP server's command after --", file=sys.stderr)
        return 2
    store = None
    if store_url:
        from looptrap.stores import open_async_store

        store = open_async_store(store_url)
    guard = AsyncGuard(
        store=store,
        session=session_id,
        report_tool=report_tool,
        on_store_error="closed" if fail_closed else "open",
        fail_closed=fail_closed,
    )
    return anyio.run(run_proxy, command, GuardedSession(guard, report_tool))
