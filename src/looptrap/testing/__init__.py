"""Tools for testing agents and guards: scripted agents that loop in known shapes."""

from looptrap.testing.agents import RunResult, ScriptedAgent, demo_agents
from looptrap.testing.helpers import FakeClock, step

__all__ = ["FakeClock", "RunResult", "ScriptedAgent", "demo_agents", "step"]
