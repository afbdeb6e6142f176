"""``looptrap demo``: scripted agents stuck in each loop shape, run with and without the guard."""

from __future__ import annotations

import sys
import textwrap

import orjson

from looptrap.drivers.guard import Guard
from looptrap.testing.agents import RunResult, demo_agents

__all__ = ["run_demo"]

WIDTH = 80  # the table, the notes and the quoted advice fit a terminal this wide

#: What each outcome means, one line each (the runs end in one of these).
OUTCOMES = {
    "turn cap": "nothing noticed the loop; the {turns}-turn limit cut the run off",
    "reported blocked": "the agent took the advice and reported what blocked it",
    "halted": "the agent ignored the advice; looptrap stopped the run",
    "answered": "the agent finished its task (a healthy run: left untouched)",
}


def run_demo(*, as_json: bool = False) -> int:
    """Print the tool calls each scripted agent spent and how its run ended, without and with the guard;
    returns the exit code."""
    rows: list[tuple[str, RunResult, RunResult]] = []
    turns = 0
    for without_agent, with_agent in zip(demo_agents(), demo_agents(), strict=False):
        bare = without_agent.run(None)
        guarded = with_agent.run(Guard(clock=None))
        rows.append((with_agent.name, bare, guarded))
        turns = max(turns, with_agent.max_turns)
    out = sys.stdout
    if as_json:
        for name, bare, guarded in rows:
            line = {
                "scenario": name,
                "without_guard": {"calls": bare.calls, "outcome": bare.outcome},
                "with_guard": {"calls": guarded.calls, "outcome": guarded.outcome, "reason": guarded.reason},
            }
            out.write(orjson.dumps(line).decode() + "\n")
        return 0
    out.write(
        textwrap.fill(
            "Scripted agents, each stuck in one loop shape (or healthy), run without and with looptrap. Each "
            "number counts the tool calls that ran before the run ended (a call the guard refused did not "
            "run), then how it ended:",
            WIDTH,
        )
        + "\n\n"
    )
    digits = max(len(str(r.calls)) for _, b, g in rows for r in (b, g))

    def cell(r: RunResult) -> str:
        reason = f" ({r.reason})" if r.outcome == "halted" and r.reason else ""
        return f"{r.calls:>{digits}} {r.outcome}{reason}"

    head = ("scenario", "without guard", "with looptrap")
    cells = [(name, cell(bare), cell(guarded)) for name, bare, guarded in rows]
    w = [max(len(r[i]) for r in [head, *cells]) for i in range(3)]
    w[0] = min(w[0], WIDTH - 4 - w[1] - w[2])  # the scenario names give way, if anything must
    for r in [head, tuple("-" * n for n in w), *cells]:
        out.write("  ".join(c[: w[i]].ljust(w[i]) for i, c in enumerate(r)).rstrip() + "\n")
    spent = sum(b.calls for _, b, _ in rows)
    saved = spent - sum(g.calls for _, _, g in rows)
    out.write(f"\nTool calls: {spent} without the guard, {spent - saved} with it ({saved} saved).\n\n")
    label = max(len(k) for k in OUTCOMES) + 2
    for outcome, meaning in OUTCOMES.items():
        out.write(f"  {outcome + ':':<{label}}{meaning.format(turns=turns)}\n")
    first = next((g.messages[0] for _, _, g in rows if g.messages), None)
    if first:
        out.write("\nWhat the model was told the first time:\n")
        out.write(textwrap.fill(first, WIDTH, initial_indent="  ", subsequent_indent="  ") + "\n")
    return 0
