"""Tools for testing agents and guards: scripted agents that loop in known shapes."""

from looptrap.testing.agents import RunResult, ScriptedAgent, demo_agents

__all__ = ["RunResult", "ScriptedAgent", "demo_agents"]
