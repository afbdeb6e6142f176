"""``--html``: one self-contained page (no network: inline CSS, inline SVG charts, a few lines of inline
script for sorting the table), with the charts people would rather look at than read: calls per session on
a log scale with the outliers marked, a timeline of the worst sessions with the stale stretch highlighted,
per-tool signal rates, loop shapes, and per-session detail."""

from __future__ import annotations

import base64
import hashlib
import html
import math
from typing import Any

import orjson

from looptrap.analysis.analyze.render_text import worst
from looptrap.analysis.analyze.run import Report
from looptrap.analysis.analyze.session import SessionAnalysis
from looptrap.core.printable import one_line

__all__ = ["render_html"]

_MAX_DOTS = 3000
_MAX_ROWS = 500
_W = 880


def _e(value: Any, limit: int = 200) -> str:
    return html.escape(one_line(str(value), limit), quote=True)


def _money(v: float) -> str:
    return f"${v:,.2f}" if v >= 0.01 or v == 0 else f"${v:.4f}"


def _calls_chart(report: Report) -> str:
    sessions = sorted(report.sessions, key=lambda a: -a.tool_calls)
    shown = sessions[:_MAX_DOTS]
    h, left, bottom, top = 260, 56, 30, 12
    peak = max((a.tool_calls for a in shown), default=1)
    hi = max(1.0, math.ceil(math.log10(peak + 1)))
    plot_w, plot_h = _W - left - 12, h - bottom - top

    def y(calls: float) -> float:
        return top + plot_h * (1 - math.log10(calls + 1) / hi)

    parts = [f'<svg class="chart" id="chart-calls" viewBox="0 0 {_W} {h}" role="img" aria-label="calls per session">']
    for d in range(int(hi) + 1):
        yy = y(10**d - 1)
        parts.append(f'<line x1="{left}" x2="{_W - 12}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" class="axis" text-anchor="end">{10**d:,}</text>')
    n = max(len(shown), 1)
    for i, a in enumerate(shown):
        x = left + plot_w * (i + 0.5) / n
        cls = "dot outlier" if a.outlier else "dot loop" if a.loop else "dot"
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y(a.tool_calls):.1f}" r="{3.2 if a.outlier else 2.2}" class="{cls}">'
            f"<title>{_e(a.session, 80)}: {a.tool_calls:,} calls</title></circle>"
        )
    cps = report.fleet["calls_per_session"]
    med = cps["median"]
    parts.append(f'<line x1="{left}" x2="{_W - 12}" y1="{y(med):.1f}" y2="{y(med):.1f}" class="median"/>')
    parts.append(f'<text x="{_W - 14}" y="{y(med) - 4:.1f}" class="axis" text-anchor="end">median {med:,.0f}</text>')
    if cps["outlier_above"] is not None and cps["outlier_above"] < 10**hi:
        ty = y(cps["outlier_above"])
        parts.append(f'<line x1="{left}" x2="{_W - 12}" y1="{ty:.1f}" y2="{ty:.1f}" class="threshold"/>')
        parts.append(
            f'<text x="{_W - 14}" y="{ty - 4:.1f}" class="axis warn" text-anchor="end">'
            f"outliers above {cps['outlier_above']:,.0f}</text>"
        )
    more = f" (the {len(shown):,} largest of {len(sessions):,})" if len(sessions) > len(shown) else ""
    parts.append(
        f'<text x="{left}" y="{h - 8}" class="axis">sessions, most calls first{more}; '
        f"red: outlier, orange: a loop</text></svg>"
    )
    return "".join(parts)


def _timeline(a: SessionAnalysis, i: int) -> str:
    tl = a.timeline or {}
    calls = tl.get("calls") or []
    stale = tl.get("stale") or []
    width = tl.get("width") or 1
    h, left = 70, 8
    plot_w = _W - 2 * left
    total = max(a.tool_calls, 1)

    def x(call: float) -> float:
        return left + plot_w * (call - 1) / total

    peak = max(calls, default=1) or 1
    bar_w = plot_w * width / total
    parts = [
        f'<svg class="chart timeline" id="timeline-{i}" viewBox="0 0 {_W} {h}" role="img" '
        f'aria-label="timeline of {_e(a.session, 60)}">'
    ]
    if a.longest_stale:
        x0, x1 = x(a.stale_from), x(a.stale_to + 1)
        parts.append(
            f'<rect x="{x0:.1f}" y="4" width="{max(x1 - x0, 2):.1f}" height="{h - 24}" class="stale-band">'
            f"<title>longest stale stretch: calls {a.stale_from:,}-{a.stale_to:,}</title></rect>"
        )
    for j, c in enumerate(calls):
        bh = (h - 28) * c / peak
        s = stale[j] if j < len(stale) else 0
        sh = bh * s / c if c else 0
        bx = left + j * bar_w
        bw = max(bar_w - 0.5, 0.6)
        parts.append(f'<rect x="{bx:.1f}" y="{h - 20 - bh:.1f}" width="{bw:.1f}" height="{bh - sh:.1f}" class="bar"/>')
        if sh:
            parts.append(
                f'<rect x="{bx:.1f}" y="{h - 20 - sh:.1f}" width="{bw:.1f}" height="{sh:.1f}" class="bar stale"/>'
            )
    if a.loop:
        text_end = 0.0  # marks close together: each label starts after the one before it
        for key, cls, label in (
            ("onset_call", "onset", "onset"),
            ("first_intervention_call", "intervention", "guard"),
            ("halted_call", "halt", "halt"),
        ):
            c = a.loop.get(key)
            if c:
                text = f"{label} #{c:,}"
                tx = max(x(c) + 3, text_end + 8)
                text_end = tx + 6.5 * len(text)
                parts.append(f'<line x1="{x(c):.1f}" x2="{x(c):.1f}" y1="2" y2="{h - 18}" class="mark {cls}"/>')
                parts.append(f'<text x="{tx:.1f}" y="12" class="axis mark-label">{text}</text>')
    parts.append(f'<text x="{left}" y="{h - 4}" class="axis">call 1</text>')
    parts.append(f'<text x="{_W - left}" y="{h - 4}" class="axis" text-anchor="end">call {a.tool_calls:,}</text></svg>')
    return "".join(parts)


def _hbars(chart_id: str, rows: list[tuple[str, float, str]], label: str) -> str:
    if not rows:
        none = '<text x="8" y="20" class="axis">none</text>'
        return f'<svg class="chart" id="{chart_id}" viewBox="0 0 {_W} 30">{none}</svg>'
    bh, left = 22, 230
    h = bh * len(rows) + 26
    peak = max((v for _, v, _ in rows), default=1) or 1
    parts = [f'<svg class="chart" id="{chart_id}" viewBox="0 0 {_W} {h}" role="img" aria-label="{label}">']
    for i, (name, v, text) in enumerate(rows):
        y = 6 + i * bh
        w = (_W - left - 250) * v / peak  # room for the label after the bar
        parts.append(f'<text x="{left - 8}" y="{y + 14}" class="axis" text-anchor="end">{_e(name, 32)}</text>')
        parts.append(f'<rect x="{left}" y="{y + 2}" width="{max(w, 1):.1f}" height="{bh - 6}" class="hbar"/>')
        parts.append(f'<text x="{left + w + 6:.1f}" y="{y + 14}" class="axis">{_e(text, 40)}</text>')
    parts.append(f'<text x="8" y="{h - 6}" class="axis">{_e(label, 120)}</text></svg>')
    return "".join(parts)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:940px;
color:#1d2330;background:#fbfbfd}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #dde1ea;padding-bottom:4px}
.sub{color:#5b6475;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #e2e6ee;border-radius:8px;padding:10px 14px;min-width:120px}
.card b{display:block;font-size:20px}
.card span{color:#5b6475;font-size:12px}
.card.bad b{color:#c2410c}
svg.chart{width:100%;height:auto;background:#fff;border:1px solid #e2e6ee;border-radius:8px;margin:4px 0}
.grid{stroke:#eef0f5}
.axis{font-size:11px;fill:#5b6475}
.mark-label{paint-order:stroke;stroke:#fff;stroke-width:3px;fill:#1f2937}
.warn{fill:#b91c1c}
.dot{fill:#4f6bed;opacity:.75}
.dot.loop{fill:#ea8a1a}
.dot.outlier{fill:#dc2626;opacity:1}
.median{stroke:#4f6bed;stroke-dasharray:4 3}
.threshold{stroke:#dc2626;stroke-dasharray:6 4}
.bar{fill:#9aa8f5}
.bar.stale{fill:#dc2626}
.stale-band{fill:#fde2e2}
.mark{stroke-width:1.5}
.onset{stroke:#ea8a1a}
.intervention{stroke:#dc2626}
.halt{stroke:#111827}
.hbar{fill:#4f6bed}
table{border-collapse:collapse;width:100%;background:#fff;font-size:12.5px}
th,td{padding:4px 6px;border-bottom:1px solid #eef0f5;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f3f5fa;position:sticky;top:0}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.loop td:first-child{border-left:3px solid #ea8a1a}
tr.outlier td:first-child{border-left:3px solid #dc2626}
code{font-size:12px;background:#f3f5fa;padding:0 3px;border-radius:3px;word-break:break-all}
details{margin:2px 0}
.tl-title{font-size:12.5px;margin:10px 0 0}
.note{color:#5b6475;font-size:12px}
#js-errors{color:#b91c1c}
"""

_JS = """
window.addEventListener('error', function (e) {
  var box = document.getElementById('js-errors'); if (box) { box.textContent += 'script error: ' + e.message + '\\n'; }
});
(function () {
  var table = document.getElementById('table-sessions');
  if (table) {
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) {
      heads[i].addEventListener('click', (function (col) {
        return function () {
          var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
          var dir = table.getAttribute('data-sort') === String(col) ? -1 : 1;
          rows.sort(function (a, b) {
            var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
            var nx = parseFloat(x), ny = parseFloat(y);
            if (!isNaN(nx) && !isNaN(ny)) { return dir * (nx - ny); }
            return dir * String(x).localeCompare(String(y));
          });
          rows.forEach(function (r) { body.appendChild(r); });
          table.setAttribute('data-sort', dir === 1 ? String(col) : '');
        };
      })(i));
    }
  }
  var data = JSON.parse(document.getElementById('report-data').textContent);
  document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
  document.body.setAttribute('data-sessions', String(data.sessions));
  document.body.setAttribute('data-rendered', 'yes');
})();
"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


#: The page loads nothing and runs only its own script and style (their hashes): text from a log that got
#: past the escaping still could not run or fetch anything.
_CSP = (
    f"default-src 'none'; script-src {_sha256(_JS)}; style-src {_sha256(_CSS)}; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)


def render_html(report: Report, title: str = "looptrap analyze") -> str:
    """The report as one self-contained HTML page."""
    f = report.fleet
    lp = f.get("loops") or {}
    cps = f["calls_per_session"]
    cards = [
        ("sessions", f"{f['sessions']:,}", False),
        ("tool calls", f"{f['tool_calls']:,}", False),
        ("sessions with a loop", f"{lp.get('sessions', 0):,}" if report.detectors else "-", bool(lp.get("sessions"))),
        ("calls after a loop's onset", f"{lp.get('calls_after_onset', 0):,}" if report.detectors else "-", False),
        ("the guard would have saved", f"{lp.get('calls_saved', 0):,} calls" if report.detectors else "-", False),
        (
            "cost after onsets" + (" (in part estimated)" if f.get("cost_estimated") else ""),
            _money(lp.get("cost_after_onset", 0.0)) if report.detectors else "-",
            False,
        ),
        ("outlier sessions", f"{cps['outliers']:,}", bool(cps["outliers"])),
        ("median calls", f"{cps['median']:,.0f}", False),
    ]
    out = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{f["events"]:,} events from {len(report.inputs)} input(s): '
        + ", ".join(f"{_e(i['name'], 80)} ({_e(i['format'])})" for i in report.inputs[:5])
        + (" ..." if len(report.inputs) > 5 else "")
        + (f"; {report.skipped:,} malformed record(s) skipped" if report.skipped else "")
        + ("" if report.detectors else "; statistics only (no detectors)")
        + '</p><pre id="js-errors"></pre>',
        '<div class="cards">',
        *(f'<div class="card{" bad" if bad else ""}"><b>{_e(v)}</b><span>{_e(k)}</span></div>' for k, v, bad in cards),
        "</div>",
        "<h2>Calls per session (log scale)</h2>",
        _calls_chart(report),
    ]
    if report.detectors:
        tops = [a for a in worst(report, 6) if a.loop or a.outlier or a.longest_stale]
        out.append("<h2>Worst sessions: timeline</h2>")
        out.append(
            '<p class="note">Calls in order, grouped in columns; red: calls that repeated an earlier call and got '
            "its same result, on a pink band for the longest stale stretch; lines: the loop's onset, the "
            "guard's first intervention, the halt.</p>"
        )
        if not tops:
            out.append('<p class="note">No loop, outlier or stale stretch.</p>')
        for i, a in enumerate(tops):
            lp_ = a.loop or {}
            what = f"{_e(lp_.get('kind'))} on {_e(lp_.get('tool') or 'the turn', 60)}" if lp_ else "no loop"
            out.append(
                f'<p class="tl-title"><b>{_e(a.session, 80)}</b>: {a.tool_calls:,} calls, {what}, '
                f"longest stale stretch {a.longest_stale:,}</p>"
            )
            out.append(_timeline(a, i))
        rates = [
            (
                r["tool"],
                r["signal_rate"] or 0.0,
                f"{r['signal_rate']:.0%} of {r['sessions']:,} sessions; empty {r['empty_rate'] or 0:.0%}",
            )
            for r in f["tools"][:15]
            if r["signal_rate"] is not None
        ]
        out.append("<h2>Per-tool signal rates</h2>")
        out.append(
            _hbars("chart-tools", rates, "share of the sessions using the tool in which the guard intervened on it")
        )
        shapes = [(k, float(v), f"{v:,} session(s)") for k, v in (f.get("shapes") or {}).items()]
        out.append("<h2>Loop shapes</h2>")
        out.append(_hbars("chart-shapes", shapes, "sessions by the shape of their first loop"))
    else:
        empties = [(r["tool"], r["empty_rate"] or 0.0, f"empty {r['empty_rate'] or 0:.0%}") for r in f["tools"][:15]]
        out.append("<h2>Per-tool empty results</h2>")
        out.append(_hbars("chart-tools", empties, "share of results that said nothing"))
    if f["top_signatures"]:
        out.append(
            "<h2>Most repeated calls</h2><table><thead><tr><th>calls</th><th>sessions</th><th>max in one</th>"
            "<th>call</th></tr></thead><tbody>"
        )
        for row in f["top_signatures"][:15]:
            out.append(
                f'<tr><td class="n">{row["calls"]:,}</td><td class="n">{row["sessions"]:,}</td>'
                f'<td class="n">{row["max_in_session"]:,}</td>'
                f"<td><code>{_e(row['tool'], 60)} {_e(row['args'], 160)}</code></td></tr>"
            )
        out.append("</tbody></table>")
    if f["needed"]:
        out.append("<h2>What the model said it needed</h2><ul>")
        out += [f"<li><b>{_e(n['session'], 60)}</b>: {_e(n['text'], 300)}</li>" for n in f["needed"][:50]]
        out.append("</ul>")
    out.append("<h2>Sessions</h2>")
    rows = sorted(report.sessions, key=lambda a: (-(a.loop["calls_after_onset"] if a.loop else -1), -a.tool_calls))
    if len(rows) > _MAX_ROWS:
        out.append(f'<p class="note">The {_MAX_ROWS:,} sessions to look at first, of {len(rows):,}.</p>')
    out.append(
        '<table id="table-sessions"><thead><tr><th>session</th><th>calls</th><th>distinct</th><th>stale</th>'
        "<th>loop</th><th>onset</th><th>after onset</th><th>cost after</th><th>interval</th><th>detail</th>"
        "</tr></thead><tbody>"
    )
    for a in rows[:_MAX_ROWS]:
        lp_ = a.loop or {}
        iv = a.intervals or {}
        cls = "outlier" if a.outlier else "loop" if a.loop else ""
        detail = []
        if a.first_repeat:
            fr = a.first_repeat
            before = fr.get("result_before")
            detail.append(
                f"first repeat: call {fr['call']:,} (first made at {fr['first_seen']:,}) "
                f"<code>{_e(fr.get('signature') or '', 160)}</code>"
                + (f"; the result just before it: <code>{_e(before, 160)}</code>" if before is not None else "")
            )
        if a.bursts:
            detail.append(f"{a.bursts:,} burst(s) of identical calls within milliseconds ({a.burst_calls:,} calls)")
        ta = a.tool_attempts
        if ta and ta["retries"]:
            detail.append(
                f"{ta['retries']:,} tool-level retry(ies) behind {ta['calls']:,} call(s) (the log's attempts)"
            )
        if a.converged:
            detail.append("no new call in its second half")
        for sig in (a.replay.get("signals") or [])[:3] if a.replay else []:
            detail.append(f"#{sig['call_index']} {_e(sig['action'])} {_e(sig['reason'])}: {_e(sig['message'], 220)}")
        cost_after = float(lp_.get("cost_after_onset") or 0.0)
        interval = f"{iv['median_s']:.3g} s" + (" (band)" if iv.get("machine_band") else "") if iv else "-"
        out.append(
            f'<tr class="{cls}"><td data-v="{_e(a.session, 80)}">{_e(a.session, 60)}</td>'
            f'<td class="n" data-v="{a.tool_calls}">{a.tool_calls:,}</td>'
            f'<td class="n" data-v="{a.distinct_calls}">{a.distinct_calls:,}</td>'
            f'<td class="n" data-v="{a.longest_stale}">{a.longest_stale:,}</td>'
            f'<td data-v="{_e(lp_.get("kind") or "")}">{_e(lp_.get("kind") or "-")}</td>'
            f'<td class="n" data-v="{lp_.get("onset_call") or 0}">{lp_.get("onset_call") or "-"}</td>'
            f'<td class="n" data-v="{lp_.get("calls_after_onset") or 0}">{lp_.get("calls_after_onset", 0):,}</td>'
            f'<td class="n" data-v="{cost_after}">{_money(cost_after)}{" (est.)" if a.cost_estimated else ""}</td>'
            f'<td class="n" data-v="{iv.get("median_s", -1)}">{_e(interval)}</td>'
            f"<td>{'<details><summary>more</summary>' + '<br>'.join(detail) + '</details>' if detail else ''}</td></tr>"
        )
    out.append("</tbody></table>")
    data = {
        "sessions": f["sessions"],
        "tool_calls": f["tool_calls"],
        "loops": lp.get("sessions") if report.detectors else None,
    }
    payload = orjson.dumps(data).decode().replace("<", "\\u003c")
    out.append(f'<script type="application/json" id="report-data">{payload}</script>')
    out.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(out)
