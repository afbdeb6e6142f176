"""Edits that go in circles. Run: python examples/edit_loop.py

1. A flip-flop: the agent toggles a format string between two versions, and the same test fails the same
   way in each; the second return to a content the file already had, after a visit that taught nothing new,
   is intercepted.
2. The same failure: edit after edit, the same test fails with the same error; the edit that would start
   the fifth round is intercepted, and the agent may edit again after reading the advice.
"""

from __future__ import annotations

from looptrap import Guard

guard = Guard()


def step(tool: str, args: dict[str, str], result: str, is_error: bool = False) -> str:
    verdict = guard.check(tool, args)
    if verdict.allowed:
        guard.record(tool, args, result, is_error=is_error)
    guard.end_turn()
    return verdict.action


test = {"command": "pytest -q tests/test_dates.py"}
old, new = "FMT = '%Y-%m-%dT%H:%M:%S'", "FMT = '%Y-%m-%dT%H:%M:%S%z'"
flips = [step("bash", test, "FAILED test_parse_iso - unconverted data remains: Z", is_error=True)]
for i in range(4):
    a, b = (old, new) if i % 2 == 0 else (new, old)
    flips.append(
        step(
            "str_replace_editor",
            {"command": "str_replace", "path": "src/dates.py", "old_str": a, "new_str": b},
            "edited",
        )
    )
    failure = (
        "FAILED test_roundtrip - naive != aware"
        if i % 2 == 0
        else "FAILED test_parse_iso - unconverted data remains: Z"
    )
    flips.append(step("bash", test, failure, is_error=True))
print("flip-flop:", flips)
assert flips[7] == "advise"  # the 4th edit: back to a content already seen, after the same failure again

guard.new_task()
rounds = []
for i in range(6):
    rounds.append(
        step(
            "str_replace_editor",
            {"command": "str_replace", "path": "src/tz.py", "old_str": f"v{i}", "new_str": f"v{i + 1}"},
            "edited",
        )
    )
    step("bash", {"command": "pytest -q tests/test_tz.py"}, "E   KeyError: 'tz'", is_error=True)
print("same failure:", rounds)
assert rounds == ["allow", "allow", "allow", "allow", "advise", "allow"]
