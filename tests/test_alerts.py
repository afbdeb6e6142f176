"""Alert rules: warn-only signals that never change what the detectors decide; the defaults of the issue."""

from __future__ import annotations

from pathlib import Path

import pytest

from looptrap import Guard, GuardConfig
from looptrap.analysis import iter_events, replay
from looptrap.config_file import ConfigError, dump, load
from looptrap.detectors import default_detectors
from looptrap.observe import Callbacks, CallsPerSession, NothingNew, Overtime, RepeatShare, default_alerts
from looptrap.testing.helpers import FakeClock, step

SCENARIOS = sorted((Path(__file__).resolve().parent / "scenarios").glob("*.jsonl"))


def alerts_of(verdicts: list[object]) -> list[tuple[int, str]]:
    return [(i, s.reason) for i, v in enumerate(verdicts, 1) for s in v.signals if s.kind == "alert"]  # type: ignore[attr-defined]


def test_off_by_default() -> None:
    assert not any(
        d.name in ("calls_per_session", "repeat_share", "overtime", "nothing_new") for d in GuardConfig().detectors
    )


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_alerts_change_no_decision_of_the_detectors(path: Path) -> None:
    """Every scenario of the corpus, with hair-trigger alerts on: the same interventions, the same halts;
    only warnings of kind ``alert`` are added."""
    touchy = GuardConfig(
        detectors=(
            *default_detectors(),
            *default_alerts(calls=3, repeat_window=4, stale_steps=1, expected_seconds=0.001),
        )
    )
    (plain,) = replay(iter_events(str(path)))
    (alerted,) = replay(iter_events(str(path)), touchy)
    assert alerted.first_intervention == plain.first_intervention
    assert alerted.halted_at == plain.halted_at
    assert [s for s in alerted.signals if s["kind"] != "alert"] == plain.signals
    assert all(s["action"] == "warn" for s in alerted.signals if s["kind"] == "alert")


def test_calls_per_session_passes_50_then_doubles() -> None:
    guard = Guard(detectors=(*default_detectors(), CallsPerSession()))
    verdicts = [step(guard, "read_file", {"path": f"{i}.py"}, f"text {i}") for i in range(210)]
    assert alerts_of(verdicts) == [(51, "calls_per_session"), (102, "calls_per_session"), (204, "calls_per_session")]
    assert verdicts[50].action == "warn"
    assert all(v.action in ("allow", "warn") for v in verdicts)


def test_repeat_share_more_than_half_of_the_last_10() -> None:
    # a poller that repeats itself amid other work: no detector stops it, the alert sees it
    guard = Guard(detectors=(*default_detectors(), RepeatShare()))
    verdicts = []
    for i in range(14):
        call = ("status", {}) if i % 3 else ("read_file", {"path": f"{i}.py"})
        verdicts.append(step(guard, *call, f"result {i}"))
        guard.end_turn()
    assert all(v.action in ("allow", "warn") for v in verdicts)
    got = alerts_of(verdicts)
    assert got
    at = got[0][0]  # the first call at which more than half of the last 10 repeat (again after falling back)
    digests = [("status" if i % 3 else f"r{i}") for i in range(at)][-10:]
    assert len(digests) - len(set(digests)) > 5
    earlier = [("status" if i % 3 else f"r{i}") for i in range(at - 1)][-10:]
    assert len(earlier) - len(set(earlier)) <= 5


def test_overtime_three_times_the_expected_duration() -> None:
    clock = FakeClock()
    guard = Guard(clock=clock, detectors=(*default_detectors(), Overtime(expected_seconds=60)))
    verdicts = []
    for i in range(10):
        verdicts.append(step(guard, "read_file", {"path": f"{i}.py"}, f"text {i}"))
        clock.advance(25)
    assert alerts_of(verdicts) == [(9, "overtime")]  # call 9 arrives at 200 s, the first past 180 s
    assert Guard(detectors=(*default_detectors(), Overtime())).check("x", {}).action == "allow"  # off by default


def test_nothing_new_for_several_steps() -> None:
    guard = Guard(detectors=(*default_detectors(), NothingNew(threshold=3), CallsPerSession(threshold=1000)))
    verdicts = []
    for i in range(8):  # each step reads a different file that is empty: nothing new, no repeat
        verdicts.append(step(guard, "read_file", {"path": f"{i}.py"}, ""))
        guard.end_turn()
    assert alerts_of(verdicts) == [(4, "nothing_new")]  # steps 1-3 brought nothing new


def test_an_alert_configured_to_intervene_climbs_the_ladder() -> None:
    guard = Guard(detectors=(*default_detectors(), CallsPerSession(threshold=2, warn_only=False)))
    verdicts = [step(guard, "read_file", {"path": f"{i}.py"}, f"text {i}") for i in range(3)]
    assert verdicts[2].action == "advise"
    assert verdicts[2].kind == "alert"


def test_alerts_reach_callbacks() -> None:
    seen: list[tuple[str, str, int]] = []
    guard = Guard(
        session="s-9",
        detectors=(*default_detectors(), *default_alerts(calls=2)),
        observers=[
            Callbacks(on_alert=lambda session, signal, state: seen.append((session, signal.reason, state.calls)))
        ],
    )
    for i in range(4):
        step(guard, "read_file", {"path": f"{i}.py"}, f"text {i}")
    assert seen == [("s-9", "calls_per_session", 3)]


def test_config_file_alerts_and_metrics(tmp_path: Path) -> None:
    f = tmp_path / "looptrap.toml"
    f.write_text("[alerts]\ncalls = 20\nexpected_seconds = 600\n")
    got = load(f)
    rules = {
        d.name: d
        for d in got.guard.detectors
        if d.name in ("calls_per_session", "overtime", "repeat_share", "nothing_new")
    }
    assert rules["calls_per_session"].threshold == 20
    assert rules["overtime"].expected_seconds == 600  # type: ignore[attr-defined]
    assert all(d.warn_only for d in rules.values())
    again = tmp_path / "again.toml"
    again.write_text(dump(got))
    assert load(again).guard.detectors == got.guard.detectors  # dump gives the same rules back
    f.write_text("[alerts]\nenabled = false\n")
    assert load(f).guard.detectors == GuardConfig().detectors
    f.write_text("store = 'memory://'\n\n[alerts]\ncalls = 0\n")
    with pytest.raises(ConfigError, match=r"looptrap.toml:4: alerts.calls: must be above 0"):
        load(f)
    f.write_text("[alerts]\nrepeat_share = 1.5\n")
    with pytest.raises(ConfigError, match=r"looptrap.toml:2: alerts.repeat_share: a fraction"):
        load(f)
    f.write_text("[metrics]\nprometheus = 'yes'\n")
    with pytest.raises(ConfigError, match=r"looptrap.toml:2: metrics.prometheus: true or false"):
        load(f)
    f.write_text("[metrics]\nspeed = 1\n")
    with pytest.raises(ConfigError, match=r"looptrap.toml:2: metrics.speed: unknown key"):
        load(f)
