"""``looptrap sessions list|show|reset --store URL``, run as a real command against SQLite and Redis."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from looptrap import Guard
from looptrap.core.state import Entry
from looptrap.stores import open_store


def looptrap(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", *args], capture_output=True, text=True, timeout=60, env=env
    )


def loop_in(url: str, session: str) -> None:
    store = open_store(url)
    guard = Guard(store=store, session=session, previews=True)  # previews shown by `show` (opt-in)
    for _ in range(3):
        v = guard.check("search_docs", {"query": "refund policy"})
        if v.allowed:
            guard.record("search_docs", {"query": "refund policy"}, "0 results")
    guard.end_turn()
    store.close()


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/sessions.db"
    return str(request.getfixturevalue("redis_url"))


def test_list_show_reset(url: str) -> None:
    loop_in(url, "conv-1")
    loop_in(url, "conv-2")
    listed = looptrap("sessions", "list", "--store", url)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["session", "calls", "turns", "level", "halted", "updated"]
    assert {ln.split()[0] for ln in lines[1:3]} == {"conv-1", "conv-2"}
    assert lines[-1] == "2 sessions"

    as_json = [json.loads(ln) for ln in looptrap("sessions", "list", "--json", "--store", url).stdout.splitlines()]
    assert {r["session"]: (r["calls"], r["level"]) for r in as_json} == {"conv-1": (3, 1), "conv-2": (3, 1)}

    shown = looptrap("sessions", "show", "conv-1", "--store", url)
    assert shown.returncode == 0
    assert "calls     3 in 1 turn," in shown.stdout
    assert 'search_docs {"query":"refund policy"}' in shown.stdout
    assert "interventions (oldest first):\n  #3 advise repeat (loop_repeat) on search_docs\n" in shown.stdout
    full = json.loads(looptrap("sessions", "show", "conv-1", "--json", "--store", url).stdout)
    assert full["session"] == "conv-1"
    assert full["version"] == 1
    assert full["per_tool"] == {"search_docs": 3}

    reset = looptrap("sessions", "reset", "conv-1", "--store", url)
    assert (reset.returncode, reset.stdout) == (0, "reset session conv-1\n")
    again = looptrap("sessions", "reset", "conv-1", "--store", url)
    assert again.returncode == 1
    assert "no session 'conv-1'" in again.stderr
    assert looptrap("sessions", "show", "conv-1", "--store", url).returncode == 1
    assert looptrap("sessions", "list", "--json", "--store", url).stdout.count("\n") == 1


def test_the_store_comes_from_the_environment(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/env.db"
    loop_in(url, "from-env")
    env = {"LOOPTRAP_STORE": url, "PATH": "", "HOME": str(tmp_path)}
    out = looptrap("sessions", "list", env=env)
    assert out.returncode == 0, out.stderr
    assert "from-env" in out.stdout


def test_the_store_comes_from_the_configuration_file(tmp_path: Path) -> None:
    """The hooks' order: --store, then $LOOPTRAP_STORE, then the configuration's store (the user's own file,
    or a named one: a project's file cannot redirect the sessions)."""
    url = f"sqlite:///{tmp_path}/configured.db"
    loop_in(url, "from-config")
    (tmp_path / "looptrap.toml").write_text(f'store = "{url}"\n')
    env = {"PATH": "", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def listed() -> str:
        found = subprocess.run(
            [sys.executable, "-m", "looptrap.cli.main", "sessions", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=tmp_path,
        )
        assert found.returncode == 0, found.stderr
        return found.stdout

    assert "from-config" not in listed()  # the project's store is not applied
    (tmp_path / ".config" / "looptrap").mkdir(parents=True)
    (tmp_path / ".config" / "looptrap" / "looptrap.toml").write_text(f'store = "{url}"\n')
    assert "from-config" in listed()  # the user's own file, in ~/.config
    named = looptrap("sessions", "show", "from-config", "--config", str(tmp_path / "looptrap.toml"), env=env)
    assert named.returncode == 0, named.stderr
    other = f"sqlite:///{tmp_path}/other.db"
    assert (
        "from-config"
        not in looptrap("sessions", "list", "--store", other, "--config", str(tmp_path / "looptrap.toml")).stdout
    )
    (tmp_path / "bad.toml").write_text("store = 3\n")
    bad = looptrap("sessions", "list", "--config", str(tmp_path / "bad.toml"), env=env)
    assert bad.returncode == 2
    assert "bad.toml:1" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "cache").exists()  # listing the default store does not create it


def test_bad_store_urls_and_dead_stores_are_clear_errors(tmp_path: Path) -> None:
    bad = looptrap("sessions", "list", "--store", "postgres://x")
    assert bad.returncode == 2
    assert "unknown store URL scheme" in bad.stderr
    dead = looptrap("sessions", "list", "--store", "redis://127.0.0.1:1/0")
    assert dead.returncode == 2
    assert "Redis store" in dead.stderr
    assert "Traceback" not in dead.stderr


# -- reading creates nothing ---------------------------------------------------------------------------------
def test_read_only_commands_create_no_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/nonexistent/dir/x.db"
    listed = looptrap("sessions", "list", "--store", url)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1] == "0 sessions"
    assert "no store at" in listed.stderr
    assert looptrap("sessions", "list", "--json", "--store", url).stdout == ""
    assert looptrap("sessions", "show", "s1", "--store", url).returncode == 1
    assert looptrap("sessions", "reset", "s1", "--store", url).returncode == 1
    assert not (tmp_path / "nonexistent").exists()
    env = {"PATH": "", "HOME": str(tmp_path / "home")}  # the default store, in the user's cache folder
    assert looptrap("sessions", "list", env=env).returncode == 0
    assert looptrap("sessions", "show", "s1", env=env).returncode == 1
    assert not (tmp_path / "home").exists()


# -- one unreadable session does not hide the others ---------------------------------------------------------
def spoil(url: str, session: str, corrupt: bool) -> None:
    store = open_store(url)

    def from_the_future(state: Any) -> None:
        state.version = 99

    store.update(session, from_the_future)
    if corrupt and url.startswith("sqlite"):
        with sqlite3.connect(url[len("sqlite://") :]) as db:
            db.execute("UPDATE looptrap_sessions SET state = ? WHERE session = ?", (b"{not json", session))
    elif corrupt:
        import redis

        redis.Redis.from_url(url).set(f"looptrap:{{{session}}}:data", b"{not json")
    store.close()


def test_an_unreadable_session_is_listed_as_unreadable(url: str) -> None:
    loop_in(url, "conv-1")
    spoil(url, "corrupt", corrupt=True)
    spoil(url, "future", corrupt=False)
    listed = looptrap("sessions", "list", "--store", url)
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    rows = {ln.split()[0]: ln.split() for ln in listed.stdout.splitlines()[1:4]}
    assert set(rows) == {"conv-1", "corrupt", "future"}
    assert rows["corrupt"][4] == rows["future"][4] == "UNREADABLE"
    assert listed.stdout.splitlines()[-1].startswith("3 sessions, 2 unreadable")
    as_json = {
        r["session"]: r
        for r in map(json.loads, looptrap("sessions", "list", "--json", "--store", url).stdout.splitlines())
    }
    assert "error" not in as_json["conv-1"]
    assert "format version 99" in as_json["future"]["error"]
    shown = looptrap("sessions", "show", "corrupt", "--store", url)
    assert shown.returncode == 2
    assert "cannot be read" in shown.stderr
    assert "looptrap sessions reset corrupt --store" in shown.stderr
    assert "Traceback" not in shown.stderr
    assert looptrap("sessions", "reset", "corrupt", "--store", url).returncode == 0
    assert looptrap("sessions", "show", "corrupt", "--store", url).returncode == 1


def test_a_hook_meeting_an_unreadable_session_allows_the_call_and_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/hook.db"
    spoil(url, "sess-1", corrupt=True)
    event = {
        "session_id": "sess-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
    proc = subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", "hook", "claude-code", "--store", url],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert proc.stdout == ""
    assert "store" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- what is shown is printable ------------------------------------------------------------------------------
EVIL = "evil\x1b]0;pwned\x07\x1b[2J\r\nfake  9  9  9  -  now\x9b31m\u202e"


def test_everything_shown_is_printable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/evil.db"
    store = open_store(url)

    def written_by_an_older_release(state: Any) -> None:  # raw text straight into the state
        state.calls = 1
        state.run_id = EVIL
        state.per_tool = {EVIL: 1}
        state.needed = [EVIL]
        state.halted = {"reason": EVIL, "message": EVIL}
        state.previews = {1: EVIL}
        state.history.append(Entry(1, EVIL, 0, 0, 1))

    store.update(EVIL, written_by_an_older_release)
    store.close()
    listed = looptrap("sessions", "list", "--store", url)
    shown = looptrap("sessions", "show", EVIL, "--store", url)
    as_json = looptrap("sessions", "show", EVIL, "--json", "--store", url)
    listed_json = looptrap("sessions", "list", "--json", "--store", url)
    for proc in (listed, shown, as_json, listed_json):
        assert proc.returncode == 0, proc.stderr
        assert not any(c in proc.stdout for c in "\x1b\x07\r\x9b\u202e"), repr(proc.stdout)
    assert len(listed.stdout.splitlines()) == 5  # the header, one row, a blank line, the legend, the count
    assert not any(ln.startswith("fake") for out in (listed, shown) for ln in out.stdout.splitlines())
    assert json.loads(as_json.stdout)["run_id"] == EVIL  # JSON keeps the exact text, escaped
    assert json.loads(listed_json.stdout)["session"] == EVIL
    reset = looptrap("sessions", "reset", EVIL, "--store", url)
    assert reset.returncode == 0
    assert "\x1b" not in reset.stdout


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/many.db"
    store = open_store(url)
    for i in range(3000):
        store.update(f"session-{i:05d}-" + "x" * 30, lambda s: None)
    store.close()
    for extra in ((), ("--json",)):
        with subprocess.Popen(
            [sys.executable, "-m", "looptrap.cli.main", "sessions", "list", *extra, "--store", url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            assert proc.stdout is not None
            assert proc.stderr is not None
            proc.stdout.readline()
            proc.stdout.close()  # `| head -1`
            err = proc.stderr.read().decode()
            proc.wait(60)
        assert "Traceback" not in err
        assert "BrokenPipe" not in err


# -- passwords never reach the terminal ----------------------------------------------------------------------
def test_no_output_holds_the_redis_password(secure_redis_url: str, tmp_path: Path) -> None:
    host = secure_redis_url.split("@", 1)[1]
    query_form = f"rediss://{host}&password=s3cret"
    runs = [
        looptrap("sessions", "show", "missing", "--store", secure_redis_url),
        looptrap("sessions", "reset", "missing", "--store", secure_redis_url),
        looptrap("sessions", "show", "missing", "--store", query_form),
        looptrap("sessions", "list", "--store", secure_redis_url + "&ttl=soon"),
        looptrap("sessions", "list", "--store", secure_redis_url + "&bogus_option=1"),
        looptrap("sessions", "list", "--store", query_form + "&ttl=-1"),
        looptrap("sessions", "list", "--store", secure_redis_url.replace("s3cret", "s3cret-but-wrong")),
        looptrap("sessions", "show", "missing", env={**os.environ, "LOOPTRAP_STORE": secure_redis_url}),
        looptrap("sessions", "list", env={**os.environ, "LOOPTRAP_STORE": query_form + "&ttl=nan"}),
    ]
    assert [r.returncode for r in runs] == [1, 1, 1, 2, 2, 2, 2, 1, 2]
    event = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}})
    for store in (secure_redis_url + "&ttl=-1", query_form + "&bogus=1", secure_redis_url.replace("s3cret", "nope")):
        for args in (["--store", store], ["--store", store, "--fail-closed"]):
            runs.append(
                subprocess.run(
                    [sys.executable, "-m", "looptrap.cli.main", "hook", "claude-code", *args],
                    input=event,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
            )
    for r in runs:
        assert "s3cret" not in r.stdout + r.stderr, r.stdout + r.stderr
        assert "nope" not in r.stdout + r.stderr
        assert "Traceback" not in r.stderr
    assert "no session 'missing' in rediss://:***@127.0.0.1" in runs[0].stderr
    assert "password=***" in runs[2].stderr


# -- the hooks' default store is private and keeps no arguments -----------------------------------------------
def test_the_default_store_is_private_and_keeps_digests(tmp_path: Path) -> None:
    import stat

    token = "sk-LEAKED-e5f6a7b8"
    home = tmp_path / "home"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    pre = {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"curl -H 'Authorization: Bearer {token}' https://api.example.com"},
    }
    post = {**pre, "hook_event_name": "PostToolUseFailure", "error": f"401: token {token} is not valid"}
    for event in (pre, post):
        proc = subprocess.run(
            [sys.executable, "-m", "looptrap.cli.main", "hook", "claude-code"],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            umask=0o022,
        )
        assert proc.returncode == 0, proc.stderr
    folder = home / ".cache" / "looptrap"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = [p for p in folder.iterdir()]
    assert any(p.name == "sessions.db" for p in files)
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        assert token.encode() not in p.read_bytes()
    shown = looptrap("sessions", "show", "s", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "Bash" in shown.stdout
