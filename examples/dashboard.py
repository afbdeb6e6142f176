"""The live dashboard (docs/dashboard.md) over a SQLite store, read back through its JSON endpoints: the
sessions, then the looping one's recent calls with their verdicts.

From the command line: looptrap dashboard --store sqlite:///sessions.db (then open http://127.0.0.1:8765/)."""

import json
import tempfile
import urllib.request
from pathlib import Path

from looptrap import Guard
from looptrap.dashboard import Dashboard
from looptrap.stores import SQLiteStore

with tempfile.TemporaryDirectory() as tmp:
    store = SQLiteStore(Path(tmp) / "sessions.db")
    looping = Guard(store=store, session="runaway")
    for _ in range(5):
        if looping.check("search_docs", {"query": "refund policy"}).allowed:
            looping.record("search_docs", {"query": "refund policy"}, "0 results")
        looping.end_turn()
    healthy = Guard(store=store, session="healthy")
    for i in range(3):
        healthy.check("read_file", {"path": f"{i}.py"})
        healthy.record("read_file", {"path": f"{i}.py"}, f"file {i}")
    dash = Dashboard(store, port=0).start()  # 127.0.0.1; a token is required anywhere else
    with urllib.request.urlopen(dash.url + "api/sessions") as r:
        view = json.load(r)
    with urllib.request.urlopen(dash.url + "api/session?id=runaway") as r:
        detail = json.load(r)
    dash.stop()
    store.close()
for s in view["sessions"]:
    print(f"{s['id']:<10} calls={s['calls']:<3} signals={', '.join(s['signals']) or '-'}")
for c in reversed(detail["recent"]):  # oldest first
    v = c["verdict"]
    print(f"  runaway #{c['index']} {c['tool']}: {v['action']} {v['reason']}".rstrip())
