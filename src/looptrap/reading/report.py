"""The honest way out: a ``report_blocked`` tool the model can call when it cannot go on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["REPORT_BLOCKED_DESCRIPTION", "parse_report", "report_blocked_schema", "report_blocked_tool"]

REPORT_BLOCKED_DESCRIPTION = (
    "Report that you cannot complete the task with the tools and information you have. This is a correct, "
    "expected outcome, not a failure: use it instead of repeating calls that do not work. List what you "
    "tried and say what you would need (information, access, a decision) to go on."
)


def report_blocked_schema() -> dict[str, Any]:
    """The JSON schema of the tool's arguments: ``tried`` (at least one string) and ``needed``."""
    return {
        "type": "object",
        "properties": {
            "tried": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "What you tried, one entry per distinct attempt.",
            },
            "needed": {"type": "string", "minLength": 1, "description": "What you would need to go on."},
        },
        "required": ["tried", "needed"],
        "additionalProperties": False,
    }


def report_blocked_tool(name: str = "report_blocked") -> dict[str, Any]:
    """A framework-neutral tool definition: ``{"name", "description", "parameters"}`` (JSON schema)."""
    return {"name": name, "description": REPORT_BLOCKED_DESCRIPTION, "parameters": report_blocked_schema()}


def parse_report(arguments: Any) -> tuple[list[str], str]:
    """Validate the tool's arguments; raises ``ValueError`` with a message the model can act on."""
    if not isinstance(arguments, Mapping):
        raise ValueError("report_blocked takes an object with 'tried' (list of strings) and 'needed' (string)")
    tried, needed = arguments.get("tried"), arguments.get("needed")
    if isinstance(tried, str):
        tried = [tried]
    if not isinstance(tried, list) or not tried or not all(isinstance(t, str) and t.strip() for t in tried):
        raise ValueError("'tried' must be a non-empty list of strings: one entry per attempt you made")
    if not isinstance(needed, str) or not needed.strip():
        raise ValueError("'needed' must say what you would need to go on")
    return [t.strip() for t in tried], needed.strip()
