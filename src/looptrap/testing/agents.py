"""Scripted agents: deterministic stand-ins for a model, stuck in a known loop shape (or healthy).

Each agent cycles through its ``script`` of tool calls against fake tools. With a guard, advice and blocks
come back as the tool's result; a ``stubborn`` agent ignores that many of them, then changes course by
calling ``report_blocked``. Without a guard it runs until the turn cap, the blunt fix a guard replaces.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from looptrap.drivers.guard import Guard

__all__ = ["RunResult", "ScriptedAgent", "demo_agents"]

Tool = Callable[[dict[str, Any]], tuple[Any, bool]]


@dataclass
class RunResult:
    """How a scripted run ended."""

    calls: int
    turns: int
    outcome: str
    reason: str | None = None
    messages: list[str] = field(default_factory=list)


@dataclass
class ScriptedAgent:
    """A deterministic agent: one tool call per turn from ``script`` (cycled), ``progress`` per turn.

    ``done_after``: the agent finishes with an answer after this many calls (a healthy run); ``None``
    means it never finishes on its own. ``says``: the words the model writes every turn (given to
    ``end_turn(text=...)``).
    """

    name: str
    script: list[tuple[str, dict[str, Any]]]
    tools: dict[str, Tool]
    done_after: int | None = None
    stubborn: int = 0
    progress: Callable[[int], Any] | None = None
    says: str | None = None
    max_turns: int = 40

    def run(self, guard: Guard | None = None) -> RunResult:
        """Run until an answer, a report, a halt or the turn cap."""
        calls = 0
        refused = 0
        messages: list[str] = []
        steps = itertools.cycle(self.script)
        for turn in range(1, self.max_turns + 1):
            if self.done_after is not None and calls >= self.done_after:
                return RunResult(calls, turn, "answered", messages=messages)
            if refused > self.stubborn:
                if guard is not None:
                    v = guard.handle_report_blocked({"tried": [self.name], "needed": "a tool that can answer this"})
                    return RunResult(calls, turn, "reported blocked", v.reason, messages)
                return RunResult(calls, turn, "reported blocked", messages=messages)
            tool, args = next(steps)
            if guard is not None:
                v = guard.check(tool, args)
                if v.action == "halt":
                    return RunResult(calls, turn, "halted", v.reason, [*messages, v.message])
                if not v.allowed:
                    refused += 1
                    messages.append(v.message)
                    guard.end_turn(self.progress(turn) if self.progress else None, text=self.says)
                    continue
            result, failed = self.tools[tool](args)
            calls += 1
            if guard is not None:
                guard.record(tool, args, result, is_error=failed)
                v = guard.end_turn(self.progress(turn) if self.progress else None, text=self.says)
                if v.action == "halt":
                    return RunResult(calls, turn, "halted", v.reason, [*messages, v.message])
                if v.intervenes:
                    refused += 1
                    messages.append(v.message)
        return RunResult(calls, self.max_turns, "turn cap")


def _const(result: Any, failed: bool = False) -> Tool:
    return lambda args: (result, failed)


def demo_agents() -> list[ScriptedAgent]:
    """The demo's agents: one per loop shape, and two healthy runs that must pass untouched."""
    counter = itertools.count(1000)
    pages = {str(i): f"page {i}: orders {i * 10}-{i * 10 + 9}" for i in range(1, 6)}
    test_runs = itertools.count(1)
    return [
        ScriptedAgent(
            "same call again (repeat)",
            [("search_docs", {"query": "refund policy"})],
            {"search_docs": _const("0 results")},
        ),
        ScriptedAgent(
            "reworded searches (drift)",
            [
                ("search_docs", {"query": q})
                for q in (
                    "refund policy",
                    "refunds",
                    "money back",
                    "return policy",
                    "reimbursement",
                    "refund rules",
                    "get refund",
                )
            ],
            {"search_docs": _const("No results found.")},
        ),
        ScriptedAgent(
            "ping-pong between tools (cycle)",
            [("get_order", {"id": "A1"}), ("search_orders", {"customer": "ACME"})],
            {
                "get_order": _const("order not found"),
                "search_orders": _const("3 results: B7 (shipped), C9 (open), D2 (cancelled)"),
            },
        ),
        ScriptedAgent(
            "same error, new arguments (error_repeat)",
            [("create_ticket", {"title": f"Refund for order {i}"}) for i in range(1, 9)],
            {
                "create_ticket": lambda a: (
                    f"403 Forbidden: missing scope tickets:write (request {uuid.UUID(int=next(counter))})",
                    True,
                )
            },
        ),
        ScriptedAgent(
            "busy, but no progress (no_progress)",
            [("list_files", {"dir": d}) for d in ("a", "b", "c", "d", "e", "f", "g")],
            {"list_files": lambda a: (f"{a['dir']}/README.md", False)},
            progress=lambda turn: {"answer": None, "found": []},
        ),
        ScriptedAgent(
            "the same words again (repeated_text)",
            [("read_file", {"path": f"src/module_{i}.py"}) for i in range(40)],
            {"read_file": lambda a: (f"# {a['path']}\ndef main():\n    pass\n", False)},
            # degenerate repetition: the model writes one sentence over and over in its message
            says=" ".join(["I need to check the configuration once more before I change anything."] * 12),
        ),
        ScriptedAgent(
            "stubborn: ignores advice (halt)",
            [("search_docs", {"query": "refund policy"})],
            {"search_docs": _const("0 results")},
            stubborn=5,
        ),
        ScriptedAgent(
            "healthy: pagination",
            [("list_orders", {"page": str(i)}) for i in range(1, 6)],
            {"list_orders": lambda a: (pages[a["page"]], False)},
            done_after=5,
        ),
        ScriptedAgent(
            "healthy: edit, then test, again",
            [("run_tests", {"cmd": "pytest -q"}), ("edit_file", {"path": "app.py", "patch": "fix"})],
            {
                "run_tests": lambda a: (f"{max(0, 3 - next(test_runs))} failed in 0.4s", False),
                "edit_file": _const("ok"),
            },
            done_after=8,
        ),
    ]
