"""smolagents: guard every tool of a ``ToolCallingAgent`` or ``CodeAgent`` with one call.

>>> from looptrap.integrations.smolagents import guard_agent
>>> guard_agent(agent)  # doctest: +SKIP

Each of the agent's tools is replaced by a copy whose ``forward`` checks the call, runs it and records its result,
so calls are guarded however the model makes them: as JSON tool calls (``ToolCallingAgent``) or from the code it
writes (``CodeAgent``, local executor). A step callback ends each model turn. The caller's tool objects are not
changed. smolagents has no async API; this integration is synchronous.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import threading
import uuid
from typing import Any, ClassVar

from smolagents import (  # type: ignore[import-untyped]
    ActionStep,
    CodeAgent,
    LocalPythonExecutor,
    PlanningStep,
    TaskStep,
    Tool,
)
from smolagents.utils import AgentMaxStepsError  # type: ignore[import-untyped]

from looptrap.core.errors import LoopHalted
from looptrap.core.types import ALLOW, Verdict
from looptrap.drivers.guard import Guard
from looptrap.drivers.pool import GuardPool
from looptrap.reading.report import REPORT_BLOCKED_DESCRIPTION, report_blocked_schema

__all__ = ["AgentGuard", "CallRefused", "ReportBlockedTool", "guard_agent"]


class CallRefused(Exception):
    """A tool call the guard did not run (advise or block). smolagents shows it to the model as the tool's
    error; its message is the advice."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


class AgentGuard:
    """What :func:`guard_agent` set up on one agent. ``guard`` is the guard of the current session."""

    def __init__(self, agent: Any, guard: Guard | GuardPool, session: str | None) -> None:
        self.agent = agent
        self.session: str | None = None
        self._source = guard
        self._fixed = session
        self._code_tag: str | None = agent.code_block_tags[0] if isinstance(agent, CodeAgent) else None
        self._lock = threading.Lock()
        self._guard: Guard | None = None
        self._task: Any = None  # the TaskStep of the run in progress
        self._first: Any = None  # the first step in the agent's memory: another one is another conversation
        self._acted = False  # a guarded tool was called during this step
        self._halt: Verdict | None = None
        self._carried = 0  # tokens of steps that ended no turn, counted with the next turn

    @property
    def guard(self) -> Guard:
        """The guard of the current session (with a pool: a fresh session per conversation unless ``session``)."""
        steps = self.agent.memory.steps
        task = next((s for s in reversed(steps) if isinstance(s, TaskStep)), None)
        with self._lock:
            if self._guard is None or task is not self._task:
                self._guard = self._start(task, steps[0] if steps else None)
            return self._guard

    def _start(self, task: Any, first: Any) -> Guard:
        if isinstance(self._source, Guard):
            guard = self._source
        else:
            session = self._fixed
            if session is None:
                session = self.session if self.session is not None and first is self._first else uuid.uuid4().hex
            guard = self._source.get(session)
        self.session = guard.session
        self._task, self._first = task, first
        self._acted, self._halt, self._carried = False, None, 0
        if task is not None:  # a new run: a new user request, and what the user said
            guard.new_task()
            guard.user_message(task.task if isinstance(task.task, str) else None)
        return guard

    def wrap(self, tool: Any) -> Any:
        """A copy of ``tool`` whose calls are checked and recorded (advice and blocks raise :class:`CallRefused`
        instead of running it, a halt raises :class:`looptrap.LoopHalted`)."""
        guarded = copy.copy(tool)
        forward = guarded.forward
        name: str = tool.name
        names = _arg_names(tool)

        @functools.wraps(forward)
        def checked(*args: Any, **kwargs: Any) -> Any:
            argmap = dict(zip(names, args, strict=False))
            if len(args) > len(names):
                argmap["args"] = list(args[len(names) :])
            argmap.update(kwargs)
            guard = self.guard
            self._acted = True
            verdict = guard.check(name, argmap)
            if not verdict.allowed:
                if verdict.action == "halt":
                    self._halt = self._halt or verdict
                    raise LoopHalted(verdict)
                raise CallRefused(verdict)
            try:
                result = forward(*args, **kwargs)
            except Exception as exc:
                guard.record(name, argmap, f"{type(exc).__name__}: {exc}", is_error=True)
                raise
            guard.record(name, argmap, result)
            return result

        guarded.forward = checked
        return guarded

    def step_done(self, step: Any, agent: Any = None) -> None:
        """The step callback: end the model turn; a halt raises :class:`looptrap.LoopHalted` out of ``agent.run``,
        turn-level advice is added to the step's observations (the model reads it next step)."""
        tokens = _tokens(step.token_usage)
        if isinstance(step, PlanningStep):
            self._carried += tokens
            return
        guard = self.guard
        acted, halt, self._acted, self._halt = self._acted, self._halt, False, None
        ending = step.is_final_answer or isinstance(step.error, AgentMaxStepsError)
        text = self._prose(step.model_output)
        if self._code_tag is not None and not (acted or ending or step.error or step.code_action is None):
            # Code that ran without a tool call is the model acting, not idling: a turn end would count as no_action.
            self._carried += tokens
            verdict = guard.feed_text(text) if text else ALLOW
        else:
            tokens, self._carried = tokens + self._carried, 0
            error = str(step.error) if step.error is not None and not acted else None
            verdict = guard.end_turn(usage={"total_tokens": tokens} if tokens else None, text=text, error=error)
        if ending and halt is None:
            return  # the run is over: the answer stands
        halt = halt or (verdict if verdict.action == "halt" else None)
        if halt is not None:
            steps = self.agent.memory.steps
            if not steps or steps[-1] is not step:  # smolagents appends the step after its callbacks
                steps.append(step)
            raise LoopHalted(halt)
        if not verdict.allowed:
            step.observations = f"{step.observations}\n{verdict.message}" if step.observations else verdict.message

    def _prose(self, output: Any) -> str | None:
        if not isinstance(output, str):
            return None
        if self._code_tag is not None:
            output = re.split(self._code_tag, output, maxsplit=1)[0]
        return output.strip() or None


class ReportBlockedTool(Tool):  # type: ignore[misc]
    """looptrap's ``report_blocked`` as a smolagents tool: the model says it cannot go on, and the run halts
    (:class:`looptrap.LoopHalted`, reason ``reported_blocked``; ``guard.needed`` keeps what it asked for)."""

    description = REPORT_BLOCKED_DESCRIPTION
    inputs: ClassVar[dict[str, dict[str, str]]] = {
        key: {"type": spec["type"], "description": spec["description"]}
        for key, spec in report_blocked_schema()["properties"].items()
    }
    output_type = "string"

    def __init__(self, owner: AgentGuard, name: str = "report_blocked") -> None:
        super().__init__()
        self.name = name
        self._owner = owner

    def forward(self, tried: list[str], needed: str) -> str:
        """Record the report and halt."""
        self._owner._acted = True
        verdict = self._owner.guard.handle_report_blocked({"tried": tried, "needed": needed})
        if verdict.action != "halt":
            raise CallRefused(verdict)  # malformed: the advice says what is missing
        self._owner._halt = self._owner._halt or verdict
        return f"{verdict.message}. Recorded: the run stops here."


def guard_agent(agent: Any, guard: Guard | GuardPool | None = None, *, session: str | None = None) -> AgentGuard:
    """Guard every tool of a smolagents ``ToolCallingAgent`` or ``CodeAgent``.

    ``guard``: one :class:`looptrap.Guard` for every run of the agent, or a :class:`looptrap.GuardPool` (default: a
    new one) with a fresh session per conversation (a ``run`` with ``reset=True``), or always ``session``. Each run
    is a new task. The agent gets the guard's ``report_blocked`` tool, which its advice points to (the guard's
    ``report_tool=None`` leaves it out). Advice and blocks reach the model as the tool's error; a halt raises
    :class:`looptrap.LoopHalted` from ``agent.run``.
    """
    if getattr(agent, "_looptrap", None) is not None:
        raise ValueError("this agent is already guarded")
    if guard is not None and not isinstance(guard, Guard | GuardPool):
        raise TypeError(f"guard must be a Guard or a GuardPool (smolagents is synchronous), got {type(guard)!r}")
    if isinstance(agent, CodeAgent) and not isinstance(agent.python_executor, LocalPythonExecutor):
        raise ValueError("a CodeAgent is guarded with the local Python executor only (remote ones run tools elsewhere)")
    source = guard if guard is not None else GuardPool()
    handle = AgentGuard(agent, source, session)
    for name, tool in list(agent.tools.items()):
        if name != "final_answer":  # the way out: never stopped, never counted
            agent.tools[name] = handle.wrap(tool)
    config = source.config if isinstance(source, Guard) else source.engine.config
    name = config.report_tool
    if name and name not in agent.tools and name not in agent.managed_agents:
        agent.tools[name] = ReportBlockedTool(handle, name)
    agent.step_callbacks.register(ActionStep, handle.step_done)
    agent.step_callbacks.register(PlanningStep, handle.step_done)
    agent._looptrap = handle
    return handle


def _arg_names(tool: Any) -> list[str]:
    """The names of ``forward``'s positional parameters (a ``CodeAgent`` may pass arguments by position)."""
    try:
        params = list(inspect.signature(tool.forward).parameters.values())
    except (TypeError, ValueError):
        return list(tool.inputs)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return list(tool.inputs)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    # a @tool function's forward is a staticmethod whose signature still names ``self``
    return [p.name for p in params if p.kind in positional and p.name != "self"]


def _tokens(usage: Any) -> int:
    return int(getattr(usage, "total_tokens", 0) or 0) if usage is not None else 0
