"""Detection quality on the labelled scenario corpus (tests/scenarios/*.jsonl), default configuration.

    .venv/bin/python benchmarks/scenarios.py [DIR]

Each trace's first event carries its label (``loop`` / ``healthy``), the loop's ``onset`` (the 1-based tool
call at which the loop starts) and the expected first intervention (see tests/scenarios/_make.py). This
replays every trace and prints:

* the number of loop and healthy scenarios;
* recall: loops whose first intervention comes at or after the onset (and how many by the labelled latest
  acceptable call);
* false interventions: healthy runs with any intervention, and loops intervened before their onset;
* per detector kind, calls from onset to the first intervention (min / median / max);
* how many first interventions match the labelled expectation;
* a per-scenario table.

Plain stdout, no dependencies beyond looptrap.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from looptrap.analysis import iter_events, replay

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / "tests" / "scenarios"


@dataclass
class Row:
    name: str
    label: str
    onset: int | None
    expected: dict[str, Any] | None
    got: dict[str, Any] | None
    calls: int
    known_issue: str
    latest: int | None = None
    halted: int | None = None  # the call at which replay halted the run
    halt: Any = "unlabelled"  # the labelled halt call (None: never), when the scenario says

    @property
    def at(self) -> int | None:
        return None if self.got is None else int(self.got["call_index"])

    @property
    def delay(self) -> int | None:
        """Calls from the onset to the first intervention (0: intercepted at the onset itself)."""
        if self.label != "loop" or self.onset is None or self.at is None:
            return None
        return self.at - self.onset

    @property
    def matches(self) -> bool:
        if self.expected is None or self.got is None:
            return self.expected is None and self.got is None
        return all(self.got[k] == self.expected[k] for k in ("kind", "action", "call_index"))

    @property
    def outcome(self) -> str:
        if self.label == "healthy":
            return "ok" if self.got is None else "FALSE"
        if self.got is None:
            return "missed"
        return "early" if self.delay is not None and self.delay < 0 else "caught"


def _short(v: dict[str, Any] | None) -> str:
    return "-" if v is None else f"{v['kind']}@{v['call_index']}"


def load(directory: Path) -> list[Row]:
    rows = []
    for path in sorted(directory.glob("*.jsonl")):
        with path.open("rb") as f:
            expect = json.loads(f.readline())["expect"]
        reports = replay(iter_events(str(path)))
        if len(reports) != 1:
            raise SystemExit(f"{path.name}: expected one session, got {len(reports)}")
        r = reports[0]
        got = None if r.first_intervention is None else dict(r.first_intervention)
        halted = None if r.halted_at is None else int(r.halted_at["call_index"])
        rows.append(
            Row(
                path.stem,
                expect["label"],
                expect.get("onset"),
                expect["first_intervention"],
                got,
                r.tool_calls,
                str(expect.get("known_issue") or ""),
                expect.get("latest"),
                halted,
                expect.get("halt", "unlabelled"),
            )
        )
    return rows


def main(argv: list[str]) -> int:
    directory = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    started = time.perf_counter()
    rows = load(directory)
    elapsed = time.perf_counter() - started
    loops = [r for r in rows if r.label == "loop"]
    healthy = [r for r in rows if r.label == "healthy"]
    caught = [r for r in loops if r.outcome == "caught"]
    early = [r for r in loops if r.outcome == "early"]
    missed = [r for r in loops if r.outcome == "missed"]
    false_healthy = [r for r in healthy if r.got is not None]
    matched = [r for r in rows if r.matches]

    def pct(n: int, d: int) -> str:
        return f"{n}/{d} ({100 * n / d:.1f}%)" if d else f"{n}/0"

    print(
        f"scenario corpus: {directory} ({len(rows)} traces, {sum(r.calls for r in rows)} tool calls, "
        f"replayed in {elapsed:.2f} s)"
    )
    print(f"  loop scenarios:    {len(loops)}")
    print(f"  healthy scenarios: {len(healthy)}")
    print()
    print(f"recall (loops intervened at or after onset): {pct(len(caught), len(loops))}")
    on_time = [r for r in caught if r.latest is not None and r.at is not None and r.at <= r.latest]
    print(f"  caught by their latest acceptable call: {pct(len(on_time), len(loops))}")
    if missed:
        print(f"  missed loops: {', '.join(r.name for r in missed)}")
    print(f"false interventions: {len(false_healthy) + len(early)}")
    print(
        f"  healthy runs with an intervention: {pct(len(false_healthy), len(healthy))}"
        + (f": {', '.join(r.name for r in false_healthy)}" if false_healthy else "")
    )
    print(
        f"  loops intervened before onset:     {pct(len(early), len(loops))}"
        + (f": {', '.join(r.name for r in early)}" if early else "")
    )
    halted_healthy = [r for r in healthy if r.halted is not None]
    print(f"halts on healthy runs: {pct(len(halted_healthy), len(healthy))}")
    labelled = [r for r in rows if r.halt != "unlabelled"]
    wrong = [r for r in labelled if r.halted != r.halt]
    print(
        f"halts as labelled: {pct(len(labelled) - len(wrong), len(labelled))}"
        + (f"; not: {', '.join(f'{r.name} (got {r.halted}, want {r.halt})' for r in wrong)}" if wrong else "")
    )
    print(
        f"first intervention as labelled: {pct(len(matched), len(rows))}"
        f" ({sum(1 for r in rows if r.known_issue)} scenarios carry a known_issue)"
    )
    print()
    print("calls from onset to first intervention, by detector kind (caught loops)")
    by_kind: dict[str, list[int]] = {}
    for r in caught:
        if r.got is not None and r.delay is not None:
            by_kind.setdefault(str(r.got["kind"]), []).append(r.delay)
    print(f"  {'kind':<14}{'n':>4}{'min':>6}{'median':>8}{'max':>6}")
    for kind in sorted(by_kind):
        d = by_kind[kind]
        print(f"  {kind:<14}{len(d):>4}{min(d):>6}{statistics.median(d):>8g}{max(d):>6}")
    print()
    width = max(len(r.name) for r in rows)
    print(
        f"{'scenario':<{width}}  {'label':<7} {'calls':>5} {'onset':>5}  {'expected':<16} {'got':<16} "
        f"{'delay':>5}  {'outcome':<7} match"
    )
    for r in rows:
        onset = "-" if r.onset is None else str(r.onset)
        delay = "-" if r.delay is None else str(r.delay)
        mark = "yes" if r.matches else ("no (known issue)" if r.known_issue else "NO")
        print(
            f"{r.name:<{width}}  {r.label:<7} {r.calls:>5} {onset:>5}  {_short(r.expected):<16} "
            f"{_short(r.got):<16} {delay:>5}  {r.outcome:<7} {mark}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
