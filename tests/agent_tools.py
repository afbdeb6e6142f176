"""The tools and texts the framework tests of LlamaIndex, DSPy and Haystack share: a documentation search that
finds nothing for the stuck agent's query, and an edit-then-test cycle that passes at the third try."""

from __future__ import annotations

from typing import Any

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
REFUND = {"query": "refund policy"}
QUESTION = "What is the refund policy?"


class Tools:
    """The tools of these tests, counting how often their bodies ran (``all()``: them, as the framework takes
    them; the docstrings are the descriptions frameworks read)."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.edits = 0

    def search_docs(self, query: str) -> str:
        """Search the documentation."""
        self.ran.append(f"search_docs {query}")
        return "1 result: refunds within 30 days" if query == "refunds" else "0 results"

    def edit_file(self, path: str, content: str) -> str:
        """Write a file."""
        self.ran.append(f"edit_file {path}")
        self.edits += 1
        return f"wrote {len(content)} bytes to {path}"

    def run_tests(self) -> str:
        """Run the test suite."""
        self.ran.append("run_tests")
        return "all passed" if self.edits >= 3 else f"{3 - self.edits} failed"

    def all(self) -> list[Any]:
        return [self.search_docs, self.edit_file, self.run_tests]
