"""Reports are safe to open and to share: secrets masked wherever a call or a result is shown, CSV cells that
no spreadsheet runs as formulas, report files readable by their owner only (docs/analyze.md, "Safety")."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import need
from looptrap import Guard
from looptrap.core.redact import REDACTED, redact_text

SECRETS = {
    "sk-ant-api03-Zq8vN3xP2mK7wR5tY1uI9oLcVbNmAsDf": '{"api_key": "%s"}',
    "ghp_9fJ2kL4mN6pQ8rS0tU2vW4xY6zA8bC0dE2fG": "git push https://x:%s@github.com/acme/app",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.c2lnbmF0dXJlLWhlcmU": "Authorization: Bearer %s",
    "hunter2-correct-horse": "mysql -u root --password %s -e 'select 1'",
    "s3cr3t-Value-9981": "PGPASSWORD=%s psql -h db",
}


@pytest.mark.parametrize(("secret", "shape"), list(SECRETS.items()))
def test_secrets_are_masked(secret: str, shape: str) -> None:
    shown = redact_text(shape % secret)
    assert secret not in shown
    assert REDACTED in shown


@pytest.mark.parametrize(
    "text",
    ['{"query": "refund policy"}', "the token count went up", 'Read {"file_path": "/src/auth/token.go"}', "ls -la"],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_the_guards_previews_and_summaries_hold_no_secret() -> None:
    guard = Guard(clock=None)
    key = "sk-proj-Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXc"
    args = {"url": "https://api.example.com/v1/charges", "headers": {"Authorization": f"Bearer {key}"}}
    for _ in range(4):
        v = guard.check("http_get", args)
        if v.allowed:
            guard.record("http_get", args, f"401 Unauthorized: bad key {key}", is_error=True)
    assert v.intervenes
    assert key not in v.message
    assert key not in v.summary
    assert all(key not in p for p in guard.state.previews.values())
    assert key not in json.dumps(guard.state.to_dict())


need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)


def _log(path: Path) -> str:
    key = "sk-ant-api03-Zq8vN3xP2mK7wR5tY1uI9oLcVbNmAsDf"
    events: list[dict[str, Any]] = []
    for i in range(5):
        args = {"command": f"curl -H 'x-api-key: {key}' https://api.example.com/status"}
        events.append(
            {
                "session": '=HYPERLINK("http://evil","x")',
                "type": "tool_call",
                "tool": "@bash",
                "args": args,
                "call_id": str(i),
            }
        )
        events.append(
            {
                "session": '=HYPERLINK("http://evil","x")',
                "type": "tool_result",
                "tool": "@bash",
                "call_id": str(i),
                "output": f"401 for key {key}",
                "is_error": True,
            }
        )
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return key


def test_reports_hold_no_secret_no_formula_and_are_private(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    key = _log(log)
    out_csv, out_html = tmp_path / "r.csv", tmp_path / "r.html"
    out_html.write_text("old")
    os.chmod(out_html, 0o644)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "looptrap.cli.main",
            "analyze",
            "--json",
            "--csv",
            str(out_csv),
            "--html",
            str(out_html),
            str(log),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    text = subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", "analyze", str(log)], capture_output=True, text=True
    ).stdout
    for name, shown in (
        ("json", proc.stdout),
        ("csv", out_csv.read_text()),
        ("html", out_html.read_text()),
        ("text", text),
    ):
        assert key not in shown, name
    rows = list(csv.reader(io.StringIO(out_csv.read_text())))
    session = rows[1][0]
    assert session.startswith("'=HYPERLINK")  # text, not a formula
    assert rows[1][rows[0].index("loop_tool")] == "'@bash"
    assert rows[1][rows[0].index("converged")] in ("true", "false")
    for path in (out_csv, out_html):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
