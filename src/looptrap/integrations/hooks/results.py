"""Tool results as each CLI reports them, reduced to what the model read.

The hook compares results across calls, so bulky echoes of the input (a Write's full content, an Edit's
original file) and values that change on every call (a shell's process group id) are left out.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["claude_result", "gemini_result"]

_CLAUDE_ECHOES = frozenset(["originalFile", "structuredPatch", "content", "oldString", "newString", "durationMs"])
_GEMINI_VOLATILE = re.compile(r"^(?:Process Group PGID|Background PIDs|Directory): .*$\n?", re.MULTILINE)
_GEMINI_EXIT = re.compile(r"^Exit Code: (-?\d+)", re.MULTILINE)


def claude_result(tool: str, response: Any) -> Any:
    """Claude Code's ``tool_response``: Bash's stdout and stderr, Read's file text, Grep's and Glob's matches
    (empty text when nothing matched), an MCP tool's text content, else the object without input echoes."""
    if not isinstance(response, dict):
        return response
    if tool == "Bash" and "stdout" in response:
        out = str(response.get("stdout") or "")
        err = str(response.get("stderr") or "")
        return f"{out}\n{err}" if err else out
    file = response.get("file")
    if isinstance(file, dict) and "content" in file:
        return file["content"]
    if "numFiles" in response:  # Grep and Glob
        if not response.get("numFiles"):
            return ""
        content = response.get("content")
        return content if isinstance(content, str) and content else "\n".join(map(str, response.get("filenames", ())))
    content = response.get("content")
    if isinstance(content, list):  # an MCP CallToolResult
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return {k: v for k, v in response.items() if k not in _CLAUDE_ECHOES}


def gemini_result(response: Any) -> tuple[Any, bool]:
    """Gemini CLI's ``tool_response`` (``llmContent``, ``returnDisplay``, ``error``): the text the model read,
    and whether the tool failed (an ``error``, or a shell ``Exit Code`` other than 0)."""
    if not isinstance(response, dict):
        return response, False
    error = response.get("error")
    content = response.get("llmContent", response.get("returnDisplay"))
    if isinstance(content, list):  # parts
        content = "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    if isinstance(content, str):
        m = _GEMINI_EXIT.search(content)
        failed = bool(m and m.group(1) != "0")
        content = _GEMINI_VOLATILE.sub("", content)
        if content.startswith("Output: (empty)"):
            content = content[len("Output: (empty)") :]
        return content.strip(), bool(error) or failed
    return content, bool(error)
