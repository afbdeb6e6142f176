"""The ``looptrap`` command: ``replay`` a recorded trace, run the ``demo``, inspect stored ``sessions``, answer
a CLI's ``hook``, run the ``mcp-proxy`` (see docs/cli.md)."""

from __future__ import annotations

import os
import sys

# Only os and sys at import: a hook event is a fresh process, answered by a resident server through
# `looptrap.cli.resident` before anything else is imported. (Not typing's TYPE_CHECKING, for the same reason.)
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import IO

    from looptrap.analysis.replay import SessionReport

__all__ = ["build_parser", "main"]

_HOOK_CLIS = ("claude-code", "gemini-cli", "codex")
_PIPE_GONE = 141  # the exit code of a command killed by SIGPIPE (128 + 13), as in `yes | head -1`


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code. Never a traceback for a reader that went away (``| head -1``),
    a closed stdin or stdout, or Ctrl-C."""
    for name in ("stdout", "stderr"):  # closed (>&-): Python leaves None, and writing to it would crash
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - for the whole process
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        return _pipe_gone()
    except KeyboardInterrupt:
        return 130


def _pipe_gone() -> int:
    """stdout's reader went away: stop quietly (what is still buffered goes nowhere, not to a traceback)."""
    import contextlib

    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return _PIPE_GONE


def _main(words: list[str]) -> int:
    if words[:1] == ["hook"]:
        if sys.stdin is None:  # closed (<&-): an empty payload, which the hook answers as its own failure
            sys.stdin = open(os.devnull)  # noqa: SIM115 - for the whole process
        code = _hook_fast(words[1:])
        if code is not None:
            return code
    parser = build_parser()
    if not words:  # a first look: what the commands are
        sys.stdout.write(parser.format_help())
        sys.stdout.write("\nlooptrap COMMAND --help: a command's options. looptrap docs: the documentation.\n")
        return 0
    args = parser.parse_args(words)
    if getattr(args, "quiet", False):
        from looptrap.cli.output import set_quiet

        set_quiet(True)
    if args.command == "replay":
        return _replay(args)
    if args.command == "sessions":
        from looptrap.cli import sessions

        return sessions.run(args)
    if args.command == "mcp-proxy":
        from looptrap.cli import sessions

        return _mcp_proxy(args, sessions.store_url)
    if args.command == "hook":
        return _hook(args.cli, args.store, args.session, args.fail_closed, args.config)
    if args.command == "config":
        from looptrap.cli import config

        return config.run(args)
    if args.command == "analyze":
        from looptrap.cli import analyze

        return analyze.run(args)
    if args.command == "chaos":
        from looptrap.chaos import cli as chaos_cli

        return chaos_cli.run(args)
    if args.command == "metrics":
        from looptrap.cli import metrics

        return metrics.run(args)
    if args.command == "dashboard":
        from looptrap.cli import dashboard

        return dashboard.run(args)
    if args.command == "docs":
        from looptrap.cli import docs

        return docs.run(args)
    if args.command == "completion":
        from looptrap.cli import completion

        return completion.run(args, parser)
    from looptrap.cli.demo import run_demo

    return run_demo(as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    """The command's parser: every sub-command, with a description for its ``--help``."""
    import argparse

    from looptrap import __version__
    from looptrap.cli import argtypes

    parser = argparse.ArgumentParser(
        prog="looptrap",
        description="Catch LLM agents in tool-call loops: see the demo, replay or analyze recorded runs, answer "
        "coding-agent CLI hooks, guard an MCP server, inspect stored sessions, test an agent against broken tools.",
    )
    parser.add_argument("--version", action="version", version=f"looptrap {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    p = sub.add_parser(
        "replay",
        help="run a recorded trace (JSON Lines) through the guard",
        description="Run a recorded trace (JSON Lines, format v1; plain, gzip or zstd) through the guard's "
        "detectors and report, per session, when and why the guard would have intervened. See: "
        "looptrap docs trace-format.",
    )
    p.add_argument("trace", help="trace file in format v1 (.gz and .zst are read as such), or - for stdin")
    p.add_argument("--json", action="store_true", help="one JSON object per session on stdout")
    p.add_argument("--skip-invalid", action="store_true", help="skip and count malformed lines instead of failing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    p.add_argument(
        "--config",
        metavar="FILE",
        help=argtypes.CONFIG_HELP,
    )
    p.add_argument(
        "--jobs",
        type=argtypes.whole_number,
        default=None,
        metavar="N",
        help="processes to use, at least 1 (sessions are split between them); default: one per core, up to 4, "
        "for files over 32 MiB, else 1; stdin and pipes are always read by one",
    )

    d = sub.add_parser(
        "demo",
        help="scripted agents stuck in each loop shape, with and without the guard",
        description="Run scripted agents, each stuck in one loop shape (and two healthy ones), without and "
        "with the guard, and compare the tool calls they spend. No model or server needed.",
    )
    d.add_argument("--json", action="store_true", help="one JSON object per scenario")

    h = sub.add_parser(
        "hook",
        help="answer a coding-agent CLI's tool-call hook (reads its JSON on stdin)",
        description="Answer a coding-agent CLI's tool-call hook: read its JSON payload on stdin, apply the "
        "guard to the session, answer in the CLI's format. See: looptrap docs hooks.",
    )
    h.add_argument("cli", choices=_HOOK_CLIS, help="the CLI that runs the hook")
    h.add_argument(
        "--store",
        metavar="URL",
        help="where sessions live (default: $LOOPTRAP_STORE, else a SQLite file in the user's cache folder)",
    )
    h.add_argument("--session", help="one session id for every run (default: the CLI's session id)")
    h.add_argument(
        "--config",
        metavar="FILE",
        help=argtypes.CONFIG_HELP,
    )
    h.add_argument(
        "--fail-closed", action="store_true", help="block the tool call when the hook itself fails (default: allow)"
    )

    m = sub.add_parser(
        "mcp-proxy",
        help="an MCP server over stdio that guards the one started by the command after --",
        usage="looptrap mcp-proxy [--store URL] [--session ID] [--config FILE]\n"
        "                          [--report-tool NAME | --no-report-tool]\n"
        "                          [--fail-closed] [--metrics HOST:PORT] [-q]\n"
        "                          -- COMMAND [ARGS...]",
        description="An MCP server over stdio that starts the MCP server given after -- and guards its tool "
        "calls: advice as error results, a report_blocked tool added. See: looptrap docs mcp-proxy.",
    )
    m.add_argument("--store", metavar="URL", help="keep the session in a store (default: in the proxy's memory)")
    m.add_argument(
        "--session",
        help="session id shared by every proxy that names it (default: one session per proxy process; with "
        "--session and no --store, the SQLite file in the user's cache folder)",
    )
    m.add_argument(
        "--config",
        metavar="FILE",
        help=argtypes.CONFIG_HELP,
    )
    m.add_argument(
        "--report-tool",
        metavar="NAME",
        help="name of the added tool (default: the configuration file's report_tool, else report_blocked)",
    )
    m.add_argument("--no-report-tool", action="store_true", help="do not add the report_blocked tool")
    m.add_argument("--fail-closed", action="store_true", help="halt calls when the guard or its store fails")
    from looptrap.cli.metrics import add_metrics_option

    add_metrics_option(m, "the proxy's guard: tool calls, signals, halts")
    m.add_argument(
        "upstream", nargs=argparse.REMAINDER, metavar="COMMAND", help="the upstream MCP server's command, after --"
    )

    from looptrap.chaos import cli as chaos_cli
    from looptrap.cli import analyze, completion, config, dashboard, docs, metrics, sessions

    sessions.add_parser(sub)
    config.add_parser(sub)
    analyze.add_parser(sub)
    chaos_cli.add_parser(sub)
    metrics.add_parser(sub)
    dashboard.add_parser(sub)
    docs.add_parser(sub)
    completion.add_parser(sub)
    _describe(parser)
    _add_quiet(parser)
    return parser


def _add_quiet(parser: argparse.ArgumentParser, top: bool = True) -> None:
    """``-q/--quiet`` before the command or after it: no warnings, notes or progress bars on stderr."""
    import argparse

    text = "no warnings, notes or progress bars on stderr (errors still print; the exit code says the rest)"
    parser.add_argument("-q", "--quiet", action="store_true", default=False if top else argparse.SUPPRESS, help=text)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _add_quiet(sub, top=False)


_DESCRIPTIONS = {
    "looptrap sessions": "List, show or reset the sessions a store holds (the state of the hooks and of the MCP "
    "proxy). --store takes the URLs of `looptrap docs stores`; default: $LOOPTRAP_STORE, else the SQLite file in the "
    "user's cache folder.",
    "looptrap sessions list": "One line per session, oldest write first: calls, turns, escalation level (0 no "
    "loop, 1 advised, 2 blocked), halt reason and last write.",
    "looptrap sessions show": "One session's state: its counters, calls per tool, what the model said it "
    "needed, and its recent calls with their flags (why a call was refused).",
    "looptrap sessions reset": "Forget a session: its next call starts afresh (repetition memory, escalation, "
    "halt and budgets).",
}


def _describe(parser: argparse.ArgumentParser) -> None:
    """Give every sub-command without a description one (argparse shows none): its own, else its help."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                text = _DESCRIPTIONS.get(sub.prog) or str(helps.get(name) or "")
                if not sub.description and text:
                    sub.description = text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
                _describe(sub)


def _hook_fast(words: list[str]) -> int | None:
    """``hook`` without argparse: the hook is a fresh process per tool call, and argparse's import and
    parser building are a tenth of its time. Anything unusual (``--help``, a typo) returns ``None`` and goes
    through the full parser, which explains it."""
    opts: dict[str, str | bool] = {}
    cli = None
    it = iter(words)
    for w in it:
        name, eq, value = w.partition("=")
        if name in ("--store", "--session", "--config"):
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
    store, session, config = (opts.get(k) for k in ("--store", "--session", "--config"))
    return _hook(
        cli,
        store if isinstance(store, str) else None,
        session if isinstance(session, str) else None,
        bool(opts.get("--fail-closed")),
        config if isinstance(config, str) else None,
    )


def _hook(cli: str, store: str | None, session: str | None, fail_closed: bool, config: str | None) -> int:
    """One hook event: through the resident server when one answers, else in this process (which starts
    one for the next events)."""
    from looptrap.cli.resident import answer

    code, stdin = answer(cli, store, session, fail_closed, config)
    if code is not None:
        return code
    from looptrap.integrations.hooks.base import main_io

    return main_io(cli, store, session, fail_closed, config, stdin=stdin)


def _mcp_proxy(args: argparse.Namespace, default_store: Callable[[str | None], str]) -> int:
    command = args.upstream[1:] if args.upstream[:1] == ["--"] else args.upstream
    if not command:  # before the import: without a command, the mcp package is not what is missing
        print("looptrap mcp-proxy: give the MCP server's command after --", file=sys.stderr)
        return 2
    try:
        from looptrap.integrations.mcp_proxy import main as proxy_main
    except ImportError as exc:
        print(f"looptrap mcp-proxy needs the mcp package: pip install 'looptrap[mcp]' ({exc})", file=sys.stderr)
        return 2
    from looptrap.config_file import ConfigError, resolve

    try:
        settings = resolve(args.config)
    except ConfigError as exc:
        print(f"looptrap mcp-proxy: {exc}", file=sys.stderr)
        return 2
    store = args.store or settings.store or (default_store(None) if args.session else None)
    report_tool = None if args.no_report_tool else (args.report_tool or settings.guard.report_tool)
    config = settings.guard
    if args.metrics:
        from looptrap.cli.metrics import MetricsUnavailable, guard_metrics

        try:
            config, _, where = guard_metrics(config, "--metrics", *args.metrics)
        except MetricsUnavailable as exc:
            print(f"looptrap mcp-proxy: {exc}", file=sys.stderr)
            return 2
        print(f"looptrap mcp-proxy: serving {where}", file=sys.stderr, flush=True)
    return proxy_main(
        command,
        store_url=store,
        session_id=args.session,
        report_tool=report_tool,
        fail_closed=args.fail_closed,
        config=config,
    )


_PARALLEL_BYTES = 32 << 20  # files above this are replayed by several processes unless --jobs says otherwise


def _progress(lines: Iterable[bytes], raw: IO[bytes]) -> Iterator[bytes]:
    """A progress bar on stderr, from how far into the file (as stored: compressed or not) reading is: the
    share read, the rate and the time left."""
    import time

    from looptrap.core.figures import duration

    total = os.fstat(raw.fileno()).st_size
    start = last = time.monotonic()
    shown = 0
    for line in lines:
        now = time.monotonic()
        if now - last > 0.2:
            last = now
            done = raw.tell()
            pct = min(done / total, 1.0) if total else 0.0
            rate = done / (now - start) if now > start else 0.0
            left = duration((total - done) / rate) if rate > 0 else "-"
            text = f"\rreplaying [{'#' * int(pct * 20):<20}] {pct:4.0%}  {rate / (1 << 20):.1f} MiB/s  {left} left"
            shown = max(shown, len(text))
            sys.stderr.write(text.ljust(shown))
            sys.stderr.flush()
        yield line
    if shown:
        sys.stderr.write("\r" + " " * shown + "\r")


def _replay(args: argparse.Namespace) -> int:
    import orjson

    from looptrap.analysis.replay import replay_file
    from looptrap.analysis.trace import TraceError
    from looptrap.core.figures import count
    from looptrap.core.printable import one_line

    def say(text: str) -> None:
        print(one_line(text, 1000), file=sys.stderr)

    from looptrap.cli.output import quiet, warn
    from looptrap.config_file import ConfigError, resolve

    try:
        settings = resolve(args.config)
    except ConfigError as exc:
        say(f"looptrap: {exc}")
        return 2
    name = "stdin" if args.trace == "-" else args.trace
    if args.trace == "-" and sys.stdin is None:
        say("looptrap: stdin is closed: nothing to replay (give a trace file, or pipe one into -)")
        return 2
    try:
        info = None if args.trace == "-" else os.stat(args.trace)
    except OSError as exc:
        say(f"looptrap: cannot read {name}: {exc.strerror}")
        return 2
    import stat

    regular = info is not None and stat.S_ISREG(info.st_mode)  # else stdin, a pipe, a FIFO: size unknown
    size = info.st_size if info is not None and regular else 0
    jobs = args.jobs
    if jobs is None:
        jobs = min(os.cpu_count() or 1, 4) if size > _PARALLEL_BYTES else 1
    progress = _progress if regular and sys.stderr.isatty() and not args.no_progress and not quiet() else None
    try:
        reports, errors = replay_file(
            args.trace, jobs=jobs, skip_invalid=args.skip_invalid, warn=warn, lines=progress, config=settings.guard
        )
    except TraceError as exc:
        say(f"{exc.where}: {exc.reason}")
        return 2
    except OSError as exc:
        say(f"looptrap: cannot read {name}: {exc.strerror or exc}")
        return 2
    out = sys.stdout
    if args.json:
        for r in reports:
            out.write(orjson.dumps(r.to_dict()).decode() + "\n")
    else:
        _table(reports, out)
    out.flush()  # a reader that went away is found here, not at exit
    if errors and not quiet():
        say(f"looptrap: skipped {count(len(errors), 'invalid line')}; first: {errors[0]}")
    return 0


def _table(reports: list[SessionReport], out: IO[str]) -> None:
    """One row per session, fitted to the terminal, a legend, then a summary."""
    from looptrap.core.columns import table, wrap
    from looptrap.core.figures import count, share
    from looptrap.core.printable import one_line

    rows = [("session", "calls", "first intervention", "halted at", "signals")]
    for r in reports:
        fi = r.first_intervention
        ha = r.halted_at
        first = "-"
        if fi:
            first = f"#{fi['call_index']} {fi['action']} {fi['reason']}" + (f" ({fi['tool']})" if fi["tool"] else "")
        rows.append(
            (
                one_line(r.session, 200),
                count(r.tool_calls),
                one_line(first, 200),
                one_line(f"#{ha['call_index']} {ha['reason']}", 200) if ha else "-",
                count(len(r.signals)),
            )
        )
    for line in table(rows, shrink=(0, 2, 3)):
        out.write(line + "\n")
    n = len(reports)
    calls = sum(r.tool_calls for r in reports)
    hit = sum(1 for r in reports if r.first_intervention)
    halted = sum(1 for r in reports if r.halted_at)
    legend = (
        "#N: the session's Nth tool call. first intervention: where the guard would first have advised, "
        "blocked or halted, and the detector's reason. signals: how many times a detector saw a loop forming."
    )
    summary = (
        f"{count(n, 'session')}, {count(calls, 'tool call')}: {count(hit)} of {count(n)} sessions "
        f"({share(hit, n)}) with an intervention, {count(halted)} halted"
    )
    for line in ["", *wrap("", legend, indent=0), "", *wrap("", summary, indent=0)]:
        out.write(line.rstrip() + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
