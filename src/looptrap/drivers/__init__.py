"""Drivers around the engine: the sync and async guards (clock, lock, store, logs), the tool-function wrapper and the
per-session pool."""
