"""Log forensics after the fact (docs/analyze.md): a plain call log (CSV) and a recorded trace, analysed with
the same detectors as the live guard; then the report as JSON and as a self-contained HTML page.

Needs the analyze extra: pip install "looptrap[analyze]".
"""

from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

import duckdb  # noqa: F401 - the statistics engine of the analyze extra (imported by looptrap when used)

from looptrap.analysis.analyze import AnalyzeOptions, analyze
from looptrap.analysis.analyze.render_html import render_html

HERE = Path(__file__).resolve().parent

with tempfile.TemporaryDirectory() as tmp:
    # The minimal log every team has: a sequence number, a time stamp, the tool and its arguments, the result.
    log = Path(tmp) / "tool_calls.csv"
    with log.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["run_id", "seq", "timestamp", "tool_name", "arguments", "result"])
        for i in range(1, 9):  # a runaway: the same lookup, every 10 ms
            w.writerow(
                ["run-7", i, f"2025-06-01T10:00:00.{i:02d}0Z", "get_order", '{"order_id": "A-1042"}', "0 results"]
            )
        for i in range(1, 5):  # a healthy run: a different page each time
            w.writerow(
                ["run-8", i, f"2025-06-01T11:00:0{i}Z", "list_orders", f'{{"page": {i}}}', f"page {i}: 20 orders"]
            )

    report = analyze(
        [str(log), str(HERE / "trace.jsonl")],
        AnalyzeOptions(columns={"session": "run_id", "tool": "tool_name", "args": "arguments", "output": "result"}),
    )
    for a in report.sessions:
        verdict = f"{a.loop['kind']} from call #{a.loop['onset_call']}" if a.loop else "no loop"
        print(f"{a.session}: {a.tool_calls} calls, {a.distinct_calls} distinct, {verdict}")
    runaway = next(a for a in report.sessions if a.session == "run-7")
    assert runaway.loop is not None
    assert runaway.bursts == 1  # identical calls within 50 ms: retries multiplied somewhere
    print("first repeated input:", runaway.first_repeat)

    doc = report.to_dict()  # what `looptrap analyze ... --json` prints
    print("sessions with a loop:", doc["fleet"]["loops"]["sessions"], "of", doc["fleet"]["sessions"])
    page = Path(tmp) / "report.html"
    page.write_text(render_html(report), encoding="utf-8")  # `--html report.html`: opens with no network
    print(f"HTML report: {page.stat().st_size:,} bytes")
    print(json.dumps(doc["fleet"]["top_signatures"][0]))
