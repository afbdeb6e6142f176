"""The upstream MCP server that the `looptrap mcp-proxy` tests put behind the proxy.

Run it as `python tests/mcp_upstream.py`: it serves MCP over stdio with a few tools (plus one resource and
one prompt) whose behaviour the proxy tests rely on. With ``MCP_UPSTREAM_LOG`` set, ``search_docs`` appends a
line to that file each time its body runs. It is not a test module, so pytest does not collect it.

``python tests/mcp_upstream.py --raw`` is a bare JSON-RPC server instead, one line in, one line out, that
misbehaves on purpose: its ``tools/list`` holds tools that are not objects (and its next page a ``tools``
that is not a list), and its ``garble`` tool writes a line that is not JSON (terminal escapes, a carriage
return, 5000 more characters) before it answers. Every tool answers with the length of its ``text``
argument: a short answer to a request of any size.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("looptrap-test-upstream")
_calls = 0


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def search_docs(query: str) -> str:
    """Search the docs; always finds nothing, so an agent calling it can loop."""
    log = os.environ.get("MCP_UPSTREAM_LOG")  # the tests count the tool's real runs in this file
    if log:
        with open(log, "a") as fh:
            fh.write(f"search_docs {query}\n")
    return "0 results"


@server.tool()
async def slow(seconds: float, tag: str) -> str:
    """Sleep without blocking the server, then return the tag."""
    await anyio.sleep(seconds)
    return tag


@server.tool()
def count() -> str:
    """Return how many times this tool has been called in this process."""
    global _calls
    _calls += 1
    return str(_calls)


@server.tool()
def crash() -> str:
    """Kill the server process at once, without answering."""
    os._exit(1)


@server.resource("test://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    """A static text resource."""
    return "upstream readme"


@server.prompt()
def greet(name: str) -> str:
    """A prompt that greets someone."""
    return f"Say hello to {name}."


def serve_raw() -> None:
    """The ``--raw`` server: answers every request at once, in the order they come."""
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue  # notifications
        method, params = msg.get("method"), msg.get("params") or {}
        result: dict[str, object] = {}
        if method == "initialize":
            info = {"name": "looptrap-raw-upstream", "version": "0"}
            result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            echo = {"name": "echo", "inputSchema": {"type": "object"}}
            result = {"tools": [1, "x", None, echo]} if not params.get("cursor") else {"tools": {"not": "a list"}}
        elif method == "tools/call":
            if params.get("name") == "garble":
                sys.stdout.write("\x1b]0;owned\x07\x1b[2J\x1b[31mnot json\r" + "x" * 5000 + "\n")
            text = str(len((params.get("arguments") or {}).get("text", "")))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--raw"]:
        serve_raw()
    else:
        server.run()
