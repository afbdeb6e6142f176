"""``looptrap demo``: scripted agents stuck in each loop shape, run with and without the guard."""

from __future__ import annotations

import sys

import orjson

from looptrap.core.guard import Guard
from looptrap.testing.agents import demo_agents

__all__ = ["run_demo"]


def run_demo(*, as_json: bool = False) -> int:
    """Print calls spent and outcome, side by side; returns the exit code."""
    rows = []
    for without_agent, with_agent in zip(demo_agents(), demo_agents(), strict=False):
        bare = without_agent.run(None)
        guarded = with_agent.run(Guard(clock=None))
        rows.append((with_agent.name, bare, guarded))
    if as_json:
        for name, bare, guarded in rows:
            line = {
                "scenario": name,
                "without_guard": {"calls": bare.calls, "outcome": bare.outcome},
                "with_guard": {"calls": guarded.calls, "outcome": guarded.outcome, "reason": guarded.reason},
            }
            sys.stdout.write(orjson.dumps(line).decode() + "\n")
        return 0
    out = sys.stdout
    head = ("scenario", "without guard", "with looptrap")
    cells = [
        (
            name,
            f"{bare.calls:>3} calls, {bare.outcome}",
            f"{guarded.calls:>3} calls, {guarded.outcome}"
            + (f" ({guarded.reason})" if guarded.outcome == "halted" else ""),
        )
        for name, bare, guarded in rows
    ]
    w = [max(len(r[i]) for r in [head, *cells]) for i in range(3)]
    out.write("  ".join(h.ljust(w[i]) for i, h in enumerate(head)).rstrip() + "\n")
    out.write("  ".join("-" * w[i] for i in range(3)) + "\n")
    for r in cells:
        out.write("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() + "\n")
    spent = sum(b.calls for _, b, _ in rows)
    saved = spent - sum(g.calls for _, _, g in rows)
    out.write(f"\nTool calls: {spent} without the guard, {spent - saved} with it ({saved} saved).\n")
    first = next((g.messages[0] for _, _, g in rows if g.messages), None)
    if first:
        out.write(f"\nWhat the model was told the first time:\n  {first}\n")
    return 0
