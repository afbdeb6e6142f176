"""Chaos for MCP tools: ``python -m looptrap.chaos.mcp --fault empty -- <server command>``.

An MCP server over stdio that starts the real one and relays every message both ways as it is (the same
transport as ``looptrap mcp-proxy``), except ``tools/call``: the faults decide each call. A replaced
result, an injected error or timeout is answered by the relay (errors as a tool result with
``isError: true``) without calling the real tool; otherwise the call goes to the real server after the
faults' delay, and its answer is logged when it comes back. A call past the ceiling is answered with an
error. ``retry_inside`` attempts are counted in the log, the call is sent once.

Needs ``pip install "looptrap[mcp]"``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

from looptrap.chaos.faults import CeilingReached, Fault, by_name
from looptrap.chaos.tools import Chaos, ChaosCall, _kind
from looptrap.drivers.guard import AsyncGuard
from looptrap.engine.config import GuardConfig
from looptrap.integrations.mcp_proxy import GuardedSession, UpstreamStartError, _result_value, run_proxy

__all__ = ["ChaosSession", "main", "parse_faults"]

log = logging.getLogger("looptrap.chaos.mcp")


def _answer(rid: Any, value: Any, *, is_error: bool, schema: dict[str, Any] | None = None) -> JSONRPCResponse:
    """A tool result; unless the tool is known to have no output schema (``schema={}``), the value is given as
    structured content too (``{"result": value}`` for a tool whose schema wraps its return value, as the
    SDK's servers do, or whose schema is not known yet)."""
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if schema != {} and not is_error:
        props = (schema or {}).get("properties", {"result": None})
        wraps = isinstance(props, dict) and list(props) == ["result"]
        result["structuredContent"] = value if isinstance(value, dict) and not wraps else {"result": value}
    return JSONRPCResponse(jsonrpc="2.0", id=rid, result=result)


class ChaosSession(GuardedSession):
    """The relay's decisions: ``tools/call`` through the faults, everything else forwarded as it is."""

    def __init__(self, chaos: Chaos) -> None:
        super().__init__(AsyncGuard(GuardConfig(enabled=False)), report_tool=None)  # nothing is guarded here
        self.chaos = chaos
        self._open: dict[Any, ChaosCall] = {}  # tools/call id -> the chaos call waiting for the real answer
        self._listing: set[Any] = set()  # tools/list ids: their answers give the tools' output schemas
        self.schemas: dict[str, dict[str, Any]] = {}  # tool -> its output schema ({}: none)

    async def from_client(self, msg: Any) -> tuple[list[Any], list[Any]]:
        """A message from the client: (messages for the upstream, answers for the client)."""
        if self.gone is not None or not self.guarded(msg):
            if isinstance(msg, JSONRPCRequest) and msg.method == "tools/list" and len(self._listing) < 64:
                self._listing.add(msg.id)
            return await super().from_client(msg)
        params = msg.params or {}
        name, arguments = str(params["name"]), params.get("arguments") or {}
        self._checking.add(msg.id)
        try:
            answer = await self._decide(msg.id, name, arguments)
        finally:
            self._checking.discard(msg.id)
        if self.gone is not None:
            self._open.pop(msg.id, None)
            return [], []
        if answer is not None:
            return [], [answer]
        self._remember(self._inflight, msg.id, msg.method)
        return [msg], []

    async def _decide(self, rid: Any, name: str, arguments: Any) -> JSONRPCResponse | None:
        chaos = self.chaos
        try:
            call = chaos.begin(name, arguments)
        except CeilingReached as exc:
            return _answer(rid, f"The chaos ceiling was reached: {exc}", is_error=True)
        try:
            effect = None
            for attempt in range(1, call.attempts + 1):
                effect = chaos.effect(call, attempt)
                if effect.delay:
                    await chaos.asleep(effect.delay)
            assert effect is not None
        except CeilingReached as exc:
            chaos.end(call, "ceiling", exc)
            return _answer(rid, f"The chaos ceiling was reached: {exc}", is_error=True)
        if effect.error is not None:
            chaos.end(call, effect.kind, effect.error)
            return _answer(rid, str(effect.error), is_error=True)
        if effect.replaced:
            chaos.end(call, effect.kind, result=effect.result)
            return _answer(rid, effect.result, is_error=False, schema=self.schemas.get(name))
        self._remember(self._open, rid, call)
        return None

    def from_upstream(self, msg: Any) -> tuple[Any, Any]:
        """A message from the upstream, forwarded; the answer to a relayed call ends its log row."""
        if isinstance(msg, JSONRPCResponse | JSONRPCError):
            if msg.id in self._listing:
                self._listing.discard(msg.id)
                tools = msg.result.get("tools") if isinstance(msg, JSONRPCResponse) else None
                for t in tools if isinstance(tools, list) else ():
                    if isinstance(t, dict) and isinstance(t.get("name"), str):
                        schema = t.get("outputSchema")
                        self.schemas[t["name"]] = schema if isinstance(schema, dict) else {}
            call = self._open.pop(msg.id, None)
            if call is not None:
                if isinstance(msg, JSONRPCResponse):
                    value = _result_value(msg.result)
                    failed = bool(msg.result.get("isError"))
                    self.chaos.end(call, "error" if failed else _kind_of(value), result=value)
                else:
                    self.chaos.end(call, "error", RuntimeError(msg.error.message))
        return super().from_upstream(msg)


def _kind_of(value: Any) -> str:
    from looptrap.chaos.faults import Effect

    return _kind(Effect(), value)


def parse_faults(specs: Sequence[str]) -> list[Fault]:
    """``NAME`` (every tool) or ``NAME@TOOL`` (one tool), as faults; ``ValueError`` for an unknown name."""
    out: list[Fault] = []
    for spec in specs:
        name, at, tool = spec.partition("@")
        fault = by_name(name)
        out.append(fault.on(tool) if at else fault)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m looptrap.chaos.mcp``: the relay; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m looptrap.chaos.mcp",
        description="An MCP server over stdio that relays to the one started by the command after -- and "
        "injects faults into its tool calls. See docs/chaos.md.",
    )
    parser.add_argument("--fault", action="append", default=[], metavar="NAME[@TOOL]", help="a fault (repeatable)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="the seed of the faults' schedules")
    parser.add_argument("--max-calls", type=int, default=None, metavar="N", help="answer calls past N with an error")
    parser.add_argument("--log", metavar="PATH", help="append the call log to PATH (JSON Lines)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND", help="the MCP server, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("python -m looptrap.chaos.mcp: give the MCP server's command after --", file=sys.stderr)
        return 2
    try:
        faults = parse_faults(args.fault)
    except ValueError as exc:
        print(f"python -m looptrap.chaos.mcp: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    chaos = Chaos(faults, seed=args.seed, max_calls=args.max_calls, log=args.log, session="mcp")
    try:
        return anyio.run(run_proxy, command, ChaosSession(chaos))
    except UpstreamStartError as exc:
        print(f"python -m looptrap.chaos.mcp: {exc}", file=sys.stderr)
        return 2
    finally:
        chaos.log.close()


if __name__ == "__main__":
    raise SystemExit(main())
