"""Composing detectors and per-tool policies. Run: python examples/configuration.py"""

from __future__ import annotations

from looptrap import Cycle, Drift, Guard, Repeat, ToolPolicy

guard = Guard(
    detectors=[Repeat(threshold=4), Cycle(), Drift(warn_only=True)],
    tools={
        "debugger_step": ToolPolicy(exempt=True),  # stepping repeats by design
        "search_*": ToolPolicy(fold_case=True, fold_whitespace=True),
        "run_sql": ToolPolicy(keys=("query",)),  # only the query makes two calls different
    },
)

# Exempt: 10 identical steps pass.
for _ in range(10):
    assert guard.check("debugger_step", {}).allowed
    guard.record("debugger_step", {}, "line 12")

# Folding: these three are the same call; Repeat(threshold=4) advises the 4th.
queries = ["Refund Policy", "refund  policy", "REFUND POLICY", "refund policy"]
actions = []
for q in queries:
    v = guard.check("search_docs", {"query": q})
    actions.append(v.action)
    if v.allowed:
        guard.record("search_docs", {"query": q}, "0 results")
print(actions)
assert actions == ["allow", "allow", "allow", "advise"]

# Salient keys: a changing request label does not make two queries different.
a = guard.engine.call("run_sql", {"query": "select 1", "label": "try 1"})
b = guard.engine.call("run_sql", {"query": "select 1", "label": "try 2"})
assert a.digest == b.digest
print("ok")
