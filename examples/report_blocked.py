"""The honest way out: give the model a report_blocked tool. Run: python examples/report_blocked.py"""

from __future__ import annotations

import json

from looptrap import Guard, report_blocked_tool

tool_definition = report_blocked_tool()  # {"name", "description", "parameters" (JSON schema)}
print(json.dumps(tool_definition, indent=2)[:300], "...")

guard = Guard()
# ... the model, advised that it is looping, calls the tool instead of retrying:
verdict = guard.handle_report_blocked(
    {"tried": ["search_docs 'refund policy'", "search_docs 'refunds'"], "needed": "the refund policy document"}
)
print(verdict.action, verdict.reason, "|", verdict.summary)
print("needed:", guard.needed)
assert verdict.action == "halt"
assert verdict.reason == "reported_blocked"
assert guard.needed == ["the refund policy document"]

bad = guard.handle_report_blocked({"tried": [], "needed": ""})
assert bad.action == "advise"  # malformed: the model is told how to call it properly
