"""A new detector, where it goes and how it plugs in (docs/architecture.md).

A detector is a small frozen dataclass in ``looptrap/detectors/``: it reads the call, the session state and
the tool's policy, keeps what it must remember in ``state.slots[self.name]`` (plain data, so any process
can load the state and go on), and returns a signal; the escalation ladder decides what the signal does.
This one warns when an agent calls the same tool many times in a row, whatever the arguments.

    python examples/custom_detector.py
"""

from __future__ import annotations

from dataclasses import dataclass

from looptrap import Guard, GuardConfig, ToolPolicy, default_detectors
from looptrap.core.state import Entry, SessionState
from looptrap.core.types import Call, Signal
from looptrap.detectors import Detector


@dataclass(frozen=True, slots=True, repr=False)
class ToolStreak(Detector):
    """Warn on the ``threshold``-th call in a row of the same tool (any arguments)."""

    name = "tool_streak"
    reason = "tool_streak"
    threshold: int = 8
    warn_only: bool = True  # a streak alone is a hint, not a loop

    def check(self, call: Call, state: SessionState, policy: ToolPolicy) -> Signal | None:
        tool, count = state.slots.get(self.name) or ("", 0)
        if tool != call.tool or count + 1 < self.limit(policy):
            return None
        return self.signal(
            f"{call.tool} has been called {count + 1} times in a row. If the results are not getting you closer, "
            "try another tool or report what is blocking you.",
            tool=call.tool,
            count=count + 1,
            loop=self.loop_key(call.tool),
        )

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        tool, count = state.slots.get(self.name) or ("", 0)
        state.slots[self.name] = [entry.tool, count + 1 if tool == entry.tool else 1]


def main() -> None:
    guard = Guard(GuardConfig(detectors=(*default_detectors(), ToolStreak())))
    for page in range(1, 10):  # a healthy pager: new pages, new results; only the streak rule speaks
        args = {"query": "refund policy", "page": page}
        verdict = guard.check("search_docs", args)
        print(f"page {page}: {verdict.action}{' (' + verdict.kind + ')' if verdict.kind else ''}")
        guard.record("search_docs", args, f"hits {10 * page}-{10 * page + 9}")


if __name__ == "__main__":
    main()
