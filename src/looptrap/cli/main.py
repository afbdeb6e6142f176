"""The ``looptrap`` command: ``replay`` a recorded trace, run the ``demo``, inspect stored ``sessions``, answer
a CLI's ``hook``, run the ``mcp-proxy``."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

__all__ = ["main"]

_HOOK_CLIS = ("claude-code", "gemini-cli", "codex")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["hook"]:
        code = _hook_fast(words[1:])
        if code is not None:
            return code
    import argparse

    parser = argparse.ArgumentParser(prog="looptrap", description="Catch LLM agents in tool-call loops.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("replay", help="run a recorded trace (JSON Lines) through the guard")
    p.add_argument("trace", help="trace file in format v1, or - for stdin")
    p.add_argument("--json", action="store_true", help="one JSON object per session on stdout")
    p.add_argument("--skip-invalid", action="store_true", help="skip and count malformed lines instead of failing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    p.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="processes to use (sessions are split between them); default: one per core, up to 4, for files "
        "over 32 MiB, else 1",
    )

    d = sub.add_parser("demo", help="scripted agents stuck in each loop shape, with and without the guard")
    d.add_argument("--json", action="store_true", help="machine-readable results")

    h = sub.add_parser("hook", help="answer a coding-agent CLI's tool-call hook (reads its JSON on stdin)")
    h.add_argument("cli", choices=_HOOK_CLIS, help="the CLI that runs the hook")
    h.add_argument(
        "--store",
        metavar="URL",
        help="where sessions live (default: $LOOPTRAP_STORE, else a SQLite file in the user's cache folder)",
    )
    h.add_argument("--session", help="one session id for every run (default: the CLI's session id)")
    h.add_argument(
        "--fail-closed", action="store_true", help="block the tool call when the hook itself fails (default: allow)"
    )

    m = sub.add_parser(
        "mcp-proxy",
        help="an MCP server over stdio that guards the one started by the command after --",
        usage="looptrap mcp-proxy [--store URL] [--session ID] [--report-tool NAME | --no-report-tool] "
        "[--fail-closed] -- COMMAND [ARGS...]",
    )
    m.add_argument("--store", metavar="URL", help="keep the session in a store (default: in the proxy's memory)")
    m.add_argument(
        "--session",
        help="session id shared by every proxy that names it (default: one session per proxy process; with "
        "--session and no --store, the SQLite file in the user's cache folder)",
    )
    m.add_argument("--report-tool", default="report_blocked", metavar="NAME", help="name of the added tool")
    m.add_argument("--no-report-tool", action="store_true", help="do not add the report_blocked tool")
    m.add_argument("--fail-closed", action="store_true", help="halt calls when the guard or its store fails")
    m.add_argument(
        "upstream", nargs=argparse.REMAINDER, metavar="COMMAND", help="the upstream MCP server's command, after --"
    )

    from looptrap.cli import sessions

    sessions.add_parser(sub)

    args = parser.parse_args(words)
    if args.command == "replay":
        return _replay(args)
    if args.command == "sessions":
        return sessions.run(args)
    if args.command == "mcp-proxy":
        return _mcp_proxy(args, sessions.store_url)
    if args.command == "hook":
        from looptrap.integrations.hooks.base import main_io

        return main_io(args.cli, sessions.store_url(args.store), args.session, args.fail_closed)
    from looptrap.cli.demo import run_demo

    return run_demo(as_json=args.json)


def _hook_fast(words: list[str]) -> int | None:
    """``hook`` without argparse: the hook is a fresh process per tool call, and argparse's import and
    parser building are a tenth of its time. Anything unusual (``--help``, a typo) returns ``None`` and goes
    through the full parser, which explains it."""
    opts: dict[str, str | bool] = {}
    cli = None
    it = iter(words)
    for w in it:
        name, eq, value = w.partition("=")
        if name in ("--store", "--session"):
            got = value if eq else next(it, None)
            if not got:
                return None
            opts[name] = got
        elif w == "--fail-closed":
            opts[w] = True
        elif w in _HOOK_CLIS and cli is None:
            cli = w
        else:
            return None
    if cli is None:
        return None
    from looptrap.cli.sessions import store_url
    from looptrap.integrations.hooks.base import main_io

    store = opts.get("--store")
    session = opts.get("--session")
    return main_io(
        cli,
        store_url(store if isinstance(store, str) else None),
        session if isinstance(session, str) else None,
        bool(opts.get("--fail-closed")),
    )


def _mcp_proxy(args: argparse.Namespace, default_store: Callable[[str | None], str]) -> int:
    command = args.upstream[1:] if args.upstream[:1] == ["--"] else args.upstream
    try:
        from looptrap.integrations.mcp_proxy import main as proxy_main
    except ImportError as exc:
        print(f"looptrap mcp-proxy needs the mcp package: pip install 'looptrap[mcp]' ({exc})", file=sys.stderr)
        return 2
    store = args.store or (default_store(None) if args.session else None)
    report_tool = None if args.no_report_tool else args.report_tool
    return proxy_main(
        command, store_url=store, session_id=args.session, report_tool=report_tool, fail_closed=args.fail_closed
    )


_PARALLEL_BYTES = 32 << 20  # files above this are replayed by several processes unless --jobs says otherwise


def _progress(fh: IO[bytes]) -> Iterator[bytes]:
    total = os.fstat(fh.fileno()).st_size
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

    from looptrap.analysis.replay import Replayer, replay_file
    from looptrap.analysis.trace import TraceError, iter_events

    def warn(text: str) -> None:
        print(f"looptrap: warning: {text}", file=sys.stderr)

    try:
        if args.trace == "-":
            errors: list[TraceError] = []
            replayer = Replayer(warn=warn)
            for ev in iter_events("-", skip_invalid=args.skip_invalid, errors=errors):
                replayer.feed(ev)
            reports = replayer.reports()
        else:
            try:
                size = os.path.getsize(args.trace)
            except OSError as exc:
                print(f"looptrap: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
                return 2
            jobs = args.jobs if args.jobs > 0 else (min(os.cpu_count() or 1, 4) if size > _PARALLEL_BYTES else 1)
            progress = _progress if sys.stderr.isatty() and not args.no_progress else None
            reports, errors = replay_file(
                args.trace, jobs=jobs, skip_invalid=args.skip_invalid, warn=warn, lines=progress
            )
    except TraceError as exc:
        print(f"{exc.where}: {exc.reason}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"looptrap: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
        return 2
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
