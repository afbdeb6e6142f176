"""Budgets: hard caps with a soft warning first. Run: python examples/budgets.py"""

from __future__ import annotations

from looptrap import Budgets, Guard

guard = Guard(budgets=Budgets(max_tool_calls=10, max_cost_usd=0.05, soft=0.8))
actions = []
for i in range(20):
    verdict = guard.check("fetch_page", {"url": f"https://example.com/page/{i}"})
    actions.append(verdict.action)
    if verdict.action == "halt":
        print(f"call {i + 1}: halted: {verdict.reason}: {verdict.message}")
        break
    guard.record("fetch_page", {"url": f"https://example.com/page/{i}"}, f"content of page {i}")
    guard.end_turn(usage={"input_tokens": 900, "output_tokens": 100, "cost_usd": 0.002})

print(actions)
assert actions.count("warn") == 1  # 80% of the tool-call budget
assert actions[-1] == "halt"
assert guard.halted is not None
assert guard.halted.reason == "budget_tool_calls"
