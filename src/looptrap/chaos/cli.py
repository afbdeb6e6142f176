"""``looptrap chaos AGENT``: the fault matrix of an agent, as a table or JSON (see: looptrap docs chaos).

Only argparse at parser-building time; the chaos machinery and the agent are imported when it runs.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "load", "run"]


def add_parser(sub: Any) -> None:
    """Add ``chaos`` to the ``looptrap`` command's sub-commands."""
    from looptrap.cli import argtypes

    p = sub.add_parser(
        "chaos",
        help="run every fault against every tool of an agent and print the fault matrix",
        description="Run an agent once per fault and tool, the fault on that tool (empty results, errors, "
        "timeouts, ...), inside a hard ceiling, with a fresh guard each time, and print how each run "
        "stopped. AGENT is MODULE:FUNCTION or FILE.py:FUNCTION, a function agent(tools, guard) that runs the "
        "agent once. Exit code 1 when a run hit the ceiling, or when every run ended in an error (the agent "
        "itself failed). See: looptrap docs chaos.",
    )
    p.add_argument("agent", metavar="AGENT", help="the agent: MODULE:FUNCTION or FILE.py:FUNCTION")
    p.add_argument(
        "--tools", metavar="REF", help="the agent's tools: MODULE:NAME or FILE.py:NAME (default: TOOLS beside AGENT)"
    )
    p.add_argument(
        "--fault",
        action="append",
        metavar="NAME",
        help="a fault to run (repeatable; NAME+NAME composes; default: every fault)",
    )
    p.add_argument("--tool", action="append", metavar="NAME", help="put faults on this tool only (repeatable)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="the seed of the faults' schedules (default 0)")
    p.add_argument(
        "--max-calls",
        type=argtypes.whole_number,
        default=30,
        metavar="N",
        help="the ceiling: tool calls per run (default 30)",
    )
    p.add_argument(
        "--max-seconds",
        type=argtypes.seconds,
        default=30.0,
        metavar="S",
        help="the ceiling: seconds per run (default 30)",
    )
    p.add_argument(
        "--guard",
        metavar="REF",
        help="a function that makes each run's guard: MODULE:NAME or FILE.py:NAME (default: a Guard from the "
        "configuration file)",
    )
    p.add_argument("--no-guard", action="store_true", help="run without the guard")
    p.add_argument("--baseline", action="store_true", help="run each cell without the guard too, and show both")
    p.add_argument(
        "--config",
        metavar="FILE",
        help=argtypes.CONFIG_HELP,
    )
    p.add_argument("--log", metavar="PATH", help="append every run's call log to PATH (JSON Lines)")
    p.add_argument("--json", action="store_true", help="print the matrix as JSON")


def load(ref: str) -> Any:
    """The object ``MODULE:NAME`` or ``FILE.py:NAME`` names (``ValueError`` with the reason when it cannot)."""
    import importlib
    import importlib.util
    from pathlib import Path

    where, sep, name = ref.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"{ref!r}: give MODULE:NAME or FILE.py:NAME")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"{where}: no such file")
        module_name = f"looptrap_chaos_target_{path.stem}"
        loaded = sys.modules.get(module_name)
        if loaded is not None and getattr(loaded, "__file__", None) == str(path.resolve()):
            return _attribute(loaded, where, name)
        spec = importlib.util.spec_from_file_location(module_name, path.resolve())
        if spec is None or spec.loader is None:
            raise ValueError(f"{where}: cannot load it as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        sys.path.insert(0, str(path.resolve().parent))
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the user's file raises, said in one line
            sys.modules.pop(module_name, None)
            raise ValueError(f"{where}: cannot load it ({type(exc).__name__}: {exc})") from None
        finally:
            sys.path.remove(str(path.resolve().parent))
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise ValueError(f"{where}: cannot import it ({exc})") from None
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the user's module raises, said in one line
            raise ValueError(f"{where}: cannot import it ({type(exc).__name__}: {exc})") from None
    return _attribute(module, where, name)


def _attribute(module: Any, where: str, name: str) -> Any:
    try:
        return getattr(module, name)
    except AttributeError:
        raise ValueError(f"{where} has no {name!r}") from None


class _FactoryError(Exception):
    """The ``--guard`` factory failed or made something else than a guard."""


def run(args: argparse.Namespace) -> int:
    """The ``looptrap chaos`` command."""
    from looptrap.config_file import ConfigError, resolve

    def fail(text: str) -> int:
        from looptrap.core.printable import one_line

        print(one_line(f"looptrap chaos: {text}", 1000), file=sys.stderr)
        return 2

    try:
        settings = resolve(args.config)
    except ConfigError as exc:
        return fail(str(exc))
    try:
        agent = load(args.agent)
        tools = load(args.tools or f"{args.agent.rpartition(':')[0]}:TOOLS")
    except ValueError as exc:
        return fail(str(exc))
    if not callable(agent):
        return fail(f"{args.agent} is not a function")
    from looptrap.chaos.fault_matrix import matrix
    from looptrap.chaos.faults import resolve as faults_named
    from looptrap.chaos.runner import tool_name
    from looptrap.chaos.tools import _framework
    from looptrap.drivers.guard import Guard

    given = list(tools) if isinstance(tools, (list, tuple)) else [tools]
    odd = [t for t in given if _framework(t) is None and not callable(t)]
    if odd:
        return fail(f"the tools are functions or framework tool objects, not {type(odd[0]).__name__}")
    unknown = sorted(set(args.tool or ()) - {tool_name(t) for t in given})
    if unknown:
        return fail(f"no tool named {', '.join(unknown)} (the tools: {', '.join(tool_name(t) for t in given)})")
    try:
        faults = faults_named(args.fault) if args.fault else None
        make = load(args.guard) if args.guard else None
    except ValueError as exc:
        return fail(str(exc))

    if make is not None and not callable(make):
        return fail(f"{args.guard} is not a function")

    def fresh() -> Guard:
        if make is None:
            return Guard(settings.guard)
        try:
            made = make()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's factory: said in one line
            raise _FactoryError(f"{args.guard} raised {type(exc).__name__}: {exc}") from None
        if not isinstance(made, Guard):
            raise _FactoryError(f"{args.guard} returned {type(made).__name__}, not a Guard")
        return made

    try:
        m = matrix(
            agent,
            given,
            faults,
            guard=None if args.no_guard else fresh,
            baseline=args.baseline and not args.no_guard,
            only=args.tool,
            max_calls=args.max_calls,
            max_seconds=args.max_seconds,
            seed=args.seed,
            log=args.log,
            output="json" if args.json else "table",
        )
    except _FactoryError as exc:
        return fail(str(exc))
    runs = list(m.reports.values())
    if runs and all(r.outcome == "error" for r in runs):  # the agent failed: the matrix says nothing
        fail(f"every run ended in an error, so the matrix shows nothing about the guard; the first: {runs[0].error}")
        return 1
    return 1 if any(not r.terminated for r in runs) else 0
