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
    "text_shape",
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
    # opaque ids of one request or response (the ids of things, like order_id, stay)
    r"(search|query|response|invocation|operation|execution|transaction|event|log|msg)_?(id|key|token)",
    # echoed HTTP headers: x-request-id, x-arequestid, x-amzn-requestid, x-ratelimit-remaining...
    r"x_(a?request|amzn|amz|ratelimit|rate_limit|correlation|trace|b3|envoy|cache|served|runtime|response|github)\w*",
)


class VolatileText(NamedTuple):
    """A pattern of volatile text and its gates, cheap tests that skip the pattern on texts where it cannot
    match: the pattern is tried only on a text that contains one of ``requires`` (plain substrings), whose
    *shape* contains one of ``shapes`` (see :func:`text_shape`), in which ``gate`` (a regex that starts with a
    literal, so it is fast to search) is found, and that is at most ``max_len`` long. A pattern without gates
    is tried on every text.

    Scanning a text costs the regex engine about as much per character for every pattern that starts with a
    character class (a digit, say) as for a full match attempt, so such patterns need a gate to be cheap."""

    pattern: str
    requires: tuple[str, ...] = ()
    gate: str | None = None
    max_len: int | None = None  # only tried on texts up to this length (a costly pattern for short messages)
    shapes: tuple[str, ...] = ()


_HEX = "[0-9a-fA-F]"

#: Substrings of result text replaced by a placeholder. The regex engine scans fastest for patterns that
#: start with a literal or a small character class, so each pattern starts that way (word boundaries are
#: checked by a look-behind after the first character) or is gated by a cheap test.
#: Long hex strings are not volatile by default: git commit ids and content hashes mean something.
VOLATILE_TEXT: tuple[VolatileText, ...] = (
    # HTTP dates: Mon, 30 Nov 2026 05:19:53 GMT
    VolatileText(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}(?: GMT)?", (" GMT",)),
    # ISO 8601 / RFC 3339 date-times, clock times (05:19:53.123), epoch seconds/milliseconds of the years
    # 2017-2033 (1.5e9 to 2e9 seconds), durations (0.23s, 120 ms, 3 seconds). Every match leaves one of
    # the shapes in the text's shape: a date, a clock time, ten digits, or a digit before a unit's letter,
    # with at most one whitespace character between them (a line number before an indented ``self`` is
    # not a duration).
    # (?!\d) after a run of digits changes no match (a unit or a point follows it) and stops backtracking.
    VolatileText(
        r"[0-9](?<![\w.][0-9])(?:"
        r"\d{3}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        r"|\d?:\d{2}:\d{2}(?:[.,]\d+)?(?!\w)"
        r"|(?<=1)[5-9]\d{8}(?:\d{3})?(?:\.\d+)?(?![\w.])"
        r"|\d*(?!\d)(?:\.\d+(?!\d))?\s?(?:ms|µs|us|ns|s|sec|secs|seconds?|minutes?|mins?)(?!\w)"
        r")",
        shapes=("0000-00-00", "0:00:00", "0000000000", "0s", "0 s"),
    ),
    # UUIDs
    VolatileText(
        rf"{_HEX}(?<![\w-]{_HEX}){_HEX}{{7}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}(?![\w-])",
        ("-",),
        rf"-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-",
    ),
    # an opaque request id printed in text: "request id: 7f3a9c", "search_id=abc-123", "X-Request-Id: ..."
    VolatileText(
        r"(?i)(?<![\w-])(?:x-)?(?:request|search|trace|span|correlation|query|response|invocation)[ _-]?id"
        r"[\"']?\s*[:=]?\s*[\"']?[\w.-]+",
        ("equest", "earch", "race", "pan", "orrelation", "uery", "esponse", "nvocation", "EQUEST", "EARCH"),
        max_len=1024,
    ),
    # memory addresses
    VolatileText(r"0(?<!\w0)x[0-9a-fA-F]{6,}(?!\w)", ("0x",)),
    # process ids: "pid 4242", "Main PID: 4242", syslog's "nginx[4242]:"
    # (its first letter is matched as a plain class and its word boundary checked after it: the regex engine
    # then skips at C speed to the next p, where a leading look-behind would be tried at every character)
    VolatileText(r"[pP](?<!\w[pP])(?i:id|rocess)[ =:#]\s?\d+(?!\w)", ("pid", "PID", "process", "Process", "Pid")),
    VolatileText(r"\[(?<=[A-Za-z_.-]\[)\d{2,7}\](?=:)", ("]:",)),
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


def _shape_byte(c: int) -> int:
    ch = chr(c)
    if ch in "0123456789":
        return ord("0")
    if ch in "smun":
        return ord("s")
    if ch in ":-.":
        return c
    return ord(" ") if ch.isspace() else ord(".")


_SHAPE_TABLE = bytes(_shape_byte(c) for c in range(256))


def text_shape(text: str) -> bytes | None:
    """The shape of an ASCII text, in which the gates of time-like patterns are searched: every digit reads
    ``0``, the letters that start a time unit (s, m, u, n) read ``s``, every whitespace character a space,
    every other letter and symbol ``.`` except ``:``, ``-`` and ``.`` ("took 0.23 s" -> ``.... 0.00 s``).
    ``None`` for a text that is not ASCII (Unicode digits and spaces have no shape: every pattern is tried)."""
    if not text.isascii():
        return None
    return text.encode("ascii").translate(_SHAPE_TABLE)


_HAS_DIGIT = re.compile(r"[0-9]").search
_ZERO = ord("0")  # a byte looked for as an int: ``b"0" in shape`` raises and clears a TypeError first
_TEMP_HINTS = ("/tmp/", "/var/folders/", "\\Temp\\")


def _beyond_defaults(text: str, shape: bytes | None) -> bool:
    """Whether no default pattern can match: each needs a digit, a ``-`` (a UUID), ``id`` (a request id) or
    a temporary path."""
    if (_ZERO in shape) if shape is not None else (_HAS_DIGIT(text) is not None):
        return False
    return "-" not in text and "id" not in text.lower() and not any(h in text for h in _TEMP_HINTS)


# Characters from the most to the least common in tool output (English text, code, JSON), roughly; any
# other character is rarer than these.
_COMMON = " etaoinsrhldcum0123456789fpgwybvkxjqz\n\"_.,:/-=()'{}[]<>\tTSAICEDRNPLMOFBHGUWVYKXJQZ"


def _rarity(c: str) -> int:
    rank = _COMMON.find(c)
    return len(_COMMON) if rank < 0 else rank


def _probe(needle: str) -> str:
    """The needle's rarest character: a text without it cannot hold the needle, and finding one character
    costs a ``memchr`` where finding a needle of two or more compares at nearly every position."""
    return max(needle, key=_rarity)


def text_scrubber(patterns: Sequence[VolatileText | str]) -> Callable[[str], str] | None:
    """A function replacing volatile substrings by ``<*>``; plain strings are patterns tried on every text."""
    if not patterns:
        return None
    steps = []
    for p in patterns:
        v = VolatileText(p) if isinstance(p, str) else p
        gate = re.compile(v.gate).search if v.gate else None
        # one search for all the shapes: it takes less time than one substring test per shape, though
        # callgrind counts more instructions (a substring search's branches depend on the data)
        shapes = re.compile(b"|".join(re.escape(s.encode("ascii")) for s in v.shapes)).search if v.shapes else None
        requires = tuple((_probe(r), r) for r in v.requires)
        steps.append((re.compile(v.pattern).sub, requires, gate, v.max_len, shapes))

    defaults = all(not isinstance(p, str) for p in patterns) and set(patterns) <= set(VOLATILE_TEXT)

    def scrub(text: str) -> str:
        shape = text_shape(text)
        if defaults and _beyond_defaults(text, shape):
            return text
        for sub, requires, gate, max_len, shapes in steps:
            if max_len is not None and len(text) > max_len:
                continue
            if requires:
                for probe, r in requires:
                    if probe in text and r in text:
                        break
                else:
                    continue
            if shapes is not None and shape is not None and shapes(shape) is None:
                continue
            if gate is not None and gate(text) is None:
                continue
            text = sub("<*>", text)
        return text

    return scrub
