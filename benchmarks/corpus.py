"""Replay real agent runs (the shared corpus of mini-swe-agent runs) and report every intervention.

    python benchmarks/corpus.py [PATH] [--details] [--json]

PATH defaults to ../shared/corpus/mini-swe-agent-gemini-3-pro.jsonl.gz (beside the project root). The runs
are converted the way the agent really called its tool: tool ``bash`` with ``{"command": tool + " " + cmd}``;
``_format_error`` turns become ``turn_end`` events with an error, every other turn ends after its result.
Nearly all runs are healthy, so every intervention here is a candidate false intervention to inspect.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from looptrap.analysis.replay import Replayer
from looptrap.analysis.trace import Event

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "mini-swe-agent-gemini-3-pro.jsonl.gz"


def convert(path: Path) -> Iterator[Event]:
    """Corpus events as trace-format events."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            e: dict[str, Any] = orjson.loads(raw)
            session, kind, tool = e["session"], e["type"], e.get("tool") or ""
            if kind == "tool_call":
                if tool == "_format_error":
                    yield Event(session, "turn_end", {"error": "no valid tool call"}, n, e.get("seq"), None)
                    continue
                if tool == "_exit":
                    continue
                cmd = (tool + " " + str((e.get("args") or {}).get("cmd", ""))).strip()
                yield Event(session, "tool_call", {"tool": "bash", "args": {"command": cmd}}, n, e.get("seq"), None)
            elif kind == "tool_result":
                if tool in ("_format_error", "_exit"):
                    continue
                data = {"tool": "bash", "output": e.get("output"), "is_error": bool(e.get("is_error"))}
                yield Event(session, "tool_result", data, n, e.get("seq"), None)
                yield Event(session, "turn_end", {}, n, e.get("seq"), None)
            elif kind == "assistant_text":
                yield Event(session, "text", {"text": e.get("output") or ""}, n, e.get("seq"), None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", default=str(DEFAULT))
    ap.add_argument("--details", action="store_true", help="print each intervention with its message")
    ap.add_argument("--json", action="store_true", help="print per-session reports as JSON lines")
    ap.add_argument(
        "--edit-stats",
        action="store_true",
        help="print sessions by their largest same-failure rounds and fruitless returns (edit_loop's defaults)",
    )
    args = ap.parse_args()
    path = Path(args.path)
    if not path.exists():
        print(f"corpus not found: {path}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    replayer = Replayer()
    events = 0
    rounds: dict[str, int] = {}
    returns: dict[str, int] = {}
    for ev in convert(path):
        replayer.feed(ev)
        events += 1
        if args.edit_stats:
            state = replayer.sessions[ev.session].state
            slot = state.slots.get("edit_loop") or {}
            rounds[ev.session] = max(rounds.get(ev.session, 0), *(rec[1] for rec in slot.values()), 0)
            returns[ev.session] = max(returns.get(ev.session, 0), *(f[3] for f in state.files.values()), 0)
    elapsed = time.perf_counter() - t0
    reports = replayer.reports()
    if args.edit_stats:
        print(f"sessions by their most same-failure rounds in a row: {sorted(Counter(rounds.values()).items())}")
        print(f"sessions by their most fruitless returns of one file: {sorted(Counter(returns.values()).items())}")
        return 0
    if args.json:
        for r in reports:
            print(orjson.dumps(r.to_dict()).decode())
        return 0
    calls = sum(r.tool_calls for r in reports)
    hit = [r for r in reports if r.first_intervention]
    halted = [r for r in reports if r.halted_at]
    first_kinds = Counter(f"{r.first_intervention['kind']}" for r in hit if r.first_intervention)
    all_kinds = Counter(f"{s['kind']}:{s['action']}" for r in reports for s in r.signals)
    print(f"corpus: {path.name}: {len(reports)} sessions, {calls} tool calls, {events} events in {elapsed:.1f} s")
    print(f"sessions with an intervention: {len(hit)} ({len(hit) / max(1, len(reports)):.1%}); halted: {len(halted)}")
    print(f"first interventions by detector: {dict(first_kinds)}")
    print(f"all verdicts by detector:action: {dict(all_kinds)}")
    for r in hit:
        fi = r.first_intervention or {}
        print(f"- {r.session}: call {fi.get('call_index')}/{r.tool_calls} {fi.get('kind')} {fi.get('action')}")
        if args.details:
            for s in r.signals:
                print(f"    #{s['call_index']} {s['action']} {s['kind']}: {s['message'][:300]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
