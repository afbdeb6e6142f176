"""Chaos for Pydantic AI tools (``Tool``): a copy whose function goes through the faults.

Injected errors reach the model the way Pydantic AI delivers a tool's failure: a retryable one as
``ModelRetry`` (the model is asked to try again, within the tool's ``max_retries``), a non-retryable one
as ``ToolFailed`` (the model sees the failure and should not retry).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from typing import TYPE_CHECKING, Any

from pydantic_ai import Tool
from pydantic_ai.exceptions import ModelRetry, ToolFailed

from looptrap.chaos.faults import InjectedError

if TYPE_CHECKING:
    from looptrap.chaos.calls import Wrapper

__all__ = ["wrap_tool"]


def _convert(exc: Exception) -> BaseException:
    if isinstance(exc, InjectedError) and exc.retryable:
        return ModelRetry(str(exc))
    return ToolFailed(str(exc))


def wrap_tool(chaos: Wrapper, tool: Tool[Any]) -> Tool[Any]:
    """A copy of ``tool`` that misbehaves by ``chaos``'s faults."""
    drop: list[str] = []
    if tool.takes_ctx:
        params = list(inspect.signature(tool.function).parameters)
        drop = params[:1]
    fn = chaos.function(tool.function, name=tool.name, convert=_convert, drop=drop)
    wrapped = copy.copy(tool)
    wrapped.function = fn
    wrapped.function_schema = dataclasses.replace(tool.function_schema, function=fn)
    return wrapped
