"""One number format for every command's output (looptrap.core.figures)."""

from __future__ import annotations

import pytest

from looptrap.core.figures import count, duration, money, plural, share


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((0, "session"), "0 sessions"),
        ((1, "session"), "1 session"),
        ((12345, "tool call"), "12,345 tool calls"),
        ((2, "retry"), "2 retries"),
        ((1, "retry"), "1 retry"),
        ((3, "burst"), "3 bursts"),
        ((2, "match"), "2 matches"),
        ((2, "day"), "2 days"),
        ((1234567,), "1,234,567"),
        ((2.0, "call"), "2 calls"),
    ],
)
def test_count(args: tuple[int, str], text: str) -> None:
    assert count(*args) == text


def test_plural_of_the_last_word() -> None:
    assert plural("identical call") == "identical calls"


@pytest.mark.parametrize(
    ("part", "whole", "text"), [(2, 3, "67%"), (0, 5, "0%"), (1, 1000, "<1%"), (999, 1000, ">99%"), (1, 0, "-")]
)
def test_share(part: int, whole: int, text: str) -> None:
    assert share(part, whole) == text


@pytest.mark.parametrize(
    ("usd", "text"), [(6.7412, "$6.74"), (1234.5, "$1,234.50"), (0.0031, "$0.0031"), (0, "$0.00"), (None, "-")]
)
def test_money(usd: float | None, text: str) -> None:
    assert money(usd) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.42, "0.4 s"), (12.3, "12 s"), (252, "4 min 12 s"), (7500, "2 h 05 min"), (None, "-"), (float("nan"), "-")],
)
def test_duration(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text
