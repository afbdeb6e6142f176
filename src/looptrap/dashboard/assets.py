"""The dashboard page: HTML, script and style (served as files, so the page's CSP allows no inline code).

The script builds every cell with ``textContent``: no text from a store is ever parsed as markup. A session is
asked for by its exact id (``id``, sent as a URL parameter by ``URLSearchParams``) and shown as ``shown``
(its invisible characters written out).
"""

from __future__ import annotations

__all__ = ["APP_CSS", "APP_JS", "PAGE"]

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>looptrap dashboard</title>
<link rel="stylesheet" href="app.css">
<script src="app.js" defer></script>
</head>
<body data-updates="0" data-state="loading">
<header><h1>looptrap</h1><span id="status">connecting...</span></header>
<main>
<section>
<h2>Sessions <small>(a runaway first: running with signals, then by call rate)</small></h2>
<table id="sessions">
<thead><tr><th>session</th><th>calls</th><th>rate /min</th><th>signals</th><th>stale</th><th>turns</th>
<th>updated</th></tr></thead>
<tbody></tbody>
</table>
<p id="empty" hidden>No sessions in this store yet.</p>
</section>
<section id="detail" hidden>
<h2>Session <span id="detail-id"></span></h2>
<p id="detail-summary"></p>
<h3>What the model said it needed</h3>
<ul id="detail-needed"></ul>
<h3>Calls per tool</h3>
<p id="detail-tools"></p>
<h3>Recent calls (newest first)</h3>
<table id="detail-calls"><thead><tr><th>#</th><th>tool</th><th>call</th><th>verdict</th><th>flags</th></tr>
</thead>
<tbody></tbody></table>
</section>
</main>
</body>
</html>
"""

APP_JS = r"""'use strict';
(function () {
  const token = new URLSearchParams(location.search).get('token');
  const q = (extra) => {
    const p = new URLSearchParams(extra || {});
    if (token) p.set('token', token);
    const s = p.toString();
    return s ? '?' + s : '';
  };
  let selected = null;
  const body = document.body;

  function cell(row, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function ago(t) {
    if (!t) return '-';
    const s = Math.max(0, Date.now() / 1000 - t);
    if (s < 60) return Math.round(s) + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    return Math.round(s / 3600) + ' h ago';
  }

  function render(view) {
    const tbody = document.querySelector('#sessions tbody');
    const rows = [];
    for (const s of view.sessions) {
      const tr = document.createElement('tr');
      tr.dataset.session = s.id;
      tr.dataset.calls = String(s.calls);
      if (s.halted) tr.className = 'halted';
      else if (s.signals.length) tr.className = 'alert';
      if (s.id === selected) tr.classList.add('selected');
      cell(tr, s.shown, 'id');
      cell(tr, String(s.calls), 'num calls');
      cell(tr, s.rate.toFixed(1), 'num rate');
      cell(tr, s.unreadable ? 'UNREADABLE' : s.signals.join(', ') || '-', 'signals');
      cell(tr, String(s.stale), 'num');
      cell(tr, String(s.turns), 'num');
      cell(tr, ago(s.updated), 'when');
      tr.addEventListener('click', () => { selected = s.id; render(view); detail(); });
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
    document.getElementById('empty').hidden = view.sessions.length > 0;
    document.getElementById('status').textContent = view.error
      ? 'store unavailable: ' + view.error
      : view.sessions.length + ' session(s), updated ' + new Date(view.at * 1000).toLocaleTimeString();
    body.dataset.updates = String(Number(body.dataset.updates) + 1);
    body.dataset.state = view.error ? 'error' : 'live';
    if (selected) detail();
  }

  const ACTIONS = ['allow', 'warn', 'advise', 'block', 'halt', 'unknown'];

  // "block: repeat (loop_repeat)"; "-" for a call older than the verdicts the store keeps
  function verdictText(v) {
    if (!v) return '-';
    let text = v.action;
    if (v.kind) text += ': ' + v.kind;
    if (v.reason && v.reason !== v.kind) text += ' (' + v.reason + ')';
    return text;
  }

  function detail() {
    const asked = selected;
    fetch('api/session' + q({ id: asked })).then((r) => r.ok ? r.json() : null).then((d) => {
      if (asked !== selected) return;  // another session was clicked meanwhile
      const box = document.getElementById('detail');
      if (!d) { box.hidden = true; return; }
      box.hidden = false;
      const id = document.getElementById('detail-id');
      id.textContent = d.shown;
      id.dataset.session = d.id;
      let summary = d.calls + ' calls in ' + d.turns + ' turn(s), escalation level ' + d.level +
        ', ' + d.stale + ' stale call(s) in a row';
      if (d.signals.length) summary += '; signals: ' + d.signals.join(', ');
      if (d.halted) summary += '; halted (' + d.halted.reason + '): ' + (d.halted.message || '');
      document.getElementById('detail-summary').textContent = summary;
      const needed = d.needed.map((n) => { const li = document.createElement('li'); li.textContent = n; return li; });
      if (!needed.length) {
        const li = document.createElement('li');
        li.textContent = 'nothing reported';
        needed.push(li);
      }
      document.getElementById('detail-needed').replaceChildren(...needed);
      document.getElementById('detail-tools').textContent = d.per_tool.map((t) => t[0] + ' ' + t[1]).join(', ') || '-';
      const rows = d.recent.map((c) => {
        const tr = document.createElement('tr');
        tr.dataset.index = String(c.index);
        tr.dataset.verdict = c.verdict ? c.verdict.action : '';
        cell(tr, String(c.index), 'num');
        cell(tr, c.tool);
        cell(tr, c.call, 'call');
        const action = c.verdict ? c.verdict.action : 'unknown';
        cell(tr, verdictText(c.verdict), 'verdict ' + (ACTIONS.includes(action) ? action : 'other'));
        cell(tr, c.result === null ? 'not run' : c.flags.join(', ') || '-');
        return tr;
      });
      document.querySelector('#detail-calls tbody').replaceChildren(...rows);
    }).catch(() => {});
  }

  const events = new EventSource('events' + q());
  events.addEventListener('sessions', (e) => render(JSON.parse(e.data)));
  events.onerror = () => {
    document.getElementById('status').textContent = 'reconnecting...';
    body.dataset.state = 'reconnecting';
  };
})();
"""

APP_CSS = """body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { display: flex; align-items: baseline; gap: 1em; padding: .6em 1.2em; background: #1d2330; color: #fff; }
header h1 { font-size: 1.2em; margin: 0; }
#status { color: #c9d1e0; }
main { padding: .4em 1.2em; }
h2 { font-size: 1.05em; margin: 1em 0 .4em; }
h2 small { font-weight: normal; color: #667; }
h3 { font-size: .95em; margin: .9em 0 .3em; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #e3e6ec; }
th { background: #eef0f4; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.id, td.call, #detail-id { font-family: ui-monospace, monospace; word-break: break-all; }
td.id, #detail-id { white-space: pre-wrap; }
tr { cursor: pointer; }
tr.alert td { background: #fff4e0; }
tr.alert td.signals { color: #9a4d00; font-weight: 600; }
tr.halted td { color: #777; }
tr.selected td { outline: 2px solid #3a6df0; outline-offset: -2px; }
#detail { margin-top: 1em; }
td.verdict.warn { color: #9a4d00; }
td.verdict.advise, td.verdict.block { color: #b3261e; font-weight: 600; }
td.verdict.halt { color: #fff; background: #b3261e; font-weight: 600; }
td.verdict.unknown { color: #999; }
"""
