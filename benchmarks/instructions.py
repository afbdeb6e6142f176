"""Per-call cost in CPU instructions: a figure that a noisy machine does not move.

    .venv/bin/python benchmarks/instructions.py [--calls N]

Wall-clock ratios (benchmarks/overhead.py) drift by 20% or more between runs on a shared VM. Instructions
counted by ``valgrind --tool=callgrind`` are the same from run to run for the same code and inputs, so this
script tells whether a change to the per-call path made it cheaper. It runs the workload of overhead.py in
three child processes under callgrind (setup only; setup + ``Guard()`` check and record; setup + stdlib
``json.dumps`` sorted + ``sha256`` of the same arguments) and prints the instructions per call of each,
setup subtracted, and their ratio. Needs valgrind (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

_CHILD = """
import sys
sys.path.insert(0, {here!r})
from overhead import healthy_workload, time_guard, time_json_sha256
work = healthy_workload({calls}, 1)
time_guard(work[:200], [])  # imports and first-use caches belong to the setup
time_json_sha256(work[:200])
if {mode!r} == "guard":
    time_guard(work, [])
elif {mode!r} == "stdlib":
    time_json_sha256(work)
"""


def instructions(mode: str, calls: int) -> int:
    """Instructions executed by a child process running ``mode`` (``setup``, ``guard`` or ``stdlib``)."""
    code = _CHILD.format(here=str(Path(__file__).resolve().parent), calls=calls, mode=mode)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"callgrind failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=3_000, help="calls of the healthy workload (default 3,000)")
    opts = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    setup = instructions("setup", opts.calls)
    guard = (instructions("guard", opts.calls) - setup) / opts.calls
    stdlib = (instructions("stdlib", opts.calls) - setup) / opts.calls
    print(f"instructions per call, {opts.calls:,} calls of the healthy workload of benchmarks/overhead.py:")
    print(f"  Guard() check + record                 {guard:>12,.0f}")
    print(f"  json.dumps sorted + sha256 (baseline)  {stdlib:>12,.0f}")
    print(f"  ratio                                  {guard / stdlib:>12.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
