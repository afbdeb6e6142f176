"""DSPy: ``GuardedReAct``, a ``dspy.ReAct`` whose tool calls go through looptrap and whose loop ends on a halt.

    from looptrap.integrations.dspy import GuardedReAct

    agent = GuardedReAct("question -> answer", tools=[search_docs])

DSPy's callbacks only observe, and ``ReAct`` turns every exception a tool raises into one more observation, so a
halt cannot be raised from a tool. Here advice and blocks are the tool's observation (the tool does not run); once
the run is halted, the next step is ``finish`` without a model call, so ``ReAct`` ends the trajectory and extracts
its answer as it always does (``on_halt="finish"``), or the call raises :class:`looptrap.LoopHalted`
(``on_halt="raise"``). Each model step ends a turn; each call of the module is a new task, its inputs the user's.

Needs ``pip install "looptrap[dspy]"``.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import dspy  # type: ignore[import-untyped]  # DSPy ships no type information
from dspy.adapters.types.tool import Tool  # type: ignore[import-untyped]

from looptrap.core.errors import LoopHalted
from looptrap.core.types import Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["GuardedReAct", "halt_info"]

OnHalt = Literal["finish", "raise"]


@dataclass(slots=True)
class _Run:
    """One call of the module: its guard, and turn-level advice for the next observation."""

    guard: Guard
    advice: str | None = None


_RUN: contextvars.ContextVar[dict[int, _Run]] = contextvars.ContextVar("looptrap_dspy_runs")


def halt_info(verdict: Verdict) -> dict[str, Any]:
    """What a halted prediction carries in its ``looptrap`` field: reason, kind, message and summary."""
    return {
        "reason": verdict.reason or "halt",
        "kind": verdict.kind,
        "message": verdict.message,
        "summary": verdict.summary,
    }


class _GuardedTool(Tool):  # type: ignore[misc]
    """A tool whose calls are checked and recorded by the run's guard; a refused call returns the advice."""

    def __init__(self, tool: Tool, owner: GuardedReAct) -> None:
        super().__init__(
            tool.func, name=tool.name, desc=tool.desc, args=tool.args, arg_types=tool.arg_types, arg_desc=tool.arg_desc
        )
        self.has_kwargs = tool.has_kwargs
        self._owner = owner

    def _begin(self, kwargs: dict[str, Any]) -> tuple[_Run | None, str | None]:
        run = self._owner._run()
        if run is None:  # called outside a run of the module: not guarded
            return None, None
        verdict = run.guard.check(str(self.name), kwargs)
        return run, None if verdict.allowed else verdict.message

    def _end(self, run: _Run | None, kwargs: dict[str, Any], result: Any) -> Any:
        if run is None:
            return result
        run.guard.record(str(self.name), kwargs, result)
        advice, run.advice = run.advice, None
        return result if advice is None else f"{result}\n\n{advice}"

    def _failed(self, run: _Run | None, kwargs: dict[str, Any], exc: Exception) -> None:
        if run is not None:
            run.guard.record(str(self.name), kwargs, f"{type(exc).__name__}: {exc}", is_error=True)

    def __call__(self, **kwargs: Any) -> Any:
        run, refused = self._begin(kwargs)
        if refused is not None:
            return refused
        try:
            result = super().__call__(**kwargs)
        except Exception as exc:
            self._failed(run, kwargs, exc)
            raise
        return self._end(run, kwargs, result)

    async def acall(self, **kwargs: Any) -> Any:
        run, refused = self._begin(kwargs)
        if refused is not None:
            return refused
        try:
            result = await super().acall(**kwargs)
        except Exception as exc:
            self._failed(run, kwargs, exc)
            raise
        return self._end(run, kwargs, result)


class GuardedReAct(dspy.ReAct):  # type: ignore[misc]
    """``dspy.ReAct`` with looptrap: ``GuardedReAct(signature, tools, max_iters=20, guard=None, session=None,
    on_halt="finish")``.

    ``guard``: a :class:`~looptrap.Guard` (every call of the module is one session, each a new task) or a
    :class:`~looptrap.GuardPool` (the default, a new one): each call gets a session of its own, or the one
    ``session`` names (a conversation id). Calls may run in parallel threads (``dspy.Parallel``, ``Evaluate``):
    each keeps its own session. The inputs of each call are the user's input. Each model step ends a turn before
    its tool runs. ``on_halt="finish"`` ends a halted run the way ``ReAct`` ends any run (``finish``, then the
    answer is extracted from the trajectory), with the halt in the prediction's ``looptrap`` field;
    ``on_halt="raise"`` raises :class:`~looptrap.LoopHalted` instead. With the guard's ``report_tool`` set (by
    default ``report_blocked``), the agent gets that tool: calling it halts with reason ``reported_blocked``.
    """

    def __init__(
        self,
        signature: Any,
        tools: list[Callable[..., Any]],
        max_iters: int = 20,
        *,
        guard: Guard | GuardPool | None = None,
        session: str | None = None,
        on_halt: OnHalt = "finish",
    ) -> None:
        if on_halt not in ("finish", "raise"):
            raise ValueError(f"on_halt must be 'finish' or 'raise', got {on_halt!r}")
        self.guard: Guard | GuardPool = GuardPool() if guard is None else guard
        self.session = session
        self.on_halt: OnHalt = on_halt
        config = self.guard.config if isinstance(self.guard, Guard) else self.guard.engine.config
        guarded = [_GuardedTool(t if isinstance(t, Tool) else Tool(t), self) for t in tools]
        report = config.report_tool
        if report and all(t.name != report for t in guarded):
            guarded.append(self._report_tool(report))
        super().__init__(signature, tools=guarded, max_iters=max_iters)

    def _report_tool(self, name: str) -> Tool:
        def report_blocked(**arguments: Any) -> str:
            run = self._run()  # a malformed report gets advice on what is missing; a good one halts the run
            return "Reported." if run is None else run.guard.handle_report_blocked(arguments).message

        schema = report_blocked_schema()["properties"]
        return Tool(
            report_blocked,
            name=name,
            desc=REPORT_BLOCKED_DESCRIPTION,
            args={k: {"type": v["type"], **({"items": v["items"]} if "items" in v else {})} for k, v in schema.items()},
            arg_types={"tried": list[str], "needed": str},
            arg_desc={k: v["description"] for k, v in schema.items()},
        )

    # -- the run ---------------------------------------------------------------------------------------------
    def _run(self) -> _Run | None:
        return _RUN.get({}).get(id(self))

    @contextmanager
    def _session(self, inputs: dict[str, Any]) -> Iterator[_Run]:
        pool, fixed = self.guard, self.session
        guard = pool if isinstance(pool, Guard) else pool.get(fixed or uuid.uuid4().hex)
        guard.new_task()
        said = "\n".join(str(v) for k, v in inputs.items() if k != "max_iters" and isinstance(v, str))
        guard.user_message(said or None)
        run = _Run(guard)
        runs = dict(_RUN.get({}))
        runs[id(self)] = run
        token = _RUN.set(runs)
        try:
            yield run
        finally:
            _RUN.reset(token)
            if isinstance(pool, GuardPool) and fixed is None and pool.store is None:
                pool.forget(guard.session)  # a session of its own: nothing refers to it after the call

    def forward(self, **input_args: Any) -> Any:
        with self._session(input_args) as run:
            return self._result(super().forward(**input_args), run)

    async def aforward(self, **input_args: Any) -> Any:
        with self._session(input_args) as run:
            return self._result(await super().aforward(**input_args), run)

    def _result(self, prediction: Any, run: _Run) -> Any:
        verdict = run.guard.halted
        if verdict is not None:
            prediction["looptrap"] = halt_info(verdict)
        return prediction

    # -- each model step: stop before it once halted, end the turn after it --------------------------------
    def _halted_step(self, run: _Run | None) -> Any:
        verdict = run.guard.halted if run is not None else None
        if verdict is None:
            return None
        if self.on_halt == "raise":
            raise LoopHalted(verdict)
        # ReAct's own way out: the trajectory ends with ``finish``, then the answer is extracted from it.
        return dspy.Prediction(next_thought=verdict.message, next_tool_name="finish", next_tool_args={})

    def _step_done(self, run: _Run | None, prediction: Any) -> Any:
        if run is None:
            return prediction
        name = prediction.get("next_tool_name")
        usage = prediction.get_lm_usage() or {}
        tokens = sum(int((u or {}).get("total_tokens") or 0) for u in usage.values())
        verdict = run.guard.end_turn(
            usage={"total_tokens": tokens} if tokens else None,
            text=prediction.get("next_thought") or None,
            tool_calls=0 if name == "finish" else 1,
        )
        if verdict.action in ("advise", "block"):
            run.advice = verdict.message  # with the next observation the model reads
        return prediction

    def _call_with_potential_trajectory_truncation(
        self, module: Any, trajectory: dict[str, Any], **input_args: Any
    ) -> Any:
        if module is not self.react:
            return super()._call_with_potential_trajectory_truncation(module, trajectory, **input_args)
        run = self._run()
        stop = self._halted_step(run)
        if stop is not None:
            return stop
        prediction = super()._call_with_potential_trajectory_truncation(module, trajectory, **input_args)
        return self._step_done(run, prediction)

    async def _async_call_with_potential_trajectory_truncation(
        self, module: Any, trajectory: dict[str, Any], **input_args: Any
    ) -> Any:
        if module is not self.react:
            return await super()._async_call_with_potential_trajectory_truncation(module, trajectory, **input_args)
        run = self._run()
        stop = self._halted_step(run)
        if stop is not None:
            return stop
        prediction = await super()._async_call_with_potential_trajectory_truncation(module, trajectory, **input_args)
        return self._step_done(run, prediction)
