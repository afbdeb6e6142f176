"""The terminal summary (rich): the fleet in numbers, the worst sessions, the top repeated calls, the tools
that trap agents, and what the model said it needed. Everything shown from a log is made printable first."""

from __future__ import annotations

from typing import IO, Any

from looptrap.analysis.analyze.run import Report
from looptrap.analysis.analyze.session import SessionAnalysis
from looptrap.core.printable import one_line

__all__ = ["render_text", "worst"]


def worst(report: Report, n: int = 15) -> list[SessionAnalysis]:
    """The sessions to look at first: loops by calls spent after their onset, then outliers, then the
    longest stale stretches."""

    def key(a: SessionAnalysis) -> tuple[int, int, int, int]:
        spent = a.loop["calls_after_onset"] if a.loop else -1
        return (-spent, -int(a.outlier), -a.longest_stale, -a.tool_calls)

    return sorted(report.sessions, key=key)[:n]


def _money(v: float | None) -> str:
    return "-" if v is None else f"${v:,.2f}" if v >= 0.01 or v == 0 else f"${v:.4f}"


_ESTIMATED = " (in part estimated from tokens)"


def render_text(report: Report, out: IO[str], *, color: bool | None = None, width: int | None = None) -> None:
    """Write the summary to ``out`` (colours when ``out`` is a terminal, unless ``color`` says otherwise)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    tty = out.isatty() if hasattr(out, "isatty") else False
    console = Console(
        file=out,
        force_terminal=color if color is not None else None,
        no_color=color is False or (color is None and not tty),
        width=width or (None if tty else 120),
        highlight=False,
        emoji=False,
        markup=False,
    )
    f = report.fleet
    cps = f["calls_per_session"]

    def t(value: Any, limit: int = 60) -> Text:
        return Text(one_line(str(value), limit))

    head = (
        f"{f['sessions']:,} session(s), {f['tool_calls']:,} tool call(s), {f['events']:,} event(s) "
        f"from {len(report.inputs)} input(s)"
    )
    console.print(Text(head, style="bold"))
    if report.detectors and f["loops"] is not None:
        lp = f["loops"]
        share = f" ({lp['sessions'] / f['sessions']:.0%})" if f["sessions"] else ""
        console.print(
            Text(
                f"loops: {lp['sessions']:,} session(s){share}, {lp['halted']:,} halted; "
                f"{lp['calls_after_onset']:,} call(s) and {_money(lp['cost_after_onset'])} spent after a loop's onset; "
                f"the guard would have saved {lp['calls_saved']:,} call(s) and {_money(lp['cost_saved'])}",
                style="bold red" if lp["sessions"] else "green",
            )
        )
    else:
        console.print(Text("statistics only (--no-detectors): no verdicts"))
    console.print(
        Text(
            f"calls per session: median {cps['median']:,.0f}, p90 {cps['p90']:,.0f}, max {cps['max']:,}; "
            f"{cps['outliers']} outlier(s)"
            + (f" (above {cps['outlier_above']:,.0f} calls)" if cps["outlier_above"] is not None else "")
            + f"; total cost {_money(f['cost_usd'])}{_ESTIMATED if f.get('cost_estimated') else ''}, "
            f"{f['tokens']:,} token(s)"
        )
    )
    if f["bursts"]["count"] or f["machine_band_sessions"]:
        console.print(
            Text(
                f"machine speed: {f['machine_band_sessions']} session(s) with calls in a tight band under 1 s; "
                f"{f['bursts']['count']:,} burst(s) of identical calls ({f['bursts']['calls']:,} calls) in "
                f"{f['bursts']['sessions']} session(s): retries some layer made and the log holds as calls"
            )
        )
    ta = f.get("tool_attempts")
    if ta and ta["retries"]:
        console.print(
            Text(
                f"tool layer: {ta['retries']:,} retry(ies) behind {ta['calls']:,} call(s) in {ta['sessions']} "
                "session(s), from the log's attempts: not calls in the log, so not in the bursts"
            )
        )
    table = Table(title="sessions to look at first", title_justify="left", show_edge=False)
    for col, just in (
        ("session", "left"),
        ("calls", "right"),
        ("distinct", "right"),
        ("x", "right"),
        ("stale", "right"),
        ("loop", "left"),
        ("after onset", "right"),
        ("interval", "right"),
        ("", "left"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for a in worst(report):
        loop = "-"
        after = "-"
        if a.loop:
            lp = a.loop
            if lp.get("first_intervention_call") is None:  # found by the calls' rhythm: no verdict to point at
                loop = f"{lp['kind']} #{lp['onset_call']}-#{lp['end_call']} rhythm"
            else:
                loop = f"{lp['kind']} #{lp['onset_call']}->#{lp['first_intervention_call']}"
            loop += f" ({lp['tool']})" if lp["tool"] else ""
            after = f"{lp['calls_after_onset']:,} / {_money(lp['cost_after_onset'])}"
        iv = a.intervals
        interval = "-" if not iv else f"{iv['median_s']:.3g}s" + (" band" if iv["machine_band"] else "")
        marks = " ".join(
            m for m, on in (("outlier", a.outlier), ("converged", a.converged), (f"{a.bursts} bursts", a.bursts)) if on
        )
        table.add_row(
            t(a.session, 40),
            t(f"{a.tool_calls:,}"),
            t(f"{a.distinct_calls:,}"),
            t(f"{a.dedup_ratio:,.1f}"),
            t(a.longest_stale if not a.partial else "-"),
            t(loop, 50),
            t(after),
            t(interval),
            t(marks),
        )
    console.print(table)
    if f["top_signatures"]:
        sig = Table(title="most repeated calls (sort | uniq -c)", title_justify="left", show_edge=False)
        for col in ("calls", "sessions", "max in one", "call"):
            sig.add_column(col, justify="left" if col == "call" else "right")
        for row in f["top_signatures"][:10]:
            sig.add_row(
                t(f"{row['calls']:,}"),
                t(f"{row['sessions']:,}"),
                t(f"{row['max_in_session']:,}"),
                t(f"{row['tool']} {row['args']}", 90),
            )
        console.print(sig)
    if f["tools"]:
        tools = Table(title="tools", title_justify="left", show_edge=False)
        for col in ("tool", "calls", "sessions", "loop rate", "empty", "errors"):
            tools.add_column(col, justify="left" if col == "tool" else "right")
        for row in f["tools"][:10]:
            rate = "-" if row["signal_rate"] is None else f"{row['signal_rate']:.0%}"
            empty = "-" if row["empty_rate"] is None else f"{row['empty_rate']:.0%}"
            errs = "-" if row["error_rate"] is None else f"{row['error_rate']:.0%}"
            tools.add_row(
                t(row["tool"], 40), t(f"{row['calls']:,}"), t(f"{row['sessions']:,}"), t(rate), t(empty), t(errs)
            )
        console.print(tools)
    if report.detectors and f["shapes"]:
        console.print(Text("loop shapes: " + ", ".join(f"{k} {v}" for k, v in f["shapes"].items())))
    if f["needed"]:
        console.print(Text(f"what the model said it needed ({len(f['needed'])}):", style="bold"))
        for item in f["needed"][:10]:
            console.print(t(f"  {item['session']}: {item['text']}", 200))
