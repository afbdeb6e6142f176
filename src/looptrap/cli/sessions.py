"""``looptrap sessions list|show|reset``: inspect the sessions a store holds."""

from __future__ import annotations

import os
import sys
import time
from typing import IO, TYPE_CHECKING

import orjson

from looptrap.core.state import Flag, SessionState

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run", "store_url"]

_FLAGS = [(v, k.lower()) for k, v in vars(Flag).items() if isinstance(v, int) and not k.startswith("_")]


def store_url(given: str | None) -> str:
    """``--store``, else ``$LOOPTRAP_STORE``, else the SQLite file in the user's cache folder."""
    if given:
        return given
    env = os.environ.get("LOOPTRAP_STORE")
    if env:
        return env
    from looptrap.stores.sqlite import default_path

    return f"sqlite:///{default_path()}"


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="URL",
        help="sqlite:///path, redis://host:port/db or memory:// (default: $LOOPTRAP_STORE, else a SQLite file "
        "in the user's cache folder)",
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
    from looptrap.stores import StoreError, open_store

    try:
        store = open_store(store_url(args.store))
    except (ValueError, ImportError) as exc:
        print(f"looptrap: {exc}", file=sys.stderr)
        return 2
    try:
        if args.action == "list":
            return _list(store.sessions(), args.json, out)
        if args.action == "show":
            snap = store.load(args.session)
            if snap is None:
                print(f"looptrap: no session {args.session!r} in {store_url(args.store)}", file=sys.stderr)
                return 1
            if args.json:
                out.write(orjson.dumps({"session": args.session, "rev": snap.rev, **snap.state.to_dict()}).decode())
                out.write("\n")
            else:
                _show(args.session, snap.rev, snap.state, out)
            return 0
        if store.delete(args.session):
            out.write(f"reset session {args.session}\n")
            return 0
        print(f"looptrap: no session {args.session!r} in {store_url(args.store)}", file=sys.stderr)
        return 1
    except (StoreError, ValueError) as exc:  # unreachable store, or state of another format version
        print(f"looptrap: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()


def _list(infos: object, as_json: bool, out: IO[str]) -> int:
    from looptrap.stores.base import SessionInfo

    rows: list[SessionInfo] = sorted(infos, key=lambda i: i.updated or 0)  # type: ignore[call-overload]
    if as_json:
        for i in rows:
            out.write(orjson.dumps(i._asdict()).decode() + "\n")
        return 0
    table = [("session", "calls", "turns", "level", "halted", "updated")]
    for i in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(i.updated)) if i.updated else "-"
        table.append((i.session, str(i.calls), str(i.turn), str(i.level), i.halted or "-", when))
    widths = [min(max(len(r[c]) for r in table), 48) for c in range(len(table[0]))]
    for r in table:
        out.write("  ".join(cell[:48].ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() + "\n")
    out.write(f"\n{len(rows)} session(s)\n")
    return 0


def _show(session: str, rev: int, s: SessionState, out: IO[str]) -> None:
    out.write(f"session   {session} (revision {rev}, run {s.run_id})\n")
    out.write(f"calls     {s.calls} in {s.turn} turn(s), task {s.task}, {len(s.pending)} awaiting a result\n")
    out.write(f"level     {s.level} (0: no loop; then advised, blocked)\n")
    if s.halted:
        out.write(f"halted    {s.halted.get('reason')}: {s.halted.get('message', '')}\n")
    if s.tokens or s.cost:
        out.write(f"usage     {s.tokens} tokens, ${s.cost:.4f}\n")
    if s.per_tool:
        out.write("per tool  " + ", ".join(f"{t} {n}" for t, n in sorted(s.per_tool.items(), key=lambda x: -x[1])))
        out.write("\n")
    if s.needed:
        out.write("needed    " + "; ".join(s.needed) + "\n")
    if s.history:
        out.write("recent calls (oldest first):\n")
        for e in s.history:
            flags = ",".join(name for bit, name in _FLAGS if e.flags & bit) or "-"
            preview = s.previews.get(e.digest, e.tool)
            out.write(f"  #{e.call_index:<5} {preview[:70]:<70}  {flags}\n")
