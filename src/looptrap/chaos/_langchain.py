"""Chaos for LangChain tools (``BaseTool``): a copy whose calls go through the faults.

A ``StructuredTool`` or ``Tool`` (what ``@tool`` makes) gets its function and coroutine wrapped; any other
``BaseTool`` a subclass whose ``_run`` / ``_arun`` are. Injected errors reach the model the way LangChain
delivers a tool's failure: a ``ToolException``, answered as ``ToolMessage(status="error")`` (the copy gets
``handle_tool_error=True`` when the tool had no handler).
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, cast

from langchain_core.tools import BaseTool, StructuredTool, Tool, ToolException

from looptrap.chaos.calls import bind_arguments
from looptrap.chaos.faults import injected

if TYPE_CHECKING:
    from looptrap.chaos.calls import Wrapper

__all__ = ["wrap_tool"]

_PLUMBING = ("callbacks", "run_manager", "config", "self")


def _to_tool_exception(exc: Exception) -> BaseException:
    return ToolException(str(exc))


def _visible(tool: BaseTool) -> list[str] | None:
    """The arguments the model gives (injected ones left out), when LangChain can tell."""
    try:
        schema = tool.tool_call_schema
        if isinstance(schema, dict):
            props = schema.get("properties") or schema.get("parameters", {}).get("properties")
        elif hasattr(schema, "model_json_schema"):
            props = schema.model_json_schema().get("properties")
        else:  # a pydantic v1 model
            props = schema.schema().get("properties")
    except Exception:  # noqa: BLE001 - no schema to read: log every argument
        return None
    return list(props) if isinstance(props, dict) else None


def wrap_tool(chaos: Wrapper, tool: BaseTool) -> BaseTool:
    """A copy of ``tool`` that misbehaves by ``chaos``'s faults."""
    only = _visible(tool)
    update: dict[str, Any] = {}
    if isinstance(tool, (StructuredTool, Tool)):
        for attr in ("func", "coroutine"):
            fn = getattr(tool, attr)
            if fn is not None:
                update[attr] = chaos.function(fn, name=tool.name, convert=_to_tool_exception, drop=_PLUMBING, only=only)
    if not tool.handle_tool_error:
        update["handle_tool_error"] = True
    if "func" in update or "coroutine" in update:
        return cast(BaseTool, tool.model_copy(update=update))
    copied = cast(BaseTool, tool.model_copy(update=update))
    copied.__class__ = _subclass(chaos, type(tool), tool.name, only)
    return copied


def _subclass(chaos: Wrapper, cls: type[BaseTool], name: str, only: list[str] | None) -> type[BaseTool]:
    """A subclass of ``cls`` whose ``_run`` and ``_arun`` run under ``chaos``."""
    sync_run = cls._run
    async_run = cls._arun
    sig = inspect.signature(sync_run)

    @functools.wraps(sync_run)
    def _run(self: BaseTool, *args: Any, **kwargs: Any) -> Any:
        argmap = bind_arguments(sig, (self, *args), kwargs, drop=_PLUMBING, only=only)
        try:
            return chaos.run_sync(name, argmap, lambda: sync_run(self, *args, **kwargs))
        except Exception as exc:
            if injected(exc):
                raise ToolException(str(exc)) from exc
            raise

    @functools.wraps(async_run)
    async def _arun(self: BaseTool, *args: Any, **kwargs: Any) -> Any:
        if async_run is BaseTool._arun:  # no async implementation: the sync one, in a thread, as LangChain does
            return await BaseTool._arun(self, *args, **kwargs)
        argmap = bind_arguments(sig, (self, *args), kwargs, drop=_PLUMBING, only=only)
        try:
            return await chaos.run_async(name, argmap, lambda: async_run(self, *args, **kwargs))
        except Exception as exc:
            if injected(exc):
                raise ToolException(str(exc)) from exc
            raise

    return type(f"Chaotic{cls.__name__}", (cls,), {"_run": _run, "_arun": _arun, "__module__": cls.__module__})
