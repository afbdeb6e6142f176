"""Chaos for OpenAI Agents SDK tools (``FunctionTool``): a copy whose invoker goes through the faults.

Injected errors reach the model the way the SDK delivers a tool's failure: through the tool's failure
error function (by default the SDK's fixed "An error occurred while running the tool" text); a tool without
one lets the error out of the run, as the SDK does.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from agents import FunctionTool
from agents.tool import maybe_invoke_function_tool_failure_error_function
from agents.tool_context import ToolContext

from looptrap.chaos.faults import injected

if TYPE_CHECKING:
    from looptrap.chaos.calls import Wrapper

__all__ = ["wrap_tool"]


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return raw


def wrap_tool(chaos: Wrapper, tool: FunctionTool) -> FunctionTool:
    """A copy of ``tool`` that misbehaves by ``chaos``'s faults."""
    wrapped = copy.copy(tool)  # FunctionTool.__copy__ rebinds the invoker to the copy
    inner = wrapped.on_invoke_tool
    name = tool.name

    async def invoke(ctx: ToolContext[Any], raw: str) -> Any:
        try:
            return await chaos.run_async(name, _arguments(raw), lambda: inner(ctx, raw))
        except Exception as exc:
            if not injected(exc):
                raise
            text = await maybe_invoke_function_tool_failure_error_function(
                function_tool=wrapped, context=ctx, error=exc
            )
            if text is None:
                raise
            return text

    wrapped.on_invoke_tool = invoke
    return wrapped
