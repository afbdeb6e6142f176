"""The ``looptrap analyze`` sub-command's options. Imports nothing heavy: building the ``looptrap`` parser must
stay cheap; the analysis (looptrap.analysis.analyze.command) is imported when the command runs."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run"]

_FORMATS = (
    "auto",
    "trace",
    "csv",
    "tsv",
    "jsonl-calls",
    "parquet",
    "claude-code",
    "codex",
    "gemini-cli",
    "openai-chat",
    "openai-responses",
    "anthropic",
    "otel",
    "swe-agent",
    "mini-swe-agent",
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``analyze`` to the ``looptrap`` command's sub-commands."""
    from looptrap.cli import argtypes

    p = sub.add_parser(
        "analyze",
        help="log forensics: which sessions looped, from which call, in which shape, at what cost",
        description="Analyse recorded agent logs (looptrap traces, call logs, Claude Code, Codex and Gemini CLI "
        "sessions, OpenAI and Anthropic conversations, OpenTelemetry spans, SWE-agent trajectories, Parquet): "
        "per session, the guard's verdicts (the detectors of replay) and the statistics of its calls; for the "
        "fleet, outliers, the most repeated calls and the tools that trap agents. See: looptrap docs analyze.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, directories, globs, or - for stdin")
    p.add_argument(
        "--format",
        default="auto",
        choices=_FORMATS,
        metavar="FORMAT",
        help=f"the input format, one of {', '.join(_FORMATS)} (default: auto, found from each file)",
    )
    p.add_argument(
        "--columns",
        metavar="FIELD=COLUMN,...",
        help="call logs: which column holds session, seq, ts, tool, args, output, is_error, cost, attempts, "
        "message_id (default: common names)",
    )
    p.add_argument("--strict", action="store_true", help="stop at the first malformed record (default: skip and count)")
    p.add_argument("--json", action="store_true", help="the whole report as JSON on stdout")
    p.add_argument("--csv", metavar="FILE", help="write the per-session table as CSV (- for stdout)")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    p.add_argument("--fail-on", choices=("loop", "halt"), help="exit 3 when a session loops (or is halted)")
    p.add_argument("--no-detectors", action="store_true", help="the statistics only (DuckDB), no verdicts: faster")
    p.add_argument(
        "--config",
        metavar="FILE",
        help=argtypes.CONFIG_HELP,
    )
    p.add_argument(
        "--jobs",
        type=argtypes.whole_number,
        metavar="N",
        help="processes for the detectors (default: one per core, up to 4, for inputs over 32 MiB, else 1)",
    )
    p.add_argument(
        "--top",
        type=argtypes.whole_number,
        default=20,
        metavar="N",
        help="repeated call signatures to list (default 20)",
    )
    p.add_argument(
        "--burst-ms",
        type=argtypes.milliseconds,
        default=50.0,
        metavar="MS",
        help="identical calls closer than this are a burst (default 50)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")


def run(args: argparse.Namespace) -> int:
    """Run ``looptrap analyze`` (see :func:`looptrap.analysis.analyze.command.run`)."""
    from looptrap.analysis.analyze.command import run as run_analyze

    return run_analyze(args)
