"""Structured logs: every intervention and one record per turn. Run: python examples/logging_setup.py"""

from __future__ import annotations

import json
import logging

from looptrap import Guard

FIELDS = ("run_id", "turn", "tools_called", "repeat_max", "progressed", "signals", "usage", "action", "reason")


class JsonLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        data = {"msg": record.getMessage(), **{k: getattr(record, k) for k in FIELDS if hasattr(record, k)}}
        self.lines.append(json.dumps(data))


handler = JsonLines()
logger = logging.getLogger("looptrap")
logger.addHandler(handler)
logger.setLevel(logging.INFO)

guard = Guard(run_id="demo-run")
for _ in range(3):
    args = {"query": "refund policy", "api_key": "sk-secret"}
    if guard.check("search_docs", args).allowed:
        guard.record("search_docs", args, "0 results")
    guard.end_turn()

print("\n".join(handler.lines))
assert any('"reason": "loop_repeat"' in line for line in handler.lines)
assert all("sk-secret" not in line for line in handler.lines)  # arguments are not logged by default
