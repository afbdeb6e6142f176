"""Volatile text: what the default patterns remove, what they keep, and that their gates only save time."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from looptrap.reading.volatile import VOLATILE_TEXT, VolatileText, text_scrubber, text_shape

SCRUB = text_scrubber(VOLATILE_TEXT)
# The same patterns with every gate taken off: each is tried on every text (max_len is a rule, not a gate).
UNGATED = text_scrubber([VolatileText(v.pattern, max_len=v.max_len) for v in VOLATILE_TEXT])
assert SCRUB is not None
assert UNGATED is not None

PAD = "x" * 128  # a long text beside each short one


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("took 0.23s", "took 1.5s"),
        ("took 120 ms", "took 95 ms"),
        ("waited 3 seconds", "waited 12 seconds"),
        ("at 2026-11-30T05:19:53Z", "at 2026-11-30T06:01:02.123+01:00"),
        ("at 05:19:53 today", "at 17:02:11 today"),
        ("epoch 1764460800 s", "epoch 1764460999 s"),
        ("Date: Mon, 30 Nov 2026 05:19:53 GMT", "Date: Tue, 01 Dec 2026 11:00:00 GMT"),
        ("id 3f2a9c1e-1d2b-4c3d-8e9f-0a1b2c3d4e5f", "id 9b1c2d3e-4f5a-4b6c-8d7e-1f2a3b4c5d6e"),
        ("<Obj at 0x7f3a9c2b1d10>", "<Obj at 0x7f3a9c2b9e80>"),
        ("Main PID: 4242 (nginx)", "Main PID: 977 (nginx)"),
        ("nginx[4242]: started", "nginx[31337]: started"),
        ("wrote /tmp/pytest-of-root/pytest-7/out.txt", "wrote /tmp/pytest-of-root/pytest-9/out.txt"),
        ("request id: 7f3a9c", "request id: 0b12de"),
        ("request id: abcdef", "request id: fedcba"),
        ("id abcdefab-abcd-abcd-abcd-abcdefabcdef", "id fedcbafe-dcba-dcba-dcba-fedcbafedcba"),
    ],
)
def test_volatile_parts_are_removed_in_short_and_long_texts(a: str, b: str) -> None:
    assert a != b
    assert SCRUB(a) == SCRUB(b)
    long_a, long_b = f"{PAD}\n{a}\n{PAD}", f"{PAD}\n{b}\n{PAD}"
    assert SCRUB(long_a) == SCRUB(long_b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ('File "app.py", line 12, in main', 'File "app.py", line 13, in main'),
        ("3 results", "4 results"),
        ("limit=133)", "limit=134)"),
        ("commit 3f2a9c1e0b", "commit 3f2a9c1e0c"),
        ("version 1.2.3", "version 1.2.4"),
    ],
)
def test_plain_numbers_and_hashes_are_kept(a: str, b: str) -> None:
    assert SCRUB(a) != SCRUB(b)
    assert SCRUB(f"{PAD}\n{a}\n{PAD}") != SCRUB(f"{PAD}\n{b}\n{PAD}")


def test_the_shape_of_a_text() -> None:
    assert text_shape("took 0.23 s") == b".... 0.00 s"
    assert text_shape("12\tself.x") == b"00 s....."
    assert text_shape("2026-11-30T05:19:53Z") == b"0000-00-00.00:00:00."
    assert text_shape("café 1s") is None  # not ASCII: no shape, every pattern is tried


FRAGMENTS = [
    "0.23s",
    "120 ms",
    "5\tseconds",
    "3 mins",
    "12us",
    "7 ns",
    "2026-11-30T05:19:53Z",
    "2026-11-30 05:19",
    "05:19:53",
    "1:02:03",
    "1764460800",
    "1764460800123.5",
    "Mon, 30 Nov 2026 05:19:53 GMT",
    "3f2a9c1e-1d2b-4c3d-8e9f-0a1b2c3d4e5f",
    "0x7f3a9c2b1d10",
    "pid 4242",
    "Process: 77",
    "nginx[4242]:",
    "/tmp/a-b/c.txt",
    "request_id=ab-12",
    "request id: abcdef",
    "RequestIdabc",
    "spanidx",
    "abcdefab-abcd-abcd-abcd-abcdefabcdef",
    "C:\\Users\\me\\AppData\\Local\\Temp\\tmpab",
    "/var/folders/xy/T/q",
    "line 12",
    "limit=133)",
    "x1s",
    "v2.0s",
    "a.5s",
    "s",
    "m",
    "-",
    ":",
    ".",
    "T",
    "\n",
    " ",
    "\t",
    "\x1c",
    "\x0b",
]


@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(alphabet="0123456789 .:-smunTZx", max_size=6), max_size=40))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_gates_never_change_what_is_removed(parts: list[str]) -> None:
    text = "".join(parts)
    for t in (text, PAD + text, text + PAD, PAD + text + PAD):
        assert SCRUB(t) == UNGATED(t)


def test_a_required_substring_is_found_by_its_rarest_character_first() -> None:
    from looptrap.reading.volatile import _probe

    for v in VOLATILE_TEXT:
        for needle in v.requires:
            assert _probe(needle) in needle
    assert _probe("0x") == "x"
    assert _probe(" GMT") == "G"
    custom = text_scrubber([VolatileText(r"ab\d+", requires=("Qab", "zab"))])
    assert custom is not None
    assert custom("Qab12 ab3") == "Q<*> <*>"  # the pattern runs on the whole text once a needle is found
    assert custom("zab12") == "z<*>"
    assert custom("Q ab12 z") == "Q ab12 z"  # both rare characters, neither needle: not tried
