"""``looptrap sessions list|show|reset --store URL``, run as a real command against SQLite and Redis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from looptrap import Guard
from looptrap.stores import open_store


def looptrap(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", *args], capture_output=True, text=True, timeout=60, env=env
    )


def loop_in(url: str, session: str) -> None:
    store = open_store(url)
    guard = Guard(store=store, session=session)
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
    assert lines[-1] == "2 session(s)"

    as_json = [json.loads(ln) for ln in looptrap("sessions", "list", "--json", "--store", url).stdout.splitlines()]
    assert {r["session"]: (r["calls"], r["level"]) for r in as_json} == {"conv-1": (3, 1), "conv-2": (3, 1)}

    shown = looptrap("sessions", "show", "conv-1", "--store", url)
    assert shown.returncode == 0
    assert "calls     3 in 1 turn(s)" in shown.stdout
    assert 'search_docs {"query":"refund policy"}' in shown.stdout
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


def test_bad_store_urls_and_dead_stores_are_clear_errors(tmp_path: Path) -> None:
    bad = looptrap("sessions", "list", "--store", "postgres://x")
    assert bad.returncode == 2
    assert "unknown store URL scheme" in bad.stderr
    dead = looptrap("sessions", "list", "--store", "redis://127.0.0.1:1/0")
    assert dead.returncode == 2
    assert "Redis store" in dead.stderr
    assert "Traceback" not in dead.stderr
