"""The synthetic fleet log of benchmarks/analyze.py, for tests that need a realistic mix of sessions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def write_fleet(path: Path, events: int, seed: int) -> dict[str, Any]:
    """Write the benchmark's seeded fleet log of about ``events`` events to ``path``; what it holds."""
    sys.path.insert(0, str(BENCH))
    try:
        import analyze as bench  # benchmarks/analyze.py
    finally:
        sys.path.remove(str(BENCH))
    info: dict[str, Any] = bench.generate(path, events, seed=seed)
    return info
