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
        description="The hooks, the MCP proxy and the CLI read one configuration: a file named by --config or "
        "$LOOPTRAP_CONFIG, as written; else your own (~/.config/looptrap/looptrap.toml), tightened by the "
        "project's looptrap.toml or [tool.looptrap] in pyproject.toml found from the working directory upward "
        "(a project's file may only tighten guarding). See: looptrap docs configuration.",
    )
    from looptrap.cli.argtypes import CONFIG_HELP

    actions = c.add_subparsers(dest="config_command", required=True)
    check = actions.add_parser(
        "check",
        help="validate the configuration, or a file",
        description="Validate the configuration in effect, or FILE, as the commands do (exit 2 if bad); warn about "
        "settings that turn protection off (exit 1 with --strict).",
    )
    check.add_argument("file", nargs="?", help="the file (default: the configuration in effect, as for show)")
    check.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when the configuration turns protection off, or a project's setting was not applied",
    )
    show = actions.add_parser(
        "show",
        help="print the configuration in effect",
        description="Print the configuration in effect (every value, defaults included) as TOML.",
    )
    show.add_argument("--config", metavar="FILE", help=CONFIG_HELP)


def run(args: argparse.Namespace) -> int:
    """Run ``config check`` or ``config show``; returns the exit code."""
    from looptrap.cli.output import warn
    from looptrap.config_file import ConfigError, dump, load, protection_warnings, resolve

    try:
        if args.config_command == "check":
            config = load(Path(args.file)) if args.file else resolve()
            _check_stores(config.store, str(config.path))
            where = str(config.path) if config.path else "no configuration file (the defaults)"
            warnings = protection_warnings(config)
            for warning in warnings:
                warn(warning)
            sys.stdout.write(f"ok: {one_line(where, 500)}{_count(len(warnings))}\n")
            return 1 if warnings and args.strict else 0
        sys.stdout.write(dump(resolve(args.config)))
        return 0
    except ConfigError as exc:
        sys.stderr.write(f"looptrap: {one_line(str(exc), 1000)}\n")
        return 2


def _count(warnings: int) -> str:
    return f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else ""


def _check_stores(configured: str | None, where: str) -> None:
    """The stores a command would open: ``$LOOPTRAP_STORE`` (it comes first), and the file's, with the
    client library each needs."""
    import importlib.util
    import os

    from looptrap.config_file import ConfigError
    from looptrap.stores import open_store
    from looptrap.stores.url import REDIS_SCHEMES, parse

    for name, url in (("$LOOPTRAP_STORE", os.environ.get("LOOPTRAP_STORE")), (f"{where}: store", configured)):
        if not url:
            continue
        try:
            scheme = parse(url).scheme
            if scheme in REDIS_SCHEMES and importlib.util.find_spec("redis") is None:
                raise ValueError("a Redis store needs the redis extra: pip install 'looptrap[redis]'")
            open_store(url, create=False).close()
        except (ValueError, TypeError, ImportError) as exc:
            raise ConfigError(name, str(exc)) from None
