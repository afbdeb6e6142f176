"""The call in flight: its arguments by parameter name, the chaos call a retry hook is running in, and the
guard told about each retry.

The framework wrappers and the retry hooks read these; ``Chaos`` (:mod:`looptrap.chaos.tools`) sets them.
None of them imports ``Chaos``: what they need of it is the small protocols below.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from looptrap.chaos.faults import RetryRefused
from looptrap.core.errors import LoopHalted

if TYPE_CHECKING:
    from looptrap.drivers.guard import Guard

__all__ = ["InFlight", "Wrapper", "bind_arguments", "current_call", "signature_of", "tell_guard"]

T = TypeVar("T")

#: Values of these types are framework plumbing, not a call's arguments: never logged.
_CONTEXT_TYPES = frozenset(
    {
        "RunContext",
        "RunContextWrapper",
        "ToolContext",
        "ToolRuntime",
        "CallbackManagerForToolRun",
        "AsyncCallbackManagerForToolRun",
    }
)


class Counting(Protocol):
    """What a retry hook needs of the run: its guard, and a way to count one more attempt."""

    @property
    def guard(self) -> Guard | None: ...

    def count_attempt(self, call: Any) -> None: ...


class InFlight(Protocol):
    """The chaos call running in this context (a :class:`looptrap.chaos.tools.ChaosCall`)."""

    @property
    def chaos(self) -> Counting: ...

    @property
    def tool(self) -> str: ...

    @property
    def args(self) -> Any: ...


class Wrapper(Protocol):
    """What a framework wrapper needs of a :class:`looptrap.chaos.Chaos`: run one call under the faults."""

    def function(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        convert: Callable[[Exception], BaseException] | None = None,
        drop: Iterable[str] = (),
        only: Iterable[str] | None = None,
    ) -> Any: ...

    def run_sync(self, tool: str, args: Any, real: Callable[[], T]) -> T: ...

    async def run_async(self, tool: str, args: Any, real: Callable[[], Awaitable[T]]) -> T: ...


CURRENT: contextvars.ContextVar[InFlight | None] = contextvars.ContextVar("looptrap_chaos_call", default=None)


def current_call() -> InFlight | None:
    """The chaos call running in this context, if any (the retry integration counts its attempts)."""
    return CURRENT.get()


def bind_arguments(
    sig: inspect.Signature | None,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    drop: Iterable[str] = (),
    only: Iterable[str] | None = None,
) -> dict[str, Any]:
    """A call's arguments by parameter name (``**kwargs`` flattened), without framework plumbing."""
    out: dict[str, Any]
    try:
        if sig is None:
            raise TypeError
        bound = sig.bind(*args, **kwargs)
        out = dict(bound.arguments)
        for p in sig.parameters.values():
            if p.kind is inspect.Parameter.VAR_KEYWORD and p.name in out:
                out.update(out.pop(p.name))
    except TypeError:
        out = {"args": list(args), **kwargs} if args else dict(kwargs)
    keep = set(only) if only is not None else None
    dropped = set(drop)
    return {
        k: v
        for k, v in out.items()
        if k not in dropped and (keep is None or k in keep) and type(v).__name__ not in _CONTEXT_TYPES
    }


def signature_of(fn: Callable[..., Any]) -> inspect.Signature | None:
    """``inspect.signature(fn)``, or ``None`` for a callable that has none."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def tell_guard(guard: Guard, tool: str, args: Any, failure: str) -> None:
    """One retry, as the guard sees it: the failed attempt's result is recorded, the next attempt checked.
    Raises :class:`RetryRefused` when the check refuses it, :class:`LoopHalted` on a halt."""
    guard.record(tool, args, failure, is_error=True)
    verdict = guard.check(tool, args)
    if verdict.allowed:
        return
    if verdict.action == "halt":
        raise LoopHalted(verdict)
    raise RetryRefused(verdict)
