"""A support agent talking with a customer: user input, lookups, replies. Run: python examples/conversation.py

The customer asks, the agent asks back, looks things up and answers; the customer asks again and the agent
looks again. With `user_message`, none of that is a loop. The same agent, left on its own, repeating the
lookup is one.
"""

from __future__ import annotations

from looptrap import Guard

ORDER = {"id": "A-1042", "status": "shipped", "carrier": "DHL", "eta": "2026-12-04"}


def get_order(order_id: str) -> dict[str, str]:
    return ORDER


guard = Guard()
verdicts = []


def lookup() -> None:
    args = {"order_id": "A-1042"}
    verdict = guard.check("get_order", args)
    verdicts.append(verdict.action)
    if verdict.allowed:
        guard.record("get_order", args, get_order(**args))


guard.user_message("Hi, where is my order?")
verdicts.append(guard.end_turn(text="Happy to help. What is your order number?").action)  # asks the user
for said in ("It's A-1042.", "Are you sure it has shipped?", "Can you check once more?"):
    guard.user_message(said)  # the customer speaks: what the agent does next answers them
    lookup()
    verdicts.append(guard.end_turn(text=f"Order A-1042 has shipped with DHL ({said[:10]}...).").action)
print("conversation:", verdicts)
assert set(verdicts) == {"allow"}

alone = []
for _ in range(3):  # no one asked: the third identical lookup since the customer last spoke is a loop
    lookup()
    alone.append(verdicts.pop())
    guard.end_turn()
print("on its own:", alone)
assert alone == ["allow", "advise", "block"]
