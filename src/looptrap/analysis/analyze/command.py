"""Running ``looptrap analyze`` (its options: looptrap.cli.analyze): read, analyse, print and write the
report, and the exit code."""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

__all__ = ["EXIT_LOOP", "run"]

#: The exit code of ``--fail-on`` when it matched.
EXIT_LOOP = 3


def _progress_bar() -> Callable[[Iterable[bytes], IO[bytes]], Iterator[bytes]]:
    """A progress wrapper for the lines the first process reads (rich, on stderr)."""

    def wrap(lines: Iterable[bytes], raw: IO[bytes]) -> Iterator[bytes]:
        import time

        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        size = os.fstat(raw.fileno()).st_size
        with Progress(
            TextColumn("analysing"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),  # stdout is the report's
            transient=True,
        ) as bar:
            task = bar.add_task("analyse", total=size or None)
            last = 0.0
            for line in lines:
                now = time.monotonic()
                if now - last > 0.2:
                    last = now
                    bar.update(task, completed=raw.tell())
                yield line

    return wrap


class _Phases:
    """A spinner on stderr naming what runs before the detector pass (rich's status line)."""

    def __init__(self) -> None:
        self.status: Any = None

    def __call__(self, what: str | None) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None
        if what is not None:
            from rich.console import Console

            self.status = Console(stderr=True).status(what)
            self.status.start()


def run(args: argparse.Namespace) -> int:
    """Run ``looptrap analyze``; returns the exit code (0, 2 bad input or usage, 3 ``--fail-on`` matched)."""
    from looptrap.core.printable import one_line

    def say(text: str) -> None:
        print(one_line(text, 1000), file=sys.stderr)

    try:
        import duckdb  # noqa: F401
        import rich  # noqa: F401
    except ImportError as exc:
        say(f"looptrap analyze needs the analyze extra: pip install 'looptrap[analyze]' ({exc})")
        return 2
    from looptrap.analysis.analyze.importers import parse_columns
    from looptrap.analysis.analyze.run import AnalyzeOptions
    from looptrap.config_file import ConfigError, resolve

    try:
        settings = resolve(args.config)
    except ConfigError as exc:
        say(f"looptrap: {exc}")
        return 2
    try:
        columns = parse_columns(args.columns) if args.columns else {}
    except ValueError as exc:
        say(f"looptrap analyze: --columns: {exc}")
        return 2
    regular = all(i != "-" and os.path.isfile(i) for i in args.inputs)
    big = regular and sum(os.path.getsize(i) for i in args.inputs) > 32 << 20
    progress = phase = None
    from looptrap.cli.output import quiet

    if sys.stderr.isatty() and not args.no_progress and not quiet() and (big or not regular):
        progress, phase = _progress_bar(), _Phases()
    opts = AnalyzeOptions(
        fmt=args.format,
        columns=columns,
        strict=args.strict,
        detectors=not args.no_detectors,
        jobs=args.jobs,
        config=settings.guard,
        burst_seconds=args.burst_ms / 1000.0,
        top=args.top,
        progress=progress,
        phase=phase,
    )
    # The output files are opened first: a path that cannot be written fails now, not after the analysis.
    files: dict[str, IO[str]] = {}
    for option, path in (("--csv", args.csv), ("--html", args.html)):
        if path and path != "-":
            try:
                files[option] = _private(path)
            except OSError as exc:
                say(f"looptrap analyze: {option} {path}: {exc.strerror or exc}")
                _discard(files)
                return 2
    try:
        with _terminated_cleanly():
            code = _analyze_and_write(args, opts, files, say)
    finally:
        for fh in files.values():
            fh.close()
    if code == 2:
        _discard(files)
    return code


@contextlib.contextmanager
def _terminated_cleanly() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, ``kill``) unwinds like Ctrl-C: the decompressed copies and DuckDB's spill
    files in the temporary folder are removed on the way out (exit 143)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _private(path: str) -> IO[str]:
    """A report file, readable by its owner only (a report quotes calls and results, which may hold data the
    log's readers alone should see)."""
    fh = open(path, "w", encoding="utf-8", newline="", opener=_owner_only)  # noqa: SIM115 - the caller closes it
    try:
        if os.name == "posix" and stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            os.fchmod(fh.fileno(), 0o600)  # a file that was there keeps its mode otherwise (never a device)
    except BaseException:
        fh.close()
        raise
    return fh


def _owner_only(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def _discard(files: dict[str, IO[str]]) -> None:
    """Close and remove the output files opened for a run that wrote nothing."""
    for fh in files.values():
        fh.close()
        with contextlib.suppress(OSError):
            os.unlink(fh.name)


def _analyze_and_write(
    args: argparse.Namespace, opts: Any, files: dict[str, IO[str]], say: Callable[[str], None]
) -> int:
    import duckdb

    from looptrap.analysis.analyze.run import analyze
    from looptrap.analysis.trace import TraceError

    try:
        report = analyze(args.inputs, opts)
    except FileNotFoundError as exc:
        say(f"looptrap analyze: {exc}")
        return 2
    except TraceError as exc:
        say(f"{exc.where}: {exc.reason}")
        return 2
    except OSError as exc:
        say(f"looptrap analyze: {exc.strerror or exc}")
        return 2
    except ValueError as exc:  # an input the statistics cannot take (a record longer than DuckDB reads)
        say(f"looptrap analyze: {exc}")
        return 2
    except duckdb.Error as exc:  # out of memory or of temporary disk space, say: its first line
        say(f"looptrap analyze: DuckDB: {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}")
        return 2
    from looptrap.cli.output import quiet, warn
    from looptrap.core.figures import count

    for w in report.warnings:
        warn(w)
    if report.skipped and not quiet():
        for e in report.errors[:5]:
            say(e)
        say(f"looptrap analyze: skipped {count(report.skipped, 'malformed record')} (--strict stops at the first)")
    empty = report.empty
    for name in empty[:5]:
        fmt = next((i["format"] for i in report.inputs if i["name"] == name), "?")
        warn(f"{name}: no tool calls found (read as {fmt}; name the format with --format)", "looptrap analyze")
    if len(empty) > 5:
        warn(f"{count(len(empty) - 5, 'more input')} gave no tool calls", "looptrap analyze")
    if not report.sessions and (report.skipped or empty or not report.inputs):
        say("looptrap analyze: nothing to analyse")
        return 2
    out = sys.stdout
    if args.json:
        from looptrap.analysis.analyze.export import write_json

        write_json(report, out)
    if args.csv:
        from looptrap.analysis.analyze.export import write_csv

        write_csv(report, out if args.csv == "-" else files["--csv"])
    if args.html:
        from looptrap.analysis.analyze.render_html import render_html

        files["--html"].write(render_html(report))
    if not args.json and args.csv != "-":
        from looptrap.analysis.analyze.render_text import render_text

        render_text(report, out)
    out.flush()
    if args.fail_on == "loop" and report.looped:
        return EXIT_LOOP
    if args.fail_on == "halt" and any(a.loop and a.loop.get("halted_call") for a in report.sessions):
        return EXIT_LOOP
    return 2 if empty else 0  # an input that gave nothing is not silently a clean bill of health
