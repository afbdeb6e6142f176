"""The statistics in DuckDB: one scan of the (plain, trace format v1) files into a compact table, then
``GROUP BY`` and window queries on it, on every core. Used for the fleet's top call signatures and the
per-session event counts (which let the detector pass free each finished session), and on its own by
``--no-detectors``.

Calls are ordered by ``_n`` (the line number an importer's output carries), else ``seq``, else ``ts``.
Signatures here are the tool and its arguments as written (key order counts): importers write arguments
with sorted keys, so for them, and for traces written that way, they equal the Python pass's."""

from __future__ import annotations

import os
from typing import Any

from looptrap.analysis.analyze.session import BURST_SECONDS, interval_summary

__all__ = ["MEMORY_LIMIT", "Statistics", "connect"]

#: DuckDB's memory budget (it spills to a temporary folder beyond it).
MEMORY_LIMIT = "768MB"

_EMPTY = (
    r"(|0 (results?|matches|items|rows)( found)?|no (results?|matches|items|rows|data)( found)?|"
    r"not found|nothing found|none|null|n/a|\[\]|\{\}|\"\")[.!]?"
)

_COLUMNS = (
    "{'session': 'VARCHAR', 'type': 'VARCHAR', 'tool': 'VARCHAR', 'args': 'JSON', 'ts': 'VARCHAR', 'seq': 'JSON', "
    "'_n': 'BIGINT', 'output': 'VARCHAR', 'is_error': 'BOOLEAN', 'usage': 'STRUCT(input_tokens DOUBLE, "
    "output_tokens DOUBLE, total_tokens DOUBLE, prompt_tokens DOUBLE, completion_tokens DOUBLE, cost_usd DOUBLE, "
    "cost DOUBLE)'}"
)

# Typed columns: DuckDB converts while it parses (a number read as VARCHAR is its text, a value that does
# not convert is NULL), which is twice as fast as JSON columns taken apart afterwards.
_LOAD = f"""
CREATE TEMP TABLE ev AS
SELECT
  session AS s,
  CASE WHEN type <> '' THEN type END AS t,
  tool,
  CASE WHEN type = 'tool_call' AND tool <> '' AND session <> '' THEN coalesce(CAST(args AS VARCHAR), 'null') END AS a,
  CASE WHEN type = 'tool_call' AND tool <> '' AND session <> ''
       THEN hash(tool, coalesce(CAST(args AS VARCHAR), 'null')) END AS h,
  coalesce(TRY_CAST(ts AS DOUBLE), epoch(TRY_CAST(ts AS TIMESTAMPTZ))) AS ts,
  coalesce(_n, CASE WHEN json_type(seq) IN ('BIGINT', 'UBIGINT') THEN CAST(seq AS BIGINT) END) AS n,
  CASE WHEN type = 'tool_result' THEN coalesce(is_error, false) END AS err,
  CASE WHEN type <> 'tool_result' THEN NULL WHEN output IS NULL THEN true WHEN length(output) > 40 THEN false
       ELSE regexp_full_match(lower(trim(output)), '{_EMPTY}') END AS empty,
  (ts IS NOT NULL AND coalesce(TRY_CAST(ts AS DOUBLE), epoch(TRY_CAST(ts AS TIMESTAMPTZ))) IS NULL)
    OR json_type(seq) NOT IN ('BIGINT', 'UBIGINT', 'NULL') AS bad_fields,
  coalesce(usage.total_tokens, coalesce(usage.input_tokens, 0) + coalesce(usage.output_tokens, 0)
           + coalesce(usage.prompt_tokens, 0) + coalesce(usage.completion_tokens, 0)) AS tokens,
  coalesce(usage.cost_usd, usage.cost) AS cost
FROM read_json(?, format = 'newline_delimited', records = true, columns = {_COLUMNS}, ignore_errors = true,
               maximum_object_size = 67108864)
"""

# The detector pass needs only the counts and the top signatures from DuckDB: a lighter table.
_LOAD_CALLS = """
CREATE TEMP TABLE ev AS
SELECT
  session AS s,
  CASE WHEN type <> '' THEN type END AS t,
  tool,
  CASE WHEN type = 'tool_call' AND tool <> '' AND session <> '' THEN coalesce(CAST(args AS VARCHAR), 'null') END AS a,
  CASE WHEN type = 'tool_call' AND tool <> '' AND session <> ''
       THEN hash(tool, coalesce(CAST(args AS VARCHAR), 'null')) END AS h
FROM read_json(?, format = 'newline_delimited', records = true,
               columns = {'session': 'VARCHAR', 'type': 'VARCHAR', 'tool': 'VARCHAR', 'args': 'JSON'},
               ignore_errors = true, maximum_object_size = 67108864)
"""

#: The rows the trace reader rejects (a line that is not a JSON object reads as a row of nulls).
_BAD = "s IS NULL OR s = '' OR t IS NULL OR (t IN ('tool_call', 'tool_result') AND coalesce(tool, '') = '')"

_TOP = """
WITH per AS (SELECT s, tool, a, count(*) AS c FROM ev WHERE h IS NOT NULL GROUP BY s, tool, a)
SELECT tool, a, sum(c) AS calls, count(*) AS sessions, max(c) AS max_in_session
FROM per GROUP BY tool, a ORDER BY calls DESC, tool, a LIMIT ?
"""


def connect(threads: int | None = None) -> Any:
    """A DuckDB connection using ``threads`` (default: every core)."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {max(1, threads or os.cpu_count() or 1)}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    con.execute("SET TimeZone = 'UTC'")  # a time without a zone is UTC, as the trace format says
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")  # beyond it, DuckDB spills to disk
    return con


class Statistics:
    """The statistics of a set of plain trace files, computed in DuckDB."""

    def __init__(self, files: list[str], *, threads: int | None = None, calls_only: bool = False) -> None:
        self.files = files
        self.full = not calls_only
        self.con = connect(threads)
        self.con.execute(_LOAD_CALLS if calls_only else _LOAD, [files])

    def counts(self) -> dict[str, int]:
        """Events per session (what the detector pass will be fed for it)."""
        rows = self.con.execute(f"SELECT s, count(*) FROM ev WHERE NOT ({_BAD}) GROUP BY s").fetchall()
        return {str(s): int(n) for s, n in rows}

    def top_signatures(self, limit: int) -> list[dict[str, Any]]:
        """The most repeated calls of the fleet (the ``sort | uniq -c`` view): tool, arguments as written,
        calls, sessions that made it, and the most made in one session."""
        rows = self.con.execute(_TOP, [limit]).fetchall()
        return [
            {"tool": t, "args": a, "calls": int(c), "sessions": int(k), "max_in_session": int(m)}
            for t, a, c, k, m in rows
        ]

    def totals(self) -> tuple[int, int, int]:
        """Events, tool calls, and records read that are not events (not JSON objects, no session, no type, a
        call or result without a tool, a time that is not one: what the trace reader rejects)."""
        bad = _BAD + (" OR bad_fields" if self.full else "")
        ev, calls, nbad = self.con.execute(
            f"SELECT count(*) FILTER (WHERE NOT ({bad})), count(h), count(*) FILTER (WHERE {bad}) FROM ev"
        ).fetchone()
        return int(ev), int(calls), int(nbad)

    def needed(self, report_tool: str) -> dict[str, list[str]]:
        """Per session, the ``needed`` texts of its ``report_blocked`` calls."""
        from looptrap.core.printable import one_line

        out: dict[str, list[str]] = {}
        for s, text in self.con.execute(
            "SELECT s, json_extract_string(a, '$.needed') FROM ev WHERE h IS NOT NULL AND tool = ? "
            "AND json_extract_string(a, '$.needed') IS NOT NULL ORDER BY n NULLS LAST",
            [report_tool],
        ).fetchall():
            got = out.setdefault(str(s), [])
            if len(got) < 32 and text:
                got.append(one_line(str(text), 300))
        return out

    def tools(self) -> dict[str, list[int]]:
        """Per tool: ``[calls, sessions, results, errors, empty results]``."""
        rows = self.con.execute(
            "SELECT tool, count(h), count(DISTINCT s) FILTER (WHERE h IS NOT NULL), count(err), "
            "count(*) FILTER (WHERE err), count(*) FILTER (WHERE empty) "
            "FROM ev WHERE tool IS NOT NULL AND s <> '' AND t IN ('tool_call', 'tool_result') GROUP BY tool"
        ).fetchall()
        return {str(t): [int(c), int(s), int(r), int(e), int(m)] for t, c, s, r, e, m in rows}

    def sessions(self, burst_seconds: float = BURST_SECONDS) -> list[dict[str, Any]]:
        """Per session: calls, distinct calls, new calls in the second half, intervals, bursts, tokens, cost."""
        q = """
        WITH c AS (
          SELECT s, h, ts, row_number() OVER w AS k, lag(h) OVER w AS ph, ts - lag(ts) OVER w AS gap
          FROM ev WHERE h IS NOT NULL
          WINDOW w AS (PARTITION BY s ORDER BY n NULLS LAST, ts NULLS LAST)),
        b AS (
          SELECT s, h, k, gap, (ph = h AND gap >= 0 AND gap <= ?) AS inb,
                 lag(ph = h AND gap >= 0 AND gap <= ?) OVER (PARTITION BY s ORDER BY k) AS prev
          FROM c),
        firsts AS (SELECT s, h, min(k) AS k1 FROM c GROUP BY s, h),
        per AS (
          SELECT s, count(*) AS calls,
                 count(gap) FILTER (WHERE gap >= 0) AS ngap,
                 quantile_cont(gap, [0.1, 0.5, 0.9]) FILTER (WHERE gap >= 0) AS q,
                 count(*) FILTER (WHERE inb AND NOT coalesce(prev, false)) AS bursts,
                 count(*) FILTER (WHERE inb) AS inb_calls
          FROM b GROUP BY s),
        dist AS (
          SELECT f.s, count(*) AS distinct_calls, count(*) FILTER (WHERE f.k1 > p.calls // 2) AS new2
          FROM firsts f JOIN per p USING (s) GROUP BY f.s),
        money AS (SELECT s, sum(tokens) AS tokens, sum(cost) AS cost, min(n) AS first_n FROM ev
                  WHERE s <> '' AND t IN ('tool_call', 'tool_result', 'turn_end', 'text', 'user_message')
                  GROUP BY s)
        SELECT m.s, coalesce(p.calls, 0), coalesce(d.distinct_calls, 0), coalesce(d.new2, 0), p.ngap, p.q,
               coalesce(p.bursts, 0), coalesce(p.inb_calls, 0), coalesce(m.tokens, 0), coalesce(m.cost, 0), m.first_n
        FROM money m LEFT JOIN per p USING (s) LEFT JOIN dist d USING (s)
        WHERE m.s <> ''
        ORDER BY m.first_n NULLS LAST, m.s
        """
        out = []
        rows = self.con.execute(q, [burst_seconds, burst_seconds]).fetchall()
        for s, calls, distinct, new2, ngap, qs, bursts, inb, tokens, cost, first_n in rows:
            intervals = interval_summary(int(ngap), qs[1], qs[0], qs[2]) if ngap else None
            out.append(
                {
                    "session": str(s),
                    "tool_calls": int(calls),
                    "distinct_calls": int(distinct),
                    "new_in_second_half": int(new2),
                    "intervals": intervals,
                    "bursts": int(bursts),
                    "burst_calls": int(inb) + int(bursts),
                    "tokens": int(tokens),
                    "cost_usd": float(cost),
                    "first_line": int(first_n) if first_n is not None else 0,
                }
            )
        return out

    def close(self) -> None:
        """Close the connection."""
        self.con.close()
