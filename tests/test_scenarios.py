"""The labelled scenario corpus: every trace in tests/scenarios/ replayed with the default configuration.

The first event of each trace carries ``expect``: the first intervention (kind, action, call index) or
``null``, worked out from docs/detectors.md (see tests/scenarios/_make.py). A scenario with a ``known_issue``
is a case where the implementation disagrees with the documented semantics: it is a strict xfail, so a fix
shows up as an XPASS failure and the ``known_issue`` can then be removed from the trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from looptrap.analysis import iter_events, replay

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.jsonl"))
KINDS = {"repeat", "error_repeat", "cycle", "edit_loop", "drift", "rate", "no_progress", "no_action", "repeated_text"}


def expectation(path: Path) -> dict[str, Any]:
    """The ``expect`` object of a trace's first event line."""
    with path.open("rb") as f:
        first = json.loads(f.readline())
    expect = first.get("expect")
    assert isinstance(expect, dict), f"{path.name}: the first event has no 'expect' object"
    return expect


def _cases() -> list[Any]:
    cases = []
    for path in FILES:
        issue = expectation(path).get("known_issue")
        marks = [pytest.mark.xfail(reason=str(issue), strict=True)] if issue else []
        cases.append(pytest.param(path, id=path.stem, marks=marks))
    return cases


@pytest.mark.parametrize("path", _cases())
def test_first_intervention(path: Path) -> None:
    want = expectation(path)["first_intervention"]
    reports = replay(iter_events(str(path)))
    assert len(reports) == 1, f"{path.name}: one session per file, got {len(reports)}"
    got = reports[0].first_intervention
    if want is None:
        assert got is None, f"unexpected intervention: {got}"
        return
    assert got is not None, f"expected {want}, the guard never intervened"
    assert {k: got[k] for k in ("kind", "action", "call_index")} == want, got["message"]
    assert got["call_index"] <= expectation(path)["latest"]


@pytest.mark.parametrize("path", [c for c in _cases() if "halt" in expectation(c.values[0])])
def test_halt(path: Path) -> None:
    """Scenarios about halting say at which call the run is halted (``null``: never)."""
    (report,) = replay(iter_events(str(path)))
    got = None if report.halted_at is None else report.halted_at["call_index"]
    assert got == expectation(path)["halt"], report.signals


def test_corpus_size_and_labels() -> None:
    assert len(FILES) >= 50
    labels = {expectation(p)["label"] for p in FILES}
    assert labels == {"loop", "healthy"}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_expectation_is_well_formed(path: Path) -> None:
    e = expectation(path)
    assert e["label"] in ("loop", "healthy")
    assert isinstance(e.get("description"), str)
    assert e["description"]
    want = e["first_intervention"]
    if e["label"] == "healthy":
        assert want is None
        assert e["onset"] is None
        return
    assert isinstance(e["onset"], int)
    assert e["onset"] >= 1
    assert isinstance(e["latest"], int)
    assert e["latest"] >= e["onset"]
    if "halt" in e:
        assert e["halt"] is None or (isinstance(e["halt"], int) and e["halt"] >= e["onset"])
    if want is not None:  # a loop may be a documented blind spot (expected: no intervention)
        assert set(want) == {"kind", "action", "call_index"}
        assert want["kind"] in KINDS
        assert want["action"] == "advise"
        assert want["call_index"] >= e["onset"], "a loop's expected intervention cannot precede its onset"
