"""Per-session analysis: replay's verdicts (the same :class:`~looptrap.analysis.replay.Replayer`, the same
engine) and the statistics of each session's calls, in one pass with bounded memory per session."""

from __future__ import annotations

import random
import re
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import xxhash

from looptrap.analysis.replay import Replayer, _Session
from looptrap.analysis.trace import Event
from looptrap.core.printable import one_line
from looptrap.core.redact import redact_text
from looptrap.core.state import SessionState
from looptrap.core.types import Call, Verdict
from looptrap.engine.config import GuardConfig
from looptrap.engine.engine import read_usage
from looptrap.reading.calls import polls_by_name

__all__ = ["BURST_SECONDS", "SessionAnalysis", "SessionAnalyzer", "is_empty_result", "signature_text"]

#: Identical calls closer together than this are a burst (retries multiplied in the tool layer).
BURST_SECONDS = 0.05
_DISTINCT_CAP = 1 << 18  # distinct calls remembered per session (beyond: counted as new, flagged)
_EXACT_INTERVALS = 1 << 16  # intervals kept exactly; beyond, a seeded reservoir of this many
_BINS = 256  # timeline columns per session
_COSTS = 512  # recent calls (index, cumulative cost, signature, time, tool, args): a loop's onset and its calls
#: Without results the detectors cannot judge a call; the calls' rhythm still tells a loop: this many calls
#: in a row, each repeating the call ``period`` (1 to 3) places before it, at intervals whose coefficient of
#: variation is at most ``RHYTHM_CV`` (a program, not a model thinking between calls).
RHYTHM_CALLS = 10
RHYTHM_CV = 0.25
_PERIODS = 3
_OPT = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_EMPTY_TEXT = re.compile(
    r"(?:|0 (?:results?|matches|items|rows)(?: found)?|no (?:results?|matches|items|rows|data)(?: found)?|"
    r"not found|nothing found|none|null|n/a|\[\]|\{\}|\"\")[.!]?",
    re.IGNORECASE,
)
_MARK = Call("", 0, "", False)  # stands for a call after a halt: only its pairing with a result matters


def signature_text(tool: str, args: Any) -> bytes:
    """A call's signature as the statistics count it: the tool and its arguments as canonical JSON (sorted
    keys). The detectors use looptrap's own signatures (docs/signatures.md)."""
    try:
        a = orjson.dumps(args, option=_OPT)
    except TypeError:  # not JSON, or nested deeper than orjson goes (255 levels)
        a = _flat_dump(args)
    return tool.encode("utf-8", "surrogatepass") + b"\x00" + a


def _flat_dump(value: Any) -> bytes:
    """A stable text of any value, without recursion (arguments 1,000 levels deep are data too): JSON-like,
    keys sorted, anything else by its ``str``."""
    out: list[str] = []
    stack: list[Any] = [value]
    close = object()
    while stack:
        v = stack.pop()
        if v is close:
            out.append(")")
        elif isinstance(v, dict):
            out.append("{")
            stack.append(close)
            for k in sorted(v, key=str, reverse=True):
                stack.append(v[k])
                stack.append(_Key(str(k)))
        elif isinstance(v, (list, tuple)):
            out.append("[")
            stack.append(close)
            stack.extend(reversed(v))
        elif isinstance(v, _Key):
            out.append(f"{v.name!r}:")
        else:
            try:
                out.append(f"{v!r},")
            except Exception:  # noqa: BLE001 - a broken __repr__: its type stands for it
                out.append(f"<{type(v).__name__}>,")
    return "".join(out).encode("utf-8", "surrogatepass")


class _Key:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _result_digest(output: Any) -> int:
    if type(output) is str:
        return xxhash.xxh3_64_intdigest(output.encode("utf-8", "surrogatepass"))
    try:
        return xxhash.xxh3_64_intdigest(orjson.dumps(output, option=_OPT))
    except TypeError:
        return xxhash.xxh3_64_intdigest(_flat_dump(output))


def is_empty_result(output: Any) -> bool:
    """Whether a result says nothing: none, an empty value, or a short text such as ``0 results``,
    ``no matches found``, ``not found``. (The statistics' test; the detectors have their own, richer one.)"""
    if output is None:
        return True
    if isinstance(output, str):
        return len(output) <= 40 and _EMPTY_TEXT.fullmatch(output.strip()) is not None
    if isinstance(output, (list, dict)):
        return not output
    return False


def _excerpt(value: Any, limit: int = 160) -> str:
    """A value as reports quote it: one line, bounded, secrets masked (looptrap.core.redact)."""
    if value is None:
        return "(none)"
    if not isinstance(value, str):
        try:
            value = orjson.dumps(value, option=_OPT).decode()
        except TypeError:
            value = _flat_dump(value).decode("utf-8", "replace")
    return one_line(redact_text(value[: 4 * limit + 256]), limit) or '""'


@dataclass(slots=True)
class SessionAnalysis:
    """What ``looptrap analyze`` reports for one session (``to_dict`` is its ``--json`` form)."""

    session: str
    source: str = ""
    tool_calls: int = 0
    distinct_calls: int = 0
    distinct_capped: bool = False
    longest_stale: int = 0
    stale_from: int = 0
    stale_to: int = 0
    first_repeat: dict[str, Any] | None = None
    intervals: dict[str, Any] | None = None
    new_in_second_half: int = 0
    bursts: int = 0
    burst_calls: int = 0
    attempts: int = 0
    attempt_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_estimated: bool = False  # some of the cost was priced from tokens: the log recorded none
    loop: dict[str, Any] | None = None
    shapes: list[str] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)
    replay: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)
    outlier: bool = False
    robust_z: float | None = None
    first_line: int = 0
    partial: bool = False  # the statistics alone (no detectors): what needs results or verdicts is unknown

    @property
    def dedup_ratio(self) -> float:
        """Calls per distinct call (1.0: no call repeated)."""
        return self.tool_calls / self.distinct_calls if self.distinct_calls else 0.0

    @property
    def tool_attempts(self) -> dict[str, int] | None:
        """The tool layer under the calls, where the log records it (an ``attempts`` field, as a chaos call
        log has): the calls that say, the attempts behind them, and the retries among those (attempts past
        the first of each call). ``None`` when no call says."""
        if not self.attempt_calls:
            return None
        return {"calls": self.attempt_calls, "attempts": self.attempts, "retries": self.attempts - self.attempt_calls}

    @property
    def converged(self) -> bool:
        """The session kept calling but stopped making new calls: none in its second half (20 calls or more)."""
        return self.tool_calls >= 20 and self.new_in_second_half == 0

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` form (``null`` for what the statistics alone do not know)."""
        out = {
            "session": self.session,
            "source": self.source,
            "tool_calls": self.tool_calls,
            "distinct_calls": self.distinct_calls,
            "dedup_ratio": round(self.dedup_ratio, 3),
            "longest_stale": {"calls": self.longest_stale, "from": self.stale_from, "to": self.stale_to},
            "first_repeat": self.first_repeat,
            "intervals": self.intervals,
            "new_in_second_half": self.new_in_second_half,
            "converged": self.converged,
            "bursts": {"count": self.bursts, "calls": self.burst_calls},
            "tool_attempts": self.tool_attempts,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "cost_estimated": self.cost_estimated,
            "loop": self.loop,
            "shapes": self.shapes,
            "needed": self.needed,
            "outlier": self.outlier,
            "robust_z": self.robust_z,
            "tools": self.tools,
            "timeline": self.timeline,
            "replay": self.replay,
            **({"distinct_capped": True} if self.distinct_capped else {}),
        }
        if self.partial:
            for key in ("longest_stale", "first_repeat", "loop", "shapes", "replay", "timeline", "tools"):
                out[key] = None
        return out


class _Stats:
    """The running statistics of one session."""

    __slots__ = (
        "attempt_calls",
        "attempts",
        "best",
        "best_from",
        "burst_calls",
        "bursts",
        "by_id",
        "by_tool",
        "calls",
        "capped",
        "cost",
        "costs",
        "distinct",
        "estimated",
        "extra",
        "first_repeat",
        "in_burst",
        "intervals",
        "last_output",
        "last_sig",
        "last_ts",
        "loop_end",
        "loop_end_cost",
        "loop_sigs",
        "needed",
        "results",
        "rhythm",
        "rhythm_best",
        "rng",
        "run",
        "run_from",
        "seen_n",
        "sigs",
        "source",
        "tl_calls",
        "tl_stale",
        "tl_width",
        "tokens",
        "tools",
    )

    def __init__(self, source: str) -> None:
        self.source = source
        self.calls = 0
        self.distinct: dict[int, list[int]] = {}  # signature digest -> [first call index, last result digest]
        self.capped = False
        self.extra = 0  # distinct calls past the cap
        self.by_id: dict[str, tuple[int, int]] = {}  # open calls: call id -> (signature, index)
        self.by_tool: dict[str, list[tuple[int, int]]] = {}
        self.last_sig = -1
        self.last_ts: float | None = None
        self.in_burst = 0
        self.bursts = 0
        self.burst_calls = 0
        self.attempts = 0
        self.attempt_calls = 0
        self.intervals = array("d")
        self.seen_n = 0
        self.rng: random.Random | None = None
        self.run = 0
        self.run_from = 0
        self.best = 0
        self.best_from = 0
        self.first_repeat: dict[str, Any] | None = None
        self.last_output: Any = None
        self.tokens = 0
        self.cost = 0.0
        self.estimated = False
        self.costs: deque[tuple[int, float, int, float | None, str, Any]] = deque(maxlen=_COSTS)
        self.results = 0
        self.sigs: list[int] = []  # the last _PERIODS signatures, newest last
        # per period: [calls in a row repeating the call that many places before, first of them, intervals,
        # their mean, their sum of squared deviations (Welford), time of the first]
        self.rhythm: list[list[Any]] = [[0, 0, 0, 0.0, 0.0, None] for _ in range(_PERIODS)]
        self.rhythm_best: tuple[int, int, int, float, float, float | None, str] | None = None
        self.loop_sigs: set[int] = set()  # the calls of the loop the detectors found, once they found it
        self.loop_end = 0  # the last call of that loop, and the cost spent through it (and its answer)
        self.loop_end_cost = 0.0
        self.needed: list[str] = []
        self.tools: dict[str, int] = {}
        self.tl_calls = array("l")
        self.tl_stale = array("l")
        self.tl_width = 1


class SessionAnalyzer(Replayer):
    """A :class:`Replayer` that also computes each session's statistics, stops running the engine for a
    session once it is halted (replay reports nothing after a halt: the verdicts are the same), and can
    ``finish`` a session to free its memory. ``on_tool(tool, calls, errors, empty)`` is told about every
    result for the fleet's per-tool table."""

    def __init__(
        self,
        config: GuardConfig | None = None,
        *,
        warn: Callable[[str], None] | None = None,
        burst_seconds: float = BURST_SECONDS,
    ) -> None:
        super().__init__(config, warn=warn)
        self.stats: dict[str, _Stats] = {}
        self.source = ""
        self.burst_seconds = burst_seconds
        self.report_tool = self.engine.config.report_tool or "report_blocked"
        self.tool_results: dict[str, list[int]] = {}  # tool -> [results, errors, empty]
        self._onset: dict[
            str, tuple[int, float, float]
        ] = {}  # session -> (onset call, cost then, cost at the intervention)

    # -- events -------------------------------------------------------------------------------------
    def feed(self, event: Event) -> None:
        """Process one event: statistics, then the detectors (unless the session is halted)."""
        st = self.stats.get(event.session)
        if st is None:
            st = self.stats[event.session] = _Stats(self.source)
        t = event.type
        if t == "tool_call":
            self._stat_call(st, event)
        elif t == "tool_result":
            self._stat_result(st, event)
        elif t == "turn_end":
            self._usage(st, event.data.get("usage"))
        s = self.sessions.get(event.session)
        if s is not None and s.report.halted_at is not None:
            self._after_halt(s, event)
        else:
            super().feed(event)

    def _after_halt(self, s: _Session, ev: Event) -> None:
        """What replay still counts after a halt: the calls, and results that match no call."""
        d = ev.data
        t = ev.type
        if t == "tool_call":
            s.report.tool_calls += 1
            call_id = d.get("call_id")
            if isinstance(call_id, str) and call_id:
                s.by_id[call_id] = _MARK
                if len(s.by_id) > 1024:
                    del s.by_id[next(iter(s.by_id))]
            else:
                stack = s.by_tool.setdefault(d["tool"], [])
                stack.append(_MARK)
                del stack[:-64]
        elif t == "tool_result":
            call_id = d.get("call_id")
            call = s.by_id.pop(call_id, None) if isinstance(call_id, str) else None
            if call is None:
                pending = s.by_tool.get(d["tool"])
                if pending:
                    call = pending.pop()
            if call is None:
                s.report.orphan_results += 1
        elif t not in ("turn_end", "text", "user_message") and t not in self.unknown_types:
            self.unknown_types.add(t)
            self._warn(f"unknown event type {t!r} skipped (warned once per type)")

    def _note(self, s: _Session, ev: Event, verdict: Verdict, tool: str | None) -> None:
        first = s.report.first_intervention is None
        halted = s.report.halted_at is not None
        super()._note(s, ev, verdict, tool)
        if first and s.report.first_intervention is not None:
            st = self.stats[s.report.session]
            evidence = [i for sig in verdict.signals for i in sig.evidence if isinstance(i, int) and i > 0]
            onset = min([*evidence, verdict.call_index]) if verdict.call_index else (min(evidence) if evidence else 0)
            cost_then = next((c[1] for c in st.costs if c[0] >= onset), st.cost)
            at_intervention = next((c[1] for c in st.costs if c[0] >= verdict.call_index), st.cost)
            named = {*evidence, verdict.call_index}
            st.loop_sigs = {c[2] for c in st.costs if c[0] in named}
            st.loop_end = max(verdict.call_index, onset)
            self._onset[s.report.session] = (onset, cost_then, at_intervention)
        if not halted and s.report.halted_at is not None:
            s.state = SessionState(run_id=s.report.session)  # no engine from here on: free its memory

    def _stat_call(self, st: _Stats, ev: Event) -> None:
        d = ev.data
        tool = d["tool"]
        args = d.get("args")
        st.calls += 1
        n = st.calls
        sig = xxhash.xxh3_64_intdigest(signature_text(tool, args))
        st.tools[tool] = st.tools.get(tool, 0) + 1
        att = d.get("attempts")
        if type(att) is int and att >= 1:
            st.attempts += att
            st.attempt_calls += 1
        if tool == self.report_tool and isinstance(args, dict) and args.get("needed") and len(st.needed) < 32:
            st.needed.append(one_line(redact_text(str(args["needed"])[:2000]), 300))
        known = st.distinct.get(sig)
        if known is None:
            if len(st.distinct) < _DISTINCT_CAP:
                st.distinct[sig] = [n, -1]
            else:
                st.capped = True
                st.extra += 1
        elif len(known) == 2:
            known.append(n)  # its first repeat
        if known is not None and st.first_repeat is None:
            st.first_repeat = {
                "call": n,
                "first_seen": known[0],
                "signature": one_line(f"{tool} {_excerpt(args, 200)}", 220),
                "result_before": _excerpt(st.last_output),
            }
        ts = ev.ts
        gap = ts - st.last_ts if ts is not None and st.last_ts is not None else None
        if gap is not None:
            if gap >= 0:
                self._interval(st, gap)
            if sig == st.last_sig and 0 <= gap <= self.burst_seconds:
                if st.in_burst == 0:
                    st.bursts += 1
                    st.burst_calls += 2
                    st.in_burst = 2
                else:
                    st.in_burst += 1
                    st.burst_calls += 1
            else:
                st.in_burst = 0
        else:
            st.in_burst = 0
        if ts is not None:
            st.last_ts = ts
        st.last_sig = sig
        call_id = d.get("call_id")
        if isinstance(call_id, str) and call_id:
            st.by_id[call_id] = (sig, n)
            if len(st.by_id) > 1024:
                del st.by_id[next(iter(st.by_id))]
        else:
            stack = st.by_tool.setdefault(tool, [])
            stack.append((sig, n))
            del stack[:-64]
        # the timeline: calls per column (columns double in width when they run out)
        col = (n - 1) // st.tl_width
        if col >= _BINS:
            st.tl_calls = array("l", (st.tl_calls[i] + st.tl_calls[i + 1] for i in range(0, _BINS, 2)))
            st.tl_stale = array("l", (st.tl_stale[i] + st.tl_stale[i + 1] for i in range(0, _BINS, 2)))
            st.tl_width *= 2
            col = (n - 1) // st.tl_width
        while len(st.tl_calls) <= col:
            st.tl_calls.append(0)
            st.tl_stale.append(0)
        st.tl_calls[col] += 1
        if st.loop_sigs and n == st.loop_end + 1:
            st.loop_end_cost = st.cost  # spent through the loop's last call so far, and its answer
        st.costs.append((n, st.cost, sig, ts, tool, args))
        if sig in st.loop_sigs:
            st.loop_end = n
        self._rhythm(st, n, sig, ts, gap, tool)

    def _rhythm(self, st: _Stats, n: int, sig: int, ts: float | None, gap: float | None, tool: str) -> None:
        """Runs of calls repeating the call 1, 2 or 3 places before, and the regularity of their intervals."""
        sigs = st.sigs
        for p in range(1, _PERIODS + 1):
            r = st.rhythm[p - 1]
            if len(sigs) >= p and sigs[-p] == sig and (p == 1 or len(set(sigs[-p:])) == p):
                if r[0] == 0:
                    r[:] = [0, n, 0, 0.0, 0.0, ts]
                r[0] += 1
                if gap is not None and gap >= 0 and r[0] > 1:  # Welford: the run's intervals
                    r[2] += 1
                    delta = gap - r[3]
                    r[3] += delta / r[2]
                    r[4] += delta * (gap - r[3])
                best = st.rhythm_best
                if r[0] >= RHYTHM_CALLS and (best is None or r[0] > best[2]):
                    cv = (r[4] / r[2]) ** 0.5 / r[3] if r[2] and r[3] > 0 else -1.0
                    st.rhythm_best = (p, r[1], r[0], r[3], cv, r[5], tool)
            else:
                r[0] = 0
        sigs.append(sig)
        del sigs[:-_PERIODS]

    def _interval(self, st: _Stats, gap: float) -> None:
        st.seen_n += 1
        if len(st.intervals) < _EXACT_INTERVALS:
            st.intervals.append(gap)
            return
        if st.rng is None:
            st.rng = random.Random(_EXACT_INTERVALS)
        j = st.rng.randrange(st.seen_n)
        if j < _EXACT_INTERVALS:
            st.intervals[j] = gap

    def _stat_result(self, st: _Stats, ev: Event) -> None:
        d = ev.data
        tool = d["tool"]
        output = d.get("output")
        call_id = d.get("call_id")
        hit = st.by_id.pop(call_id, None) if isinstance(call_id, str) else None
        if hit is None:
            stack = st.by_tool.get(tool)
            if stack:
                hit = stack.pop()
        is_error = bool(d.get("is_error"))
        empty = is_empty_result(output)
        counts = self.tool_results.get(tool)
        if counts is None:
            counts = self.tool_results[tool] = [0, 0, 0]
        counts[0] += 1
        counts[1] += is_error
        counts[2] += empty
        self._usage(st, d.get("usage"))
        st.results += 1
        st.last_output = output
        if hit is None:
            return
        sig, n = hit
        rd = _result_digest(output)
        known = st.distinct.get(sig)
        stale = known is not None and known[1] == rd and known[0] != n
        if known is not None:
            known[1] = rd
        col = (n - 1) // st.tl_width
        if stale:
            if st.run == 0:
                st.run_from = n
            st.run += 1
            if st.run > st.best:
                st.best = st.run
                st.best_from = st.run_from
            if col < len(st.tl_stale):
                st.tl_stale[col] += 1
        else:
            st.run = 0

    def _usage(self, st: _Stats, usage: Any) -> None:
        got = read_usage(usage) if usage is not None else None
        if got is None:
            return
        tokens, cost = got
        st.tokens += tokens
        if cost is not None:
            st.cost += cost
            if type(usage) is dict and usage.get("cost_estimated") is True:
                st.estimated = True

    # -- results ------------------------------------------------------------------------------------
    def finish(self, session: str) -> SessionAnalysis | None:
        """The analysis of a session that has no more events, and its memory freed."""
        st = self.stats.pop(session, None)
        s = self.sessions.pop(session, None)
        if st is None:
            return None
        a = SessionAnalysis(session, st.source)
        a.tool_calls = st.calls
        a.distinct_calls = len(st.distinct) + st.extra
        a.distinct_capped = st.capped
        a.longest_stale = st.best
        if st.best:
            a.stale_from, a.stale_to = st.best_from, st.best_from + st.best - 1
        a.first_repeat = st.first_repeat
        a.intervals = _interval_stats(st.intervals, st.seen_n)
        half = st.calls // 2
        a.new_in_second_half = sum(1 for known in st.distinct.values() if known[0] > half)
        a.bursts, a.burst_calls = st.bursts, st.burst_calls
        a.attempts, a.attempt_calls = st.attempts, st.attempt_calls
        a.tokens, a.cost_usd, a.cost_estimated = st.tokens, st.cost, st.estimated
        a.needed = st.needed
        a.tools = st.tools
        a.timeline = {"width": st.tl_width, "calls": list(st.tl_calls), "stale": list(st.tl_stale)}
        if s is not None:
            a.first_line = s.first_line
            r = s.report
            a.replay = r.to_dict()
            kinds: list[str] = []
            for sig in r.signals:
                if sig["action"] != "warn" and sig["kind"] not in kinds:
                    kinds.append(sig["kind"])
            a.shapes = kinds
            fi = r.first_intervention
            if fi is not None:
                onset, cost_then, cost_at = self._onset.pop(session, (fi["call_index"], st.cost, st.cost))
                ha = r.halted_at
                end = max(st.loop_end, fi["call_index"], onset)  # the last call of the loop's own calls
                end_cost = st.cost if end >= st.calls else st.loop_end_cost
                a.loop = {
                    "kind": fi["kind"],
                    "reason": fi["reason"],
                    "tool": fi["tool"],
                    "found_by": "detectors",
                    "onset_call": onset,
                    "onset_time": _time_of(st, onset),
                    "first_intervention_call": fi["call_index"],
                    "halted_call": ha["call_index"] if ha else None,
                    "end_call": end,
                    "calls_after_onset": max(end - onset + 1, 0),
                    "cost_after_onset": round(max(end_cost - cost_then, 0.0), 6),
                    "calls_saved": max(end - fi["call_index"] + 1, 0),
                    "cost_saved": round(max(end_cost - cost_at, 0.0), 6),
                }
                repeat = _first_repeat_of(st, st.loop_sigs)
                if repeat is not None and (a.first_repeat is None or a.first_repeat["call"] != repeat["call"]):
                    a.first_repeat = repeat  # the loop's, not a harmless repeat before it
        if a.loop is None and st.results == 0 and st.rhythm_best is not None:
            a.loop = _rhythm_loop(st)
            if a.loop is not None:
                a.shapes = [a.loop["kind"]]
        return a

    def finish_all(self) -> list[SessionAnalysis]:
        """Every session still open, finished, in order of first appearance."""
        out = [a for name in list(self.stats) if (a := self.finish(name)) is not None]
        return out


def _time_of(st: _Stats, n: int) -> str | None:
    """When call ``n`` was made (ISO 8601, UTC), if the log says and the call is among the recent ones."""
    ts = next((c[3] for c in st.costs if c[0] == n), None)
    return _iso(ts)


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    from datetime import datetime, timezone

    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def _first_repeat_of(st: _Stats, sigs: set[int]) -> dict[str, Any] | None:
    """The first repeat of one of a loop's calls (the first repeat of the session may be harmless)."""
    best: tuple[int, int, int] | None = None  # (second call, first call, signature)
    for sig in sigs:
        known = st.distinct.get(sig)
        if known is not None and len(known) > 2 and (best is None or known[2] < best[0]):
            best = (known[2], known[0], sig)
    if best is None:
        return None
    label = next((f"{c[4]} {_excerpt(c[5], 200)}" for c in st.costs if c[2] == best[2]), None)
    out: dict[str, Any] = {"call": best[0], "first_seen": best[1], "signature": None, "result_before": None}
    if label is not None:
        out["signature"] = one_line(label, 220)
    return out


def _rhythm_loop(st: _Stats) -> dict[str, Any] | None:
    """A log without results: the longest run of calls repeating one another at a regular interval, as a
    loop (``found_by: rhythm``), when it is regular enough and not a tool that waits by name (a poll)."""
    best = st.rhythm_best
    if best is None:
        return None
    period, first, calls, mean, cv, ts, tool = best
    if not 0 <= cv <= RHYTHM_CV or mean <= 0 or polls_by_name(tool):
        return None
    onset = first
    return {
        "kind": "repeat" if period == 1 else "cycle",
        "reason": "rhythm",
        "tool": tool,
        "found_by": "rhythm",
        "period": period,
        "interval_mean_s": round(mean, 6),
        "interval_cv": round(cv, 4),
        "onset_call": onset,
        "onset_time": _iso(ts),
        "first_intervention_call": None,
        "halted_call": None,
        "end_call": onset + calls - 1,
        "calls_after_onset": calls,
        "cost_after_onset": 0.0,
        "calls_saved": 0,
        "cost_saved": 0.0,
    }


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (DuckDB's ``quantile_cont``)."""
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _interval_stats(values: array[float], n: int) -> dict[str, Any] | None:
    if not values:
        return None
    v = sorted(values)
    med = _quantile(v, 0.5)
    p10, p90 = _quantile(v, 0.1), _quantile(v, 0.9)
    return interval_summary(n, med, p10, p90, exact=n == len(v))


def interval_summary(n: int, median: float, p10: float, p90: float, *, exact: bool = True) -> dict[str, Any]:
    """Inter-call intervals: their median and spread (``(p90 - p10) / median``), and whether they sit in a
    tight band at machine speed (20 intervals or more, median under 1 s, spread at most 0.5)."""
    spread = (p90 - p10) / median if median > 0 else (0.0 if p90 == p10 else None)
    band = n >= 20 and median < 1.0 and spread is not None and spread <= 0.5
    out: dict[str, Any] = {
        "n": n,
        "median_s": round(median, 6),
        "p10_s": round(p10, 6),
        "p90_s": round(p90, 6),
        "spread": round(spread, 4) if spread is not None else None,
        "machine_band": band,
    }
    if not exact:
        out["sampled"] = True
    return out
