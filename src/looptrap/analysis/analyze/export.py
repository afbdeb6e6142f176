"""Machine-readable output: the ``--json`` document and the ``--csv`` per-session table."""

from __future__ import annotations

import csv
from typing import IO, Any

import orjson

from looptrap.analysis.analyze.run import Report

__all__ = ["CSV_COLUMNS", "write_csv", "write_json"]

#: The ``--csv`` columns, in order.
CSV_COLUMNS = (
    "session",
    "source",
    "tool_calls",
    "distinct_calls",
    "dedup_ratio",
    "longest_stale",
    "first_repeat_call",
    "interval_median_s",
    "interval_spread",
    "machine_band",
    "new_in_second_half",
    "converged",
    "bursts",
    "burst_calls",
    "tool_retries",
    "tokens",
    "cost_usd",
    "cost_estimated",
    "loop_kind",
    "loop_tool",
    "onset_call",
    "first_intervention_call",
    "halted_call",
    "calls_after_onset",
    "cost_after_onset",
    "calls_saved",
    "cost_saved",
    "outlier",
    "robust_z",
)


def _row(d: dict[str, Any]) -> list[Any]:
    loop = d.get("loop") or {}
    iv = d.get("intervals") or {}
    stale = d.get("longest_stale") or {}
    first = d.get("first_repeat") or {}
    values = {
        **d,
        "longest_stale": stale.get("calls", "") if d.get("longest_stale") is not None else "",
        "first_repeat_call": first.get("call", ""),
        "interval_median_s": iv.get("median_s", ""),
        "interval_spread": iv.get("spread", ""),
        "machine_band": iv.get("machine_band", ""),
        "bursts": (d.get("bursts") or {}).get("count", 0),
        "burst_calls": (d.get("bursts") or {}).get("calls", 0),
        "tool_retries": (d.get("tool_attempts") or {}).get("retries", ""),
        "loop_kind": loop.get("kind", ""),
        "loop_tool": loop.get("tool", ""),
        **{k: loop.get(k, "") for k in ("onset_call", "first_intervention_call", "halted_call")},
        **{k: loop.get(k, "") for k in ("calls_after_onset", "cost_after_onset", "calls_saved", "cost_saved")},
    }
    return [_cell(values.get(c)) for c in CSV_COLUMNS]


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A CSV cell a spreadsheet opens as text: no formula (a text starting with ``= + - @``, a tab or a
    carriage return gets a leading ``'``, as OWASP advises) and no control characters."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"  # as JSON writes them
    if not isinstance(value, str):
        return value
    if not value.isprintable():
        value = "".join(ch if ch.isprintable() else " " for ch in value)
    return "'" + value if value.startswith(_FORMULA) else value


def write_csv(report: Report, out: IO[str]) -> None:
    """One row per session (columns: :data:`CSV_COLUMNS`)."""
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for a in report.sessions:
        w.writerow(_row(a.to_dict()))


def write_json(report: Report, out: IO[str]) -> None:
    """The whole report as one JSON document."""
    out.write(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
