"""The core loop: check before a tool runs, record after, end the turn. Run: python examples/quickstart.py"""

from __future__ import annotations

from looptrap import Guard


def search_docs(query: str) -> str:
    return "0 results"  # a search that never finds anything


guard = Guard()
transcript = []
for turn in range(10):  # a stubborn model that keeps making the same call
    args = {"query": "refund policy"}
    verdict = guard.check("search_docs", args)
    if verdict.action in ("advise", "block"):
        result = verdict.message  # the model receives this as the tool's error result
    elif verdict.action == "halt":
        transcript.append(f"turn {turn}: halted ({verdict.reason}); {verdict.summary}")
        break
    else:
        result = search_docs(**args)
        guard.record("search_docs", args, result, is_error=False)
    transcript.append(f"turn {turn}: {verdict.action}: {result[:70]}")
    guard.end_turn()

print("\n".join(transcript))
assert transcript[-1].startswith("turn 4: halted (loop_repeat)")
