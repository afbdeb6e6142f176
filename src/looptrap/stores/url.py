"""Store URLs: split, check and redact them.

Plain string work: a hook process pays for every import, and ``urllib.parse`` costs more than this takes.
A password is never part of what this module puts in a message: :func:`redact` replaces the credentials
before the host (everything up to the last ``@``) and the value of every option whose name contains
``password``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from looptrap.core.printable import one_line

__all__ = ["REDIS_SCHEMES", "StoreURL", "parse", "redact"]

REDIS_SCHEMES = ("redis", "rediss", "unix")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class StoreURL(NamedTuple):
    """A store URL taken apart. ``target``: what the backend opens (a file path, or a Redis URL without
    credentials and without looptrap's options); ``options``: the query's parameters by lower-case name."""

    scheme: str
    target: str
    username: str | None
    password: str | None
    options: dict[str, str]
    shown: str


def _secret(name: str) -> bool:
    return "password" in name.lower()


def redact(url: str) -> str:
    """The URL as messages show it: one line, no credentials, no password option values."""
    if not isinstance(url, str):
        return f"<{type(url).__name__}>"
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() not in ("sqlite", "memory") and "@" in rest:  # any other scheme may hold credentials
        creds, at, rest = rest.rpartition("@")
        if at:
            user, colon, _ = creds.partition(":")
            rest = (f"{user}:***@" if colon else "***@") + rest
    base, q, query = (rest if sep else url).partition("?")
    if q:
        pairs = [p.partition("=") for p in query.split("&")]
        query = "&".join(f"{k}{eq}***" if _secret(k) and eq else f"{k}{eq}{v}" for k, eq, v in pairs)
    return one_line((f"{scheme}://" if sep else "") + base + q + query, 300)


def parse(url: str) -> StoreURL:
    """Split a store URL (:class:`ValueError` for a malformed query). Credentials are read only for Redis
    URLs, up to the last ``@`` (percent-encode an ``@`` in a query value as ``%40``)."""
    if not isinstance(url, str) or not url:
        raise ValueError(f"a store URL must be a non-empty string, got {redact(url) if url else repr(url)}")
    shown = redact(url)
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower() if sep else ""
    username = password = None
    if scheme in REDIS_SCHEMES and "@" in rest:
        creds, _, rest = rest.rpartition("@")
        user, colon, pw = creds.partition(":")
        username, password = (user or None, pw) if colon else (None, creds)  # "redis://secret@host": a password
    base, _, query = rest.partition("?") if sep else url.partition("?")
    options: dict[str, str] = {}
    for pair in query.split("&") if query else ():
        if not pair:
            continue
        name, eq, value = pair.partition("=")
        name = name.lower()
        if not name or not eq or not value:
            raise ValueError(f"store URL {shown}: option {one_line(name, 40)!r} needs a value (name=value)")
        if name in options:
            raise ValueError(f"store URL {shown}: option {one_line(name, 40)!r} is given twice")
        options[name] = value
    target = f"{scheme}://{base}" if sep else base
    return StoreURL(scheme, target, username, password, options, shown)


def take_options(u: StoreURL, allowed: tuple[str, ...], passed_on: frozenset[str] = frozenset()) -> dict[str, str]:
    """Check the URL's options: looptrap's own (``allowed``) are returned; any other must be in
    ``passed_on`` (what the backend's client takes), else :class:`ValueError` names it."""
    for name in u.options:
        if name not in allowed and name not in passed_on:
            known = ", ".join(allowed) + (" and the redis client's connection options" if passed_on else "")
            raise ValueError(
                f"store URL {u.shown}: unknown option {one_line(name, 40)!r} ({u.scheme or 'a file'}"
                f" store URLs take {known})"
            )
    return {k: v for k, v in u.options.items() if k in allowed}


def ttl_option(u: StoreURL, value: str) -> float | None:
    """``ttl=SECONDS``: above 0 and finite; ``ttl=0`` or ``ttl=none``: never expire."""
    if value.lower() in ("0", "none"):
        return None
    try:
        ttl = float(value)
    except ValueError:
        ttl = math.nan
    if not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(
            f"store URL {u.shown}: ttl must be a number of seconds above 0 (ttl=0: never expire), "
            f"got {one_line(value, 40)!r}"
        )
    return ttl


def seconds_option(u: StoreURL, name: str, value: str) -> float:
    """A finite number of seconds, 0 or more."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"store URL {u.shown}: {name} must be a number of seconds, got {one_line(value, 40)!r}")
    return seconds


def bool_option(u: StoreURL, name: str, value: str) -> bool:
    """``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``."""
    v = value.lower()
    if v in _TRUE or v in _FALSE:
        return v in _TRUE
    raise ValueError(f"store URL {u.shown}: {name} must be 1 or 0, got {one_line(value, 40)!r}")
