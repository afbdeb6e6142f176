"""The statistics in DuckDB, on every core, from one scan of the (plain, trace format v1) files: a ``GROUP BY``
session, type, tool and arguments whose rows carry every number the report sums and, for calls, each
call's order and time (a list per signature), so that nothing but one row per group is kept. Only the
calls, four numbers each, are then sorted, in one window query for the order-dependent numbers (intervals,
bursts, first calls); one row per session comes back to Python. A list is one aggregate state that DuckDB
holds in memory whole, so an input over :data:`FLAT_ABOVE` bytes (where a runaway session of 10^8 calls may
hide) keeps its calls' order in a table instead, from a second scan: the same numbers, every step a table
or a sort that spills to disk past the memory budget. The detector pass needs only the events per
session (to free each finished session) and the fleet's top signatures: the same scan, lighter.

The scan reads each field with its type (a time as a number, ``seq`` as an integer), the fast way. A record
that does not convert (an ISO 8601 time, a line that is not JSON) stops that read, and so does a record the
trace reader rejects in the first 64 KiB of a file (a ``seq`` written as text, which the typed read would
convert): the files are then read the exact way, each time and ``seq`` as its JSON text, checked as the
trace reader checks them.

Calls are ordered by ``_n`` (the line number an importer's output carries), else ``seq``, else ``ts``.
Signatures here are the tool and its arguments as written (key order counts): importers write arguments
with sorted keys, so for them, and for traces written that way, they equal the Python pass's."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from looptrap.analysis.analyze.session import BURST_SECONDS, interval_summary
from looptrap.core.redact import redact_text

__all__ = ["MEMORY_LIMIT", "Statistics", "connect"]

#: DuckDB's memory budget (it spills to a temporary folder beyond it).
MEMORY_LIMIT = "768MB"

#: What the statistics count as an empty result (``is_empty_result`` in the detector pass).
_EMPTY = (
    r"(?is)\s*(|0 (results?|matches|items|rows)( found)?|no (results?|matches|items|rows|data)( found)?|"
    r"not found|nothing found|none|null|n/a|\[\]|\{\}|\"\")[.!]?\s*"
)
_USAGE = (
    "STRUCT(input_tokens DOUBLE, output_tokens DOUBLE, total_tokens DOUBLE, prompt_tokens DOUBLE, "
    "completion_tokens DOUBLE, cost_usd DOUBLE, cost DOUBLE, cost_estimated BOOLEAN)"
)
_FIELDS = (
    "'session': 'VARCHAR', 'type': 'VARCHAR', 'tool': 'VARCHAR', 'args': 'JSON', 'output': 'VARCHAR', "
    f"'is_error': 'BOOLEAN', 'usage': '{_USAGE}', 'attempts': 'BIGINT'"
)
_TYPED = ", 'ts': 'DOUBLE', 'seq': 'BIGINT'"
_TEXT = ", 'ts': 'JSON', 'seq': 'JSON'"  # a value's JSON text: a number is told from a string ("7")
_NUMBERED = ", '_n': 'BIGINT'"  # the files an importer wrote: each record's line number
_HEAD = 1 << 16


#: The largest record DuckDB reads, first (its read buffers are twice as large, per thread), then on a
#: longer record.
_OBJECT_SIZES = (16 << 20, 64 << 20)


def _read(columns: str, *, strict: bool, size: int) -> str:
    return (
        f"read_json(?, format = 'newline_delimited', records = true, columns = {{{columns}}}, "
        f"ignore_errors = {'false' if strict else 'true'}, maximum_object_size = {size})"
    )


def _nonneg(x: str) -> str:
    return f"CASE WHEN {x} >= 0 THEN {x} END"


# Tokens and cost as the detector pass reads a usage (looptrap.core.engine.read_usage): negative values count
# as nothing, tokens are whole per event.
_PARTS = " + ".join(
    f"coalesce({_nonneg('usage.' + k)}, 0)"
    for k in ("input_tokens", "output_tokens", "prompt_tokens", "completion_tokens")
)
_TOKENS = f"CAST(trunc(coalesce({_nonneg('usage.total_tokens')}, {_PARTS})) AS BIGINT)"
_COST = f"coalesce({_nonneg('usage.cost_usd')}, {_nonneg('usage.cost')})"

# Every record goes to one row of ``g``: a session's calls of one signature; its results of one tool, split
# by whether they failed and were empty; its events of another type; or records the trace reader rejects
# (``bad``, and rows whose session, type or tool are missing). A property that takes few values is a key
# rather than an aggregate (cheaper); each call's order and time is kept in its row's list. ``{rows}`` gives,
# per record: s, t, tool, a, n, ts, bad, and the raw output, is_error, usage, attempts.
_GROUPS = f"""
CREATE TEMP TABLE g AS
SELECT s, t, tool, a, bad, err, empty, count(*) AS events, min(n) AS first_n,
       sum(tokens) AS tokens, sum(cost) AS cost, bool_or(est) AS est, sum(att) AS attempts,
       count(att) AS attempt_calls, list(struct_pack(n := n, ts := ts)) FILTER (WHERE {{listed}}) AS l
FROM (
  SELECT s, t, tool, a, n, ts, bad,
         CASE WHEN t = 'tool_result' THEN coalesce(is_error, false) END AS err,
         CASE WHEN t = 'tool_result'
              THEN output IS NULL OR (length(output) <= 40 AND regexp_full_match(output, '{_EMPTY}')) END AS empty,
         CASE WHEN usage IS NOT NULL THEN {_TOKENS} END AS tokens, CASE WHEN usage IS NOT NULL THEN {_COST} END AS cost,
         CASE WHEN usage IS NOT NULL THEN usage.cost_estimated END AS est,
         CASE WHEN attempts >= 1 THEN attempts END AS att
  FROM ({{rows}}))
GROUP BY s, t, tool, a, bad, err, empty
"""
# What the detector pass needs of it: the events per session and the top signatures (``first_n`` makes the
# typed read convert every ``seq``, as the full one does).
_GROUPS_LIGHT = """
CREATE TEMP TABLE g AS
SELECT s, t, tool, a, bad, count(*) AS events, min(n) AS first_n FROM ({rows}) GROUP BY s, t, tool, a, bad
"""
_ROWS_TYPED = (
    "SELECT session AS s, type AS t, tool, CASE WHEN type = 'tool_call' THEN CAST(args AS VARCHAR) END AS a, {n} AS n, "
    "ts, coalesce(isinf(ts), false) AS bad, output, is_error, usage, attempts FROM {read}"
)
_ROWS_TEXT = """
SELECT s, t, tool, a, n, ts, output, is_error, usage, attempts,
       (tj IS NOT NULL AND (ts IS NULL OR NOT isfinite(ts))) OR (sj IS NOT NULL AND sq IS NULL) AS bad
FROM (SELECT *, coalesce(_n, sq) AS n FROM (
  SELECT session AS s, type AS t, tool, CASE WHEN type = 'tool_call' THEN CAST(args AS VARCHAR) END AS a, output,
         is_error, usage, attempts, {n} AS _n,
         CAST(ts AS VARCHAR) AS tj, CAST(seq AS VARCHAR) AS sj,
         coalesce(TRY_CAST(CAST(ts AS VARCHAR) AS DOUBLE),
                  CASE WHEN starts_with(CAST(ts AS VARCHAR), '"')
                       THEN epoch(TRY_CAST(json_extract_string(ts, '$') AS TIMESTAMPTZ)) END) AS ts,
         CASE WHEN strpos(CAST(seq AS VARCHAR), '.') = 0 AND strpos(CAST(seq AS VARCHAR), 'e') = 0
                   AND strpos(CAST(seq AS VARCHAR), 'E') = 0 THEN TRY_CAST(CAST(seq AS VARCHAR) AS BIGINT) END AS sq
  FROM {read}))
"""

# A large input (past FLAT_ABOVE bytes) keeps the order of its calls in a table of its own, read from a second
# scan, rather than in lists: a list is one aggregate state, held in memory whole, where a table spills to
# disk (a runaway session of 10^8 calls would hold 1.6 GB of pairs in one list). ``sig`` stands for the
# row of ``g`` (the tool and its arguments in one session) by their 64-bit hash.
_FLAT_CALLS = """
CREATE TEMP TABLE c AS
SELECT s, hash(tool, a) AS sig, n, ts FROM ({rows})
WHERE t = 'tool_call' AND coalesce(NOT bad AND s <> '' AND tool <> '', false)
"""

# The rows of ``g`` that are events (what the trace reader accepts), with the signature of their calls.
_VIEW = """
CREATE TEMP VIEW gv AS
SELECT *, rowid AS gid, CASE WHEN t = 'tool_call' THEN coalesce(a, 'null') END AS sig,
       coalesce(NOT bad AND s <> '' AND t <> '' AND (t NOT IN ('tool_call', 'tool_result') OR tool <> ''), false) AS ok
FROM g
"""

# The sessions (``sid``: a hash of the name, or a number when two names share a hash).
_SESSIONS = """
CREATE TEMP TABLE ss AS
SELECT s, {sid} AS sid, sum(events) AS events, sum(events) FILTER (WHERE t = 'tool_call') AS calls,
       count(*) FILTER (WHERE t = 'tool_call') AS distinct_calls,
       sum(tokens) FILTER (WHERE t IN ('tool_result', 'turn_end')) AS tokens,
       sum(cost) FILTER (WHERE t IN ('tool_result', 'turn_end')) AS cost,
       coalesce(bool_or(est) FILTER (WHERE t IN ('tool_result', 'turn_end')), false) AS est,
       min(first_n) FILTER (WHERE t IN ('tool_call', 'tool_result', 'turn_end', 'text', 'user_message')) AS first_n,
       sum(attempts) FILTER (WHERE t = 'tool_call') AS attempts,
       sum(attempt_calls) FILTER (WHERE t = 'tool_call') AS attempt_calls
FROM gv WHERE ok GROUP BY s
"""
# Every call, one row: its session and half its calls, its signature (the row of ``g``), order and time, and
# whether it is the first call of its signature: ``{first}`` is the one at the signature's smallest ``n``
# (cheap, and right unless a call has no ``n`` or two share that one), or the smallest (``n``, ``ts``).
_CALLS = """
SELECT ss.sid, ss.calls // 2 AS half, q.gid, q.x.n AS n, q.x.ts AS ts, {first} AS first
FROM (SELECT s, gid, first_n, unnest(l) AS x, {subscript} FROM {source} WHERE ok AND t = 'tool_call') q
JOIN ss USING (s)
"""
_FIRST_BY_N = {"first": "q.x.n = q.first_n", "subscript": "0 AS i", "source": "gv"}
_FIRST_BY_KEY = {
    "first": "q.i = q.f",
    "subscript": "generate_subscripts(l, 1) AS i, f",
    "source": "(SELECT *, list_position(l, list_min(l)) AS f FROM gv)",
}
_SID = "hash(s)"

# The calls of the large-input way: the first call of a signature is the first in the session's order.
_CALLS_FLAT = """
SELECT ss.sid, ss.calls // 2 AS half, c.sig AS gid, c.n, c.ts,
       row_number() OVER (PARTITION BY c.s, c.sig ORDER BY c.n NULLS LAST, c.ts NULLS LAST) = 1 AS first
FROM c JOIN ss USING (s)
"""

# The order-dependent numbers, from one window over each session's calls: a gap is from the last call before
# with a time (``t1``; ``t2`` the one before that), a call is in a burst when it repeats the call just before
# it within the burst window, and a signature is new in the second half when its first call is.
_ORDER_ROWS = """
SELECT sid, half, first, n, k, ts - t1 AS gap, coalesce(g1 = gid AND ts - t1 BETWEEN 0 AND $1, false) AS inb,
       g2 = g1 AND p1 - t2 BETWEEN 0 AND $1 AS prev_inb
FROM (
  SELECT sid, half, gid, first, n, ts, row_number() OVER o AS k, lag(gid) OVER o AS g1, lag(gid, 2) OVER o AS g2,
         lag(ts) OVER o AS p1, lag(ts IGNORE NULLS) OVER o AS t1, lag(ts, 2 IGNORE NULLS) OVER o AS t2
  FROM ({calls}) WINDOW o AS (PARTITION BY sid ORDER BY n NULLS LAST, ts NULLS LAST))
"""
# Per session, from those rows. ``firsts`` and ``unnumbered`` tell whether the cheap way of finding first
# calls was right. ``{quantiles}``: in memory (``quantile_cont`` holds a session's gaps whole), or NULL when
# they are taken from the sorted gaps (_GAP_QUANTILES).
_ORDERED = """
SELECT sid, count(gap) FILTER (WHERE gap >= 0) AS ngap, {quantiles} AS q,
       count(*) FILTER (WHERE inb AND NOT coalesce(prev_inb, false)) AS bursts,
       count(*) FILTER (WHERE inb) AS inb_calls,
       count(*) FILTER (WHERE first AND k > half) AS new2,
       count(*) FILTER (WHERE first) AS firsts, count(*) FILTER (WHERE n IS NULL) AS unnumbered
FROM ({rows})
GROUP BY sid
"""
_IN_MEMORY = "quantile_cont(gap, [0.1, 0.5, 0.9]) FILTER (WHERE gap >= 0)"


# The large-input way to the quantiles: each session's gaps sorted (a sort spills), and only the values at
# the ranks each quantile interpolates between read (``quantile_cont``'s rule, as the detector pass applies it).
def _at(q: float) -> str:
    pos = f"((m - 1) * {q}::DOUBLE)"
    lo = f"max(gap) FILTER (WHERE r = floor({pos}))"
    hi = f"max(gap) FILTER (WHERE r = least(floor({pos}) + 1, m - 1))"
    return f"{lo} + ({hi} - {lo}) * ({pos} - floor({pos}))"


_GAP_QUANTILES = f"""
SELECT sid, [{_at(0.1)}, {_at(0.5)}, {_at(0.9)}] AS q FROM (
  SELECT sid, gap, row_number() OVER (PARTITION BY sid ORDER BY gap) - 1 AS r, count(*) OVER (PARTITION BY sid) AS m
  FROM o WHERE gap >= 0)
GROUP BY sid, m
"""
_PER_SESSION = """
SELECT ss.s, coalesce(ss.calls, 0), ss.distinct_calls, coalesce(o.new2, 0), o.ngap, o.q, coalesce(o.bursts, 0),
       coalesce(o.inb_calls, 0), coalesce(ss.tokens, 0), coalesce(ss.cost, 0), ss.first_n,
       coalesce(ss.attempts, 0), coalesce(ss.attempt_calls, 0),
       coalesce(o.firsts, 0) = ss.distinct_calls AND coalesce(o.unnumbered, 0) = 0, ss.est
FROM ss LEFT JOIN ({ordered}) o USING (sid) ORDER BY ss.first_n NULLS LAST, ss.s
"""

# Per tool: calls, sessions that made one, results, failed and empty results.
_TOOLS = """
SELECT tool, coalesce(sum(events) FILTER (WHERE t = 'tool_call'), 0), count(*) FILTER (WHERE t = 'tool_call'),
       coalesce(sum(events) FILTER (WHERE t = 'tool_result'), 0), coalesce(sum(events) FILTER (WHERE err), 0),
       coalesce(sum(events) FILTER (WHERE empty), 0)
FROM (SELECT tool, t, err, empty, sum(events) AS events FROM gv WHERE ok AND t IN ('tool_call', 'tool_result')
      GROUP BY s, tool, t, err, empty)
GROUP BY tool
"""
_TOP = """
SELECT tool, sig, sum(events) AS calls, count(*) AS sessions, max(events) AS max_in_session
FROM gv WHERE ok AND t = 'tool_call' GROUP BY tool, sig ORDER BY calls DESC, tool, sig LIMIT ?
"""


#: Inputs over this many bytes keep their calls' order in a table rather than in lists (see _FLAT_CALLS).
FLAT_ABOVE = 512 << 20


class TooLong(ValueError):
    """A record longer than DuckDB reads."""


def connect(threads: int | None = None, temp_dir: str | None = None) -> Any:
    """A DuckDB connection using ``threads`` (default: every core), spilling to ``temp_dir`` (default:
    DuckDB's, ``.tmp`` in the working directory) past its memory budget."""
    import duckdb

    con = duckdb.connect()
    if temp_dir is not None:
        con.execute("SET temp_directory = ?", [temp_dir])
    con.execute(f"SET threads = {max(1, threads or os.cpu_count() or 1)}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    con.execute("SET TimeZone = 'UTC'")  # a time without a zone is UTC, as the trace format says
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")  # beyond it, DuckDB spills to disk
    return con


def _typed_read_fits(path: str) -> bool:
    """Whether the first 64 KiB of a file look like what the typed read takes exactly: every whole line an
    event the trace reader accepts, each time a number."""
    import orjson

    from looptrap.analysis.trace import TraceError, event_from

    with open(path, "rb") as f:
        head = f.read(_HEAD)
    lines = head.split(b"\n")
    if len(head) == _HEAD:
        lines.pop()  # cut short
    for n, line in enumerate(lines, 1):
        if not line or line.isspace():
            continue
        try:
            obj = orjson.loads(line)
            event_from(obj, f"{path}:{n}", n)
        except (orjson.JSONDecodeError, TraceError):
            return False
        if isinstance(obj.get("ts"), str):
            return False
    return True


class Statistics:
    """The statistics of a set of plain trace files, computed in DuckDB. ``numbered``: those of ``files``
    written by an importer (their records carry ``_n``, the order to read them in). ``calls_only``: only
    what the detector pass needs (:meth:`counts`, :meth:`top_signatures`, :meth:`totals`).
    ``report_tool``: the tool whose calls :meth:`needed` reads. ``flat_above``: past this many bytes of
    input, the calls' order is kept in a table that spills to disk (a second scan) rather than in lists."""

    def __init__(
        self,
        files: list[str],
        *,
        threads: int | None = None,
        calls_only: bool = False,
        numbered: Sequence[str] = (),
        temp_dir: str | None = None,
        report_tool: str = "report_blocked",
        flat_above: int | None = None,
    ) -> None:
        self.files, self.report_tool = files, report_tool
        self.con = connect(threads, temp_dir)
        limit = FLAT_ABOVE if flat_above is None else flat_above
        #: Whether the calls' order is kept in a table (a large input) rather than in lists.
        self.flat = not calls_only and sum(os.path.getsize(f) for f in files) > limit
        listed = "t = 'tool_call'"
        if self.flat:  # lists only for the calls needed() reads
            listed += " AND tool = '" + report_tool.replace("'", "''") + "'"
        self._groups = _GROUPS_LIGHT if calls_only else _GROUPS.replace("{listed}", listed)
        self._first_by_key = False  # how sessions() found first calls
        mark = set(numbered)
        parts = [[f for f in files if f not in mark], [f for f in files if f in mark]]
        #: Whether the exact (slower) read was needed.
        self.exact = not all(_typed_read_fits(f) for f in files)
        if not self.exact and not self._scan(parts, strict=True):
            self.exact = True
        if self.exact:
            self._scan(parts, strict=False)
        self.con.execute(_VIEW)

    def _rows(self, parts: list[list[str]], *, strict: bool, size: int) -> tuple[str, list[list[str]]]:
        """The query of every record's row (see ``_GROUPS``), and its parameters."""
        rows: list[str] = []
        params: list[list[str]] = []
        for numbered, files in enumerate(parts):
            if not files:
                continue
            columns = _FIELDS + (_TYPED if strict else _TEXT) + (_NUMBERED if numbered else "")
            typed_n = "coalesce(_n, seq)" if numbered else "seq"  # the exact read takes seq in _ROWS_TEXT
            n = typed_n if strict else ("_n" if numbered else "NULL::BIGINT")
            read = _read(columns, strict=strict, size=size)
            rows.append((_ROWS_TYPED if strict else _ROWS_TEXT).format(n=n, read=read))
            params.append(files)
        return " UNION ALL ".join(rows), params

    def _scan(self, parts: list[list[str]], *, strict: bool) -> bool:
        """Build ``g`` (and ``c``, for a large input); ``False`` when a record does not convert in the
        ``strict`` (typed) read."""
        import duckdb

        for size in _OBJECT_SIZES:
            rows, params = self._rows(parts, strict=strict, size=size)
            try:
                self.con.execute(self._groups.replace("{rows}", rows), params)
                if self.flat:  # the same read, which converted every record
                    self.con.execute(_FLAT_CALLS.replace("{rows}", rows), params)
                return True
            except (duckdb.InvalidInputException, duckdb.ConversionException) as exc:
                self.con.execute("DROP TABLE IF EXISTS g")
                self.con.execute("DROP TABLE IF EXISTS c")
                if "maximum_object_size" in str(exc):
                    if size != _OBJECT_SIZES[-1]:
                        continue  # a longer record than the first buffers hold: larger ones
                    raise TooLong(f"a record longer than {2 * size >> 20} MiB, more than DuckDB reads") from None
                if strict:
                    return False
                raise
        return False

    def counts(self) -> dict[str, int]:
        """Events per session (what the detector pass will be fed for it)."""
        rows = self.con.execute("SELECT s, sum(events) FROM gv WHERE ok GROUP BY s").fetchall()
        return {str(s): int(n) for s, n in rows}

    def top_signatures(self, limit: int) -> list[dict[str, Any]]:
        """The most repeated calls of the fleet (the ``sort | uniq -c`` view): tool, arguments as written,
        calls, sessions that made it, and the most made in one session."""
        rows = self.con.execute(_TOP, [limit]).fetchall()
        return [  # the arguments as reports show them: secrets masked (looptrap.core.redact)
            {"tool": t, "args": redact_text(a[:4096]), "calls": int(c), "sessions": int(k), "max_in_session": int(m)}
            for t, a, c, k, m in rows
        ]

    def totals(self) -> tuple[int, int, int]:
        """Events, tool calls, and records read that are not events (not JSON objects, no session, no type, a
        call or result without a tool, a time or ``seq`` that is not one: what the trace reader rejects)."""
        ev, calls, nbad = self.con.execute(
            "SELECT coalesce(sum(events) FILTER (WHERE ok), 0), "
            "coalesce(sum(events) FILTER (WHERE ok AND t = 'tool_call'), 0), "
            "coalesce(sum(events) FILTER (WHERE NOT ok), 0) FROM gv"
        ).fetchone()
        return int(ev), int(calls), int(nbad)

    def needed(self) -> dict[str, list[str]]:
        """Per session, the ``needed`` texts of its calls of the report tool, in call order."""
        from looptrap.core.printable import one_line

        out: dict[str, list[str]] = {}
        rows = self.con.execute(
            "SELECT s, text FROM (SELECT s, json_extract_string(a, '$.needed') AS text, unnest(l) AS x FROM gv "
            "WHERE ok AND t = 'tool_call' AND tool = ?) WHERE text <> '' ORDER BY s, x.n NULLS LAST, x.ts NULLS LAST",
            [self.report_tool],
        ).fetchall()
        for s, text in rows:
            got = out.setdefault(str(s), [])
            if len(got) < 32:
                got.append(one_line(str(text), 300))
        return out

    def tools(self) -> dict[str, list[int]]:
        """Per tool: ``[calls, sessions, results, errors, empty results]``."""
        rows = self.con.execute(_TOOLS).fetchall()
        return {str(t): [int(c), int(s), int(r), int(e), int(m)] for t, c, s, r, e, m in rows}

    def _per_session(self, burst_seconds: float, first: dict[str, str]) -> list[Any]:
        rows = _ORDER_ROWS.format(calls=_CALLS.format(**first))
        ordered = _ORDERED.format(quantiles=_IN_MEMORY, rows=rows)
        return list(self.con.execute(_PER_SESSION.format(ordered=ordered), [burst_seconds]).fetchall())

    def _per_session_flat(self, burst_seconds: float) -> list[Any]:
        """As :meth:`_per_session`, for a large input: every step a table or a sort that spills to disk,
        nothing that holds a session's calls in memory."""
        con = self.con
        con.execute("DROP TABLE IF EXISTS o")
        con.execute(f"CREATE TEMP TABLE o AS {_ORDER_ROWS.format(calls=_CALLS_FLAT)}", [burst_seconds])
        ordered = _ORDERED.format(quantiles="NULL", rows="SELECT * FROM o")
        ordered = f"SELECT a.* EXCLUDE (q), gq.q FROM ({ordered}) a LEFT JOIN ({_GAP_QUANTILES}) gq USING (sid)"
        rows = list(con.execute(_PER_SESSION.format(ordered=ordered)).fetchall())
        con.execute("DROP TABLE o")
        return rows

    def sessions(self, burst_seconds: float = BURST_SECONDS) -> list[dict[str, Any]]:
        """Per session, in order of their first event: calls, distinct calls, new calls in the second half,
        intervals, bursts, tool-level attempts, tokens, cost."""
        con = self.con
        con.execute("DROP TABLE IF EXISTS ss")
        con.execute(_SESSIONS.format(sid=_SID))
        if con.execute("SELECT count(DISTINCT sid) <> count(*) FROM ss").fetchone()[0]:  # two names, one hash
            con.execute("DROP TABLE ss")
            con.execute(_SESSIONS.format(sid="row_number() OVER (ORDER BY s)"))
        if self.flat:
            rows = self._per_session_flat(burst_seconds)
        else:
            unnumbered = "SELECT count(*) FROM gv WHERE ok AND t = 'tool_call' AND first_n IS NULL"
            self._first_by_key = bool(con.execute(unnumbered).fetchone()[0])
            rows = self._per_session(burst_seconds, _FIRST_BY_KEY if self._first_by_key else _FIRST_BY_N)
            if not self._first_by_key and not all(r[13] for r in rows):  # two calls at a signature's first n
                self._first_by_key = True
                rows = self._per_session(burst_seconds, _FIRST_BY_KEY)
        out = []
        for s, calls, distinct, new2, ngap, qs, bursts, inb, tokens, cost, first_n, att, att_calls, _, est in rows:
            out.append(
                {
                    "session": str(s),
                    "tool_calls": int(calls),
                    "distinct_calls": int(distinct),
                    "new_in_second_half": int(new2),
                    "intervals": interval_summary(int(ngap), qs[1], qs[0], qs[2]) if ngap else None,
                    "bursts": int(bursts),
                    "burst_calls": int(inb) + int(bursts),
                    "tokens": int(tokens),
                    "cost_usd": float(cost),
                    "cost_estimated": bool(est),
                    "first_line": int(first_n) if first_n is not None else 0,
                    "attempts": int(att),
                    "attempt_calls": int(att_calls),
                }
            )
        return out

    def close(self) -> None:
        """Close the connection."""
        self.con.close()
