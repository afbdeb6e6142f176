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
    return resident.server_key("claude-code", store, None, False, None)


def start_server(store: str, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    path = resident.socket_path(key(store))
    assert path is not None
    args = [sys.executable, "-m", "looptrap.integrations.hooks.server", "--socket", path, "--cli", "claude-code"]
    env = {**os.environ, "LOOPTRAP_HOOK_STORE": store}
    proc = subprocess.Popen([*args, "--project-config", "", *extra], env=env)
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
        answer = run_hook(PROTOCOLS["claude-code"](), event(name), store_url=direct)
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


# -- the caller's paths, the README's loop, secrets, replaced files ----------------------------------------------
ROOT = Path(__file__).resolve().parent.parent


def readme_hook_loop() -> str:
    """The README's hook loop, as written there (from ``for`` to ``looptrap sessions show``)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("for i in 1 2 3; do")
    end = text.index("\n", text.index("looptrap sessions show", start))
    return text[start:end]


def run_in(folder: Path, script: str, cache: Path) -> subprocess.CompletedProcess[str]:
    """Run a shell script in ``folder`` as a user would, `looptrap` on the PATH, the server on."""
    shims = folder.parent / f"{folder.name}-bin"
    shims.mkdir(exist_ok=True)
    shim = shims / "looptrap"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m looptrap "$@"\n')
    shim.chmod(0o755)
    (folder / "examples").mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "examples" / "hooks", folder / "examples" / "hooks", dirs_exist_ok=True)
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(cache)}
    env.pop("LOOPTRAP_HOOK_SERVER", None)
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=folder, env=env, timeout=120)


def test_the_readmes_hook_loop_with_the_server_on(cache: Path, tmp_path: Path) -> None:
    """`--store sqlite://demo.db` is the caller's file: every event, through the server or not, goes there."""
    project = tmp_path / "project"
    project.mkdir()
    done = run_in(project, readme_hook_loop(), cache)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert '"permissionDecision":"deny"' in done.stdout  # the third call, refused
    assert "calls     3 in" in done.stdout  # two calls ran and the third was refused: all in the caller's demo.db
    assert "#2  Grep" in done.stdout
    assert (project / "demo.db").exists()
    assert _server_pids(cache), "no resident server answered"
    assert not list(cache.rglob("demo.db"))


def test_two_projects_with_the_same_relative_store_keep_their_own(cache: Path, tmp_path: Path) -> None:
    shown = []
    for name in ("one", "two"):
        project = tmp_path / name
        project.mkdir()
        done = run_in(project, readme_hook_loop(), cache)
        assert done.returncode == 0, done.stderr
        shown.append(done.stdout)
    assert all("calls     3 in" in out for out in shown)  # not 6 in one shared file
    assert len(list((cache / "looptrap").glob("hook-*.sock"))) == 2


def test_a_relative_config_file_is_the_callers(cache: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "rel.toml").write_text("[detectors.repeat]\nthreshold = 2\n")
    script = readme_hook_loop().replace("--store sqlite://demo.db", "--store sqlite://demo.db --config rel.toml")
    done = run_in(project, script, cache)
    assert done.returncode == 0, done.stderr
    assert "ConfigError" not in done.stderr
    assert done.stderr == ""
    assert "2 times in a row" in done.stdout  # the named file's threshold, on the second call
    assert "calls     2 in" in done.stdout


def test_a_users_file_written_later_applies_to_the_next_event(cache: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    first = run_in(project, readme_hook_loop(), cache)
    assert '"permissionDecision":"deny"' in first.stdout
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "looptrap" / "looptrap.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[tools.Grep]\nexempt = true\n")
    again = run_in(project, readme_hook_loop().replace("demo.db", "demo2.db"), cache)
    assert again.returncode == 0, again.stderr
    assert "deny" not in again.stdout  # exempt: the user's file, read by a server of its own


def test_the_store_password_is_not_on_a_command_line(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = "redis://looptrap:s3cret-pw@127.0.0.1:1/0"
    assert through_server(monkeypatch, store, "pre_grep")[0] is None  # answered in process; a server started
    path = resident.socket_path(key(store))
    assert path is not None
    deadline = time.monotonic() + 20
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "no server was started"
        time.sleep(0.05)
    pids = _server_pids(cache)
    assert pids
    for pid in pids:
        assert b"s3cret-pw" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        assert stat.S_IMODE(os.stat(f"/proc/{pid}/environ").st_mode) & 0o077 == 0  # the user's only


def test_a_deleted_sqlite_file_is_reopened(cache: Path, tmp_path: Path) -> None:
    """The server does not go on writing to a file no other command sees: a halted session is gone with it."""
    project = tmp_path / "project"
    project.mkdir()
    done = run_in(project, readme_hook_loop(), cache)
    assert '"permissionDecision":"deny"' in done.stdout
    assert _server_pids(cache)
    for suffix in ("", "-wal", "-shm"):
        (project / f"demo.db{suffix}").unlink(missing_ok=True)
    again = run_in(project, readme_hook_loop(), cache)
    assert again.returncode == 0, again.stderr
    assert "calls     3 in" in again.stdout  # a fresh file, found by `sessions show`, with this run's calls
    assert (project / "demo.db").exists()


def test_an_event_too_large_for_the_server_is_answered_in_process(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path}/s.db"
    start_server(store)
    assert through_server(monkeypatch, store, "pre_grep")[0] is not None  # the server answers an ordinary event
    monkeypatch.setattr(resident, "MAX_EVENT", len(event("pre_grep")) - 1)
    assert through_server(monkeypatch, store, "pre_grep")[0] is None  # this process applies it, as without a server
