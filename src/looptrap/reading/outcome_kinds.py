"""Outcome kinds from what agent programs say: the messages an agent CLI or framework writes in place of a
tool's result when the call did not run (it cancelled the call, the user refused it, it was interrupted).

Hooks and importers of each source read its messages with these functions, so a cancelled sibling call or a
permission refusal is never taken for the tool failing (see :data:`looptrap.core.types.OutcomeKind`). Each
returns ``None`` for a text that is the tool's own result.
"""

from __future__ import annotations

from looptrap.core.types import OutcomeKind

__all__ = [
    "adk_kind",
    "ag2_kind",
    "claude_code_kind",
    "codex_kind",
    "crewai_kind",
    "gemini_kind",
    "haystack_kind",
    "langchain_kind",
    "pydantic_ai_kind",
    "refusal_words",
    "strands_kind",
]

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


_HITL = "hitl_interrupt_decision"  # LangChain's human-in-the-loop middleware (langchain 1.x)


def langchain_kind(metadata: object) -> OutcomeKind | None:
    """LangChain's human-in-the-loop middleware answers a call it did not run with a ``ToolMessage`` whose
    ``additional_kwargs`` say so (``lc_source`` "hitl_interrupt_decision", ``lc_data`` ``{"decision": ...}``):
    ``refused`` for a ``reject`` (the user said no) and a ``respond`` (the user answered in the tool's place)."""
    if not isinstance(metadata, dict) or metadata.get("lc_source") != _HITL:
        return None
    data = metadata.get("lc_data")
    decision = data.get("decision") if isinstance(data, dict) else None
    return "refused" if decision in ("reject", "respond") else None


# Pydantic AI's ToolReturnPart.outcome values for a call that did not run ('success', 'failed' and 'retried' are
# results of calls that ran, or of their arguments).
_PYDANTIC_AI: dict[str, OutcomeKind] = {"denied": "refused", "interrupted": "interrupted"}


def pydantic_ai_kind(outcome: object) -> OutcomeKind | None:
    """Pydantic AI's ``ToolReturnPart.outcome``: ``denied`` (the approval was refused, or a deferred-call handler
    answered ``ToolDenied``) is ``refused``; ``interrupted`` (a call left without a result, closed by the
    history repair) is ``interrupted``."""
    return _PYDANTIC_AI.get(outcome) if isinstance(outcome, str) else None


# Google ADK's answers in a tool's place when the tool requires confirmation (google-adk 1.x-2.x).
_ADK: dict[str, OutcomeKind] = {
    "This tool call is rejected.": "refused",
    "This tool call requires confirmation, please approve or reject.": "interrupted",
}


def adk_kind(result: object) -> OutcomeKind | None:
    """Google ADK's response for a call whose tool requires confirmation: ``{"error": "This tool call is
    rejected."}`` is ``refused``; ``{"error": "This tool call requires confirmation, please approve or
    reject."}`` (the call waits for the user's answer, and runs once it is yes) is ``interrupted``."""
    if not isinstance(result, dict) or len(result) != 1:
        return None
    error = result.get("error")
    return _ADK.get(error) if isinstance(error, str) else None


def haystack_kind(text: object) -> OutcomeKind | None:
    """Haystack's human-in-the-loop answer to a call the user rejected, without feedback: "Tool execution for
    '<tool>' was rejected by the user." is ``refused``."""
    head = _head(text)
    return (
        "refused" if head.startswith("Tool execution for '") and head.endswith("' was rejected by the user.") else None
    )


def ag2_kind(text: object) -> OutcomeKind | None:
    """AG2's approval middleware (``approval_required``) answers a denied call with "User denied the tool call
    request" (its default ``denied_message``): ``refused``."""
    return "refused" if _head(text) == "User denied the tool call request" else None


# Strands Agents (1.x): the results it writes for calls it did not run.
_STRANDS: dict[str, OutcomeKind] = {
    "Tool execution cancelled": "cancelled",  # agent.cancel() before the call started
    "tool cancelled by user": "cancelled",  # a hook's cancel_tool=True
    "Tool cancelled by hook": "cancelled",  # a BeforeToolsEvent's cancel=True: the whole batch
    "Tool execution cancelled locally; remote execution may have continued": "interrupted",  # an MCP call
}


def strands_kind(text: object) -> OutcomeKind | None:
    """Strands' own result text for a call it did not run: ``cancelled`` ("Tool execution cancelled", "tool
    cancelled by user", "Tool cancelled by hook"), ``interrupted`` (an MCP call cancelled while it ran)."""
    return _STRANDS.get(_head(text))
