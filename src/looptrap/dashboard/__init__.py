"""``looptrap dashboard``: a small live web page over a SQLite or Redis store (see docs/dashboard.md)."""

from looptrap.dashboard.server import Dashboard, is_loopback

__all__ = ["Dashboard", "is_loopback"]
