"""Find loops after the fact: replay a recorded trace. Run: python examples/replay_trace.py"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from looptrap.analysis import iter_events, replay

events = []
for i in range(6):  # a ping-pong: get_order -> not found, search_orders -> the same 3 results
    events.append({"session": "s1", "type": "tool_call", "tool": "get_order", "args": {"id": "A1"}, "call_id": f"g{i}"})
    events.append(
        {"session": "s1", "type": "tool_result", "tool": "get_order", "call_id": f"g{i}", "output": "not found"}
    )
    events.append(
        {"session": "s1", "type": "tool_call", "tool": "search_orders", "args": {"q": "A1"}, "call_id": f"s{i}"}
    )
    events.append(
        {"session": "s1", "type": "tool_result", "tool": "search_orders", "call_id": f"s{i}", "output": "B7, C9, D2"}
    )
for page in range(1, 6):  # pagination: healthy
    events.append({"session": "s2", "type": "tool_call", "tool": "list_orders", "args": {"page": page}})
    events.append({"session": "s2", "type": "tool_result", "tool": "list_orders", "output": f"orders on page {page}"})

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "trace.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))

    reports = replay(iter_events(str(path)))  # the Python API
    by_session = {r.session: r for r in reports}
    first = by_session["s1"].first_intervention
    assert first is not None
    print("s1:", first["call_index"], first["kind"], first["action"])
    assert by_session["s2"].first_intervention is None

    cli = subprocess.run(  # the command line
        [sys.executable, "-m", "looptrap.cli.main", "replay", str(path)], capture_output=True, text=True, check=True
    )
    print(cli.stdout)
    assert "2 sessions" in cli.stdout
