"""What a result says: an error, empty ("no results"), an acknowledgement, still pending, not retryable,
or a write that changed nothing; from the tool's flag, an outcome-protocol status, a mapping's fields or a text's words.

Every heuristic here can be overridden per tool through :class:`looptrap.ToolPolicy`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "READ_CHARS",
    "ResultFacts",
    "result_facts",
    "wrote_nothing",
]


_EMPTY_TEXT = re.compile(
    r"""^\W*(?:
        (?:no|0|zero)\s+(?:results?|matches|match|items?|records?|entries|documents?|files?|hits|data|rows|orders?
            |users?)\b
      | nothing\s+(?:found|matched|to\s+show)\b
      | (?:none|null|nil|empty|n/a|\[\]|\{\})\W*$
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_EMPTY_ANYWHERE = re.compile(
    r"\bnot\s+found\b|\b(?:did\s+not|didn't)\s+match\s+any\b"
    r"|\b(?:returned|found|yielded)\s+(?:no|0|zero)\s+(?:results?|matches|items?|records?|hits|rows)\b",
    re.IGNORECASE,
)
_PENDING_WORDS = (
    "pending",
    "running",
    "progress",
    "queued",
    "processing",
    "ready",
    "waiting",
    "starting",
    "initializing",
    "scheduled",
    "building",
    "deploying",
    "provisioning",
    "processed",
    "finished",
    "completed",
    "started",
    "yet",
)
#: A short text result that reports a failure in its first words (tools that return errors as text).
_ERROR_TEXT = re.compile(
    r"^\W{0,3}(?:error|fatal|exception)\b\s*[:\-!]|^traceback \(most recent call last\)"
    r"|^(?:failed|unable|cannot|could not)\b|^no replacement was performed"
    r"|^an error occurred while running the tool\b",
    re.IGNORECASE,
)
#: A write that changed nothing: not a state change.
_NOOP_TEXT = re.compile(
    r"\b(?:0|zero|no)\s+(?:rows?|records?|items?|documents?|files?|lines?|changes?)\s+"
    r"(?:were\s+)?(?:inserted|updated|affected|changed|modified|deleted|written|upserted)\b"
    r"|\bno changes?\b(?:\s+(?:made|to\s+(?:apply|commit|save)))?|\bnothing to (?:commit|update|change|do)\b"
    r"|\balready up[- ]to[- ]date\b|\bunchanged\b|\bno-op\b",
    re.IGNORECASE,
)
_ACK_TEXT = re.compile(
    r"^\W*(?:ok(?:ay)?|done|sent|success(?:ful(?:ly)?)?|succeeded|created|saved|updated|deleted|written|"
    r"accepted|true|ack(?:nowledged)?|completed?|applied|added|removed|posted|stored)"
    r"(?:\s+(?:successfully|ok))?\W*$",
    re.IGNORECASE,
)
_PENDING_TEXT = re.compile(  # letters-only boundaries, so UPDATE_IN_PROGRESS and job_running match
    r"(?<![a-z])(?:pending|running|in[ _-]progress|queued|processing|not\s+(?:yet\s+)?ready|waiting|starting|"
    r"initializing|scheduled|building|deploying|provisioning)(?![a-z])",
    re.IGNORECASE,
)
_STATUS_WORDS = (
    r"(?:pending|running|in[ _-]progress|queued|processing|waiting|starting|initializing|scheduled|building|"
    r"deploying|provisioning|not\s+(?:yet\s+)?ready)"
)
#: A text that *states* a status: a status line ("Running...", "Queued (3 ahead)", "Build #42 in progress"),
#: a status field ("Status: queued", "state = running"), a sentence saying so ("the job is still running",
#: "is being processed", "has not finished yet"), or a status enum (``CREATE_IN_PROGRESS``). A status word
#: inside other prose ("the result of running `cat -n`") is not one.
_PENDING_STATEMENT = re.compile(
    # a status line: "Running...", "Queued (3 ahead)", "Build #42 in progress", "Job 8812 queued"
    rf"^[\W_]*(?:still\s+)?{_STATUS_WORDS}(?!\w)"
    rf"|^[^\S\n]*[\w#.-]+(?:[^\S\n]+[\w#.-]+){{0,3}}[^\S\n]+(?:is[^\S\n]+)?(?:still[^\S\n]+)?{_STATUS_WORDS}"
    r"[^\S\n]*(?:\([^\n)]{0,40}\))?[^\S\n.!:]*[.!:\u2026]*[^\S\n]*$"
    # a status field: "Status: queued", "state = running", "job state is pending"
    rf"|\b(?:status|state|phase|stage)\b[\"']?\s*(?:[:=-]|\bis\b)\s*[\"']?(?:still\s+)?(?:[a-z]+_)*{_STATUS_WORDS}"
    # a sentence: "the job is still running", "is being processed", "has not finished yet"
    rf"|\b(?:is|are|remains?|still|currently)\s+(?:still\s+|currently\s+|now\s+)?(?:being\s+processed\b|{_STATUS_WORDS}"
    r"(?!\w))"
    r"|\b(?:has|have)\s+not\s+(?:yet\s+)?(?:finished|completed|started)\b|\bnot\s+(?:finished|complete|done)\s+yet\b"
    r"|\bnot\s+(?:yet\s+)?ready\b",
    re.IGNORECASE | re.MULTILINE,
)
_PENDING_ENUM = re.compile(r"\b[A-Z][A-Z_]*_(?:IN_PROGRESS|PENDING|RUNNING|QUEUED|PROVISIONING|STARTING)\b")

# _PENDING_STATEMENT, taken apart for speed on an ASCII text, matched against the text lowercased (which
# is what IGNORECASE does to ASCII): each part starts with a literal or a few letters the regex engine skips
# to at C speed, where a leading ``^`` or ``\b`` makes it try every position. A ``\b`` before a word
# becomes a look-behind after its first letter. Non-ASCII texts get the pattern itself (tests/test_gates.py
# checks that both say the same).
_LINE_STATUS = (  # a status line (the first two branches), at a line's start
    rf"(?:[\W_]*(?:still\s+)?{_STATUS_WORDS}(?!\w)"
    rf"|[^\S\n]*[\w#.-]+(?:[^\S\n]+[\w#.-]+){{0,3}}[^\S\n]+(?:is[^\S\n]+)?(?:still[^\S\n]+)?{_STATUS_WORDS}"
    r"[^\S\n]*(?:\([^\n)]{0,40}\))?[^\S\n.!:]*[.!:\u2026]*[^\S\n]*$)"
)
_FIRST_LINE_STATUS = re.compile(_LINE_STATUS, re.MULTILINE).match
_NEXT_LINE_STATUS = re.compile(r"\n" + _LINE_STATUS, re.MULTILINE).search
_STATUS_FIELD = re.compile(
    r"(?:s(?<!\ws)ta(?:tus|te|ge)|p(?<!\wp)hase)\b[\"']?\s*(?:[:=-]|\bis\b)\s*[\"']?(?:still\s+)?(?:[a-z]+_)*"
    + _STATUS_WORDS
).search
_STATUS_SENTENCE = re.compile(
    r"(?:i(?<!\wi)s|a(?<!\wa)re|r(?<!\wr)emains?|s(?<!\ws)till|c(?<!\wc)urrently)\s+(?:still\s+|currently\s+|now\s+)?"
    rf"(?:being\s+processed\b|{_STATUS_WORDS}(?!\w))"
).search
_NOT_DONE = re.compile(
    r"ha(?<!\wha)(?:s|ve)\s+not\s+(?:yet\s+)?(?:finished|completed|started)\b"
    r"|not(?<!\wnot)\s+(?:(?:finished|complete|done)\s+yet\b|(?:yet\s+)?ready\b)"
).search


def _states_pending(text: str, low: str) -> bool:
    """Whether ``_PENDING_STATEMENT`` matches ``text`` (``low``: the text lowercased)."""
    if not text.isascii():
        return _PENDING_STATEMENT.search(text) is not None
    if _FIRST_LINE_STATUS(low) is not None or ("\n" in low and _NEXT_LINE_STATUS(low) is not None):
        return True
    if ("sta" in low or "phase" in low) and _STATUS_FIELD(low) is not None:
        return True
    return _STATUS_SENTENCE(low) is not None or ("not" in low and _NOT_DONE(low) is not None)


def _names_a_status(low: str) -> bool:
    """Whether a lowercased text holds one of ``_PENDING_WORDS`` (a substring test each: cheaper than one
    regex scan of their alternation, which tries them all at most characters)."""
    for word in _PENDING_WORDS:  # noqa: SIM110 - any() over a generator costs more per call, interpreted
        if word in low:
            return True
    return False


#: Paired wrapper tags (``<output>...</output>``, ``<returncode>0</returncode>``) and self-closing ones: markup.
#: An unpaired ``<article 0>`` is content.
_CLOSING_TAG = re.compile(r"</([A-Za-z][\w:.-]{0,30})\s*>")
_OPENING_TAG = re.compile(r"<([A-Za-z][\w:.-]{0,30})(?:\s[^<>]{0,40})?(/?)>")


def _without_markup(text: str) -> str:
    """The text with paired and self-closing tags taken out (their content kept)."""
    closed = set(_CLOSING_TAG.findall(text))
    if closed:
        text = _CLOSING_TAG.sub("", text)
    return _OPENING_TAG.sub(lambda m: "" if m.group(2) or m.group(1) in closed else m.group(0), text)


#: The first word of a text, and the first words with which each pattern anchored at the start can match
#: (after non-word characters): a text that starts with another word, in ASCII, is not tried (the regex
#: engine spends as much setting up an anchored match as on a short text's scan).
_FIRST_WORD = re.compile(r"\W*(\w+)")
_EMPTY_FIRST = frozenset(["no", "0", "zero", "nothing", "none", "null", "nil", "empty", "n"])
_ERROR_FIRST = frozenset(
    ["error", "fatal", "exception", "traceback", "failed", "unable", "cannot", "could", "no", "an"]
)
_ACK_FIRST = frozenset(
    [
        *("ok", "okay", "done", "sent", "success", "successful", "successfully", "succeeded", "created", "saved"),
        *("updated", "deleted", "written", "accepted", "true", "ack", "acknowledged", "complete", "completed"),
        *("applied", "added", "removed", "posted", "stored"),
    ]
)
_EXIT_META = re.compile(
    r"<(returncode|exit_?code|exit_?status|return_?code|status_?code)>\s*-?\d+\s*</\1>"
    r"|\b(?:exit|return)[ _]?(?:code|status)\s*[:=]?\s*-?\d+",
    re.IGNORECASE,
)
_CONTENT = re.compile(r"[^\W_]")
_COLLECTION_KEYS = ("results", "items", "data", "hits", "documents", "matches", "records", "entries", "rows")
_WRITE_COUNT_KEYS = frozenset(
    [
        "inserted",
        "updated",
        "deleted",
        "modified",
        "affected",
        "rows_affected",
        "rowcount",
        "upserted",
        "changed",
        "written",
        "modified_count",
        "inserted_count",
        "updated_count",
        "deleted_count",
        "upserted_count",
    ]
)
_STATUS_KEY = re.compile(r"status|state|phase", re.IGNORECASE)
_COUNT_KEYS = ("count", "total", "total_count", "num_results", "hits")
#: Value types that are never a mapping: tested before ``isinstance(v, Mapping)``, an ABC's check (a Python
#: call, slower than everything else done per field).
_SCALARS = (int, float, bool)
#: A text result longer than this says nothing that is read here (no facts: content).
READ_CHARS: Final = 300
_SHORT_MESSAGE = 160  # "not found" inside a longer text does not make it an empty result


class ResultFacts:
    """What a result says, as bit flags (cheap to store in history entries)."""

    ERROR: Final = 1
    EMPTY: Final = 2
    ACK: Final = 4
    PENDING: Final = 8
    NON_RETRYABLE: Final = 16
    RETRYABLE: Final = 32


_STATUS_ERROR = frozenset({"error", "failed", "failure"})
_STATUS_EMPTY = frozenset({"not_found", "empty", "no_results"})
_OUTCOME_STATUSES = _STATUS_ERROR | _STATUS_EMPTY | {"success", "partial"}


def result_facts(result: Any, is_error: bool) -> int:
    """Flags for a tool result: error, empty ("nothing found"), acknowledgement, pending, retryability.

    A result that follows the outcome protocol (a mapping with ``status`` and optionally ``retryable``) is
    read first; plain text and collections fall back to the heuristics above.
    """
    f = ResultFacts.ERROR if is_error else 0
    if result is None:
        return f | ResultFacts.EMPTY
    t = type(result)
    if t is str:
        return f | _text_facts(result)
    if t is dict or isinstance(result, Mapping):
        status = result.get("status")
        if isinstance(status, str) and ("retryable" in result or status.lower() in _OUTCOME_STATUSES):
            return f | _outcome_facts(result, status)
        return f | _mapping_facts(result)
    if isinstance(result, str):
        return f | _text_facts(str(result))
    if isinstance(result, (list, tuple, set, frozenset)):
        return f | (ResultFacts.EMPTY if len(result) == 0 else 0)
    status = getattr(result, "status", None)
    if isinstance(status, str) and hasattr(result, "retryable"):
        return f | _outcome_facts(
            {"status": status, "retryable": getattr(result, "retryable", None), "data": getattr(result, "data", None)},
            status,
        )
    return f


def _text_facts(text: str) -> int:
    if len(text) > READ_CHARS:
        return 0
    low = text.lower()
    # every form of _EXIT_META names a code or a status, and an exit or a return
    if (
        ("code" in low or "status" in low)
        and ("exit" in low or "return" in low or "status_code" in low or "statuscode" in low)
        and _EXIT_META.search(text)
    ):
        text = _EXIT_META.sub("", text)
        low = text.lower()
    if not _CONTENT.search(_without_markup(text) if "<" in text else text):  # only an exit code and markup
        return ResultFacts.EMPTY
    first = _FIRST_WORD.match(text)
    word = None
    if first is not None:
        word = first.group(1)
        word = word.lower() if word.isascii() else None
    empty = ((word is None or word in _EMPTY_FIRST) and _EMPTY_TEXT.match(text)) or (
        len(text) <= _SHORT_MESSAGE
        and ("found" in low or "match" in low or "returned" in low or "yielded" in low)
        and _EMPTY_ANYWHERE.search(text)
    )
    # "Error: old string not found" failed: a write that says so changed nothing
    if (word is None or word in _ERROR_FIRST) and _ERROR_TEXT.match(text):
        return ResultFacts.ERROR | (ResultFacts.EMPTY if empty else 0)
    if empty:
        return ResultFacts.EMPTY
    if len(text) <= 64 and (word is None or word in _ACK_FIRST) and _ACK_TEXT.match(text):
        return ResultFacts.ACK
    if _names_a_status(low) and (_states_pending(text, low) or _PENDING_ENUM.search(text)):
        return ResultFacts.PENDING
    return 0


def wrote_nothing(result: Any) -> bool:
    """Whether a write's result says it changed nothing: "0 rows affected", "no changes", "already up to
    date", ``{"inserted": 0, "updated": 0}`` (asked only of mutating calls)."""
    if isinstance(result, str):
        return len(result) <= READ_CHARS and _NOOP_TEXT.search(result) is not None
    if type(result) is dict or isinstance(result, Mapping):
        written = [v for k, v in result.items() if isinstance(k, str) and k.lower() in _WRITE_COUNT_KEYS]
        return bool(written) and all(type(v) is int and v == 0 for v in written)
    return False


def _outcome_facts(result: Mapping[str, Any], status: str) -> int:
    f = 0
    status = status.lower()
    if status in _STATUS_ERROR:
        f |= ResultFacts.ERROR
    elif status in _STATUS_EMPTY:
        f |= ResultFacts.EMPTY
    elif status == "success" and result.get("data") in (None, "", [], {}):
        f |= ResultFacts.ACK
    elif status in ("pending", "running", "in_progress"):
        f |= ResultFacts.PENDING
    retry = result.get("retryable")
    if retry is False:
        f |= ResultFacts.NON_RETRYABLE
    elif retry is True:
        f |= ResultFacts.RETRYABLE
    return f


def _mapping_facts(result: Mapping[str, Any], depth: int = 0) -> int:
    if not result:
        return ResultFacts.EMPTY
    if result.get("ok") is False or result.get("error") not in (None, False, "", [], {}):
        return ResultFacts.ERROR
    # One pass over the fields: collections (and whether any has content), nested mappings with content,
    # scalars that are neither empty nor an exit/status code.
    lists = full_lists = full_maps = meta_maps = other_content = strings = 0
    for key, v in itertools.islice(result.items(), 64):
        tv = type(v)
        if tv is list or tv is tuple:
            lists += 1
            strings += 1
            full_lists += 1 if v else 0
        elif tv is str:
            strings += 1
            other_content += 1 if v else 0
        elif tv is dict or (v is not None and tv not in _SCALARS and isinstance(v, Mapping)):
            strings += 1
            if v and not (depth < 3 and _mapping_facts(v, depth + 1) & ResultFacts.EMPTY):
                if all(not x and (x is None or type(x) in (bool, int, float, str)) for x in v.values()):
                    meta_maps += 1  # {"hasNextPage": false, "endCursor": null}: about the result, not content
                else:
                    full_maps += 1
        elif v and not (tv is int and isinstance(key, str) and ("code" in key.lower() or "status" in key.lower())):
            other_content += 1
    if lists and not full_lists and not full_maps and not _positive_count(result):
        return ResultFacts.EMPTY  # {"results": [], "total": 0, "query": "x"}: every collection is empty
    counts = [result[k] for k in _COUNT_KEYS if type(result.get(k)) is int]
    if counts and all(c == 0 for c in counts) and not any(result.get(k) for k in _COLLECTION_KEYS):
        return ResultFacts.EMPTY
    if strings and not full_lists and not full_maps and not meta_maps and not other_content:
        return ResultFacts.EMPTY  # {"stdout": "", "stderr": "", "exit_code": 1}: only an exit code
    status = result.get("status")
    if len(result) <= 2 and (result.get("ok") is True or (isinstance(status, str) and _ACK_TEXT.match(status))):
        return ResultFacts.ACK
    for key, value in itertools.islice(result.items(), 32):  # "status", "StackStatus", "job_state"...
        if isinstance(value, str) and isinstance(key, str) and _STATUS_KEY.search(key) and _PENDING_TEXT.search(value):
            return ResultFacts.PENDING
    return 0


def _positive_count(result: Mapping[str, Any]) -> bool:
    return any(type(result.get(k)) is int and result[k] > 0 for k in _COUNT_KEYS)
