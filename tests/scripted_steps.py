"""The scripted models' decisions shared by the raw-SDK tests (OpenAI, Anthropic): given the request number and
the last tool result the model received, the next step: a tool call, or a final answer (a str)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Call = tuple[str, dict[str, Any]]  # (tool, arguments); a str is a final answer
Script = Callable[[int, str], "Call | str"]  # (request number from 1, the last tool result) -> the next step


def stubborn(n: int, last: str) -> Call | str:
    return ("search_docs", {"query": "refund policy"})


def adapting(n: int, last: str) -> Call | str:
    if last.startswith("You have called"):
        return ("search_docs", {"query": "refunds"})
    if last == "Refunds within 30 days.":
        return "Refunds are accepted within 30 days."
    return ("search_docs", {"query": "refund policy"})


HEALTHY: list[Call | str] = [
    ("edit_file", {"path": "refund.py", "content": "v1"}),
    ("run_tests", {}),
    ("edit_file", {"path": "refund.py", "content": "v2"}),
    ("run_tests", {}),
    ("edit_file", {"path": "refund.py", "content": "v3"}),
    ("run_tests", {}),
    "Fixed: the tests pass.",
]


def healthy(n: int, last: str) -> Call | str:
    return HEALTHY[n - 1]


def reporting(n: int, last: str) -> Call | str:
    if last.startswith("You have called"):
        return ("report_blocked", {"tried": ["search_docs 'refund policy'"], "needed": "the refund policy"})
    return ("search_docs", {"query": "refund policy"})
