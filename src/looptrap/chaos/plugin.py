"""The pytest plugin, installed with looptrap (entry point ``pytest11``): chaos scenarios as tests.

* ``looptrap_chaos``: a fixture that runs scenarios (``looptrap_chaos.run(agent, tools, faults, guard=...)``,
  ``.matrix(...)``) and keeps their reports for ``--looptrap-report``; ``.wrap(tool, faults)`` wraps one
  tool for a hand-made scenario.
* ``@pytest.mark.looptrap_faults(*faults, tools=None)``: parametrises the test over faults (names or fault
  objects; none: every fault), each on every tool or, with ``tools``, on each of those in turn; the test
  gets the fault as ``looptrap_fault``.
* ``--looptrap-report PATH``: write every scenario's report as JSON when the session ends.

Only pytest and the standard library are imported here: a test run that uses none of it pays nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from looptrap.chaos.fault_matrix import Matrix
    from looptrap.chaos.faults import Fault
    from looptrap.chaos.runner import Report
    from looptrap.chaos.tools import Chaos

__all__ = ["ChaosFixture"]

_REPORTS = pytest.StashKey[list[dict[str, Any]]]()
MARKER = "looptrap_faults"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("looptrap", "looptrap chaos scenarios")
    group.addoption(
        "--looptrap-report",
        metavar="PATH",
        default=None,
        help="write the report of every looptrap chaos scenario run by the tests to PATH, as JSON",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*faults, tools=None): run the test once per looptrap chaos fault (names or Fault objects; "
        "none: every fault), given as the looptrap_fault fixture; with tools=[...], once per fault and tool",
    )
    config.stash[_REPORTS] = []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    if "looptrap_fault" not in metafunc.fixturenames:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: @{MARKER} needs the looptrap_fault argument")
    from looptrap.chaos.faults import resolve

    faults = resolve(marker.args or None)
    tools: Iterable[str] | None = marker.kwargs.get("tools")
    if isinstance(tools, str):
        tools = [tools]
    params: list[Fault] = []
    ids: list[str] = []
    for fault in faults:
        if tools is None:
            params.append(fault)
            ids.append(fault.label)
        else:
            for tool in tools:
                params.append(fault.on(tool))
                ids.append(f"{fault.label}-{tool}")
    metafunc.parametrize("looptrap_fault", params, ids=ids)


@pytest.fixture
def looptrap_fault(request: pytest.FixtureRequest) -> Fault:
    """The fault of this test, from ``@pytest.mark.looptrap_faults``."""
    pytest.fail(f"{request.node.nodeid}: looptrap_fault comes from @pytest.mark.{MARKER}(...)", pytrace=False)


class ChaosFixture:
    """What the ``looptrap_chaos`` fixture gives a test: run scenarios, keep their reports."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self.reports: list[Report] = []

    def run(self, agent: Any, tools: Any, faults: Any = None, **options: Any) -> Report:
        """:func:`looptrap.chaos.run`, its report kept for ``--looptrap-report`` (named after the test)."""
        from looptrap.chaos.runner import run

        options.setdefault("name", self._request.node.nodeid)
        report = run(agent, tools, faults, **options)
        self._keep(report)
        return report

    def matrix(self, agent: Any, tools: Any, faults: Any = None, **options: Any) -> Matrix:
        """:func:`looptrap.chaos.matrix` (printing nothing unless ``output`` is given), every report kept."""
        from looptrap.chaos.fault_matrix import matrix

        options.setdefault("output", None)
        m = matrix(agent, tools, faults, **options)
        for r in [*m.baseline.values(), *m.reports.values()]:
            r.name = f"{self._request.node.nodeid}::{r.name}"
            self._keep(r)
        return m

    def wrap(self, tool: Any, faults: Any = None, **options: Any) -> tuple[Any, Chaos]:
        """``tool`` wrapped with ``faults`` (options as :class:`looptrap.chaos.Chaos`), and its ``Chaos``
        (its ``log``, its counts)."""
        from looptrap.chaos.tools import Chaos

        chaos = Chaos(faults, session=self._request.node.nodeid, **options)
        return chaos.wrap(tool), chaos

    def _keep(self, report: Report) -> None:
        self.reports.append(report)
        entry = report.to_dict()
        entry["test"] = self._request.node.nodeid
        self._request.config.stash[_REPORTS].append(entry)


@pytest.fixture
def looptrap_chaos(request: pytest.FixtureRequest) -> ChaosFixture:
    """Runs looptrap chaos scenarios in a test and keeps their reports (see :class:`ChaosFixture`)."""
    return ChaosFixture(request)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--looptrap-report")
    if not path:
        return
    reports = session.config.stash.get(_REPORTS, [])
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"reports": reports}, indent=2, default=repr) + "\n", encoding="utf-8")
