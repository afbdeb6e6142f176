"""Wrap plain tool functions, sync and async. Run: python examples/wrap_tools.py"""

from __future__ import annotations

import asyncio

from looptrap import Guard, LoopHalted

guard = Guard()


@guard.tool
def get_order(order_id: str) -> str:
    return f"order {order_id} not found"


@guard.tool
async def search_orders(customer: str) -> str:
    await asyncio.sleep(0)
    return "3 results: B7, C9, D2"


async def agent() -> list[str]:
    seen = []
    try:
        for _ in range(20):  # ping-pong between two tools that never feed each other
            seen.append(get_order("A1"))
            seen.append(await search_orders("ACME"))
    except LoopHalted as halt:
        seen.append(f"halted: {halt.reason}")
    return seen


results = asyncio.run(agent())
for line in results:
    print(line[:100])
assert results[-1].startswith("halted: loop_")
assert any("not run" in r for r in results)  # the block reached the model as the tool's result
