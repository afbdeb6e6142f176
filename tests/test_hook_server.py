"""The resident hook server (docs/hooks.md): later hook events are answered by a background server with one
engine and an open store, exactly as a hook process answers them; a dead or missing server changes nothing
but speed."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from looptrap.cli import resident
from looptrap.integrations.hooks.base import PROTOCOLS, run_hook

DATA = Path(__file__).parent / "data" / "hooks" / "claude-code"


def event(name: str) -> bytes:
    return (DATA / f"{name}.json").read_bytes()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runtime folder (sockets live there: a short path, as a socket's must be); every server
    started in it is stopped afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="lt", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.delenv("LOOPTRAP_HOOK_SERVER", raising=False)
    monkeypatch.delenv("LOOPTRAP_CONFIG", raising=False)
    monkeypatch.delenv("LOOPTRAP_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    yield folder
    for proc in SERVERS:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    SERVERS.clear()
    for pid in _server_pids(folder):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


SERVERS: list[subprocess.Popen[bytes]] = []


def _server_pids(folder: Path) -> list[int]:
    """Servers started by the client in the background (found by their socket path in the command line)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\x00", b" ")
            except OSError:
                continue
            if b"looptrap.integrations.hooks.server" in cmd and str(folder).encode() in cmd:
                pids.append(int(entry.name))
    return pids


def key(store: str) -> tuple[str, ...]:
    return ("claude-code", store, "", "", "0", "", "")


def start_server(store: str, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    path = resident.socket_path(key(store))
    assert path is not None
    args = [sys.executable, "-m", "looptrap.integrations.hooks.server", "--socket", path, "--cli", "claude-code"]
    proc = subprocess.Popen([*args, "--store", store, "--no-config", *extra])
    SERVERS.append(proc)
    deadline = time.monotonic() + 20
    while not os.path.exists(path):
        assert proc.poll() is None, "the server exited"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    return proc, path


class Stdio:
    """stdin with a hook payload, stdout and stderr captured (for resident.answer in this process)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, payload: bytes) -> None:
        self.out, self.err = io.BytesIO(), io.BytesIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload)))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(self.out, write_through=True))
        monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(self.err, write_through=True))


def through_server(monkeypatch: pytest.MonkeyPatch, store: str, name: str) -> tuple[int | None, str, str]:
    with monkeypatch.context() as m:
        io_ = Stdio(m, event(name))
        code, _ = resident.answer("claude-code", store, None, False, None)
        return code, io_.out.getvalue().decode().strip(), io_.err.getvalue().decode().strip()


def test_answers_through_the_server_are_the_hook_processes_answers(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served, direct = f"sqlite:///{tmp_path}/served.db", f"sqlite:///{tmp_path}/direct.db"
    start_server(served)
    got, want = [], []
    for name in ["pre_grep_empty", "post_grep_empty"] * 2 + ["pre_grep_empty"] * 3:
        code, out, err = through_server(monkeypatch, served, name)
        assert code is not None, "answered in process: the server did not answer"
        got.append((code, out, err))
        answer = run_hook(PROTOCOLS["claude-code"](), event(name), store_url=direct, config="")
        want.append((answer.exit_code, answer.stdout, answer.stderr))
        time.sleep(0.6)  # the model reads each answer (refusals closer than BATCH_GAP are one turn)
    assert got == want
    assert json.loads(got[4][1])["hookSpecificOutput"]["permissionDecision"] == "deny"  # the loop was seen


def test_the_socket_is_private(cache: Path, tmp_path: Path) -> None:
    _, path = start_server(f"sqlite:///{tmp_path}/s.db")
    assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_an_idle_server_exits_and_removes_its_socket(cache: Path, tmp_path: Path) -> None:
    proc, path = start_server(f"sqlite:///{tmp_path}/s.db", "--idle", "0.5")
    assert proc.wait(timeout=20) == 0
    assert not os.path.exists(path)


def test_without_a_server_the_event_is_answered_in_process_and_a_server_started(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path}/s.db"
    code, _, _ = through_server(monkeypatch, store, "pre_grep_empty")
    assert code is None  # the caller answers this one
    path = resident.socket_path(key(store))
    assert path is not None
    deadline = time.monotonic() + 20
    while not os.path.exists(path):  # started in the background for the next events
        assert time.monotonic() < deadline, "no server was started"
        time.sleep(0.05)
    time.sleep(0.2)
    assert through_server(monkeypatch, store, "post_grep_empty")[0] == 0


def test_a_killed_server_leaves_a_stale_socket_that_changes_nothing(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path}/s.db"
    proc, path = start_server(store)
    proc.kill()
    proc.wait(timeout=10)
    assert os.path.exists(path)  # a stale socket file
    code, _, _ = through_server(monkeypatch, store, "pre_grep")
    assert code is None  # answered in process, and a new server is started over the stale socket


def test_turned_off_by_the_environment(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = f"sqlite:///{tmp_path}/s.db"
    start_server(store)
    monkeypatch.setenv("LOOPTRAP_HOOK_SERVER", "0")
    assert through_server(monkeypatch, store, "pre_grep")[0] is None


def test_the_hook_command_uses_the_server(cache: Path, tmp_path: Path) -> None:
    """End to end: `looptrap hook claude-code` as the CLI runs it, with a server up: the same answers."""
    store = f"sqlite:///{tmp_path}/s.db"
    start_server(store)
    env: dict[str, Any] = {**os.environ, "XDG_RUNTIME_DIR": str(cache)}
    cmd = [sys.executable, "-m", "looptrap.cli.main", "hook", "claude-code", "--store", store]
    outs = []
    for name in ["pre_grep_empty", "post_grep_empty"] * 2 + ["pre_grep_empty"]:
        proc = subprocess.run(cmd, input=event(name), capture_output=True, env=env, timeout=60, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout.decode().strip())
    assert outs[:4] == ["", "", "", ""]
    assert json.loads(outs[4])["hookSpecificOutput"]["permissionDecision"] == "deny"
