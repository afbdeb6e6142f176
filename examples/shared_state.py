"""Guard state shared by processes: every call below comes from a fresh Guard, as from a hook process or a
stateless worker, yet the loop is caught, because the session lives in a SQLite file.

Run: python examples/shared_state.py
"""

import tempfile
from pathlib import Path

from looptrap import Guard
from looptrap.stores import SQLiteStore, open_store

with tempfile.TemporaryDirectory() as tmp:
    store = SQLiteStore(Path(tmp) / "looptrap.db")  # or RedisStore("redis://host:6379/0") for a fleet
    args = {"query": "refund policy"}
    actions = []
    for attempt in range(3):
        guard = Guard(store=store, session="conversation-42")  # a new process each time
        verdict = guard.check("search_docs", args)
        actions.append(verdict.action)
        if verdict.allowed:
            guard.record("search_docs", args, "0 results")
        else:
            print(f"call {attempt + 1}: {verdict.action}: {verdict.message}")
    assert actions == ["allow", "allow", "advise"], actions

    # The same store from a URL, as the CLI's --store takes it; sessions can be listed and reset.
    same = open_store(f"sqlite:///{Path(tmp) / 'looptrap.db'}")
    for info in same.sessions():
        print(f"session {info.session}: {info.calls} calls, revision {info.rev}")
    assert same.delete("conversation-42")
    store.close()
    same.close()
