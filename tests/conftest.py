"""Shared fixtures: a real ``redis-server`` on a free loopback port, started and stopped by the tests."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

IN_CI = bool(os.environ.get("CI"))


@pytest.fixture(autouse=True)
def _no_resident_hook_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hook processes started by the tests answer in process: a resident server would outlive the test
    (tests/test_hook_server.py starts, checks and stops its own)."""
    monkeypatch.setenv("LOOPTRAP_HOOK_SERVER", "0")


@pytest.fixture(autouse=True)
def _no_user_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The configuration of whoever runs the tests stays out of them: the user's own file is looked for in
    an empty folder, and no file is named by the environment."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    monkeypatch.delenv("LOOPTRAP_CONFIG", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)  # the commands' text is 80 columns wide off a terminal


# Extras kept out of `all` because their pins conflict with it (pyproject.toml), by the package they install:
# CI tests them in an environment of their own, made for the extras that LOOPTRAP_EXTRAS lists (.ci/run).
SEPARATE_EXTRAS = {"crewai": "crewai", "strands": "strands"}


def need(what: str, available: bool, extra: str | None = None) -> None:
    """Skip a test whose real part is missing here, but fail in CI, where everything must run (an extra kept
    out of `all` must run in the CI environment made for it)."""
    if not available:
        separate = extra in SEPARATE_EXTRAS.values()
        if IN_CI and (not separate or extra in os.environ.get("LOOPTRAP_EXTRAS", "").split(",")):
            pytest.fail(f"{what} is required in CI")
        pytest.skip(f"{what} is not installed", allow_module_level=True)


def read_clean(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The records an importer reads from ``path`` in format ``fmt``, none of them skipped."""
    from looptrap.analysis.analyze import ImportOptions, Problems, read_records

    problems = Problems()
    out = list(read_records(str(path), fmt, str(path), problems, ImportOptions()))
    assert problems.count == 0, problems.first
    return out


def token_price(model: str, given: int, read: int, write: int, out: int) -> float:
    """What the maintained price table says a model turn costs (its prices move: tests check which tokens are
    priced how, not the prices)."""
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=given, cache_read_tokens=read, cache_write_tokens=write, output_tokens=out)
    return float(calc_price(usage, model).total_price)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A throwaway redis-server on loopback (no persistence), which tests may stop and start again."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture
def own_event_loop() -> Iterator[None]:
    """A thread default event loop for this test alone, closed after it. Frameworks' ``run_sync`` runs on the
    thread's default loop and leaves it open on purpose; unclosed, its ResourceWarning fails the session."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    need("redis-server", shutil.which("redis-server") is not None)
    need("the redis package (pip install 'looptrap[redis]')", importlib.util.find_spec("redis") is not None)
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    import redis

    if redis_server.proc is None:
        redis_server.start()
    redis.Redis.from_url(redis_server.url).flushall()
    return redis_server.url


@pytest.fixture(scope="session")
def secure_redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server that wants a password and speaks only TLS (a self-signed certificate made here):
    the ``rediss://:password@host:port/db`` form of URL, as a managed Redis service gives it."""
    need("redis-server", shutil.which("redis-server") is not None)
    need("openssl", shutil.which("openssl") is not None)
    need("the redis package (pip install 'looptrap[redis]')", importlib.util.find_spec("redis") is not None)
    d = tmp_path_factory.mktemp("redis-tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(d / "key.pem"),
            "-out",
            str(d / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            "0",
            "--tls-port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--requirepass",
            "s3cret",
            "--tls-cert-file",
            str(d / "cert.pem"),
            "--tls-key-file",
            str(d / "key.pem"),
            "--tls-ca-cert-file",
            str(d / "cert.pem"),
            "--tls-auth-clients",
            "no",
            "--dir",
            str(d),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"rediss://:s3cret@127.0.0.1:{port}/0?ssl_ca_certs={d / 'cert.pem'}"
    proc.kill()
    proc.wait()
