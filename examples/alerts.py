"""Alert rules (docs/alerts.md): warn-only signals for a session that runs long, repeats itself or finds nothing."""

from looptrap import Guard
from looptrap.core.config import default_detectors
from looptrap.observe import Callbacks, default_alerts


def page_me(session: str, signal: object, state: object) -> None:
    print(f"ALERT {session}: {signal.reason}: {signal.message}")  # type: ignore[attr-defined]


guard = Guard(
    session="nightly-report",
    detectors=(*default_detectors(), *default_alerts(calls=20, stale_steps=4)),
    observers=[Callbacks(on_alert=page_me)],
)
for i in range(30):  # an agent paging through results that are all empty: nothing new, page after page
    verdict = guard.check("list_orders", {"page": i})
    if verdict.allowed:
        guard.record("list_orders", {"page": i}, [])
    guard.end_turn()
print("last verdict:", verdict.action, verdict.reason)
