"""``looptrap config check [FILE]`` and ``looptrap config show``: validate a configuration file, print the
configuration in effect."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from looptrap.core.printable import one_line

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``config`` sub-command to the CLI's sub-parsers."""
    c = sub.add_parser(
        "config",
        help="check a configuration file, or show the configuration in effect",
        description="The hooks, the MCP proxy and the CLI read one configuration file: looptrap.toml, or "
        "[tool.looptrap] in pyproject.toml, found from the working directory upward, or named by --config or "
        "$LOOPTRAP_CONFIG. See docs/configuration.md.",
    )
    actions = c.add_subparsers(dest="config_command", required=True)
    check = actions.add_parser(
        "check", help="validate a configuration file", description="Validate a configuration file (exit 2 if bad)."
    )
    check.add_argument("file", nargs="?", help="the file (default: the one in effect, as for show)")
    show = actions.add_parser(
        "show",
        help="print the configuration in effect",
        description="Print the configuration in effect (every value, defaults included) as TOML.",
    )
    show.add_argument("--config", metavar="FILE", help="the configuration file (default: found as documented)")


def run(args: argparse.Namespace) -> int:
    """Run ``config check`` or ``config show``; returns the exit code."""
    from looptrap.config_file import ConfigError, dump, load, resolve

    try:
        if args.config_command == "check":
            config = load(Path(args.file)) if args.file else resolve()
            where = str(config.path) if config.path else "no configuration file (the defaults)"
            sys.stdout.write(f"ok: {one_line(where, 500)}\n")
            return 0
        sys.stdout.write(dump(resolve(args.config)))
        return 0
    except ConfigError as exc:
        sys.stderr.write(f"looptrap: {one_line(str(exc), 1000)}\n")
        return 2
