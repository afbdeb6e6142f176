"""Text in terminal columns (looptrap.core.columns): how many columns a text takes (checked against rich,
which draws the analyze report), cuts that never exceed their room, one width rule for every command, the
ASCII ellipsis for an output that cannot encode "…", wrapped lines and tables that fit."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from looptrap.core.columns import MIN_WIDTH, cols, ellipsis, fit, fit_end, head, table, tail, width, wrap, writable

# Any character (lone surrogates too), and often one of those that are measured apart from their neighbours:
# combining marks, variation selector 16, a zero-width joiner, wide and full-width characters, emoji, a
# conjoining jamo, a spacing mark, a control character.
TRICKY = "e\u0301\u20e3\ufe0f\u200d会ａ🔁❤#\u1161\u0903\x1b\u00ad\U0001f3fd "
chars = st.one_of(st.characters(exclude_categories=()), st.sampled_from(TRICKY))
texts = st.text(chars, max_size=60)
marks = st.sampled_from(["…", "..."])

# Everyday text in many scripts, where cols() and rich's cell_len() agree.
CORPUS = [
    "plain ascii",
    "naïve résumé",
    "e\u0301te",
    "z̴̡a̷l̸g̶o",
    "日本語のテキスト",
    "中文，标点。",
    "ｆｕｌｌｗｉｄｔｈ",
    "한국어 텍스트",
    "Привет мир",
    "Ελληνικά",
    "שלום",
    "مرحبا",
    "สวัสดี",
    "नमस्ते",
    "🔁 loop",
    "🎉🚀👍",
    "🇯🇵",
    "❤️ love",
    "⚠️ warning",
    "☕️",
    "1️⃣ #️⃣",
    "✅ done",
    "─│┌┐└┘",
    "… → ½ © ® ™",
    "soft\u00adhyphen",
    "\u200bzero",
    "\u4dc0 ☰",
    "会話セッション-🔁-e\u0301",
]

# Where cols() counts more than rich, on purpose: a text never takes more columns than counted, whether the
# terminal joins these sequences into one glyph (as rich assumes) or draws each character.
DIFFERENT = [
    ("हिन्दी", 5, 3),  # spacing combining marks (Mc) take a column in many terminals
    ("👍🏽", 4, 2),  # a skin tone modifier, drawn as a swatch where it does not join
    ("👨\u200d👩\u200d👧", 6, 2),  # a zero-width joiner sequence, drawn as three emoji where it does not join
    ("a\ufe0f", 2, 1),  # variation selector 16 after a character with no emoji form: counted as if it had one
    ("\u1100\u1161", 3, 2),  # conjoining jamo, drawn apart where the terminal does not compose them
]


def rich_cells() -> Callable[[str], int]:
    return pytest.importorskip("rich.cells").cell_len  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abc", 3),
        ("e\u0301", 1),  # a combining mark takes none
        ("\u20dd", 0),  # nor an enclosing one
        ("a\u200db", 2),  # nor a format character
        ("会ａ", 4),  # wide and full-width characters take two
        ("🔁", 2),
        ("❤", 1),
        ("❤\ufe0f", 2),  # in its emoji presentation
        ("\x1b[1m", 3),  # a control character takes none (text is made printable before it is shown)
        ("", 0),
    ],
)
def test_cols(text: str, expected: int) -> None:
    assert cols(text) == expected


def test_cols_agrees_with_rich_on_mixed_text() -> None:
    cell_len = rich_cells()
    for text in CORPUS:
        assert cols(text) == cell_len(text), text
    assert cols(" ".join(CORPUS)) == cell_len(" ".join(CORPUS))


@pytest.mark.parametrize(("text", "ours", "richs"), DIFFERENT)
def test_where_cols_counts_more_than_rich(text: str, ours: int, richs: int) -> None:
    assert (cols(text), rich_cells()(text)) == (ours, richs)


@given(texts)
def test_cols_never_counts_fewer_than_rich(text: str) -> None:
    assert cols(text) >= rich_cells()(text)


def test_no_character_takes_more_than_counted() -> None:
    """Every character of the planes text is written in (the basic and supplementary multilingual ones whole,
    a sample of the ideographic and special-purpose ones), characters newer than this Python's tables
    included."""
    cell_len = rich_cells()
    points = [*range(0x20000), *range(0x20000, 0x40000, 7), *range(0xE0000, 0xF0000, 7)]
    fewer = [hex(n) for n in points if cols(chr(n)) < cell_len(chr(n))]
    assert not fewer


@given(texts, st.integers(min_value=1, max_value=40), marks)
def test_a_cut_fits_its_room(text: str, room: int, mark: str) -> None:
    assert cols(fit(text, room, mark)) <= room
    assert cols(fit_end(text, room, mark)) <= room


@given(texts, st.integers(min_value=0, max_value=40))
def test_head_and_tail_are_ends_of_the_text_within_the_room(text: str, room: int) -> None:
    start, end = head(text, room), tail(text, room)
    assert text.startswith(start)
    assert text.endswith(end)
    assert cols(start) <= room
    assert cols(end) <= room
    assert not end or cols(end[0]) > 0  # never a combining mark, which would land on the ellipsis


def test_cuts() -> None:
    assert fit("short", 5) == "short"
    assert fit("support-ticket-refund", 11, "…") == "suppo…efund"  # both ends of an id
    assert fit("support-ticket-refund", 11, "...") == "supp...fund"
    assert fit("abcdefgh", 4, "…") == "abc…"  # too little room for two ends
    assert fit_end("abcdefgh", 4, "...") == "a..."
    assert fit_end("abcdefgh", 2, "...") == "ab"  # no room for the mark
    assert fit("会話セッション", 7, "…") == "会…ョン"  # a wide character is not split
    assert fit("a" + "e\u0301" * 10, 7, "…") == "ae\u0301e\u0301…e\u0301e\u0301e\u0301"  # marks stay on their letter
    assert tail("abc\u0301\u0301", 1) == "c\u0301\u0301"
    assert tail("\u0301\u0301c", 5) == "c"


def test_the_default_mark_is_the_one_standard_output_can_write(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert ellipsis() == "..."
    assert fit("support-ticket-refund", 11) == "supp...fund"
    assert table([["session"], ["support-ticket-refund"]], room=11) == ["session", "supp...fund"]


def test_ellipsis_and_writable() -> None:
    assert ellipsis(io.StringIO()) == "…"
    assert ellipsis(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")) == "…"
    assert ellipsis(io.TextIOWrapper(io.BytesIO(), encoding="ascii")) == "..."
    cp1252 = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    assert (ellipsis(cp1252), writable("─", cp1252)) == ("…", False)


def test_the_width_comes_from_the_caller_then_columns_then_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert width(io.StringIO()) == 80  # not a terminal
    assert width() == 80  # standard output, captured here
    assert width(io.StringIO(), 60) == 60
    assert width(io.StringIO(), 3) == MIN_WIDTH
    for columns, expected in (("100", 100), (" 64 ", 64), ("10", MIN_WIDTH), ("wide", 80), ("0", 80), ("-5", 80)):
        monkeypatch.setenv("COLUMNS", columns)
        assert width(io.StringIO()) == expected, columns
    monkeypatch.setenv("COLUMNS", "100")
    assert width(io.StringIO(), 60) == 60


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_on_a_terminal_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl
    import pty
    import struct
    import termios

    monkeypatch.delenv("COLUMNS", raising=False)
    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 70, 0, 0))
        with open(slave, "w", closefd=False) as out:
            assert width(out) == 70
            assert width(out, 50) == 50
            monkeypatch.setenv("COLUMNS", "90")
            assert width(out) == 90
    finally:
        os.close(slave)
        os.close(master)


@given(
    st.text(st.sampled_from("abc:"), max_size=8),
    texts,
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=0, max_value=6),
    st.integers(min_value=2, max_value=40),
)
def test_wrapped_lines_fit_and_keep_every_character(label: str, text: str, indent: int, hang: int, free: int) -> None:
    indent = max(indent, len(label))
    room = indent + hang + free
    lines = wrap(label, text, room, indent, hang)
    assert all(cols(line) <= room for line in lines), lines
    assert "".join(lines).replace(" ", "") == (label + text).replace(" ", "")


def test_wrap() -> None:
    text = "the guard would first have advised, blocked or halted"
    assert wrap("signals", text, 30) == [
        "signals   the guard would",
        "          first have advised,",
        "          blocked or halted",
    ]
    assert wrap("", text, 30, indent=2, hang=2) == [
        "  the guard would first have",
        "    advised, blocked or halted",
    ]
    assert wrap("id", "a " + "x" * 30, 20) == [
        "id        a xxxxxxxx",
        "          xxxxxxxxxx",
        "          xxxxxxxxxx",
        "          xx",
    ]
    assert wrap("level", "", 40) == ["level     "]


def test_a_table_fits_by_shortening_the_columns_named() -> None:
    rows = [["session", "calls", "tool"], ["a-very-long-session-identifier-end", "12", "search_documents_everywhere"]]
    assert table(rows, room=100) == [
        "session                             calls  tool",
        "a-very-long-session-identifier-end  12     search_documents_everywhere",
    ]
    lines = table(rows, room=40, shrink=(0, 2), mark="…")
    assert lines == ["session          calls  tool", "a-very-…ier-end  12     search_d…rywhere"]
    assert max(cols(line) for line in lines) <= 40
