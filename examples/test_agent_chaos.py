"""Chaos tests: the agent stops, whatever its tools do (the recipe of docs/chaos.md).

Copy this file to your tests (``tests/test_agent_chaos.py``) and import your agent instead of the example's:
a function ``agent(tools, guard)`` that runs it once with these tools and this guard, and its ``TOOLS``.
It is a pytest file (its fixture and marker come from looptrap's pytest plugin), so it needs pytest, which
looptrap does not install: ``pip install pytest``.

    pytest tests/test_agent_chaos.py --looptrap-report chaos-report.json
    python examples/test_agent_chaos.py     # this copy: pytest on this file (pytest needed all the same)
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from chaos_agent import TOOLS, agent  # your agent instead: agent(tools, guard) runs it once
from looptrap import Budgets, Guard
from looptrap.chaos import Fault, assert_terminates
from looptrap.chaos.plugin import ChaosFixture


def guard() -> Guard:
    """A fresh guard for each run, as the agent runs in production: the defaults and a tool-call budget."""
    return Guard(budgets=Budgets(max_tool_calls=20))


@pytest.mark.looptrap_faults(tools=["get_order", "search_docs"])
def test_the_agent_stops_under_every_fault(looptrap_chaos: ChaosFixture, looptrap_fault: Fault) -> None:
    report = looptrap_chaos.run(agent, TOOLS, looptrap_fault, guard=guard, max_calls=30)
    assert_terminates(report, within_calls=21)


def test_a_healthy_run_is_left_alone(looptrap_chaos: ChaosFixture) -> None:
    report = looptrap_chaos.run(agent, TOOLS, guard=guard)
    assert report.outcome == "finished"
    assert not report.interventions


if __name__ == "__main__":  # pytest in a process of its own, so that it sees looptrap imported afresh
    raise SystemExit(
        subprocess.call([sys.executable, "-m", "pytest", __file__, "-p", "no:cacheprovider", *sys.argv[1:]])
    )
