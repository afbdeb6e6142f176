"""A looping agent in a process of its own, for the dashboard test: ``python dashboard_driver.py STORE_URL``.

First two healthy sessions (one reports what it needs) and a looping session with the default ladder (advised,
blocked, halted), then ``looping VERDICTS`` on stdout; then, for each ``burst N`` line on stdin, N more calls of
the runaway session (the same search again and again, with a warn-only ladder: nothing stops it), then
``at CALLS VERDICTS``. ``VERDICTS``: JSON, each call's index and the verdict the guard gave it, ``[action,
kind, reason]``."""

from __future__ import annotations

import json
import sys
from typing import Any

from looptrap import Guard
from looptrap.policies.escalation import Escalation
from looptrap.stores import open_store


def call(guard: Guard, tool: str, args: dict[str, Any], result: str, seen: dict[int, list[Any]]) -> str:
    v = guard.check(tool, args)
    seen[guard.state.calls] = [v.action, v.kind or "", v.reason or ""]
    if v.allowed:
        guard.record(tool, args, result)
    guard.end_turn()  # one call per model turn: the ladder climbs while the loop goes on
    return v.action


def main() -> None:
    store = open_store(sys.argv[1])
    for name, files in (("healthy-reader", 4), ("healthy-writer", 3)):
        g = Guard(store=store, session=name)
        for i in range(files):
            call(g, "read_file", {"path": f"src/{i}.py"}, f"contents of file {i}", {})
    Guard(store=store, session="healthy-writer").report_blocked(["read the config"], "the API key for staging")
    looping = Guard(store=store, session="looping-agent")
    looped: dict[int, list[Any]] = {}
    for _ in range(20):  # the default ladder halts it within a few calls
        if call(looping, "search_docs", {"query": "invoice 1042"}, "0 results", looped) == "halt":
            break
    print("looping", json.dumps(looped), flush=True)
    runaway = Guard(store=store, session="runaway-agent", escalation=Escalation(warn_only=True))
    seen: dict[int, list[Any]] = {}
    print("ready", flush=True)
    for line in sys.stdin:
        for _ in range(int(line.split()[1])):
            call(runaway, "search_docs", {"query": "refund policy"}, "0 results", seen)
        print(f"at {runaway.state.calls} {json.dumps(seen)}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
