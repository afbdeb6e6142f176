"""``matrix``: every fault against every tool, one run each, as a table (fault x tool: stopped how, after how
many calls) or JSON."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any, Literal

import orjson

from looptrap.chaos.faults import Fault, resolve
from looptrap.chaos.log import CallLog
from looptrap.chaos.runner import Agent, GuardSpec, Report, run, tool_name
from looptrap.core.printable import one_line
from looptrap.drivers.guard import Guard

__all__ = ["Matrix", "matrix"]


@dataclass
class Matrix:
    """The runs of a fault matrix: ``reports[(fault, tool)]`` with the guard (or without, when the matrix
    ran unguarded), ``baseline[(fault, tool)]`` without it (when asked for)."""

    faults: list[str]
    tools: list[str]
    reports: dict[tuple[str, str], Report] = field(default_factory=dict)
    baseline: dict[tuple[str, str], Report] = field(default_factory=dict)
    guarded: bool = True

    def cell(self, fault: str, tool: str) -> str:
        """One cell: ``halted @4 (loop_repeat)``; with a baseline, ``ceiling @30 (max_calls) -> halted @4
        (loop_repeat)`` (without the guard, then with it)."""
        text = self.reports[(fault, tool)].summary()
        base = self.baseline.get((fault, tool))
        return f"{base.summary()} -> {text}" if base is not None else text

    def table(self, width: int | None = None) -> str:
        """The matrix as a text table of at most ``width`` columns (default: the terminal's, else 80), then
        a one-line count of how the runs ended. A fault per row and a tool per column when that fits;
        otherwise one row per fault and tool, the run without the guard beside the run with it."""
        from looptrap.core.columns import cols, table
        from looptrap.core.columns import width as terminal_width
        from looptrap.core.figures import count

        room = terminal_width(None, width)
        head = "fault"
        if self.baseline:
            head = "fault (no guard -> guard)"
        elif not self.guarded:
            head = "fault (no guard)"
        rows = [[head, *(one_line(t, 40) for t in self.tools)]]
        for fault in self.faults:
            rows.append([one_line(fault, 40), *(self.cell(fault, t) for t in self.tools)])
        lines = table(rows, room=10**6)
        if max(cols(line) for line in lines) > room:  # too wide: a row per fault and tool (and run)
            long = [["fault", "tool", *(["run"] if self.baseline else []), "how it stopped"]]
            for fault in self.faults:
                for tool in self.tools:
                    got = self.reports[(fault, tool)].summary()
                    base = self.baseline.get((fault, tool))
                    if base is None:
                        long.append([one_line(fault, 40), one_line(tool, 40), got])
                    else:
                        long.append([one_line(fault, 40), one_line(tool, 40), "no guard", base.summary()])
                        long.append(["", "", "guard", got])
            lines = table(long, room=room, shrink=range(len(long[0])))
        lines.insert(1, "-" * max(cols(line) for line in lines))
        counts: dict[str, int] = {}
        for r in self.reports.values():
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        ended = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
        lines.append("")
        lines.append("@N: after N tool calls; ceiling: stopped by the run's limit (max_calls or max_seconds)")
        lines.append(f"{count(len(self.reports), 'run')}{' with the guard' if self.guarded else ''}: {ended}")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """As plain data: one entry per cell, each run's report without its call log."""

        def brief(r: Report) -> dict[str, Any]:
            d = r.to_dict()
            d.pop("log")
            return d

        cells = []
        for fault in self.faults:
            for tool in self.tools:
                entry: dict[str, Any] = {"fault": fault, "tool": tool, "report": brief(self.reports[(fault, tool)])}
                if (fault, tool) in self.baseline:
                    entry["baseline"] = brief(self.baseline[(fault, tool)])
                cells.append(entry)
        return {"faults": self.faults, "tools": self.tools, "guarded": self.guarded, "cells": cells}

    def json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"

    def __str__(self) -> str:
        return self.table()


def matrix(
    agent: Agent,
    tools: Any,
    faults: Fault | str | Iterable[Fault | str] | None = None,
    *,
    guard: GuardSpec = Guard,
    baseline: bool = False,
    only: Iterable[str] | None = None,
    max_calls: int | None = 30,
    max_seconds: float | None = 30.0,
    seed: int = 0,
    log: CallLog | str | os.PathLike[str] | None = None,
    output: Literal["table", "json"] | None = "table",
    file: IO[str] | None = None,
) -> Matrix:
    """Run ``agent`` once per fault and tool: the fault (each of ``faults``, by default every fault) on that
    one tool, the others working. Prints the table (``output="json"``: the JSON; ``None``: nothing) to
    ``file`` (default stdout) and returns the :class:`Matrix`.

    ``guard``: a factory for each run's fresh guard (default ``Guard``), or ``None`` to run unguarded;
    ``baseline=True`` also runs each cell without a guard (the cell shows both). ``only``: the tool names to
    put faults on (default: all). The ceiling, ``seed`` and ``log`` are :func:`run`'s.
    """
    if isinstance(guard, Guard):
        raise TypeError("matrix needs a guard factory (each run gets a fresh guard), e.g. guard=Guard")
    given = list(tools) if isinstance(tools, (list, tuple)) else [tools]
    names = [tool_name(t) for t in given]
    targets = [n for n in names if only is None or n in set(only)]
    chosen = resolve(faults)
    labels = [f.label for f in chosen]
    m = Matrix(labels, targets, guarded=guard is not None)
    shared_log = log if isinstance(log, CallLog) or log is None else CallLog(log)
    for fault, label in zip(chosen, labels, strict=True):
        for tool in targets:
            kwargs: dict[str, Any] = {"max_calls": max_calls, "max_seconds": max_seconds, "seed": seed}
            if baseline and guard is not None:
                m.baseline[(label, tool)] = run(
                    agent, given, {tool: fault}, guard=None, log=shared_log, name=f"{label}/{tool}/no-guard", **kwargs
                )
            m.reports[(label, tool)] = run(
                agent,
                given,
                {tool: fault},
                guard=guard,
                log=shared_log,
                name=f"{label}/{tool}" + ("" if guard is not None else "/no-guard"),
                **kwargs,
            )
    if shared_log is not None and shared_log is not log:
        shared_log.close()
    if output is not None:
        out = file if file is not None else sys.stdout
        out.write(m.json() if output == "json" else m.table())
        out.flush()
    return m
