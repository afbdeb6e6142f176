"""The ``looptrap`` command: ``replay`` a recorded trace, run the ``demo``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import IO

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="looptrap", description="Catch LLM agents in tool-call loops.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("replay", help="run a recorded trace (JSON Lines) through the guard")
    p.add_argument("trace", help="trace file in format v1, or - for stdin")
    p.add_argument("--json", action="store_true", help="one JSON object per session on stdout")
    p.add_argument("--skip-invalid", action="store_true", help="skip and count malformed lines instead of failing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")

    d = sub.add_parser("demo", help="scripted agents stuck in each loop shape, with and without the guard")
    d.add_argument("--json", action="store_true", help="machine-readable results")

    args = parser.parse_args(argv)
    if args.command == "replay":
        return _replay(args)
    from looptrap.cli.demo import run_demo

    return run_demo(as_json=args.json)


def _progress(fh: IO[bytes], total: int) -> Iterator[bytes]:
    last = 0.0
    done = 0
    for line in fh:
        done += len(line)
        now = time.monotonic()
        if now - last > 0.2:
            last = now
            pct = done / total if total else 0.0
            bar = "#" * int(pct * 30)
            sys.stderr.write(f"\rreplaying [{bar:<30}] {pct:6.1%}")
            sys.stderr.flush()
        yield line
    sys.stderr.write("\r" + " " * 50 + "\r")


def _replay(args: argparse.Namespace) -> int:
    import orjson

    from looptrap.analysis.replay import Replayer
    from looptrap.analysis.trace import TraceError, iter_events

    errors: list[TraceError] = []
    replayer = Replayer(warn=lambda text: print(f"looptrap: warning: {text}", file=sys.stderr))
    if args.trace == "-":
        fh: IO[bytes] = sys.stdin.buffer
        name = "<stdin>"
    else:
        try:
            fh = open(args.trace, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            print(f"looptrap: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
            return 2
        name = args.trace
    lines: Iterator[bytes] | IO[bytes] = fh
    if fh is not sys.stdin.buffer and sys.stderr.isatty() and not args.no_progress:
        lines = _progress(fh, os.fstat(fh.fileno()).st_size)
    try:
        for ev in iter_events(lines, name=name, skip_invalid=args.skip_invalid, errors=errors):
            replayer.feed(ev)
    except TraceError as exc:
        print(f"{exc.where}: {exc.reason}", file=sys.stderr)
        return 2
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    reports = replayer.reports()
    out = sys.stdout
    if args.json:
        for r in reports:
            out.write(orjson.dumps(r.to_dict()).decode() + "\n")
    else:
        _table(reports, out)
    if errors:
        print(f"looptrap: skipped {len(errors)} invalid line(s); first: {errors[0]}", file=sys.stderr)
    return 0


def _table(reports: list, out: IO[str]) -> None:  # type: ignore[type-arg]
    rows = [("session", "calls", "first intervention", "halted at", "signals")]
    for r in reports:
        fi = r.first_intervention
        ha = r.halted_at
        rows.append(
            (
                r.session,
                str(r.tool_calls),
                f"#{fi['call_index']} {fi['action']} {fi['reason']}" if fi else "-",
                f"#{ha['call_index']} {ha['reason']}" if ha else "-",
                str(len(r.signals)),
            )
        )
    widths = [min(max(len(row[i]) for row in rows), 60) for i in range(5)]
    for row in rows:
        out.write("  ".join(cell[:60].ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() + "\n")
    n = len(reports)
    calls = sum(r.tool_calls for r in reports)
    hit = sum(1 for r in reports if r.first_intervention)
    halted = sum(1 for r in reports if r.halted_at)
    pct = f" ({hit / n:.0%})" if n else ""
    out.write(f"\n{n} session(s), {calls} tool call(s): {hit} with an intervention{pct}, {halted} halted\n")


if __name__ == "__main__":
    raise SystemExit(main())
