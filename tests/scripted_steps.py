"""The scripted models' decisions shared by the raw-SDK tests (OpenAI, Anthropic): given the request number and
the last tool result the model received, the next step: a tool call, or a final answer (a str)."""

from __future__ import annotations

import asyncio
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


# -- what the model is told, and the tools it calls -------------------------------------------------------
ADVICE = (
    "You have called search_docs with these exact arguments 3 times in a row; the previous 2 returned the same "
    "result. It will not change. Use different arguments or a different tool. If you cannot get what you need, "
    "call report_blocked with what you tried and what you need: that is a correct outcome, not a failure."
)
BLOCK = "Blocked: this call was not run. You were already told this is a loop. " + ADVICE
QUESTION = "What is the refund policy?"


class Tools:
    """The agent's tools, counting how often each body ran."""

    def __init__(self) -> None:
        self.ran: dict[str, int] = {}
        self.content = ""

    def _count(self, name: str) -> None:
        self.ran[name] = self.ran.get(name, 0) + 1

    def search_docs(self, query: str) -> str:
        self._count("search_docs")
        return "Refunds within 30 days." if query == "refunds" else "0 results"

    async def asearch_docs(self, query: str) -> str:
        await asyncio.sleep(0)
        return self.search_docs(query)

    def edit_file(self, path: str, content: str) -> str:
        self._count("edit_file")
        self.content = content
        return f"wrote {len(content)} bytes to {path}"

    def run_tests(self) -> str:
        self._count("run_tests")
        return "all passed" if self.content == "v3" else "1 failed: test_refund"

    def functions(self) -> dict[str, Callable[..., Any]]:
        return {"search_docs": self.search_docs, "edit_file": self.edit_file, "run_tests": self.run_tests}
