"""Outcome kinds from what agent programs say: the messages an agent CLI or framework writes in place of a
tool's result when the call did not run (it cancelled the call, the user refused it, it was interrupted).

Hooks and importers of each source read its messages with these functions, so a cancelled sibling call or a
permission refusal is never taken for the tool failing (see :data:`looptrap.core.types.OutcomeKind`). Each
returns ``None`` for a text that is the tool's own result.
"""

from __future__ import annotations

from looptrap.core.types import OutcomeKind

__all__ = ["claude_code_kind", "codex_kind", "crewai_kind", "gemini_kind", "refusal_words"]

_HEAD = 400  # the messages are short and open the text: only its start is read

# Claude Code (2.0-2.1): tool_result contents, with or without <tool_use_error> tags.
_CLAUDE: tuple[tuple[str, OutcomeKind], ...] = (
    ("Sibling tool call errored", "cancelled"),  # the other calls of a parallel batch after one failed
    ("Cancelled: parallel tool call", "cancelled"),
    ("Streaming fallback - tool execution discarded", "cancelled"),
    ("The user doesn't want to proceed with this tool use", "refused"),  # a permission prompt answered no
    ("User rejected tool use", "refused"),
    ("Permission for this tool use was denied", "refused"),  # a sub-agent's call
    ("The user doesn't want to take this action right now", "interrupted"),  # Esc before the call started
    ("[Request interrupted by user for tool use]", "interrupted"),
    ("Interrupted by user", "interrupted"),
)
_SAID = "the user said:"


def _head(text: object) -> str:
    if not isinstance(text, str):
        return ""
    head = text[:_HEAD].strip()
    if head.startswith("<tool_use_error>"):
        head = head[len("<tool_use_error>") :].lstrip()
    return head.removeprefix("Error: ")


def claude_code_kind(text: object) -> OutcomeKind | None:
    """Claude Code's own message in place of a result: ``cancelled`` ("Sibling tool call errored"),
    ``refused`` ("The user doesn't want to proceed with this tool use..."), ``interrupted``."""
    head = _head(text)
    for start, kind in _CLAUDE:
        if head.startswith(start):
            return kind
    return None


def refusal_words(text: object) -> str | None:
    """What the user typed when refusing a call ("... To tell you how to proceed, the user said:\\n<words>"),
    if anything."""
    if not isinstance(text, str):
        return None
    i = text.find(_SAID, 0, _HEAD)
    if i < 0:
        return None
    words = text[i + len(_SAID) :].strip()
    return words or None


def codex_kind(text: object) -> OutcomeKind | None:
    """Codex CLI's own output for a call it did not run: ``refused`` ("exec command rejected by user", "patch
    rejected by user"), ``interrupted`` ("aborted by user", "aborted")."""
    head = _head(text)
    if not head:
        return None
    first = head.partition("\n")[0]
    if first in ("exec command rejected by user", "patch rejected by user") or first.startswith(
        "exec command rejected:"
    ):
        return "refused"
    if head == "aborted" or "\naborted by user" in head or first.startswith("aborted by user"):
        return "interrupted"
    return None


def gemini_kind(status: object, text: object = None) -> OutcomeKind | None:
    """Gemini CLI: a tool call's ``status`` (``cancelled``) or result text ("[Operation Cancelled] Reason:
    ..."): ``refused`` (the user denied it), ``interrupted`` (stopped while it ran), else ``cancelled``."""
    head = _head(text)
    if status != "cancelled" and not head.startswith("[Operation Cancelled]"):
        return None
    if "User denied execution" in head:
        return "refused"
    if "User cancelled tool execution" in head:
        return "interrupted"
    return "cancelled"


def crewai_kind(text: object) -> OutcomeKind | None:
    """CrewAI refuses to run a call whose tool and input equal the last call's ("I tried reusing the same
    input, I must stop using this action input..."): ``cancelled``."""
    return "cancelled" if _head(text).startswith("I tried reusing the same input") else None
