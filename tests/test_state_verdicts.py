"""The session state's memory of recent interventions (``SessionState.verdicts``): what the guard decided, kept
bounded, across tasks, through JSON and a real SQLite store, and loaded empty from a state saved before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from looptrap import Guard, SessionState
from looptrap.core.state import VERDICTS, Intervention
from looptrap.core.types import Call, Signal
from looptrap.detectors.base import Detector
from looptrap.policies.escalation import Escalation
from looptrap.stores import SQLiteStore


def drive(guard: Guard, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[int, str, str, str, str]]:
    """Each call checked (and recorded when allowed), one per turn: (index, action, kind, reason, tool)."""
    out: list[tuple[int, str, str, str, str]] = []
    for tool, args in calls:
        v = guard.check(tool, args)
        out.append((guard.state.calls, v.action, v.kind or "", v.reason or "", tool))
        if v.allowed:
            guard.record(tool, args, "0 results")
        guard.end_turn()
    return out


def kept(state: SessionState) -> list[tuple[int, str, str, str, str]]:
    return [(v.call_index, v.action, v.kind, v.reason, v.tool) for v in state.verdicts]


def test_every_intervention_is_kept_and_no_allow() -> None:
    guard = Guard(clock=None)
    given = drive(guard, [("read_file", {"path": "a.py"}), *[("search_docs", {"query": "refund"})] * 5])
    interventions = [g for g in given if g[1] != "allow"]
    assert [g[1] for g in interventions] == ["advise", "block", "halt"]
    assert kept(guard.state) == interventions
    digests = {v.digest for v in guard.state.verdicts}
    assert digests == {guard.state.history[-1].digest}  # the looping call's own digest


def test_warnings_are_kept_and_the_memory_is_bounded() -> None:
    guard = Guard(clock=None, escalation=Escalation(warn_only=True))
    given = drive(guard, [("search_docs", {"query": "refund"})] * (VERDICTS + 40))
    warned = [g for g in given if g[1] == "warn"]
    assert len(warned) > VERDICTS
    assert len(guard.state.verdicts) == VERDICTS
    assert kept(guard.state) == warned[-VERDICTS:]


def test_round_trip_new_task_and_a_state_saved_before_the_field() -> None:
    guard = Guard(clock=None)
    drive(guard, [("search_docs", {"query": "refund"})] * 4)
    before = kept(guard.state)
    assert [v[1] for v in before] == ["advise", "block"]
    restored = SessionState.from_dict(orjson.loads(orjson.dumps(guard.state.to_dict())))
    assert list(restored.verdicts) == list(guard.state.verdicts)
    assert restored.verdicts.maxlen == VERDICTS
    guard.new_task()  # repetition memory starts over; what happened to the session stays on show
    guard.user_message("try the FAQ")
    assert kept(guard.state) == before
    assert not guard.state.history
    old = guard.state.to_dict()
    del old["verdicts"]  # a state written before the field, within format version 1
    assert list(SessionState.from_dict(old).verdicts) == []


class Odd(Detector):
    """A custom detector whose kind and reason are long and carry control characters."""

    name = "odd"
    reason = "r" * 300

    def check(self, call: Call, state: SessionState, policy: Any) -> Signal | None:
        return Signal(kind="\x1b[31mkind\n" + "k" * 300, reason=self.reason, message="odd", tool=call.tool)


def test_kind_and_reason_are_capped_and_printable() -> None:
    guard = Guard(clock=None, detectors=(Odd(),))
    assert guard.check("tool", {}).action == "advise"
    (v,) = guard.state.verdicts
    assert isinstance(v, Intervention)
    assert len(v.kind) <= 64
    assert len(v.reason) <= 64
    assert v.kind.isprintable()
    assert v.reason.isprintable()
    assert v.kind.startswith("kind k")


def test_kept_in_a_real_sqlite_store(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        guard = Guard(store=store, session="looping", clock=None)
        given = drive(guard, [("search_docs", {"query": "refund"})] * 5)
        snap = store.load("looping")
        assert snap is not None
        interventions = [g for g in given if g[1] != "allow"]
        assert kept(snap.state) == interventions
        again = Guard(store=store, session="looping", clock=None)  # another guard on the same session
        assert again.check("search_docs", {"query": "refund"}).action == "halt"
        snap = store.load("looping")
        assert snap is not None
        assert kept(snap.state) == interventions  # calls refused because the run is halted are not kept one by one
    finally:
        store.close()
