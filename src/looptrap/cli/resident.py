"""The hook's fast path: hand the event to a resident hook server and print its answer.

A coding-agent CLI starts ``looptrap hook ...`` twice per tool call; importing the guard, reading the
configuration and opening the store in every one of those processes costs several times what the
interpreter's own start costs. So the first event starts a small server in the background (one per
configuration: the same store URLs, made absolute in the caller's folder; the same configuration files (the
named one, or the user's own and the project's found from the caller's folder), each with its modification
time; the same session option and failure policy), answers itself, and later events are a connection to that
server: this module imports nothing but the standard library's ``os`` and ``socket``, and looptrap's own
``core.locations``. The store URLs reach the server in its environment, never on its command line.
The server keeps one engine and the open store, answers each event exactly as the hook process would
(``looptrap.integrations.hooks.base.HookRunner``), and exits after ``IDLE`` seconds without an event.

``LOOPTRAP_HOOK_SERVER=0`` turns it off (every event is answered in its own process). Where Unix sockets do
not exist, or the socket path would be too long, nothing changes either.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: this module must not import typing (the hook's fast path)
if TYPE_CHECKING:
    import _socket

__all__ = ["IDLE", "MAX_EVENT", "answer", "server_key", "socket_path"]

IDLE = 600.0  # seconds without an event after which a server exits
MAX_EVENT = 64 << 20  # a larger hook payload is answered in process, not sent to the server
_WAIT = 10.0  # seconds a client waits for the server's answer (its store has its own timeouts)
_MAX_PATH = 100  # Unix socket paths are limited to about 104-108 bytes


def answer(
    cli: str, store: str | None, session: str | None, fail_closed: bool, config: str | None
) -> tuple[int | None, bytes]:
    """Answer the event on stdin through the resident server: its exit code (the answer printed), or
    ``None`` when the caller must answer it in process (no server yet: one is started for the next
    events); and the event read from stdin."""
    stdin = sys.stdin.buffer.read() if sys.stdin is not None else b""
    if os.environ.get("LOOPTRAP_HOOK_SERVER", "1") == "0" or not hasattr(os, "getuid") or len(stdin) > MAX_EVENT:
        return None, stdin
    key = server_key(cli, store, session, fail_closed, config)
    path = socket_path(key)
    if path is None:
        return None, stdin
    import _socket as socket  # the C module: the socket package's import costs more than the answer

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(1.0)
        conn.connect(path)
    except OSError:
        conn.close()
        _start_server(path, key)
        return None, stdin
    err = f"looptrap hook {cli}: the hook server did not answer"
    try:
        conn.settimeout(_WAIT)
        conn.sendall(stdin)
        conn.shutdown(socket.SHUT_WR)
        reply = _read_all(conn)
    except OSError as exc:
        reply, err = b"", f"{err} ({exc.__class__.__name__})"
    finally:
        conn.close()
    if len(reply) < 9:  # the event may have been applied: do not apply it again; fail open (or closed)
        sys.stderr.write(err + (" (failing closed)\n" if fail_closed else " (allowing the call)\n"))
        if not fail_closed and cli == "gemini-cli":
            sys.stdout.write("{}\n")
        return (2 if fail_closed else 0), stdin
    code, out_len = reply[0], int.from_bytes(reply[1:9], "big")
    out, said = reply[9 : 9 + out_len], reply[9 + out_len :]
    if out:
        sys.stdout.buffer.write(out + b"\n")
    if said:
        sys.stderr.buffer.write(said + b"\n")
    return code, stdin


def server_key(
    cli: str, store: str | None, session: str | None, fail_closed: bool, config: str | None
) -> tuple[str, ...]:
    """What makes a hook's configuration, as one server serves it: the CLI, the store URLs made absolute in
    the caller's folder (the server runs elsewhere), the session option, the failure policy, and the
    configuration files (the named one, else the user's own and the project's found from the caller's
    folder) each with its modification time."""
    from looptrap.core.locations import absolute_store, user_config_path

    here = os.getcwd()
    store = absolute_store(store or "", here)
    env_store = absolute_store(os.environ.get("LOOPTRAP_STORE") or "", here)
    named = config or os.environ.get("LOOPTRAP_CONFIG") or ""
    named = os.path.abspath(os.path.expanduser(named)) if named else ""
    user = "" if named else user_config_path()
    project = "" if named else (_find_config() or "")
    files = (named, _mtime(named), user, _mtime(user), project, _mtime(project))
    return (cli, store, env_store, session or "", "1" if fail_closed else "0", *files)


def socket_path(key: tuple[str, ...]) -> str | None:
    """Where the server for ``key`` listens: in a ``looptrap`` folder private to the user, in
    ``$XDG_RUNTIME_DIR`` (meant for sockets) if set, else in the user's cache; ``None`` when that path
    would be too long for a Unix socket."""
    import zlib

    text = "\x00".join(key).encode("utf-8", "surrogatepass")
    name = f"hook-{zlib.crc32(text):08x}{zlib.adler32(text):08x}.sock"
    from looptrap.core.locations import user_cache

    base = os.environ.get("XDG_RUNTIME_DIR") or user_cache()
    path = os.path.join(base, "looptrap", name)
    return path if len(path.encode()) <= _MAX_PATH else None


def _read_all(conn: _socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _start_server(path: str, key: tuple[str, ...]) -> None:
    """Start the server for ``key`` in the background, detached (a shell starts it and exits, so this
    process has no child to wait for); never fails."""
    try:
        import subprocess

        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        cli, store, env_store, session, fail_closed, named, _, _, _, project, _ = key
        args = [sys.executable, "-m", "looptrap.integrations.hooks.server", "--socket", path, "--cli", cli]
        # a named file applies as written; else the server reads the user's own and the project's found here
        args += ["--config", named] if named else ["--project-config", project]
        if session:
            args += ["--session", session]
        if fail_closed == "1":
            args.append("--fail-closed")
        # the store URLs go in the environment, readable by the user only, not on a command line any user can read
        env = {**os.environ, "LOOPTRAP_HOOK_STORE": store, "LOOPTRAP_STORE": env_store}
        detach = 'cd "$1" && shift && exec "$@" </dev/null >/dev/null 2>&1 &'
        subprocess.run(["/bin/sh", "-c", detach, "sh", folder, *args], timeout=10, check=False, env=env)
    except Exception:  # noqa: BLE001 - no server: every event is answered in process, as before
        pass


def _find_config() -> str | None:
    """The configuration file that applies here, found as ``looptrap.config_file.find`` does (without
    importing it: this is the hook's fast path)."""
    here = os.getcwd()
    while True:
        own = os.path.join(here, "looptrap.toml")
        if os.path.isfile(own):
            return own
        project = os.path.join(here, "pyproject.toml")
        if os.path.isfile(project):
            try:
                with open(project, encoding="utf-8") as fh:
                    for line in fh:
                        if "".join(line.split()).startswith("[tool.looptrap"):
                            return project
            except (OSError, UnicodeDecodeError):
                pass
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _mtime(path: str | None) -> str:
    if not path:
        return ""
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_mtime_ns}:{st.st_size}"
