"""``looptrap analyze`` end to end: resolve the inputs, import what is not a trace, compute the statistics in
DuckDB, run the detectors on every core (sessions split by the hash of their id), build the report."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from looptrap.analysis.analyze.fleet import build_fleet
from looptrap.analysis.analyze.importers import Problems
from looptrap.analysis.analyze.session import BURST_SECONDS, SessionAnalysis, SessionAnalyzer
from looptrap.analysis.analyze.sources import Source, copy_trace_source, drop_copies, expand_inputs, prepare_sources
from looptrap.analysis.deal import Batch, deal, dealt_events, shard_of
from looptrap.analysis.trace import Event, TraceError, iter_events, lines_of, open_trace
from looptrap.engine.config import GuardConfig

__all__ = ["AnalyzeOptions", "Report", "analyze"]

_PARALLEL_BYTES = 32 << 20
Progress = Callable[[Iterable[bytes], IO[bytes]], Iterable[bytes]]


@dataclass(slots=True)
class AnalyzeOptions:
    """How to analyse: ``fmt`` (``auto`` or a name of :data:`~looptrap.analysis.analyze.importers.FORMATS`),
    call-log ``columns``, ``strict`` (stop at the first malformed record), ``detectors`` (``False``: the
    statistics only), ``jobs`` (processes for the detectors; ``None``: one per core, up to 4, for inputs
    over 32 MiB), the guard ``config``, ``burst_seconds``, the number of ``top`` signatures, a
    ``progress`` wrapper for the lines the first process reads, and ``phase``, told what runs before the
    detector pass (``None`` when it starts or the analysis ends)."""

    fmt: str = "auto"
    columns: dict[str, str] = field(default_factory=dict)
    strict: bool = False
    detectors: bool = True
    jobs: int | None = None
    config: GuardConfig | None = None
    burst_seconds: float = BURST_SECONDS
    top: int = 20
    progress: Progress | None = None
    phase: Callable[[str | None], None] | None = None


@dataclass(slots=True)
class Report:
    """The analysis: per-session results, the fleet, the inputs, and what was skipped."""

    sessions: list[SessionAnalysis]
    fleet: dict[str, Any]
    inputs: list[dict[str, str]]
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    detectors: bool = True

    @property
    def looped(self) -> list[SessionAnalysis]:
        """The sessions in which the guard would have intervened."""
        return [a for a in self.sessions if a.loop]

    empty: list[str] = field(default_factory=list)  # inputs with no tool call: read in the wrong format?

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "version": 1,
            "detectors": self.detectors,
            "inputs": self.inputs,
            "skipped": self.skipped,
            "errors": self.errors,
            "warnings": self.warnings,
            "empty_inputs": self.empty,
            "fleet": self.fleet,
            "sessions": [a.to_dict() for a in self.sessions],
        }


# -- the detector pass ----------------------------------------------------------------------------------
_Job = tuple[list[Source], int, bool, "GuardConfig | None", dict[str, int], float]
_Shard = tuple[list[SessionAnalysis], list[TraceError], list[str], "TraceError | None", dict[str, list[int]], int]


class _DetectorPass:
    """One process's part of the detector pass: the sessions of ``counts`` it is fed, each finished (and
    its memory freed) as soon as its last event (by ``counts``) is read."""

    def __init__(self, config: GuardConfig | None, counts: dict[str, int], burst: float) -> None:
        self.warnings: list[str] = []
        self.errors: list[TraceError] = []
        self.an = SessionAnalyzer(config, warn=self.warnings.append, burst_seconds=burst)
        self.remaining = counts
        self.finished: set[str] = set()
        self.done: list[SessionAnalysis] = []
        self.fed = 0

    def feed(self, ev: Event) -> None:
        name = ev.session
        if name in self.finished:
            self.finished.discard(name)
            self.warnings.append(f"session {name!r} had more events than counted: its report is split")
        self.an.feed(ev)
        self.fed += 1
        left = self.remaining.get(name)
        if left is not None:
            if left <= 1:
                del self.remaining[name]
                got = self.an.finish(name)
                if got is not None:
                    self.done.append(got)
                    self.finished.add(name)
            else:
                self.remaining[name] = left - 1

    def result(self, fatal: TraceError | None) -> _Shard:
        """What the process found: sessions, skipped lines, warnings, the error that stopped it, the
        per-tool result counts and the number of events fed."""
        self.done += self.an.finish_all()
        return self.done, self.errors, self.warnings, fatal, self.an.tool_results, self.fed


def _detect_here(sources: list[Source], opts: AnalyzeOptions, counts: dict[str, int]) -> _Shard:
    """The detector pass in this process."""
    run = _DetectorPass(opts.config, dict(counts), opts.burst_seconds)
    fatal = None
    for src in sources:
        run.an.source = src.name
        try:
            with open_trace(src.path) as (stream, raw):
                bounded = lines_of(stream)
                lines: Iterable[bytes] = opts.progress(bounded, raw) if opts.progress is not None else bounded
                for ev in iter_events(lines, name=src.name, skip_invalid=not opts.strict, errors=run.errors):
                    run.feed(ev)
        except TraceError as exc:
            if opts.strict:
                fatal = exc
                break
            run.errors.append(exc)  # this file ends here; the others are read on
    return run.result(fatal)


def _detect_dealt(job: _Job, worker: int, batches: Iterator[Batch]) -> _Shard:
    """A worker's part of the detector pass: the sessions that hash to it."""
    sources, jobs, strict, config, counts, burst = job
    run = _DetectorPass(config, {s: n for s, n in counts.items() if shard_of(s, jobs=jobs) == worker}, burst)
    names = [s.name for s in sources]
    fatal = None
    try:
        for index, ev in dealt_events(batches, names, skip_invalid=not strict, errors=run.errors):
            run.an.source = names[index]
            run.feed(ev)
    except TraceError as exc:
        fatal = exc
    return run.result(fatal)


def _detect(
    sources: list[Source], opts: AnalyzeOptions, counts: dict[str, int], jobs: int
) -> tuple[list[_Shard], list[TraceError]]:
    """Each process's part of the detector pass, and the files that could not be read to their end (when
    this process deals the lines out; one process counts them among its own errors)."""
    if jobs <= 1:
        return [_detect_here(sources, opts, counts)], []
    job: _Job = (sources, jobs, opts.strict, opts.config, counts, opts.burst_seconds)
    dealt = deal([(s.path, s.name) for s in sources], jobs, partial(_detect_dealt, job), lines=opts.progress)
    return dealt.results, dealt.read_errors


def _line_of(error: TraceError) -> tuple[str, int]:
    where, _, line = error.where.rpartition(":")
    return (where, int(line)) if line.isdigit() else (error.where, 0)


def analyze(inputs: list[str], opts: AnalyzeOptions | None = None) -> Report:
    """Analyse logs (paths, directories, globs, ``-``). Raises ``FileNotFoundError`` for a missing input,
    :class:`~looptrap.analysis.trace.TraceError` for malformed input when ``opts.strict``, ``ImportError``
    when DuckDB is not installed."""
    opts = opts or AnalyzeOptions()
    problems = Problems(opts.strict)
    paths = expand_inputs(inputs)
    phase = opts.phase or (lambda _: None)
    try:
        with tempfile.TemporaryDirectory(prefix="looptrap-analyze-") as workdir:
            phase("reading the inputs")
            sources = prepare_sources(paths, opts.fmt, opts.columns, problems, workdir)
            copies = drop_copies(sources)
            return _analyze_sources(sources, opts, problems, phase, workdir, copies)
    finally:
        phase(None)


def _analyze_sources(
    sources: list[Source],
    opts: AnalyzeOptions,
    problems: Problems,
    phase: Callable[[str | None], None],
    workdir: str | None = None,
    warnings: list[str] | None = None,
) -> Report:
    from looptrap.analysis.analyze.sql import Statistics, TooLong

    files = [s.path for s in sources]
    inputs = [{"name": s.name, "format": s.fmt} for s in sources]
    empty = [s.name for s in sources if not s.calls]
    warnings = list(warnings or ())
    if not files:
        return Report(
            [],
            build_fleet([], tool_results={}, top_signatures=[], events=0, detectors=opts.detectors),
            inputs,
            problems.count,
            [str(e) for e in problems.first],
            warnings,
            opts.detectors,
            empty,
        )
    phase("computing the statistics (DuckDB)")
    imported = [s.path for s in sources if s.copied and s.fmt != "trace"]  # their records carry _n
    report_tool = (opts.config or GuardConfig()).report_tool or "report_blocked"
    read = partial(Statistics, calls_only=opts.detectors, numbered=imported, temp_dir=workdir, report_tool=report_tool)
    try:
        stats = read(files)
    except TooLong:
        if workdir is None or all(s.copied for s in sources):
            raise
        # a trace read where it lies holds a record longer than DuckDB reads: copied with such records
        # skipped (and named), as an imported input is, and read again
        for i, src in enumerate(sources):
            if not src.copied:
                sources[i] = copy_trace_source(src, os.path.join(workdir, f"trace-{i}.jsonl"), problems)
        files = [s.path for s in sources]
        stats = read(files)
    try:
        top = stats.top_signatures(opts.top)
        if not opts.detectors:
            report = _statistics_only(stats, sources, opts, problems, top, inputs, warnings)
            report.empty = empty
            return report
        counts = stats.counts()
    finally:
        stats.close()
    total = sum(os.path.getsize(f) for f in files)
    jobs = opts.jobs or (min(os.cpu_count() or 1, 4) if total > _PARALLEL_BYTES else 1)
    phase(None)  # the detector pass shows its own progress
    parts, cut = _detect(sources, opts, counts, jobs)
    fatals = [p[3] for p in parts if p[3] is not None] + (cut if opts.strict else [])
    if fatals:
        raise min(fatals, key=_line_of)
    said: dict[str, None] = {}
    unique: dict[str, TraceError] = {}
    tool_results: dict[str, list[int]] = {}
    sessions: list[SessionAnalysis] = []
    events = 0
    for e in cut:
        unique[e.where] = e  # a file that ends early: the others were read on
    for done, errors, warns, _, tr, fed in parts:
        events += fed  # the events the trace reader accepted, as the statistics alone count them
        sessions += done
        said.update(dict.fromkeys(warns))
        for e in errors:
            unique[e.where] = e
        for tool, counts_ in tr.items():
            acc = tool_results.setdefault(tool, [0, 0, 0])
            for i, v in enumerate(counts_):
                acc[i] += v
    problems.merge(sorted(unique.values(), key=_line_of))
    order = {s.name: i for i, s in enumerate(sources)}
    sessions.sort(key=lambda a: (order.get(a.source, 0), a.first_line, a.session))
    warnings += list(said)
    fleet = build_fleet(sessions, tool_results=tool_results, top_signatures=top, events=events)
    return Report(sessions, fleet, inputs, problems.count, [str(e) for e in problems.first], warnings, True, empty)


def _statistics_only(
    stats: Any,
    sources: list[Source],
    opts: AnalyzeOptions,
    problems: Problems,
    top: list[dict[str, Any]],
    inputs: list[dict[str, str]],
    warnings: list[str],
) -> Report:
    """``--no-detectors``: the report from DuckDB alone."""
    events, _, bad = stats.totals()
    sessions = [_from_sql(row) for row in stats.sessions(opts.burst_seconds)]
    needed = stats.needed()
    for a in sessions:
        a.needed = needed.get(a.session, [])
    tools = stats.tools()
    fleet = build_fleet(
        sessions,
        tool_results={t: v[2:] for t, v in tools.items()},
        top_signatures=top,
        events=events,
        detectors=False,
        tool_sessions={t: v[:2] for t, v in tools.items()},
    )
    if bad:
        _check_trace_lines(sources, problems)  # only then: name the malformed lines
    return Report(sessions, fleet, inputs, problems.count, [str(e) for e in problems.first], warnings, False)


def _check_trace_lines(sources: list[Source], problems: Problems) -> None:
    """Statistics only: the malformed lines of trace files are still found and counted (cheaply: no engine)."""
    for src in sources:
        errors: list[TraceError] = []
        try:
            for _ in iter_events(src.path, name=src.name, skip_invalid=True, errors=errors):
                pass
        except TraceError as exc:
            errors.append(exc)
        for e in errors:
            problems.error(e)


def _from_sql(row: dict[str, Any]) -> SessionAnalysis:
    a = SessionAnalysis(row["session"])
    a.partial = True
    a.tool_calls = row["tool_calls"]
    a.distinct_calls = row["distinct_calls"]
    a.new_in_second_half = row["new_in_second_half"]
    a.intervals = row["intervals"]
    a.bursts, a.burst_calls = row["bursts"], row["burst_calls"]
    a.tokens, a.cost_usd, a.cost_estimated = row["tokens"], row["cost_usd"], row["cost_estimated"]
    a.attempts, a.attempt_calls = row["attempts"], row["attempt_calls"]
    a.first_line = row["first_line"]
    return a
