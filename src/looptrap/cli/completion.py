"""``looptrap completion bash|zsh|tcsh``: a shell completion script for every command and option.

Made from the command's own parser by shtab, so it never falls behind the options; written once, it costs
nothing at run time (no import on each ``looptrap`` start, unlike completion that runs Python on each Tab).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["SHELLS", "add_parser", "run", "script"]

SHELLS = ("bash", "zsh", "tcsh")
#: Positional arguments and options that name files, by destination.
_FILES = frozenset({"trace", "inputs", "config", "csv", "html", "file", "project_config"})


def add_parser(sub: Any) -> None:
    """Add the ``completion`` sub-command to the CLI's sub-parsers."""
    p = sub.add_parser(
        "completion",
        help="print a completion script for bash, zsh or tcsh",
        description='Print a completion script for the shell. bash: eval "$(looptrap completion bash)" in '
        "~/.bashrc; zsh: looptrap completion zsh > a folder of $fpath, as _looptrap; tcsh: eval `looptrap "
        "completion tcsh`. See: looptrap docs cli#completion.",
    )
    p.add_argument("shell", choices=SHELLS, help="the shell")


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (file names complete where a file is expected)."""
    import shtab

    _mark_files(parser, shtab.FILE)
    return str(shtab.complete(parser, shell=shell))


def _mark_files(parser: argparse.ArgumentParser, files: Any) -> None:
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _mark_files(sub, files)
        elif action.dest in _FILES:
            action.complete = files  # type: ignore[attr-defined]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the script; returns the exit code."""
    sys.stdout.write(script(parser, args.shell))
    return 0
