"""What counts as volatile: keys and substrings that change on every call without meaning anything.

Arguments lose only keys that are clearly volatile (request ids, nonces, timestamps, trace ids); a plain
``id``, ``page`` or ``offset`` always stays, because it makes two calls different. Results lose more: any
key that looks like a timestamp, duration, request/trace id or pid, and inside text the substrings that
look like timestamps, UUIDs, long hex ids, memory addresses, durations, pids and temporary paths.
Plain numbers (a line number in a traceback, a count) are never touched.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "ARG_VOLATILE_KEYS",
    "RESULT_VOLATILE_KEYS",
    "VOLATILE_TEXT",
    "key_matcher",
    "text_scrubber",
]

#: Argument keys dropped by default (full match, case-insensitive, ``-`` treated as ``_``).
ARG_VOLATILE_KEYS = (
    r"(x_)?(client_)?request_?id",
    r"nonce",
    r"(x_)?(idempotency|correlation|trace|span|parent_span)_?(id|key)",
    r"traceparent",
    r"tracestate",
    r"timestamp",
    r"ts",
    r"_ts",
    r"cache_?buster",
)

#: Result keys dropped by default (full match, case-insensitive).
RESULT_VOLATILE_KEYS = (
    *ARG_VOLATILE_KEYS,
    r"(created|updated|modified|fetched|generated|started|finished|completed|last_seen|retrieved)_?(at|on|time)?",
    r"(server|response|current|request)_(time|date|datetime)",
    r"now",
    r"(elapsed|duration|latency|took|runtime|timing)(_?(ms|s|sec|seconds|us|ns))?",
    r"(process_?)?pid",
    r"etag",
    r"expires(_at|_in)?",
    r"session_?id",
    r"run_?id",
)

#: Substrings of result text replaced by a placeholder (one alternation, applied in one pass).
VOLATILE_TEXT = (
    # ISO 8601 / RFC 3339 timestamps and dates with times
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    # HTTP dates: Mon, 30 Nov 2026 05:19:53 GMT
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}(?: GMT)?",
    # clock times 05:19:53(.123)
    r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
    # UUIDs
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    # memory addresses and long hex ids (request ids, hashes of runs)
    r"\b0x[0-9a-fA-F]{6,}\b",
    r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b",
    # epoch timestamps (2001..2286) in seconds or milliseconds
    r"\b1\d{9}(?:\d{3})?(?:\.\d+)?\b",
    # durations: 0.23s, 120 ms, 3.5 seconds
    r"\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|sec|secs|seconds?|minutes?|mins?)\b",
    # process ids
    r"\b(?:pid|PID|process)[ =:#]\s?\d+\b",
    # temporary paths
    r"/(?:tmp|var/folders|private/var/folders)/[\w.\-/]+",
    r"[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\[\w.\-\\]+",
)


def key_matcher(patterns: tuple[str, ...] | list[str]) -> Callable[[str], bool] | None:
    """A predicate matching key names against patterns (full match, case-insensitive)."""
    if not patterns:
        return None
    rx = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)

    def matches(key: str) -> bool:
        return rx.fullmatch(key.replace("-", "_")) is not None

    return matches


def text_scrubber(patterns: tuple[str, ...] | list[str]) -> Callable[[str], str] | None:
    """A function replacing volatile substrings by ``<*>`` in one pass."""
    if not patterns:
        return None
    rx = re.compile("|".join(f"(?:{p})" for p in patterns))
    sub = rx.sub

    def scrub(text: str) -> str:
        return sub("<*>", text)

    return scrub
