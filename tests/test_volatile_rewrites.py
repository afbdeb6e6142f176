"""Volatile-text patterns rewritten for speed match exactly what the patterns they replace matched.

Each pair is (the pattern as it was, the pattern as it is in ``VOLATILE_TEXT``); both are run with
``re.sub`` on texts built to hit their edges (word boundaries, case, Unicode letters, digits around them)
and on seeded random texts over the characters and words that matter.
"""

from __future__ import annotations

import random
import re

import pytest

from looptrap.reading.volatile import VOLATILE_TEXT

_TIME = (  # "@" marks where the rewrite adds (?!\d)
    r"[0-9](?<![\w.][0-9])(?:"
    r"\d{3}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d?:\d{2}:\d{2}(?:[.,]\d+)?(?!\w)"
    r"|(?<=1)[5-9]\d{8}(?:\d{3})?(?:\.\d+)?(?![\w.])"
    r"|\d*@(?:\.\d+@)?\s?(?:ms|µs|us|ns|s|sec|secs|seconds?|minutes?|mins?)(?!\w)"
    r")"
)
REWRITES = {
    "times and durations": (_TIME.replace("@", ""), _TIME.replace("@", r"(?!\d)")),
    "process ids": (r"(?<!\w)(?i:pid|process)[ =:#]\s?\d+(?!\w)", r"[pP](?<!\w[pP])(?i:id|rocess)[ =:#]\s?\d+(?!\w)"),
}

EDGES = [
    "pid 4242",
    "Main PID: 4242",
    "xpid 42",
    "_pid=42",
    "spid 1",
    "épid 7",
    "-pid 7",
    ".Process 12 exited",
    "PROCESS#12",
    "process: 12a",
    "pId=1 pid=2,pid 3",
    "pp pid 9",
    "Ppid 5",
    "pidpid 5",
    "p",
    "",
    "pid",
    "pid 42\npid  43\tprocess\n44",
    "İprocess 1",
    "ſpid 1",
    "took 0.23s",
    "12 ms, 3.5 seconds, 7min 2 mins",
    "12\nms 1.2.3s 1.5e3s v1.2s 10s_ 10sx",
    "٣٤s 12٣s 1.٣s",  # Arabic-Indic digits
    "2026-11-30T05:19:53.123Z 05:19:53 1764460800.25 17644608001 1764460800123",
    "prοcess 1",  # a Greek omicron
]
ALPHABET = "pPiIdDrRoOcCeEsSmMuUnNtT _-:=#.,+Z\t\n0123456789xéµ٣"
TOKENS = (
    *("pid", "PID", "Pid", "process", "PROCESS", "p", "x", "_", "é", ".", "-", " ", "=", ":", "#", "\t", "\n"),
    *("42", "7", "1764460800", "2026-11-30", "T", "05:19", ":53", ".25", "ms", "s", "sec", "seconds", "min", "µs"),
)


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_rewrite_is_in_use(name: str) -> None:
    assert REWRITES[name][1] in {v.pattern for v in VOLATILE_TEXT}


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_rewrite_matches_like_the_original(name: str) -> None:
    old, new = (re.compile(p) for p in REWRITES[name])
    rng = random.Random(13)
    texts = [*EDGES, *("".join(rng.choices(ALPHABET, k=rng.randint(1, 60))) for _ in range(20_000))]
    texts += ["".join(rng.choices(TOKENS, k=rng.randint(1, 12))) for _ in range(20_000)]
    changed = 0
    for text in texts:
        want = old.sub("<*>", text)
        assert new.sub("<*>", text) == want, repr(text)
        changed += want != text
    assert changed > 100  # the texts do exercise the pattern
