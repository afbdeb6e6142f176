"""Tool results that don't invite retries. Run: python examples/outcome_protocol.py"""

from __future__ import annotations

from looptrap import Guard, outcome


def get_customer(email: str) -> outcome.Outcome:
    if email.endswith("@example.com"):
        return outcome.success({"id": "C-1", "email": email})
    return outcome.not_found(
        f"No customer with email {email}.",
        retryable=False,
        next_action_hint="Ask the user for their customer id instead.",
    )


guard = Guard()
actions = []
for _ in range(3):  # three model turns, each asking for the same lookup
    args = {"email": "someone@elsewhere.org"}
    verdict = guard.check("get_customer", args)
    actions.append(verdict.action)
    if verdict.allowed:
        guard.record("get_customer", args, get_customer(**args))
    else:
        print(verdict.message)
    guard.end_turn()

print(actions)
# The tool said the miss is not retryable, so the very first retry of the same call is advised.
assert actions == ["allow", "advise", "block"]
