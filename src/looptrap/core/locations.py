"""Where looptrap keeps things on disk, and store URLs made absolute.

Standard library only, and ``os.path`` rather than ``pathlib``: the hook's fast path imports this.
"""

from __future__ import annotations

import os
import sys

__all__ = ["absolute_store", "user_cache", "user_config_path"]


def user_cache() -> str:
    """The user's cache folder: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on
    macOS, ``%LOCALAPPDATA%`` on Windows."""
    home = os.path.expanduser("~")
    if os.name == "nt":
        return os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches")
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")


def user_config_path() -> str:
    """Where the user's own configuration file is looked for: ``$XDG_CONFIG_HOME/looptrap/looptrap.toml``
    (by default ``~/.config/looptrap/looptrap.toml``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "looptrap", "looptrap.toml")


def absolute_store(url: str, folder: str) -> str:
    """``url`` with a relative SQLite path (``sqlite://rel/path.db``, or a plain path) made absolute in
    ``folder``; any other URL unchanged. A process that hands a URL to another (the hook to its resident
    server) or reads one from a file resolves it here first, so it always names the same file."""
    if not url:
        return url
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() != "sqlite":
        return url
    path, q, query = (rest if sep else url).partition("?")
    if not path or path == ":memory:" or os.path.isabs(path):
        return url
    if not sep and path[1:2] == ":":  # "C:relative" on Windows: leave it to the store
        return url
    absolute = os.path.normpath(os.path.join(os.path.abspath(folder), path))
    return (f"sqlite://{absolute}" if sep else absolute) + q + query
