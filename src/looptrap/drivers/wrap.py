"""Wrap a plain tool function (sync or async) with a guard: check, run, record.

The decision steps are shared; the sync and async drivers only differ in how they call the function.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from looptrap.core.errors import LoopHalted
from looptrap.core.types import Verdict

__all__ = ["Guarding", "guarded"]

F = TypeVar("F", bound=Callable[..., Any])


class Guarding(Protocol):
    """What wrapping needs of a guard: ``check`` before the call, ``record`` after it (a :class:`looptrap.Guard`,
    or a :class:`looptrap.AsyncGuard`, whose methods return awaitables)."""

    def check(self, tool: str, args: Any = None) -> Any: ...

    def record(
        self, tool: str, args: Any = None, result: Any = None, *, is_error: bool = False, usage: Any = None
    ) -> Any: ...


class _Steps:
    """What happens around one tool call, independent of sync or async execution (with an
    :class:`AsyncGuard`, ``before``, ``after`` and ``failed`` return awaitables)."""

    __slots__ = ("guard", "name", "on_advice", "result_is_error", "sig")

    def __init__(
        self,
        guard: Guarding,
        fn: Callable[..., Any],
        name: str | None,
        on_advice: Callable[[Verdict], Any] | None,
        result_is_error: Callable[[Any], bool] | None,
    ) -> None:
        self.guard = guard
        self.name: str = name or str(getattr(fn, "__name__", "tool"))
        try:
            self.sig: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.sig = None
        self.on_advice = on_advice
        self.result_is_error = result_is_error

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.sig is not None:
            try:
                bound = self.sig.bind(*args, **kwargs)
                out = dict(bound.arguments)
                for p in self.sig.parameters.values():  # flatten **kwargs so key order never matters
                    if p.kind is inspect.Parameter.VAR_KEYWORD and p.name in out:
                        out.update(out.pop(p.name))
                return out
            except TypeError:
                pass
        return {"args": list(args), **kwargs} if args else dict(kwargs)

    def before(self, argmap: dict[str, Any]) -> Any:
        return self.guard.check(self.name, argmap)

    def refused(self, verdict: Verdict) -> Any:
        if verdict.action == "halt":
            raise LoopHalted(verdict)
        return self.on_advice(verdict) if self.on_advice is not None else verdict.message

    def after(self, argmap: dict[str, Any], result: Any) -> Any:
        failed = bool(self.result_is_error(result)) if self.result_is_error is not None else False
        return self.guard.record(self.name, argmap, result, is_error=failed)

    def failed(self, argmap: dict[str, Any], exc: BaseException) -> Any:
        return self.guard.record(self.name, argmap, f"{type(exc).__name__}: {exc}", is_error=True)


async def _settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def guarded(
    guard: Guarding,
    fn: F,
    *,
    name: str | None = None,
    on_advice: Callable[[Verdict], Any] | None = None,
    result_is_error: Callable[[Any], bool] | None = None,
) -> F:
    """Return ``fn`` wrapped by ``guard`` (see :meth:`looptrap.Guard.tool`)."""
    steps = _Steps(guard, fn, name, on_advice, result_is_error)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            argmap = steps.arguments(args, kwargs)
            verdict = await _settled(steps.before(argmap))
            if not verdict.allowed:
                return steps.refused(verdict)
            try:
                result = await fn(*args, **kwargs)
            except Exception as exc:
                await _settled(steps.failed(argmap, exc))
                raise
            await _settled(steps.after(argmap, result))
            return result

        return cast(F, run_async)
    if inspect.iscoroutinefunction(guard.check):
        raise TypeError(f"an AsyncGuard guards async functions only; {steps.name!r} is not one (use a Guard)")

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        argmap = steps.arguments(args, kwargs)
        verdict = steps.before(argmap)
        if not verdict.allowed:
            return steps.refused(verdict)
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            steps.failed(argmap, exc)
            raise
        steps.after(argmap, result)
        return result

    return cast(F, run)
