"""Argument types the sub-commands share: a value that is not one is a one-line usage error.

Imported only while a parser is built (the hook's fast path builds none)."""

from __future__ import annotations

import argparse

__all__ = ["CONFIG_HELP", "address", "milliseconds", "seconds", "whole_number"]

#: What ``--config`` means, for every command that takes it.
CONFIG_HELP = (
    "a configuration file, applied as written (default: $LOOPTRAP_CONFIG, else ~/.config/looptrap/looptrap.toml "
    "tightened by the project's looptrap.toml or pyproject.toml found upward; see: looptrap docs configuration)"
)


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


def address(text: str) -> tuple[str, int]:
    """An address to listen on: ``HOST:PORT``, ``[IPv6]:PORT``, or ``PORT`` alone (on 127.0.0.1); port 0:
    any free port."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host or "[" in host or "]" in host:
        host = ""
    if not host:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    if not (port.isascii() and port.isdigit()):
        raise argparse.ArgumentTypeError(f"not a port number: {port!r}")
    n = int(port)
    if n > 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {n}")
    return host, n
