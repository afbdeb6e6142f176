"""Alert rules (docs/alerts.md): warn-only signals for a session that runs long, repeats itself, overruns its
expected duration or finds nothing. Four sessions, each firing one of the four default rules once."""

from typing import Any

from looptrap import Guard
from looptrap.detectors import default_detectors
from looptrap.observe import Callbacks, default_alerts

fired: list[str] = []


def page_me(session: str, signal: Any, state: Any) -> None:
    fired.append(signal.reason)
    print(f"ALERT {session}: {signal.reason}: {signal.message}")


def run(session: str, calls: list[tuple[str, dict[str, Any], Any]], seconds_apart: float) -> None:
    """An agent making ``calls`` (tool, arguments, result) one per turn, ``seconds_apart`` on a clock of its own."""
    now = [0.0]
    guard = Guard(
        session=session,
        detectors=(*default_detectors(), *default_alerts(calls=20, expected_seconds=60, stale_steps=4)),
        observers=[Callbacks(on_alert=page_me)],
        clock=lambda: now[0],  # time is injectable: the duration rule runs without sleeping
    )
    for tool, args, result in calls:
        verdict = guard.check(tool, args)
        if verdict.allowed:  # an alert only warns: the call runs
            guard.record(tool, args, result)
        guard.end_turn()
        now[0] += seconds_apart
        if verdict.action == "halt":
            break
    print(f"  {session}: {guard.state.calls} calls, last verdict: {verdict.action} {verdict.reason or ''}".rstrip())


# more than 20 tool calls (calls_per_session), every one of them bringing something new
run("bulk-export", [("read_page", {"page": i}, f"rows {i * 100}-{i * 100 + 99}") for i in range(25)], 1)
# the same call again and again: more than half of the last 10 calls repeat one (repeat_share)
run("status-poll", [("job_status", {"job": "j-7"}, f"running: {i}% done") for i in range(0, 100, 10)], 1)
# 40 s a call: more than 3 times the expected 60 s (overtime)
run("slow-research", [("fetch_paper", {"id": i}, f"abstract of paper {i}") for i in range(8)], 40)
# paging through results that are all empty: 4 steps in a row bring nothing new (nothing_new); the loop
# detectors then advise, block and halt it, as without the alerts
run("empty-pages", [("list_orders", {"page": i}, []) for i in range(12)], 1)

assert sorted(fired) == ["calls_per_session", "nothing_new", "overtime", "repeat_share"], fired
