"""The resident hook server: answers hook events sent over a Unix socket by ``looptrap hook ...`` processes
(see :mod:`looptrap.cli.resident`), with one engine and one open store, and exits when idle.

Started by the first hook event of a configuration; one server per configuration (the socket's name
comes from the CLI, the absolute store URLs, the session option, the failure policy and the configuration
files with their modification times: see :mod:`looptrap.cli.resident`). Events are answered one at a time,
in arrival order, each exactly as :class:`~looptrap.integrations.hooks.base.HookRunner` answers it in a
hook process. The socket lives in a folder only the user can open, and is created readable and writable by
the user only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys

from looptrap.cli.resident import IDLE, MAX_EVENT
from looptrap.integrations.hooks.base import PROTOCOLS, Answer, HookRunner

__all__ = ["main", "serve"]


def serve(path: str, runner: HookRunner, cli: str, *, idle: float = IDLE) -> None:
    """Listen on ``path`` and answer events until ``idle`` seconds pass without one."""
    protocol = PROTOCOLS[cli]()
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    bound = _bind(path)
    if bound is None:
        return  # another server answers this configuration already
    listener, inode = bound
    try:
        listener.settimeout(idle)
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                return
            with conn:
                _answer_one(conn, runner, protocol)
            if _inode(path) != inode:  # the socket was removed or replaced: stop
                return
    finally:
        listener.close()
        runner.close()
        if _inode(path) == inode:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _bind(path: str) -> tuple[socket.socket, int] | None:
    """A listening socket at ``path`` and its inode, or ``None`` when a live server holds the path."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        return None
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a stale socket left by a server that died
    finally:
        probe.close()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket file: the user's only
    try:
        listener.bind(path)
    except OSError:
        listener.close()
        return None
    finally:
        os.umask(old)
    listener.listen(64)
    return listener, _inode(path)


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1


def _answer_one(conn: socket.socket, runner: HookRunner, protocol: object) -> None:
    conn.settimeout(10.0)
    chunks, size = [], 0
    try:
        while True:
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_EVENT:  # the hook answers such an event in process, never sends it
                return
            chunks.append(chunk)
        answer: Answer = runner.answer(protocol, b"".join(chunks))  # type: ignore[arg-type]
        out, err = answer.stdout.encode(), answer.stderr.encode()
        conn.sendall(bytes([answer.exit_code & 0xFF]) + len(out).to_bytes(8, "big") + out + err)
    except OSError:
        return


def main(argv: list[str] | None = None) -> int:
    """``python -m looptrap.integrations.hooks.server --socket PATH --cli NAME [...]``."""
    p = argparse.ArgumentParser(prog="looptrap-hook-server", description="The resident hook server.")
    p.add_argument("--socket", required=True)
    p.add_argument("--cli", required=True, choices=sorted(PROTOCOLS))
    p.add_argument("--session")
    p.add_argument("--config", help="a named configuration file: applied as written")
    p.add_argument("--project-config", help="the project's file the hook found ('': none)")
    p.add_argument("--fail-closed", action="store_true")
    p.add_argument("--idle", type=float, default=float(os.environ.get("LOOPTRAP_HOOK_SERVER_IDLE") or IDLE))
    args = p.parse_args(argv)
    runner = HookRunner(  # the store URLs come in the environment (a command line is readable by any user)
        store_url=os.environ.get("LOOPTRAP_HOOK_STORE") or None,
        session=args.session or None,
        fail_closed=args.fail_closed,
        config=args.config or None,
        env_store=os.environ.get("LOOPTRAP_STORE") or "",
        project=None if args.config else (args.project_config or ""),  # never looked for from here
    )
    serve(args.socket, runner, args.cli, idle=args.idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
