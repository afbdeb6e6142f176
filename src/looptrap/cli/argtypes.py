"""Argument types the sub-commands share: a value that is not one is a one-line usage error.

Imported only while a parser is built (the hook's fast path builds none)."""

from __future__ import annotations

import argparse

__all__ = ["milliseconds", "seconds", "whole_number"]


def whole_number(text: str) -> int:
    """A whole number, at least 1 (``--jobs``, ``--top``, ``--max-calls``)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def milliseconds(text: str) -> float:
    """A number of milliseconds, 0 or more."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {v}")
    return v


def seconds(text: str) -> float:
    """A number of seconds, more than 0 (``nan`` is not)."""
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not s > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return s
