"""``looptrap mcp-proxy -- <command> [args...]``: an MCP server over stdio that guards another one.

The proxy starts the upstream MCP server as a child process and forwards every JSON-RPC message both ways as
it is (initialize, tools/list, resources, prompts, notifications, cancellation, methods it does not know),
except ``tools/call``: each call is checked by the guard first. Advice and blocks are answered with a tool
result that has ``isError: true`` and the advice, without calling the upstream tool; a halt is answered the
same way with text that tells the model to stop and report. Results coming back are recorded. A
``report_blocked`` tool is added to ``tools/list``. The tools the upstream lists are passed on to the guard's
metrics observers (``tools_listed``): only those keep or get a tool label of their own, so made-up tool names
cannot crowd the real ones out of the metrics.

Messages are forwarded in arrival order, except that a ``tools/call`` waits for its own check (which may wait
on the guard's store) while the messages after it go on; calls stay in flight concurrently. Once the upstream
is gone, every request still waiting gets an error and the proxy exits.

Built on the ``mcp`` SDK's stdio transports and message types (``pip install "looptrap[mcp]"``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AsyncExitStack
from functools import partial
from typing import Any, TypeGuard, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp.types as types
from mcp import StdioServerParameters, stdio_client, stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from looptrap.core.printable import one_line
from looptrap.core.types import Verdict
from looptrap.drivers.guard import AsyncGuard
from looptrap.engine.config import GuardConfig
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["GuardedSession", "UpstreamStartError", "run_proxy"]

log = logging.getLogger("looptrap.mcp_proxy")
_TRACKED = 4096  # requests in flight to the upstream that the proxy remembers (bounded)
_READ = 1 << 16  # bytes per read of our stdin
GONE = "the MCP server behind looptrap exited before answering"
_SDK_PARSE_FAILURE = "Failed to parse JSONRPC message from server"  # logged by the SDK with a traceback

Record = Callable[[], Coroutine[Any, Any, None]]


class UpstreamStartError(OSError):
    """The upstream server's command could not be started (the message says which and why)."""


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


def _cancelled_id(msg: Any) -> Any:
    """The request id a ``notifications/cancelled`` names, else ``None``."""
    if isinstance(msg, JSONRPCNotification) and msg.method == "notifications/cancelled" and msg.params:
        return msg.params.get("requestId")
    return None


class GuardedSession:
    """The proxy's decisions for one client connection: which messages to forward and which to answer.

    Message logic over the guard, no I/O of its own: ``from_client`` and ``from_upstream`` return the
    messages to send each way, so the transport loop in :func:`run_proxy` stays small.
    """

    def __init__(self, guard: AsyncGuard, report_tool: str | None = "report_blocked") -> None:
        self.guard = guard
        self.report_tool = report_tool
        self.gone: str | None = None  # why the upstream is gone, once it is
        self._calls: dict[Any, tuple[str, Any]] = {}  # tools/call id -> (tool, arguments)
        self._lists: set[Any] = set()  # tools/list ids
        self._inflight: dict[Any, str] = {}  # every forwarded request id -> method
        self._checking: set[Any] = set()  # tools/call ids whose check is under way
        # metrics observers that label tools (PrometheusMetrics.tools_listed): told which tools the upstream lists
        observers = getattr(getattr(guard, "config", None), "observers", ())
        self._listed_to = [f for f in (getattr(o, "tools_listed", None) for o in observers) if callable(f)]

    def guarded(self, msg: Any) -> TypeGuard[JSONRPCRequest]:
        """Whether ``msg`` is a ``tools/call`` for the guard: :meth:`from_client` may then wait on the guard's
        store, so the transport handles it beside the messages after it, not before them."""
        return (
            isinstance(msg, JSONRPCRequest)
            and msg.method == "tools/call"
            and isinstance((msg.params or {}).get("name"), str)
        )

    async def from_client(self, msg: Any) -> tuple[list[Any], list[Any]]:
        """A message from the client: (messages for the upstream, answers for the client)."""
        if self.gone is not None:  # requests get the error at once, the rest is dropped
            return [], self._errors([msg.id] if isinstance(msg, JSONRPCRequest) else [])
        if not isinstance(msg, JSONRPCRequest):
            return [msg], []
        if self.guarded(msg):
            params = msg.params or {}
            name, arguments = params["name"], params.get("arguments")
            self._checking.add(msg.id)
            try:
                if self.report_tool and name == self.report_tool:
                    answer = await self._report(msg.id, arguments)
                    return ([], [answer]) if self.gone is None else ([], [])
                verdict = await self.guard.check(name, arguments)
            finally:
                self._checking.discard(msg.id)
            if self.gone is not None:
                return [], []  # orphaned() answered it while the guard was checking
            if not verdict.allowed:
                text = refusal_text(verdict)
                return [], [JSONRPCResponse(jsonrpc="2.0", id=msg.id, result=_text_result(text, is_error=True))]
            self._remember(self._calls, msg.id, (name, arguments))
        elif msg.method == "tools/list" and (self.report_tool or self._listed_to):
            self._lists.add(msg.id)
        self._remember(self._inflight, msg.id, msg.method)
        return [msg], []

    def from_upstream(self, msg: Any) -> tuple[Any, Record | None]:
        """A message from the upstream: (the message as the client should get it, the guard's record of a
        call's result, to run once it is forwarded). ``tools/list`` gains the report tool; tools that are not
        objects are forwarded as they are."""
        if not isinstance(msg, JSONRPCResponse | JSONRPCError):
            return msg, None  # notifications, and the upstream's own requests to the client (ids of its own)
        self._inflight.pop(msg.id, None)
        record: Record | None = None
        call = self._calls.pop(msg.id, None)
        if call is not None:
            name, arguments = call
            if isinstance(msg, JSONRPCResponse):
                failed = bool(msg.result.get("isError"))
                record = partial(self.guard.record, name, arguments, _result_value(msg.result), is_error=failed)
            else:
                record = partial(self.guard.record, name, arguments, msg.error.message, is_error=True)
        if msg.id in self._lists:
            self._lists.discard(msg.id)
            if isinstance(msg, JSONRPCResponse):
                self._tools_page(msg.result)
        return msg, record

    def _tools_page(self, result: dict[str, Any]) -> None:
        """A page of ``tools/list``: the report tool added to the last page; its tools passed on to the metrics
        observers (names that are not strings left out)."""
        if self.report_tool and not result.get("nextCursor"):  # the last page only
            tools = result.setdefault("tools", [])
            if isinstance(tools, list) and not any(
                isinstance(t, dict) and t.get("name") == self.report_tool for t in tools
            ):
                tools.append(self._report_tool_definition())
        tools = result.get("tools")
        if self._listed_to and isinstance(tools, list):
            listed = [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
            for tell in self._listed_to:
                try:
                    tell(listed)
                except Exception:  # an observer's bug must not take the connection down
                    log.warning("looptrap mcp-proxy: a metrics observer failed on tools/list", exc_info=True)

    def orphaned(self, why: str) -> list[Any]:
        """The upstream is gone: errors for every request still waiting (forwarded, or being checked); from
        now on :meth:`from_client` answers every request with the same error."""
        self.gone = why
        waiting = [*self._inflight, *self._checking]
        self._inflight.clear()
        self._calls.clear()
        self._lists.clear()
        self._checking.clear()
        return self._errors(waiting)

    def _errors(self, ids: list[Any]) -> list[Any]:
        err = types.ErrorData(code=types.INTERNAL_ERROR, message=self.gone or GONE)
        return [JSONRPCError(jsonrpc="2.0", id=rid, error=err) for rid in ids]

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


class _StdinLines:
    """Our stdin, line by line, read by a daemon thread; made in the event loop.

    The SDK's own stdin reader is a worker thread that cannot be cancelled: if the upstream dies while the
    client keeps our stdin open, the proxy could never exit. :meth:`close` ends :meth:`lines` at once, whatever
    the thread is blocked on. Raw ``os.read`` on a copy of fd 0 (a daemon thread blocked in
    ``sys.stdin.buffer`` aborts shutdown). A line is kept as its pieces and joined once, at its newline, so
    it costs time linear in its length.
    """

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[str](0)
        self._token = anyio.lowlevel.current_token()
        self._closed = threading.Event()
        self._fd = os.dup(0)
        threading.Thread(target=self._pump, name="looptrap-stdin", daemon=True).start()

    async def lines(self) -> AsyncIterator[str]:
        async with self._receive:
            async for line in self._receive:
                yield line

    def close(self) -> None:
        """End :meth:`lines` (in the event loop); the thread feeds nothing more."""
        self._closed.set()
        self._send.close()

    def _feed(self, line: bytes) -> None:
        if not self._closed.is_set():  # the loop may be shutting down: don't hand it work it will never run
            anyio.from_thread.run(self._send.send, line.decode("utf-8", "replace"), token=self._token)

    def _pump(self) -> None:
        pieces: list[bytes] = []  # the current line so far
        try:
            while not self._closed.is_set() and (chunk := os.read(self._fd, _READ)):
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    pieces.append(chunk[start : end + 1])
                    self._feed(b"".join(pieces))
                    pieces.clear()
                    start = end + 1
                if start < len(chunk):
                    pieces.append(chunk[start:])
            if pieces:
                self._feed(b"".join(pieces))
            anyio.from_thread.run_sync(self._send.close, token=self._token)
        except Exception:  # noqa: BLE001 - the event loop or the stream is gone: nothing left to feed
            return
        finally:
            os.close(self._fd)


async def run_proxy(command: list[str], session: GuardedSession) -> int:
    """Serve MCP on stdin/stdout in front of the server started by ``command``; returns the exit code (0 when
    the client closed the connection, 1 when the upstream exited first). Raises :class:`UpstreamStartError`
    when the command cannot be started."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ), cwd=os.getcwd())
    async with AsyncExitStack() as stack:
        try:
            upstream = await stack.enter_async_context(stdio_client(params))
        except OSError as exc:
            raise UpstreamStartError(f"cannot start {one_line(command[0])}: {exc.strerror or exc}") from exc
        stdin = _StdinLines()
        client_read, client_write = await stack.enter_async_context(
            stdio_server(stdin=cast("anyio.AsyncFile[str]", stdin.lines()))
        )
        rc = await _relay(session, (client_read, client_write), upstream)
        stdin.close()
        async for item in client_read:  # read as the upstream went: requests get the error
            if not isinstance(item, Exception):
                for m in (await session.from_client(item.message))[1]:
                    await client_write.send(SessionMessage(m))
        await client_write.aclose()
    return rc


async def _relay(session: GuardedSession, client: Any, upstream: Any) -> int:
    """Forward both ways until the client or the upstream leaves; returns the exit code. Each guarded call
    runs in its own task (a cancel scope per call, cancelled by the client's ``notifications/cancelled`` or
    as the upstream goes); results are recorded in tasks that the exit waits for."""
    client_read, client_write = client
    up_read, up_write = upstream
    checking: dict[Any, anyio.CancelScope] = {}
    rc = 0

    async def deliver(item: SessionMessage, forward: list[Any], answers: list[Any]) -> None:
        for m in answers:
            await client_write.send(SessionMessage(m))
        for m in forward:
            try:
                await up_write.send(SessionMessage(m, metadata=item.metadata))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the upstream is gone: upstream_to_client answers what is pending

    async def checked(item: SessionMessage, rid: Any, scope: anyio.CancelScope) -> None:
        with scope:
            forward, answers = await session.from_client(item.message)
        if scope.cancel_called:
            return  # the client cancelled it, or it was answered as the upstream went
        checking.pop(rid, None)
        await deliver(item, forward, answers)

    async def client_to_upstream() -> None:
        async for item in client_read:
            if isinstance(item, Exception):  # a line that is not a JSON-RPC message
                err = types.ErrorData(code=types.PARSE_ERROR, message=one_line(f"Parse error: {item}"))
                await client_write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=err)))
                continue
            msg = item.message
            rid = _cancelled_id(msg)
            if rid is not None and rid in checking:
                checking.pop(rid).cancel()  # not forwarded yet: the call and its cancellation are dropped
            elif session.guarded(msg):
                checking[msg.id] = scope = anyio.CancelScope()
                tg.start_soon(checked, item, msg.id, scope)
            else:
                await deliver(item, *await session.from_client(msg))
        tg.cancel_scope.cancel()  # the client left: stop the upstream

    async def upstream_to_client() -> None:
        nonlocal rc
        async for item in up_read:
            if isinstance(item, Exception):
                log.warning("looptrap mcp-proxy: unreadable message from the upstream server: %s", one_line(str(item)))
                continue
            try:
                msg, record = session.from_upstream(item.message)
            except Exception:  # one odd message must not take the connection down
                log.warning("looptrap mcp-proxy: a message from the upstream, forwarded unread", exc_info=True)
                msg, record = item.message, None
            if record is not None:
                records.start_soon(record)
            await client_write.send(SessionMessage(msg))
        rc = 1
        orphans = session.orphaned(GONE)
        for scope in checking.values():
            scope.cancel()
        checking.clear()
        for m in orphans:
            await client_write.send(SessionMessage(m))
        log.warning("looptrap mcp-proxy: the upstream MCP server exited")
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as records, anyio.create_task_group() as tg:
        tg.start_soon(client_to_upstream)
        tg.start_soon(upstream_to_client)
    return rc


class _OneLine(logging.Formatter):
    """Every record on one printable line (the client's MCP log): what a message quotes, upstream output or
    an exception, can neither drive the terminal nor forge log lines."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text = f"{text}: {record.exc_info[1]}"
        return one_line(text, 1000)


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    # the SDK logs each unreadable upstream line too; the proxy's own warning says it once
    logging.getLogger("mcp.client.stdio").addFilter(lambda r: r.msg != _SDK_PARSE_FAILURE)


def main(
    command: list[str],
    *,
    store_url: str | None,
    session_id: str | None,
    report_tool: str | None,
    fail_closed: bool,
    config: GuardConfig | None = None,
) -> int:
    """The ``looptrap mcp-proxy`` command (``config``: the guard's configuration, from the configuration
    file)."""
    _log_to_stderr()
    if not command:
        print("looptrap mcp-proxy: give the MCP server's command after --", file=sys.stderr)
        return 2
    store = None
    if store_url:
        from looptrap.stores import open_async_store

        store = open_async_store(store_url)
    guard = AsyncGuard(
        config,
        store=store,
        session=session_id,
        report_tool=report_tool,
        on_store_error="closed" if fail_closed else "open",
        fail_closed=fail_closed or (config is not None and config.fail_closed),
    )
    try:
        return anyio.run(run_proxy, command, GuardedSession(guard, report_tool))
    except UpstreamStartError as exc:
        print(f"looptrap mcp-proxy: {exc}", file=sys.stderr)
        return 2
