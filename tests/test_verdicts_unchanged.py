"""Every verdict byte-identical to the golden files: the guard for speed changes that must not change behaviour.

The golden files in tests/data/golden/ hold what the code gave when they were generated:

* ``scenarios.jsonl``: the replay report (``--json`` form) of every trace of the scenario corpus;
* ``guard.jsonl``: every verdict other than ``allow`` of the live ``Guard`` driven by the same traces
  (``check``/``record``/``end_turn``/``feed_text``/``user_message``, the trace's timestamps as its clock);
* ``corpus.jsonl``: the replay report of every session of ``corpus-sample.jsonl.gz``, a sample of real runs
  (see below);
* ``cli-*.txt``: the output of ``looptrap replay`` (table and ``--json``, one and two jobs) on
  examples/trace.jsonl and the corpus sample.

Each compares action, kind, reason, call index and message (and the rest of the report) byte for byte.
A change that is meant to change verdicts regenerates them, and the diff of the golden files is reviewed::

    python tests/test_verdicts_unchanged.py --update

``corpus-sample.jsonl.gz`` is a sample of the real mini-swe-agent runs described in docs/evaluation.md
(MIT, Copyright (c) 2025 Kilian A. Lieret and Carlos E. Jimenez), converted to the trace format the way
benchmarks/corpus.py feeds them; ``--sample CORPUS`` rebuilds it from that corpus file.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from looptrap import Guard
from looptrap.analysis import iter_events, replay
from looptrap.core.types import ALLOW, OUTCOME_KINDS, Verdict

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GOLDEN = HERE / "data" / "golden"
SCENARIOS = sorted((HERE / "scenarios").glob("*.jsonl"))
SAMPLE = GOLDEN / "corpus-sample.jsonl.gz"
TRACES = {"example": ROOT / "examples" / "trace.jsonl", "corpus": SAMPLE}
CLI_RUNS = {
    f"cli-{name}-{form}-jobs{jobs}.txt": [*(["--json"] if form == "json" else []), "--jobs", str(jobs), str(path)]
    for name, path in TRACES.items()
    for form in ("table", "json")
    for jobs in (1, 2)
}


def _line(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode() + "\n"


def scenario_reports() -> str:
    """The replay report of every scenario trace, one JSON line each."""
    return "".join(_line(r.to_dict()) for path in SCENARIOS for r in replay(iter_events(str(path))))


def corpus_reports() -> str:
    """The replay report of every session of the real-run sample."""
    return "".join(_line(r.to_dict()) for r in replay(iter_events(str(SAMPLE))))


def guard_verdicts(path: Path) -> Iterator[dict[str, Any]]:
    """Every verdict other than ``allow`` of a live ``Guard`` fed one scenario trace."""
    now = [0.0]
    guard = Guard(clock=lambda: now[0], run_id=path.stem)
    pending: dict[str, tuple[str, Any]] = {}
    text: str | None = None
    for n, ev in enumerate(iter_events(str(path)), 1):
        d = ev.data
        if ev.ts is not None:
            now[0] = ev.ts
        v: Verdict = ALLOW
        if ev.type == "tool_call":
            message = d.get("message_id")
            v = guard.check(d["tool"], d.get("args"), message_id=str(message) if message is not None else None)
            pending[str(d.get("call_id") or d["tool"])] = (d["tool"], d.get("args"))
        elif ev.type == "tool_result":
            got = pending.pop(str(d.get("call_id") or d["tool"]), None)
            if got is not None:
                outcome = d.get("outcome")
                guard.record(
                    got[0],
                    got[1],
                    d.get("output"),
                    is_error=bool(d.get("is_error")),
                    usage=d.get("usage"),
                    outcome=outcome if outcome in OUTCOME_KINDS else None,
                )
        elif ev.type == "text" and isinstance(d.get("text"), str):
            text = d["text"]  # the turn's words, given to end_turn as a whole message
        elif ev.type == "turn_end":
            err = d.get("error")
            v = guard.end_turn(d.get("state"), usage=d.get("usage"), text=text, error=str(err) if err else None)
            text = None
        elif ev.type == "user_message":
            guard.user_message(d.get("text") if isinstance(d.get("text"), str) else None)
        if v is not ALLOW:
            yield {"trace": path.stem, "event": n, "type": ev.type, "text": text is not None, **v.to_dict()}


def guard_report() -> str:
    """The live guard's verdicts on every scenario trace, one JSON line each."""
    return "".join(_line(v) for path in SCENARIOS for v in guard_verdicts(path))


def cli_output(args: list[str]) -> str:
    """stdout of ``looptrap replay ARGS`` (the table or the JSON lines)."""
    done = subprocess.run(
        [sys.executable, "-m", "looptrap", "replay", "--no-progress", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.replace(str(ROOT) + "/", "")


def generated() -> dict[str, str]:
    """Every golden file's name and the content the current code gives."""
    out = {"scenarios.jsonl": scenario_reports(), "guard.jsonl": guard_report(), "corpus.jsonl": corpus_reports()}
    out.update({name: cli_output(args) for name, args in CLI_RUNS.items()})
    return out


def _same(name: str, got: str) -> None:
    want = (GOLDEN / name).read_text(encoding="utf-8")
    if got == want:
        return
    for n, (a, b) in enumerate(zip(got.splitlines(), want.splitlines(), strict=False), 1):
        assert a == b, f"{name} line {n} differs (regenerate with --update if the change is meant)"
    assert got == want, f"{name}: {len(got.splitlines())} lines, golden has {len(want.splitlines())}"


def test_scenario_reports_unchanged() -> None:
    _same("scenarios.jsonl", scenario_reports())


def test_guard_verdicts_unchanged() -> None:
    _same("guard.jsonl", guard_report())


def test_corpus_sample_reports_unchanged() -> None:
    _same("corpus.jsonl", corpus_reports())


@pytest.mark.parametrize("name", sorted(CLI_RUNS))
def test_cli_replay_unchanged(name: str) -> None:
    _same(name, cli_output(CLI_RUNS[name]))


def test_golden_files_cover_interventions() -> None:
    """The golden data holds every detector's verdicts, and real runs that are mostly healthy."""
    kinds = {orjson.loads(line)["kind"] for line in (GOLDEN / "guard.jsonl").read_text().splitlines()}
    assert {"repeat", "error_repeat", "cycle", "drift", "edit_loop", "rate", "no_progress", "no_action"} <= kinds
    sessions = [orjson.loads(line) for line in (GOLDEN / "corpus.jsonl").read_text().splitlines()]
    assert len(sessions) >= 20
    assert sum(s["tool_calls"] for s in sessions) >= 1000


# -- regenerating the golden files -------------------------------------------------------------------------
def _corpus_events(path: Path) -> Iterator[dict[str, Any]]:
    """The corpus' events in trace format v1, converted as benchmarks/corpus.py converts them."""
    with gzip.open(path, "rb") as fh:
        for raw in fh:
            e = orjson.loads(raw)
            session, kind, tool = e["session"], e["type"], e.get("tool") or ""
            base = {"session": session, "seq": e.get("seq")}
            if kind == "tool_call":
                if tool == "_format_error":
                    yield {**base, "type": "turn_end", "error": "no valid tool call"}
                elif tool != "_exit":
                    cmd = (tool + " " + str((e.get("args") or {}).get("cmd", ""))).strip()
                    yield {**base, "type": "tool_call", "tool": "bash", "args": {"command": cmd}}
            elif kind == "tool_result" and tool not in ("_format_error", "_exit"):
                yield {
                    **base,
                    "type": "tool_result",
                    "tool": "bash",
                    "output": e.get("output"),
                    "is_error": bool(e.get("is_error")),
                }
                yield {**base, "type": "turn_end"}
            elif kind == "assistant_text":
                yield {**base, "type": "text", "text": e.get("output") or ""}


def make_sample(corpus: Path, sessions: int = 24) -> None:
    """Write the corpus sample: the sessions with a signal, the 8 longest, then every 20th of the rest."""
    events = list(_corpus_events(corpus))
    names = list(dict.fromkeys(e["session"] for e in events))
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "whole.jsonl"
        whole.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
        reports = {r.session: r for r in replay(iter_events(str(whole)))}
    chosen = [n for n in names if reports[n].signals]
    chosen += [n for n in sorted(names, key=lambda n: -reports[n].tool_calls) if n not in chosen][:8]
    chosen += [n for n in names[::20] if n not in chosen][: sessions - len(chosen)]
    keep = set(chosen)
    with gzip.GzipFile(SAMPLE, "wb", mtime=0) as out:
        for e in events:
            if e["session"] in keep:
                out.write(orjson.dumps(e) + b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description="Regenerate the golden verdict files in tests/data/golden/.")
    ap.add_argument("--update", action="store_true", help="write every golden file from the current code")
    ap.add_argument("--sample", metavar="CORPUS", type=Path, help="rebuild corpus-sample.jsonl.gz from CORPUS")
    opts = ap.parse_args()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    if opts.sample:
        make_sample(opts.sample)
    if opts.update:
        for name, content in generated().items():
            (GOLDEN / name).write_text(content, encoding="utf-8")
            print(f"wrote {GOLDEN.relative_to(ROOT) / name} ({len(content.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
