"""What counts as volatile: keys and substrings that change on every call without meaning anything.

Arguments lose only keys that are clearly volatile (request ids, nonces, timestamps, trace ids); a plain
``id``, ``page`` or ``offset`` always stays, because it makes two calls different. Results lose more: any
key that looks like a timestamp, duration, request/trace id or pid, and inside text the substrings that
look like timestamps, UUIDs, long hex ids, memory addresses, durations, pids and temporary paths.
Plain numbers (a line number in a traceback, a count) are never touched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = [
    "ARG_VOLATILE_KEYS",
    "RESULT_VOLATILE_KEYS",
    "VOLATILE_TEXT",
    "VolatileText",
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


class VolatileText(NamedTuple):
    """A pattern of volatile text, tried only when the text contains one of ``requires`` (all texts when empty).

    The gate is a plain substring test, which costs next to nothing, so most results skip most patterns.
    """

    pattern: str
    requires: tuple[str, ...] = ()


_DIGITS = tuple("0123456789")

#: Substrings of result text replaced by a placeholder. Each pattern starts with a digit or a literal, so the
#: regex engine can skip ahead; word boundaries are checked with a look-behind after the first character.
VOLATILE_TEXT: tuple[VolatileText, ...] = (
    # HTTP dates: Mon, 30 Nov 2026 05:19:53 GMT
    VolatileText(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}(?: GMT)?", (" GMT",)),
    # ISO 8601 / RFC 3339 date-times, clock times (05:19:53.123), epoch seconds/milliseconds of the years
    # 2017-2033 (1.5e9 to 2e9 seconds), durations
    VolatileText(
        r"\d(?<![\w.]\d)(?:"
        r"\d{3}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        r"|\d?:\d{2}:\d{2}(?:[.,]\d+)?(?!\w)"
        r"|(?<=1)[5-9]\d{8}(?:\d{3})?(?:\.\d+)?(?![\w.])"
        r"|\d*(?:\.\d+)?\s?(?:ms|µs|us|ns|s|sec|secs|seconds?|minutes?|mins?)(?!\w)"
        r")",
        _DIGITS,
    ),
    # UUIDs
    VolatileText(
        r"[0-9a-fA-F](?<![\w-][0-9a-fA-F])[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
        r"[0-9a-fA-F]{12}(?![\w-])",
        ("-",),
    ),
    # memory addresses
    VolatileText(r"0(?<!\w0)x[0-9a-fA-F]{6,}(?!\w)", ("0x",)),
    # long hex ids (request ids, run hashes): 16+ hex digits mixing digits and letters
    VolatileText(r"[0-9a-f](?<!\w[0-9a-f])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{15,}(?!\w)", _DIGITS),
    # process ids
    VolatileText(r"(?<!\w)(?:pid|PID|process)[ =:#]\s?\d+(?!\w)", ("pid", "PID", "process")),
    # temporary paths
    VolatileText(r"/(?:tmp|var/folders|private/var/folders)/[\w.\-/]+", ("/tmp/", "/var/folders/")),
    VolatileText(r"[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\[\w.\-\\]+", ("\\Temp\\",)),
)


def key_matcher(patterns: tuple[str, ...] | list[str]) -> Callable[[str], bool] | None:
    """A predicate matching key names against patterns (full match, case-insensitive)."""
    if not patterns:
        return None
    rx = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)

    def matches(key: str) -> bool:
        return rx.fullmatch(key.replace("-", "_")) is not None

    return matches


def text_scrubber(patterns: Sequence[VolatileText | str]) -> Callable[[str], str] | None:
    """A function replacing volatile substrings by ``<*>``; plain strings are patterns tried on every text."""
    if not patterns:
        return None
    compiled = [
        (re.compile(p).sub, ()) if isinstance(p, str) else (re.compile(p.pattern).sub, p.requires) for p in patterns
    ]
    has_digit = re.compile(r"[0-9]").search

    def scrub(text: str) -> str:
        digits: bool | None = None
        for sub, requires in compiled:
            if requires is _DIGITS:
                if digits is None:
                    digits = has_digit(text) is not None
                if not digits:
                    continue
            elif requires and not any(map(text.__contains__, requires)):
                continue
            text = sub("<*>", text)
        return text

    return scrub
