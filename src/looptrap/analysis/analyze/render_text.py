"""The terminal summary (rich): the fleet in numbers, the worst sessions, the top repeated calls, the tools
that trap agents, and what the model said it needed. Everything shown from a log is made printable first.

Every line fits the width: summary lines are wrapped at word boundaries, and a table keeps each row on one
line by cutting its text columns (the middle of an id or a call, the end of other text) and, when even that
is not enough, by leaving columns out in a fixed order, named under the table with what each column means.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from looptrap.analysis.analyze.run import Report
from looptrap.analysis.analyze.session import SessionAnalysis
from looptrap.core.columns import MIN_WIDTH, cols, ellipsis, fit, fit_end, head, tail, wrap, writable
from looptrap.core.columns import width as report_width
from looptrap.core.figures import count, duration, money, share
from looptrap.core.printable import one_line

__all__ = ["MIN_WIDTH", "render_text", "report_width", "worst"]

_GAP = 2  # spaces between two columns
_NEEDED_LINES = 4  # the most lines one of the texts of what the model said it needed takes


def worst(report: Report, n: int = 15) -> list[SessionAnalysis]:
    """The sessions to look at first: loops by calls spent after their onset, then outliers, then the
    longest stale stretches."""

    def key(a: SessionAnalysis) -> tuple[int, int, int, int]:
        spent = a.loop["calls_after_onset"] if a.loop else -1
        return (-spent, -int(a.outlier), -a.longest_stale, -a.tool_calls)

    return sorted(report.sessions, key=key)[:n]


def _isatty(out: IO[str]) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass(slots=True)
class _Marks:
    """The characters the report draws with: Unicode, or ASCII for an output that cannot encode them."""

    ellipsis: str = "…"
    rule: str = "─"

    @classmethod
    def for_output(cls, out: IO[str]) -> _Marks:
        return cls(ellipsis(out), "─" if writable("─", out) else "-")


# -- the report's cuts (text measured and cut by looptrap.core.columns) -----------------------------------


def _cut_loop(text: str, width: int, mark: str) -> str:
    """A loop's kind and call numbers kept whole; its tool, in brackets at the end, cut first."""
    if cols(text) <= width or not text.endswith(")") or " (" not in text:
        return fit_end(text, width, mark)
    base, _, tool = text[:-1].rpartition(" (")
    room = width - cols(base) - 3
    if room < 1 + cols(mark):
        return fit_end(base, width, mark)
    return f"{base} ({fit(tool, room, mark)})"


def _cut_call(text: str, width: int, mark: str) -> str:
    """A call (``tool arguments``): the tool kept whole where it can be, then its arguments cut."""
    tool, sep, args = text.partition(" ")
    room = width - cols(tool) - 1
    if not sep or room < 8:
        return fit(text, width, mark)
    return f"{tool} {_cut_arguments(args, room, mark)}"


def _cut_arguments(text: str, width: int, mark: str) -> str:
    """Arguments written as a JSON object: as many of its keys as leave enough of the first value (a
    command, a path, a query: what tells calls apart), then ``…``, each value cut to the same most cells (a
    path keeps more of its end, other text its start); at least the first key. Other arguments are cut in
    the middle."""
    if cols(text) <= width:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not value:
        return fit(text, width, mark)
    items = [(json.dumps(str(k), ensure_ascii=False), v) for k, v in list(value.items())[:16]]
    longest = max(cols(_compact(v)) for _, v in items)
    first = cols(_compact(items[0][1]))
    for keep in range(len(items), 0, -1):
        more = "" if keep == len(value) else "," + mark

        def written(cap: int, keep: int = keep, more: str = more) -> str:
            # printable again: a value's JSON escapes (a bidirectional override) are characters once parsed
            body = ",".join(f"{k}:{_cut_value(v, cap, mark)}" for k, v in items[:keep])
            return one_line("{" + body + more + "}", 4 * len(text) + 8)

        low, high, best = 6, longest, None
        while low <= high:  # the largest cap at which the object fits
            mid = (low + high) // 2
            if cols(written(mid)) <= width:
                best, low = mid, mid + 1
            else:
                high = mid - 1
        if best is not None and (best >= min(first, max(8, width // (keep + 2))) or keep == 1):
            return written(best)
    return fit(text, width, mark)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _cut_value(value: Any, cap: int, mark: str) -> str:
    text = _compact(value)
    if cols(text) <= cap:
        return text
    if not isinstance(value, str):
        return fit_end(text, cap, mark)
    inner, room = text[1:-1], cap - 2
    if "/" in value and not any(c.isspace() for c in value):  # a path or a URL: its end tells it apart
        start = head(inner, (room - cols(mark)) // 4)
        return f'"{start}{mark}{tail(inner, room - cols(mark) - cols(start))}"'
    return f'"{fit_end(inner, room, mark)}"'


def _wrap(text: str, width: int, indent: int = 2) -> list[str]:
    """``text`` in lines of at most ``width`` cells, broken at spaces (:func:`looptrap.core.columns.wrap`):
    its leading spaces kept, the lines after the first indented by ``indent`` more (each at most a quarter of
    the width)."""
    lead = min(len(text) - len(text.lstrip(" ")), width // 4)
    return wrap(" " * lead, text.lstrip(" "), width, indent=lead, hang=min(indent, width // 4))


# -- tables ----------------------------------------------------------------------------------------------

_Cut = Callable[[str, int, str], str]  # text, width, the ellipsis


@dataclass(slots=True)
class _Column:
    """A column: its short name and what it means (the legend), its cells, and how it gives way to a narrow
    terminal: ``cut`` (``None``: never cut, a number) down to ``least`` cells, ``comfort`` the width below
    which columns are left out rather than this one cut further, ``drop`` the order in which it is left out
    (1 first; 0 never), ``last_resort`` when it is left out only if the table does not fit even at the
    least widths."""

    name: str
    legend: str
    cut: _Cut | None = None
    least: int = 0
    comfort: int = 0
    drop: int = 0
    last_resort: bool = False
    right: bool = True
    cells: list[str] = field(default_factory=list)

    @property
    def natural(self) -> int:
        return max([cols(self.name), *(cols(c) for c in self.cells)])

    def floor(self, comfortable: bool) -> int:
        if self.cut is None:
            return self.natural
        return min(self.natural, self.comfort if comfortable else self.least)


def _layout(columns: list[_Column], width: int) -> tuple[list[_Column], list[int]]:
    """The columns shown and their widths: columns are left out (in their ``drop`` order) until the others
    fit at a comfortable width; the cut columns then share what is left, each up to its natural width."""
    shown = list(columns)

    def need(comfortable: bool) -> int:
        return sum(c.floor(comfortable) for c in shown) + _GAP * (len(shown) - 1)

    while need(True) > width and any(c.drop for c in shown):
        victim = min((c for c in shown if c.drop), key=lambda c: c.drop)
        if victim.last_resort and need(False) <= width:
            break
        shown.remove(victim)
    comfortable = need(True) <= width
    widths = [c.floor(comfortable) for c in shown]
    spare = width - sum(widths) - _GAP * (len(shown) - 1)
    growing = [i for i, c in enumerate(shown) if c.cut is not None]
    while spare > 0:  # one cell at a time to each cut column still short of its natural width
        short = [i for i in growing if widths[i] < shown[i].natural]
        if not short:
            break
        for i in short[:spare]:
            widths[i] += 1
        spare -= min(len(short), spare)
    while spare < 0:  # even the least widths are too wide: the widest cut column gives way
        widest = max(growing, key=lambda j: widths[j], default=None)
        if widest is None or widths[widest] <= 1:
            break
        widths[widest] -= 1
        spare += 1
    return shown, widths


def _table(
    console: Any,
    title: str,
    columns: list[_Column],
    width: int,
    m: _Marks,
) -> None:
    """Print a table (the title, the header, a rule, one line per row) and its legend."""
    shown, widths = _layout(columns, width)
    rows = len(columns[0].cells)

    def line(cells: list[str]) -> str:
        parts = []
        for c, w, text in zip(shown, widths, cells, strict=True):
            text = text if c.cut is None else c.cut(text, w, m.ellipsis)
            pad = " " * max(w - cols(text), 0)
            parts.append(pad + text if c.right else text + pad)
        return (" " * _GAP).join(parts).rstrip()

    cut = False
    body = []
    for r in range(rows):
        row = [c.cells[r] for c in shown]
        text = line(row)
        cut = cut or any(c.cut is not None and cols(v) > w for c, w, v in zip(shown, widths, row, strict=True))
        body.append(text)
    _say(console, title, width, "bold")
    _say(console, line([c.name for c in shown]), width, "bold", wrap=False)
    _say(console, (" " * _GAP).join(m.rule * w for w in widths), width, wrap=False)
    for text in body:
        _say(console, text, width, wrap=False)
    legend = "; ".join(c.legend for c in shown if c.legend)
    left_out = [c.name for c in columns if c not in shown]
    if left_out:
        legend += f"; left out to fit {width} columns: " + ", ".join(left_out)
    if cut:
        legend += f"; {m.ellipsis} marks text cut to fit"
    _say(console, legend, width, "dim")


def _say(console: Any, text: str, width: int, style: str = "", *, wrap: bool = True) -> None:
    _lines(console, _wrap(text, width) if wrap else [text], style)


def _lines(console: Any, lines: list[str], style: str = "") -> None:
    from rich.text import Text

    for line in lines:
        # Every line is made to fit already; were one still wider, rich cuts it rather than wrap it.
        console.print(Text(line, style=style), no_wrap=True, overflow="ellipsis", crop=True)


# -- the report ------------------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    """Text from a log, made printable, on one line (long enough to be cut to the width later)."""
    return one_line(str(value), 1000)


def _interval(seconds: float) -> str:
    # duration() has one decimal under 10 s: a machine-speed median (3 ms) would read as no time at all
    return "<0.1 s" if 0 < seconds < 0.05 else duration(seconds)


def _loop_cell(loop: dict[str, Any] | None) -> str:
    if not loop:
        return "-"
    if loop.get("first_intervention_call") is None:  # found by the calls' rhythm: no verdict to point at
        text = f"{loop['kind']} #{loop['onset_call']}-#{loop['end_call']} rhythm"
    else:
        text = f"{loop['kind']} #{loop['onset_call']}->#{loop['first_intervention_call']}"
    return text + (f" ({_shown(loop['tool'])})" if loop["tool"] else "")


def _sessions_table(report: Report) -> tuple[str, list[_Column]]:
    rows = worst(report)
    total = len(report.sessions)
    title = "sessions to look at first"
    if len(rows) < total:
        title += f" ({len(rows)} of {count(total)})"
    verdicts = report.detectors and not all(a.partial for a in rows)
    title += (
        ": loops by the calls spent in them, then outliers, then the longest stale runs"
        if verdicts
        else ": outliers, then by calls"
    )
    columns = [
        _Column("session", "", fit, least=10, comfort=20, right=False),
        _Column("calls", "calls: tool calls"),
        _Column("distinct", "distinct: distinct calls (tool and arguments)", drop=3),
        _Column("x", "x: calls per distinct call", drop=6),
    ]
    if verdicts:
        columns += [
            _Column(
                "stale",
                "stale: the longest run of calls that repeated an earlier call and got the same result back",
                drop=4,
            ),
            _Column(
                "loop",
                "loop: its kind, #onset->#first intervention (the call where the guard would have stepped in) and "
                "the tool, or #onset-#end rhythm (found by the calls' rhythm in a log without results); -: none",
                _cut_loop,
                least=12,
                comfort=24,
                drop=7,
                last_resort=True,
                right=False,
            ),
            _Column("spent", "spent: calls / cost from the loop's onset to its end", drop=5),
        ]
    columns.append(
        _Column("interval", "interval: the median time between calls (band: a tight band at machine speed)", drop=2)
    )
    marks = [
        ", ".join(
            mark
            for mark, on in (
                ("outlier", a.outlier),
                ("converged", a.converged),
                (count(a.bursts, "burst"), a.bursts),
            )
            if on
        )
        for a in rows
    ]
    if any(marks):
        columns.append(
            _Column(
                "marks",
                "marks: outlier (far more calls than the fleet's sessions), converged (no new call in its second "
                "half), bursts (runs of identical calls closer than --burst-ms)",
                fit_end,
                least=7,
                comfort=12,
                drop=1,
                right=False,
                cells=marks,
            )
        )
    by = {c.name: c for c in columns}
    for a in rows:
        by["session"].cells.append(_shown(a.session))
        by["calls"].cells.append(count(a.tool_calls))
        by["distinct"].cells.append(count(a.distinct_calls))
        by["x"].cells.append(f"{a.dedup_ratio:,.1f}")
        if verdicts:
            by["stale"].cells.append("-" if a.partial else count(a.longest_stale))
            by["loop"].cells.append(_loop_cell(a.loop))
            lp = a.loop
            by["spent"].cells.append(
                f"{count(lp['calls_after_onset'])} / {money(lp['cost_after_onset'])}" if lp else "-"
            )
        iv = a.intervals
        by["interval"].cells.append(
            "-" if not iv else _interval(iv["median_s"]) + (" band" if iv["machine_band"] else "")
        )
    return title, columns


def _signatures_table(report: Report) -> tuple[str, list[_Column]]:
    top = report.fleet["top_signatures"][:10]
    columns = [
        _Column("calls", "calls: times it was made"),
        _Column("sessions", "sessions: sessions that made it", drop=2),
        _Column("max", "max: the most made in one session", drop=1),
        _Column("call", "call: the tool and its arguments as written", _cut_call, least=12, comfort=40, right=False),
    ]
    for row in top:
        columns[0].cells.append(count(row["calls"]))
        columns[1].cells.append(count(row["sessions"]))
        columns[2].cells.append(count(row["max_in_session"]))
        columns[3].cells.append(_shown(f"{row['tool']} {row['args']}"))
    return "most repeated calls (sort | uniq -c)", columns


def _tools_table(report: Report) -> tuple[str, list[_Column]]:
    columns = [
        _Column("tool", "", fit, least=8, comfort=16, right=False),
        _Column("calls", "calls: its calls"),
        _Column("sessions", "sessions: sessions that called it", drop=1),
    ]
    if report.detectors:
        columns.append(
            _Column("loop rate", "loop rate: the share of those sessions whose loop was on this tool", drop=4)
        )
    columns += [
        _Column("empty", "empty: the share of its results that were empty", drop=3),
        _Column("errors", "errors: the share of its results that were errors", drop=2),
    ]
    by = {c.name: c for c in columns}
    for row in report.fleet["tools"][:10]:
        by["tool"].cells.append(_shown(row["tool"]))
        by["calls"].cells.append(count(row["calls"]))
        by["sessions"].cells.append(count(row["sessions"]))
        if report.detectors:
            by["loop rate"].cells.append(
                "-" if row["signal_rate"] is None else share(row["loop_sessions"], row["sessions"])
            )
        by["empty"].cells.append(share(row["empty"], row["results"]))
        by["errors"].cells.append(share(row["errors"], row["results"]))
    title = "tools: those agents looped on first, then by calls"
    return title if report.detectors else "tools, by calls", columns


def _summary(report: Report) -> list[tuple[str, str]]:
    """The fleet in a few sentences, each with its style."""
    f = report.fleet
    n = f["sessions"]
    out = [
        (
            f"{count(n, 'session')}, {count(f['tool_calls'], 'tool call')}, {count(f['events'], 'event')} "
            f"from {count(len(report.inputs), 'input')}",
            "bold",
        )
    ]
    if report.detectors and f["loops"] is not None:
        lp = f["loops"]
        text = f"loops: {count(lp['sessions'])} of {count(n, 'session')} ({share(lp['sessions'], n)}) had a loop"
        if lp["sessions"]:
            text += (
                f"; the guard would have halted {count(lp['halted'])} of them. "
                f"{count(lp['calls_after_onset'], 'call')} and {money(lp['cost_after_onset'])} were spent inside "
                f"the loops (from each onset to its end); the guard would have saved "
                f"{count(lp['calls_saved'], 'call')} and {money(lp['cost_saved'])}"
            )
        out.append((text, "bold red" if lp["sessions"] else "green"))
    else:
        out.append(("statistics only (--no-detectors): no verdicts", ""))
    cps = f["calls_per_session"]
    above = cps["outlier_above"]
    outliers = count(cps["outliers"], "outlier")
    out.append(
        (
            f"calls per session: median {count(cps['median'])}, p90 {count(cps['p90'])}, max {count(cps['max'])}; "
            + (f"{outliers} (sessions with more than {count(above, 'call')})" if above is not None else outliers),
            "",
        )
    )
    estimated = " (in part estimated from tokens)" if f.get("cost_estimated") else ""
    out.append((f"cost: {money(f['cost_usd'])}{estimated}; {count(f['tokens'], 'token')}", ""))
    b = f["bursts"]
    if b["count"] or f["machine_band_sessions"]:
        out.append(
            (
                f"machine speed: {count(f['machine_band_sessions'], 'session')} with calls in a tight band under "
                f"1 s; {count(b['count'], 'burst')} of identical calls ({count(b['calls'], 'call')}) in "
                f"{count(b['sessions'], 'session')}: retries some layer made and the log holds as calls",
                "",
            )
        )
    ta = f.get("tool_attempts")
    if ta and ta["retries"]:
        out.append(
            (
                f"tool layer: {count(ta['retries'], 'retry')} behind {count(ta['calls'], 'call')} in "
                f"{count(ta['sessions'], 'session')}, from the log's attempts: not calls in the log, so not in "
                "the bursts",
                "",
            )
        )
    return out


def render_text(report: Report, out: IO[str], *, color: bool | None = None, width: int | None = None) -> None:
    """Write the summary to ``out``, every line at most ``width`` cells (:func:`report_width` when ``None``),
    in colour when ``out`` is a terminal, unless ``color`` says otherwise."""
    from rich.console import Console

    tty = _isatty(out)
    width = report_width(out, width)
    m = _Marks.for_output(out)
    console = Console(
        file=out,
        force_terminal=color if color is not None else None,
        no_color=color is False or (color is None and not tty),
        width=width,
        highlight=False,
        emoji=False,
        markup=False,
    )
    f = report.fleet
    for text, style in _summary(report):
        _say(console, text, width, style)
    tables = [_sessions_table(report)]
    if f["top_signatures"]:
        tables.append(_signatures_table(report))
    if f["tools"]:
        tables.append(_tools_table(report))
    for title, columns in tables:
        if columns[0].cells:
            console.print()
            _table(console, title, columns, width, m)
    if report.detectors and f["shapes"]:
        console.print()
        shapes = ", ".join(f"{_shown(k)} {count(v)}" for k, v in f["shapes"].items())
        _say(console, f"loop shapes (sessions by the kind of their loop): {shapes}", width)
    if f["needed"]:
        console.print()
        _say(console, f"what the model said it needed ({count(len(f['needed']), 'text')}):", width, "bold")
        for item in f["needed"][:10]:
            who = fit(_shown(item["session"]), max(10, width // 3), m.ellipsis)
            lines = _wrap(f"  {who}: {one_line(str(item['text']), 300)}", width)
            if len(lines) > _NEEDED_LINES:  # --json holds every text
                lines = lines[:_NEEDED_LINES]
                lines[-1] = head(lines[-1], width - cols(m.ellipsis)) + m.ellipsis
            _lines(console, lines)
