"""The fleet: calls per session with robust outliers, loop shapes, per-tool signal rates, what the model said
it needed, and the calls and cost spent inside loops."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from looptrap.analysis.analyze.session import SessionAnalysis

__all__ = ["OUTLIER_Z", "build_fleet", "robust_z"]

#: A session whose robust z-score of log10(calls) is above this is an outlier (Iglewicz and Hoaglin's 3.5).
OUTLIER_Z = 3.5


def _median(values: Sequence[float]) -> float:
    v = sorted(values)
    n = len(v)
    if not n:
        return 0.0
    mid = n // 2
    return v[mid] if n % 2 else (v[mid - 1] + v[mid]) / 2


def robust_z(values: Sequence[float]) -> tuple[list[float | None], float, float]:
    """Robust z-scores ``0.6745 (x - median) / MAD`` (with the mean absolute deviation, scaled by 1.2533,
    when the MAD is 0; all ``None`` when both are 0), the median and the scale used."""
    med = _median(values)
    mad = _median([abs(x - med) for x in values])
    if mad > 0:
        return [0.6745 * (x - med) / mad for x in values], med, mad / 0.6745
    mean_ad = sum(abs(x - med) for x in values) / len(values) if values else 0.0
    if mean_ad > 0:
        scale = 1.253314 * mean_ad
        return [(x - med) / scale for x in values], med, scale
    return [None for _ in values], med, 0.0


def _quantile(values: Sequence[float], q: float) -> float:
    v = sorted(values)
    if not v:
        return 0.0
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def build_fleet(
    sessions: list[SessionAnalysis],
    *,
    tool_results: dict[str, list[int]],
    top_signatures: list[dict[str, Any]],
    events: int,
    detectors: bool = True,
    tool_sessions: dict[str, list[int]] | None = None,
) -> dict[str, Any]:
    """The fleet summary; marks each session's ``outlier`` and ``robust_z`` in place. ``tool_results``:
    per tool ``[results, errors, empty]``; ``tool_sessions`` (statistics only): per tool ``[calls, sessions]``
    when the sessions do not carry their per-tool counts."""
    calls = [a.tool_calls for a in sessions]
    logs = [math.log10(c + 1) for c in calls]
    zs, med, scale = robust_z(logs)
    outliers = 0
    for a, z in zip(sessions, zs, strict=True):
        a.robust_z = round(z, 3) if z is not None else None
        a.outlier = z is not None and z > OUTLIER_Z
        outliers += a.outlier
    threshold = 10 ** (med + OUTLIER_Z * scale) - 1 if scale > 0 else None
    looped = [a for a in sessions if a.loop]
    shapes = Counter(a.loop["kind"] for a in looped if a.loop)
    all_shapes = Counter(k for a in sessions for k in a.shapes)
    per_tool: dict[str, dict[str, Any]] = {}
    if tool_sessions is not None:
        for tool, (c, k) in tool_sessions.items():
            per_tool[tool] = {"tool": tool, "calls": c, "sessions": k, "loop_sessions": 0}
    for a in sessions:
        for tool, c in a.tools.items():
            row = per_tool.setdefault(tool, {"tool": tool, "calls": 0, "sessions": 0, "loop_sessions": 0})
            row["calls"] += c
            row["sessions"] += 1
        if a.loop and a.loop.get("tool") in per_tool:
            per_tool[a.loop["tool"]]["loop_sessions"] += 1
        elif a.loop and a.loop.get("tool"):
            per_tool[a.loop["tool"]] = {"tool": a.loop["tool"], "calls": 0, "sessions": 1, "loop_sessions": 1}
    for tool, row in per_tool.items():
        results, errors, empty = (tool_results.get(tool) or [0, 0, 0])[:3]
        row["results"], row["errors"], row["empty"] = results, errors, empty
        row["signal_rate"] = round(row["loop_sessions"] / row["sessions"], 4) if row["sessions"] and detectors else None
        row["error_rate"] = round(errors / results, 4) if results else None
        row["empty_rate"] = round(empty / results, 4) if results else None
    tools = sorted(per_tool.values(), key=lambda r: (-(r["signal_rate"] or 0), -r["calls"], r["tool"]))
    needed = [{"session": a.session, "text": t} for a in sessions for t in a.needed]
    loops = {
        "sessions": len(looped),
        "halted": sum(1 for a in looped if a.loop and a.loop.get("halted_call")),
        "calls_after_onset": sum(a.loop["calls_after_onset"] for a in looped if a.loop),
        "cost_after_onset": round(sum(a.loop["cost_after_onset"] for a in looped if a.loop), 6),
        "calls_saved": sum(a.loop["calls_saved"] for a in looped if a.loop),
        "cost_saved": round(sum(a.loop["cost_saved"] for a in looped if a.loop), 6),
    }
    total_calls = sum(calls)
    return {
        "sessions": len(sessions),
        "events": events,
        "tool_calls": total_calls,
        "cost_usd": round(sum(a.cost_usd for a in sessions), 6),
        "cost_estimated": any(a.cost_estimated for a in sessions),
        "tokens": sum(a.tokens for a in sessions),
        "calls_per_session": {
            "median": _quantile(calls, 0.5),
            "p90": _quantile(calls, 0.9),
            "max": max(calls) if calls else 0,
            "outlier_above": round(threshold, 1) if threshold is not None else None,
            "outliers": outliers,
        },
        "loops": loops if detectors else None,
        "shapes": dict(shapes.most_common()) if detectors else None,
        "all_shapes": dict(all_shapes.most_common()) if detectors else None,
        "tools": tools,
        "top_signatures": top_signatures,
        "needed": needed,
        "bursts": {
            "sessions": sum(1 for a in sessions if a.bursts),
            "count": sum(a.bursts for a in sessions),
            "calls": sum(a.burst_calls for a in sessions),
        },
        "tool_attempts": _tool_attempts(sessions),
        "machine_band_sessions": sum(1 for a in sessions if a.intervals and a.intervals.get("machine_band")),
    }


def _tool_attempts(sessions: list[SessionAnalysis]) -> dict[str, int] | None:
    """The tool layer across the fleet (``None`` when no call recorded its attempts)."""
    told = [a for a in sessions if a.attempt_calls]
    if not told:
        return None
    calls = sum(a.attempt_calls for a in told)
    attempts = sum(a.attempts for a in told)
    return {
        "sessions": sum(1 for a in told if a.attempts > a.attempt_calls),
        "calls": calls,
        "attempts": attempts,
        "retries": attempts - calls,
    }
