"""The upstream MCP server that the `looptrap mcp-proxy` tests put behind the proxy.

Run it as `python tests/mcp_upstream.py`: it serves MCP over stdio with a few tools (plus one resource and
one prompt) whose behaviour the proxy tests rely on. With ``MCP_UPSTREAM_LOG`` set, ``search_docs`` appends a
line to that file each time its body runs. It is not a test module, so pytest does not collect it.
"""

from __future__ import annotations

import os

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


if __name__ == "__main__":
    server.run()
