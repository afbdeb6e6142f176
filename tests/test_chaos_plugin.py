"""The pytest plugin that comes with looptrap, run the way a team runs it: pytest in a subprocess (pytester)
collecting the recipe of docs/chaos.md against the example agent, with ``--looptrap-report``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


RECIPE = ROOT / "examples" / "test_agent_chaos.py"
#: A scenario that fails: the example agent without a guard, under an empty result, cut off at 6 calls.
UNGUARDED = """
import pytest
from looptrap.chaos import Slow, assert_terminates
from chaos_agent import TOOLS, agent


@pytest.mark.looptrap_faults("empty", Slow(seconds=0.001))
def test_the_agent_without_a_guard(looptrap_chaos, looptrap_fault):
    report = looptrap_chaos.run(agent, TOOLS, looptrap_fault, max_calls=6)
    assert_terminates(report, within_calls=5)


def test_wrap(looptrap_chaos):
    tool, chaos = looptrap_chaos.wrap(TOOLS[0], "empty")
    assert tool(order_id="A-1042") == "[]"
    assert [r.result_kind for r in chaos.log] == ["empty"]


def test_no_marker(looptrap_fault):
    pass
"""


def page_block(after: str, lang: str) -> str:
    """The first ``lang`` code block of docs/chaos.md after the text ``after``."""
    page = (ROOT / "docs" / "chaos.md").read_text(encoding="utf-8")
    return page.split(after, 1)[1].split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def test_the_docs_recipe_is_the_example_file() -> None:
    assert page_block("A recipe for your own agent", "python") == RECIPE.read_text(encoding="utf-8")


def test_the_recipe_runs_every_fault_on_every_tool_and_writes_the_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # only looptrap's plugin, loaded by its entry point's name (the other plugins of this environment take
    # seconds to start and are not under test)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(chaos_agent=(ROOT / "examples" / "chaos_agent.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_agent_chaos=RECIPE.read_text(encoding="utf-8"))
    pytester.makepyfile(test_unguarded=UNGUARDED)
    report_path = pytester.path / "out" / "chaos-report.json"
    result = pytester.runpytest_subprocess(
        "-p", "looptrap", "-p", "no:cacheprovider", "--strict-markers", "--looptrap-report", str(report_path)
    )
    result.assert_outcomes(passed=25, failed=1, errors=1)
    text = result.stdout.str()
    # the failure shows how the unguarded run ended and its call sequence, as docs/chaos.md shows it
    shown = page_block("A failure shows how the", "text").splitlines()
    assert shown[-1] == "..."
    at = text.index(shown[0])
    got = text[at:].splitlines()[: len(shown) - 1]
    seconds = re.compile(r"after \d+\.\d\d s")
    assert [seconds.sub("after 0.00 s", line) for line in got] == shown[:-1]
    assert "looptrap_fault comes from @pytest.mark.looptrap_faults" in text  # the fixture without the marker
    data = json.loads(report_path.read_text(encoding="utf-8"))
    tests = [r["test"] for r in data["reports"]]
    assert len(tests) == 25  # 22 fault x tool cells, the healthy run, the two unguarded runs
    assert [t for t in tests if "stops_under_every_fault" in t][:2] == [
        "test_agent_chaos.py::test_the_agent_stops_under_every_fault[empty-get_order]",
        "test_agent_chaos.py::test_the_agent_stops_under_every_fault[empty-search_docs]",
    ]
    first = data["reports"][0]
    assert (first["outcome"], first["reason"], first["faults"]) == ("halted", "reported_blocked", "empty on get_order")
    assert first["log"][0]["result_kind"] == "empty"
    assert all(r["terminated"] for r in data["reports"] if "stops_under_every_fault" in r["test"])
    unguarded = [r for r in data["reports"] if r["test"].startswith("test_unguarded.py")]
    assert [(r["outcome"], r["calls"]) for r in unguarded] == [("ceiling", 6), ("finished", 2)]


def test_the_plugin_is_installed_with_the_package(request: pytest.FixtureRequest) -> None:
    from importlib.metadata import entry_points

    [plugin] = [e for e in entry_points(group="pytest11") if e.name == "looptrap"]
    assert plugin.value == "looptrap.chaos.plugin"
    # this very test run loaded it (autoloaded, as in any project with looptrap installed)
    assert request.config.pluginmanager.has_plugin("looptrap")
    assert any(m.startswith("looptrap_faults(") for m in request.config.getini("markers"))
