"""A looping agent in a process of its own, for the dashboard test: ``python dashboard_driver.py STORE_URL``.

First two healthy sessions (one reports what it needs), then, for each ``burst N`` line on stdin, N more calls of
the runaway session (the same search again and again, with a warn-only ladder: nothing stops it), then
``at CALLS`` on stdout."""

from __future__ import annotations

import sys

from looptrap import Guard
from looptrap.core.escalation import Escalation
from looptrap.stores import open_store


def main() -> None:
    store = open_store(sys.argv[1])
    for name, files in (("healthy-reader", 4), ("healthy-writer", 3)):
        g = Guard(store=store, session=name)
        for i in range(files):
            if g.check("read_file", {"path": f"src/{i}.py"}).allowed:
                g.record("read_file", {"path": f"src/{i}.py"}, f"contents of file {i}")
            g.end_turn()
    Guard(store=store, session="healthy-writer").report_blocked(["read the config"], "the API key for staging")
    runaway = Guard(store=store, session="runaway-agent", escalation=Escalation(warn_only=True))
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line.split()[1])
        for _ in range(n):
            v = runaway.check("search_docs", {"query": "refund policy"})
            if v.allowed:
                runaway.record("search_docs", {"query": "refund policy"}, "0 results")
            runaway.end_turn()
        print(f"at {runaway.state.calls}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
