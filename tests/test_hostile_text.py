"""Hostile text: terminal escapes, control characters, bidirectional overrides and huge values in tool
output, tool names and the model's words never reach the model's messages, the state or a terminal raw."""

from __future__ import annotations

import orjson

from looptrap import Guard, SessionState
from looptrap.core.printable import one_line, printable
from looptrap.testing import step

run = step
ESC = "\x1b[2J\x1b]0;pwned\x07\x1b[31m"
BIDI = "\u202e"


def clean(text: str) -> bool:
    return "\x1b" not in text and "\x07" not in text and BIDI not in text and "\r" not in text


def test_printable_strips_escapes_and_controls_and_bounds_length() -> None:
    assert printable(f"a{ESC}b\x00c{BIDI}d\r\ne\tf") == "abcd\ne\tf"
    assert one_line("row | a\n| fake | row |") == "row | a | fake | row |"
    assert len(printable("x" * 10_000, 100)) == 100
    assert printable("x" * 10_000, 100).endswith("...")


def test_error_text_quoted_into_advice_is_stripped() -> None:
    guard = Guard(clock=None)
    verdicts = [
        run(guard, "run_sql", {"q": f"select {i}"}, f"ERROR: relation missing{ESC}{BIDI}\x00", is_error=True)
        for i in range(4)
    ]
    advice = verdicts[-1]
    assert advice.action == "advise"
    assert "relation missing" in advice.message
    assert clean(advice.message)
    assert all(clean(p) for p in guard.state.previews.values())


def test_tool_names_and_arguments_are_bounded_and_stripped_in_the_state() -> None:
    guard = Guard(clock=None)
    for i in range(50):
        run(guard, f"tool{ESC}{'x' * 1_000_000}{i}", {"q": f"{BIDI}{'y' * 10_000}"}, "ok")
        run(guard, "bash", {"command": f"{'z' * 100_000}{i} --flag"}, "ok")
    size = len(orjson.dumps(guard.state.to_dict()))
    assert size < 200_000, size
    assert all(clean(t) and len(t) <= 128 for t in guard.state.per_tool)
    assert all(clean(p) for p in guard.state.previews.values())
    assert all(len(e.family) <= 128 for e in guard.state.history)


def test_what_the_model_reports_and_repeats_is_stripped() -> None:
    guard = Guard(clock=None)
    verdict = guard.report_blocked([f"search{ESC}", "x" * 10_000], f"access{ESC}{BIDI} to the wiki" + "!" * 5000)
    assert clean(verdict.message)
    assert clean(verdict.summary)
    assert len(verdict.summary) < 1000
    assert all(clean(n) and len(n) <= 500 for n in guard.needed)
    assert SessionState.from_dict(orjson.loads(orjson.dumps(guard.state.to_dict()))).needed == guard.needed
    chant = f"I will try{ESC} the search again now. " * 12
    said = Guard(clock=None).feed_text(chant)
    assert said.action == "advise"
    assert clean(said.message)


def test_a_halt_summary_lists_each_call_once() -> None:
    guard = Guard(clock=None)
    halt = None
    for _ in range(8):
        v = run(guard, "search_docs", {"q": "refund"}, "3 hits: refunds, returns, exchanges")
        guard.end_turn()
        if v.action == "halt":
            halt = v
            break
    assert halt is not None
    assert halt.summary.count("search_docs") == 1, halt.summary  # once, with both of its outcomes
    assert "(new result, same result as before)" in halt.summary
