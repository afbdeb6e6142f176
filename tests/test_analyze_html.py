"""The HTML report in a real browser (Debian's Chromium, headless): it renders with no console message at
all (no error, no warning), its script runs, and it shows the charts and the numbers of the analysis.
Skipped where Chromium is not installed, failed in CI (``.ci/run`` installs it)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import need
from fleet import write_fleet
from looptrap.analysis.analyze import analyze
from looptrap.analysis.analyze.render_html import render_html

need("the analyze extra (pip install 'looptrap[analyze]')", importlib.util.find_spec("duckdb") is not None)


def chromium() -> str:
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    need("Chromium (apt-get install chromium)", found is not None)
    assert found is not None
    return found


def browse(page: Path, *extra: str) -> tuple[str, str]:
    """The DOM after the page's scripts ran, and Chromium's log (console messages included)."""
    proc = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={page.parent / 'profile'}",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    d = tmp_path_factory.mktemp("html")
    log = d / "fleet.jsonl"
    write_fleet(log, 4000, seed=5)
    report = analyze([str(log)])
    page = d / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    return page, report


def test_report_renders_without_console_messages(report_page: tuple[Path, object]) -> None:
    page, report = report_page
    dom, log = browse(page, "--dump-dom")
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    assert 'data-rendered="yes"' in dom  # the script ran to its end
    assert re.search(r'<pre id="js-errors">\s*</pre>', dom)
    charts = int(re.search(r'data-charts="(\d+)"', dom).group(1))  # type: ignore[union-attr]
    assert charts >= 5
    for chart in ("chart-calls", "timeline-0", "chart-tools", "chart-shapes", "table-sessions"):
        assert f'id="{chart}"' in dom, chart
    fleet = report.fleet  # type: ignore[attr-defined]
    assert f'data-sessions="{fleet["sessions"]}"' in dom
    assert f"<b>{fleet['sessions']:,}</b><span>sessions</span>" in dom
    assert f"<b>{fleet['loops']['sessions']:,}</b><span>sessions with a loop</span>" in dom
    assert f"<b>{fleet['tool_calls']:,}</b><span>tool calls</span>" in dom
    assert "pathological-0" in dom
    assert "outliers above" in dom
    assert 'class="dot outlier"' in dom
    assert 'class="stale-band"' in dom


def test_report_screenshot(report_page: tuple[Path, object]) -> None:
    page, _ = report_page
    shot = page.parent / "shot.png"
    browse(page, f"--screenshot={shot}", "--window-size=1000,1400", "--hide-scrollbars")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000


HOSTILE_TOOL = "search</p><script>document.body.setAttribute('data-pwned','tool')</script>"
HOSTILE_SESSION = "<img src=x onerror=\"document.body.setAttribute('data-pwned','session')\">"


def test_hostile_names_are_text_not_markup(tmp_path: Path) -> None:
    """A looping tool or a session named with markup: shown as text, nothing of it runs (and the page's
    strict content security policy would refuse it if the escaping missed)."""
    import json

    events = []
    for i in range(6):
        events.append(
            {
                "session": HOSTILE_SESSION,
                "type": "tool_call",
                "tool": HOSTILE_TOOL,
                "args": {"q": "a"},
                "call_id": str(i),
            }
        )
        events.append(
            {
                "session": HOSTILE_SESSION,
                "type": "tool_result",
                "tool": HOSTILE_TOOL,
                "call_id": str(i),
                "output": "0 results",
            }
        )
    log = tmp_path / "hostile.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    page = tmp_path / "report.html"
    report = analyze([str(log)])
    assert report.sessions[0].loop is not None  # it is in the timeline and the table, with its tool named
    html_text = render_html(report)
    assert "<script>document" not in html_text
    assert 'http-equiv="Content-Security-Policy"' in html_text
    page.write_text(html_text, encoding="utf-8")
    dom, log_text = browse(page, "--dump-dom")
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]
    assert [line for line in log_text.splitlines() if ":CONSOLE" in line] == []
    assert 'data-rendered="yes"' in dom
    assert "search&lt;/p&gt;&lt;script&gt;" in dom
