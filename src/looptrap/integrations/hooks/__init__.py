"""Hooks for coding-agent CLIs that run a command per tool call: ``looptrap hook claude-code|gemini-cli|codex``.

Each CLI sends a JSON payload on stdin before and after every tool call; the hook keeps the session's guard
state in a store (a SQLite file in the user's cache folder by default) and answers in that CLI's format.
"""

from looptrap.integrations.hooks.base import PROTOCOLS, Answer, HookEvent, Protocol, run_hook

__all__ = ["PROTOCOLS", "Answer", "HookEvent", "Protocol", "run_hook"]
