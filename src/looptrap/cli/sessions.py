"""``looptrap sessions list|show|reset``: inspect the sessions a store holds.

None of them creates a store: a SQLite file that does not exist holds no sessions. Everything shown from a
state (session ids, tool names, what the model said) goes through :mod:`looptrap.core.printable`, so no
terminal escape or fake table row reaches the terminal; ``--json`` output escapes the same characters.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

import orjson

from looptrap.core.printable import one_line
from looptrap.core.state import Flag, SessionState

if TYPE_CHECKING:
    import argparse

    from looptrap.stores.base import SessionInfo

__all__ = ["add_parser", "run", "store_url"]

_FLAGS = [(v, k.lower()) for k, v in vars(Flag).items() if isinstance(v, int) and not k.startswith("_")]
# Characters orjson writes as they are that a terminal may act on (DEL, C1 controls, bidirectional and
# invisible format characters, line separators): written as \\u escapes, the JSON means the same.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_CELL = 48  # characters of a table cell


def store_url(given: str | None, configured: str | None = None) -> str:
    """``--store``, else ``$LOOPTRAP_STORE``, else the configuration file's ``store`` (``configured``), else
    the SQLite file in the user's cache folder: the order the hooks use."""
    if given:
        return given
    env = os.environ.get("LOOPTRAP_STORE")
    if env:
        return env
    if configured:
        return configured
    from looptrap.stores.sqlite import default_path

    return f"sqlite:///{default_path()}"


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="URL",
        help="sqlite:///path, redis://host:port/db or memory:// (default: $LOOPTRAP_STORE, else the configuration "
        "file's store, else a SQLite file in the user's cache folder)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="the configuration file whose store to use (default: $LOOPTRAP_CONFIG, else looptrap.toml or "
        "pyproject.toml's [tool.looptrap] from here upward)",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("sessions", help="list, show or reset the sessions a store holds")
    ss = p.add_subparsers(dest="action", required=True)
    a = ss.add_parser("list", help="one line per session")
    add_store_option(a)
    a.add_argument("--json", action="store_true", help="one JSON object per session")
    b = ss.add_parser("show", help="one session's state")
    b.add_argument("session")
    add_store_option(b)
    b.add_argument("--json", action="store_true", help="the full stored state as JSON")
    c = ss.add_parser("reset", help="forget a session (its next call starts afresh)")
    c.add_argument("session")
    add_store_option(c)


def run(args: argparse.Namespace, out: IO[str] = sys.stdout) -> int:
    """Run one ``sessions`` command; returns the exit code. Output is flushed here, so that a reader that
    went away (``| head -1``) raises ``BrokenPipeError`` inside the command, which ``looptrap``'s entry
    point ends quietly, not at interpreter exit."""
    code = _run(args, out)
    out.flush()
    return code


def _run(args: argparse.Namespace, out: IO[str]) -> int:
    from looptrap.stores import SQLiteStore, StoreError, open_store
    from looptrap.stores.url import redact

    configured = None
    if not args.store and not os.environ.get("LOOPTRAP_STORE"):
        from looptrap.config_file import ConfigError, resolve

        try:
            configured = resolve(args.config).store
        except ConfigError as exc:
            return _error(str(exc), 2)
    url = store_url(args.store, configured)
    shown = redact(url)
    try:
        store = open_store(url, create=False)  # inspecting a store never creates one
    except (ValueError, ImportError) as exc:
        return _error(str(exc), 2)
    try:
        if args.action == "list":
            if isinstance(store, SQLiteStore) and not os.path.exists(store.path):
                print(f"looptrap: no store at {shown} yet", file=sys.stderr)
            return _list(store.sessions(), args.json, out)
        session = args.session
        if args.action == "show":
            snap = store.load(session)
            if snap is None:
                return _error(f"no session {one_line(session, 80)!r} in {shown}", 1)
            if args.json:
                out.write(_json({"session": session, "rev": snap.rev, **snap.state.to_dict()}))
            else:
                _show(session, snap.rev, snap.state, out)
            return 0
        if store.delete(session):
            out.write(f"reset session {one_line(session, 512)}\n")
            return 0
        return _error(f"no session {one_line(session, 80)!r} in {shown}", 1)
    except (StoreError, ValueError) as exc:  # unreachable store, or an unreadable state (the message says so)
        return _error(str(exc), 2)
    finally:
        store.close()


def _error(message: str, code: int) -> int:
    print(f"looptrap: {one_line(message, 1000)}", file=sys.stderr)
    return code


def _json(obj: Any) -> str:
    text = orjson.dumps(obj).decode()
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _list(infos: Iterable[SessionInfo], as_json: bool, out: IO[str]) -> int:
    rows = sorted(infos, key=lambda i: i.updated or 0)
    if as_json:
        for i in rows:
            d = i._asdict()
            if d["error"] is None:
                del d["error"]
            out.write(_json(d))
        return 0
    from looptrap.core.columns import table
    from looptrap.core.figures import count

    cells = [("session", "calls", "turns", "level", "halted", "updated")]
    bad = 0
    for i in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(i.updated)) if i.updated else "-"
        if i.error is not None:
            bad += 1
            cells.append((one_line(i.session, _CELL), "?", "?", "?", "UNREADABLE", when))
        else:
            halted = one_line(i.halted, _CELL) if i.halted else "-"
            cells.append((one_line(i.session, _CELL), count(i.calls), count(i.turn), str(i.level), halted, when))
    for line in table(cells, shrink=(0, 4)):
        out.write(line + "\n")
    out.write("\nlevel: 0 no loop, 1 advised, 2 blocked\n" + count(len(rows), "session"))
    out.write(f", {count(bad)} unreadable (`looptrap sessions show SESSION` says why)\n" if bad else "\n")
    return 0


def _show(session: str, rev: int, s: SessionState, out: IO[str]) -> None:
    from looptrap.core.columns import cols, fit, width, wrap
    from looptrap.core.figures import count, money

    room = width()

    def field(label: str, text: str) -> None:
        for line in wrap(label, text, room):
            out.write(line.rstrip() + "\n")

    field("session", f"{one_line(session, 512)} (revision {rev}, run {one_line(s.run_id, 512)})")
    field(
        "calls",
        f"{count(s.calls)} in {count(s.turn, 'turn')}, task {s.task}, {count(len(s.pending))} awaiting a result",
    )
    field("level", f"{s.level} (0: no loop, 1: advised, 2: blocked)")
    if s.halted:
        reason, message = s.halted.get("reason"), s.halted.get("message", "")
        field("halted", f"{one_line(str(reason), 80)}: {one_line(str(message), 500)}")
    if s.tokens or s.cost:
        field("usage", f"{count(s.tokens, 'token')}, {money(s.cost)}")
    if s.per_tool:
        tools = sorted(s.per_tool.items(), key=lambda x: -x[1])
        field("per tool", ", ".join(f"{one_line(t, 128)} {count(n)}" for t, n in tools))
    if s.needed:
        field("needed", "; ".join(one_line(n, 500) for n in s.needed))
    if s.history:
        out.write("recent calls (oldest first; flags say what the call found):\n")
        rows = []
        for e in s.history:
            flags = ",".join(name for bit, name in _FLAGS if e.flags & bit) or "-"
            rows.append((f"#{e.call_index}", one_line(s.previews.get(e.digest, e.tool), 200), flags))
        numbers = max(cols(r[0]) for r in rows)
        tail = max(cols(r[2]) for r in rows)
        preview_room = min(max(cols(r[1]) for r in rows), max(12, room - 2 - numbers - 2 - 2 - tail))
        for number, preview, flags in rows:
            cell = fit(preview, preview_room)
            out.write(f"  {number:<{numbers}}  {cell}{' ' * (preview_room - cols(cell))}  {flags}".rstrip() + "\n")
    if s.verdicts:
        out.write("interventions (oldest first):\n")
        for v in s.verdicts:
            why = f"{one_line(v.kind, 64)} ({one_line(v.reason, 64)})" if v.kind else one_line(v.reason, 64)
            line = f"#{v.call_index} {v.action} {why} on {one_line(v.tool, 128)}"
            for piece in wrap("", line, room - 2, indent=0):
                out.write("  " + piece.rstrip() + "\n")
