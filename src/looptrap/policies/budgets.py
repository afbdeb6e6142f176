"""Budgets: the last line of defence (turns, tool calls, tokens, cost, wall-clock time)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from looptrap.core.types import Signal

if TYPE_CHECKING:
    from looptrap.core.state import SessionState

__all__ = ["Budgets"]


@dataclass(frozen=True)
class Budgets:
    """Optional limits per session (``None`` = no limit). They survive ``new_task()``.

    Reaching a hard limit halts with reason ``budget_<name>``; crossing ``soft`` (a fraction of a limit)
    warns once. Tool calls count every call the guard was asked about, run or not. A cost limit with usage
    reported without a cost warns once (``budget_cost_unknown``) and never fails.
    """

    max_turns: int | None = None
    max_tool_calls: int | None = None
    max_calls_per_tool: int | Mapping[str, int] | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None
    soft: float | None = 0.8

    @property
    def active(self) -> bool:
        """Whether any limit is set (the engine skips budget checks entirely otherwise)."""
        return any(
            v is not None
            for v in (
                self.max_turns,
                self.max_tool_calls,
                self.max_calls_per_tool,
                self.max_tokens,
                self.max_cost_usd,
                self.max_seconds,
            )
        )

    def _limit_for_tool(self, tool: str) -> int | None:
        m = self.max_calls_per_tool
        if m is None or isinstance(m, int):
            return m
        return m.get(tool, m.get("*"))

    def check_call(self, state: SessionState, tool: str, now: float | None) -> list[Signal]:
        """Before a tool call (``state.calls`` already counts it)."""
        out: list[Signal] = []
        self._test(out, state, "tool_calls", state.calls, self.max_tool_calls, "tool calls", tool)
        per = self._limit_for_tool(tool)
        if per is not None:
            self._test(out, state, "tool_calls", state.per_tool.get(tool, 0), per, f"calls to {tool}", tool)
        self._common(out, state, now, tool)
        return out

    def check_turn(self, state: SessionState, now: float | None, cost_unknown: bool) -> list[Signal]:
        """At a turn end (``state.turn`` already counts it)."""
        out: list[Signal] = []
        self._test(out, state, "turns", state.turn, self.max_turns, "turns", None, at_limit=True)
        self._common(out, state, now, None)
        if cost_unknown and self.max_cost_usd is not None and "cost_unknown" not in state.warned:
            state.warned.append("cost_unknown")
            out.append(
                Signal(
                    kind="budget",
                    reason="budget_cost_unknown",
                    message="Usage was reported without a cost, so the cost budget cannot be enforced.",
                    warn_only=True,
                )
            )
        return out

    def _common(self, out: list[Signal], state: SessionState, now: float | None, tool: str | None) -> None:
        self._test(out, state, "tokens", state.tokens, self.max_tokens, "tokens", tool, at_limit=True)
        self._test(out, state, "cost", state.cost, self.max_cost_usd, "USD", tool, at_limit=True)
        if self.max_seconds is not None and now is not None and state.started is not None:
            elapsed = round(now - state.started, 3)
            self._test(out, state, "time", elapsed, self.max_seconds, "seconds", tool, at_limit=True)

    def _test(
        self,
        out: list[Signal],
        state: SessionState,
        name: str,
        used: float,
        limit: float | None,
        unit: str,
        tool: str | None,
        *,
        at_limit: bool = False,
    ) -> None:
        if limit is None:
            return
        over = used >= limit if at_limit else used > limit
        if over:
            out.append(
                Signal(
                    kind="budget",
                    reason=f"budget_{name}",
                    message=f"Budget exhausted: {used:g} {unit} used, limit {limit:g}.",
                    tool=tool,
                    count=int(used),
                    details={"budget": name, "used": used, "limit": limit},
                )
            )
        elif self.soft is not None and used >= self.soft * limit:
            key = f"soft_{name}" if tool is None or unit != f"calls to {tool}" else f"soft_{name}:{tool}"
            if key not in state.warned:
                state.warned.append(key)
                out.append(
                    Signal(
                        kind="budget",
                        reason=f"budget_{name}",
                        message=f"Budget {int(self.soft * 100)}% used: {used:g} {unit} of {limit:g}.",
                        tool=tool,
                        count=int(used),
                        warn_only=True,
                        details={"budget": name, "used": used, "limit": limit, "soft": True},
                    )
                )
