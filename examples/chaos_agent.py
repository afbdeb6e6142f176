"""Chaos: a support agent against tools that misbehave on purpose, every fault on every tool (docs/chaos.md).

The agent answers "What is the refund policy for order A-1042?" with two tools. Its model is scripted, and
naive the way models are: a result that does not help is a reason to call again; advice from the guard is a
reason to stop and report what blocked it. Without the guard, a broken tool keeps it calling until the hard
ceiling; with the guard, it stops early and says why.

    python examples/chaos_agent.py
    looptrap chaos examples/chaos_agent.py:agent --guard examples/chaos_agent.py:guard --baseline
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from looptrap import Budgets, Guard
from looptrap.chaos import matrix

ORDER = "A-1042"


def get_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"id": order_id, "status": "delivered", "delivered": "2026-05-02", "total": "84.00 EUR"}


def search_docs(query: str) -> str:
    """Search the support documentation."""
    return "Refund policy: refunds within 30 days of delivery, to the original payment method."


TOOLS = [get_order, search_docs]


@dataclass
class Seen:
    """One tool call and what came back, as the model saw it."""

    tool: str
    args: dict[str, Any]
    result: Any
    refused: bool = False


def useful(seen: Seen) -> bool:
    """Whether a result answers what the call asked (the model's judgement)."""
    if seen.refused:
        return False
    if seen.tool == "get_order":
        return isinstance(seen.result, dict) and seen.result.get("id") == ORDER
    return isinstance(seen.result, str) and "30 days" in seen.result


def next_step(history: list[Seen]) -> tuple[str, Any]:
    """The scripted model: the order first, then the policy; again while a result does not help; after
    the guard's advice, report what blocked it."""
    if history and history[-1].refused:
        tried = sorted({f"{s.tool}({s.args})" for s in history})
        return "report", {"tried": tried, "needed": "working order and documentation tools"}
    if not any(useful(s) for s in history if s.tool == "get_order"):
        return "call", ("get_order", {"order_id": ORDER})
    if not any(useful(s) for s in history if s.tool == "search_docs"):
        return "call", ("search_docs", {"query": "refund policy"})
    return "answer", f"Order {ORDER} was delivered on 2 May: it can be refunded within 30 days."


def agent(tools: list[Any], guard: Guard | None) -> str:
    """Run the agent once with these tools, guarded or not (the shape ``looptrap.chaos`` runs)."""
    by_name = {t.__name__: t for t in tools}
    history: list[Seen] = []
    while True:  # no turn cap of its own: the chaos ceiling is what stops a runaway
        what, step = next_step(history)
        if what == "answer":
            return str(step)
        if what == "report":
            if guard is not None:
                guard.handle_report_blocked(step)
            return f"Blocked: {step['needed']}"
        name, args = step
        if guard is not None:
            verdict = guard.check(name, args)
            if verdict.action == "halt":
                return f"Stopped: {verdict.reason}"
            if not verdict.allowed:
                history.append(Seen(name, args, verdict.message, refused=True))
                guard.end_turn()
                continue
        try:
            result, failed = by_name[name](**args), False
        except Exception as exc:  # noqa: BLE001 - the tool failed: the model reads the error
            result, failed = f"{type(exc).__name__}: {exc}", True
        history.append(Seen(name, args, result))
        if guard is not None:
            guard.record(name, args, result, is_error=failed)
            if guard.end_turn().action == "halt":
                return f"Stopped: {guard.halted.reason if guard.halted else 'halt'}"


def guard() -> Guard:
    """The guard a team would run this agent with: the defaults, and a tool-call budget as the last line."""
    return Guard(budgets=Budgets(max_tool_calls=20))


if __name__ == "__main__":
    m = matrix(agent, TOOLS, guard=guard, baseline=True, max_calls=30)
    for (fault, tool), report in m.reports.items():
        assert report.terminated, (fault, tool, report.summary())  # with the guard, every run stops
        assert report.ran <= 20, (fault, tool, report.summary())  # the budget: 20 calls at most ran
    stuck = [key for key, r in m.baseline.items() if not r.terminated]
    assert ("empty", "get_order") in stuck  # without it, a tool that finds nothing keeps the agent calling
    assert m.reports[("slow", "search_docs")].outcome == "finished"  # a slow tool is no reason to stop
    assert m.reports[("empty", "get_order")].reason == "reported_blocked"  # the advice got the model out
