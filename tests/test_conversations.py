"""The user's input, novelty judged for the session, and the one-step-per-turn rule, through the Guard and
through replay (docs/guard.md, docs/detectors.md, docs/trace-format.md)."""

from __future__ import annotations

import json
from typing import Any

from looptrap import Guard, SessionState
from looptrap.analysis import iter_events, replay
from looptrap.testing import FakeClock, step

run = step


# -- no_action: a reply to the user is not idleness ---------------------------------------------------------


def test_a_conversation_of_questions_and_answers_is_not_idleness() -> None:
    guard = Guard(clock=None)
    verdicts = []
    exchanges = [
        ("Hi, I need to change my booking.", "Of course. What is your reservation number?"),
        ("It's QX-4410.", "Thanks. Which dates would you like instead?"),
        ("The 12th to the 14th.", "And is it still for two guests?"),
        ("Yes, two.", "Thank you, let me check that for you."),
    ]
    for said, reply in exchanges:
        guard.user_message(said)
        verdicts.append(guard.end_turn(text=reply))  # a text-only reply to the user
    guard.user_message("Thanks!")
    verdicts.append(run(guard, "get_reservation", {"id": "QX-4410"}, {"id": "QX-4410", "nights": 2}))
    verdicts.append(guard.end_turn(text="Your booking QX-4410 is confirmed for two nights."))
    assert {v.action for v in verdicts} == {"allow"}


def test_the_same_reply_to_everything_the_user_says_is_a_stall() -> None:
    guard = Guard(clock=None)
    actions = []
    for said in ("Where is my refund?", "It's been two weeks!", "Hello?", "Can I talk to a human?", "Hello??"):
        guard.user_message(said)
        actions.append(guard.end_turn(text="I'm sorry, I can't help with that request.").action)
    # the first reply answers the user; the same words again, three times in a row, do not. Each time the
    # user speaks the ladder starts over (what the agent does next answers them), so it advises again
    assert actions == ["allow", "allow", "allow", "advise", "advise"]


def test_empty_replies_count_even_after_user_input() -> None:
    guard = Guard(clock=None)
    actions = []
    for said in ("Hi?", "Are you there?", "Hello?"):
        guard.user_message(said)
        actions.append(guard.end_turn().action)
    assert actions == ["allow", "allow", "advise"]


def test_text_only_turns_of_an_autonomous_run_still_stall() -> None:
    guard = Guard(clock=None)
    guard.user_message("Fix the failing test.")
    actions = [guard.end_turn(text=f"I will now think about it, step {i}.").action for i in range(12)]
    # the first turn answers the user; then the agent runs on its own and three text-only turns stall. Idle
    # turns in different words are weak evidence: advice, three warnings, then blocks, never a halt
    assert actions == ["allow"] * 3 + ["advise", "warn", "warn", "warn"] + ["block"] * 5


def test_the_same_idle_reply_again_and_again_is_halted() -> None:
    guard = Guard(clock=None)
    guard.user_message("Fix the failing test.")
    actions = [guard.end_turn(text="I will look into the failing test now.").action for i in range(6)]
    # the first turn answers the user; the same words three times on its own: the loop the advice names
    assert actions == ["allow", "allow", "allow", "advise", "block", "halt"]


def test_a_short_stall_that_recovers_is_not_halted() -> None:
    guard = Guard(clock=None)
    actions = []
    for i in range(4):  # three idle turns, then a valid call that brings something new
        for _ in range(3):
            actions.append(guard.end_turn(text="Thinking.").action)
        actions.append(run(guard, "read_file", {"path": f"f{i}.py"}, f"content {i}").action)
        actions.append(guard.end_turn().action)
    assert "halt" not in actions
    assert actions.count("advise") == 4  # each stall is a new one: advice, never more
    assert "block" not in actions


def test_invalid_replies_count_even_after_user_input() -> None:
    guard = Guard(clock=None)
    guard.user_message("Book the 9:40 train.")
    actions = [guard.end_turn(error="no valid tool call").action for _ in range(3)]
    assert actions == ["allow", "allow", "advise"]


# -- drift: nothing new anywhere ----------------------------------------------------------------------------


def test_reworded_empty_searches_while_new_files_are_read_are_exploration() -> None:
    guard = Guard(clock=None)
    actions = []
    for i, query in enumerate(["dead letter queue", "dlq", "poison message", "failed events", "error topic", "dlx"]):
        actions.append(run(guard, "search_code", {"query": query}, "No results found.").action)
        actions.append(run(guard, "read_file", {"path": f"src/stage{i}.py"}, f"# stage {i}\nimport logging").action)
        guard.end_turn()
    assert set(actions) == {"allow"}


def test_reworded_empty_searches_while_nothing_new_comes_back_drift() -> None:
    guard = Guard(clock=None)
    actions = []
    for query in ["dead letter queue", "dlq", "poison message", "failed events", "error topic", "dlx", "dlq topic"]:
        actions.append(run(guard, "search_code", {"query": query}, "No results found.").action)
        actions.append(run(guard, "read_file", {"path": "src/pipeline.py"}, "# the pipeline\nimport logging").action)
        guard.end_turn()
    # the first read brought the file (something new); from then on only stale re-reads: searches 2-6 are
    # five empty results while nothing new came back, and the 7th search is intercepted
    assert "advise" in actions
    assert actions.index("advise") == 12


# -- replay: user_message events and turns ------------------------------------------------------------------


def events(rows: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps({"session": "chat", **row}).encode() for row in rows]


def test_replay_reads_user_message_events() -> None:
    rows: list[dict[str, Any]] = []
    for i in range(4):  # the customer asks again and again; the agent looks it up each time and answers
        rows.append({"type": "user_message", "text": "Where is my parcel?" if i else "Hi, parcel 7731?"})
        rows.append({"type": "tool_call", "tool": "track_parcel", "args": {"id": "7731"}, "call_id": f"c{i}"})
        rows.append({"type": "tool_result", "tool": "track_parcel", "call_id": f"c{i}", "output": "In transit"})
        rows.append({"type": "turn_end"})
        rows.append({"type": "text", "text": "Your parcel 7731 is in transit."})
        rows.append({"type": "turn_end"})
    (report,) = replay(iter_events(events(rows)))
    assert report.first_intervention is None
    (without,) = replay(iter_events(events([r for r in rows if r["type"] != "user_message"])))
    assert without.first_intervention is not None  # read without the user, it is an agent repeating itself


def test_parallel_identical_calls_in_a_trace_share_one_step() -> None:
    rows: list[dict[str, Any]] = []
    n = 0
    for batch in (1, 1, 3, 1, 1):
        ids = [f"c{n + i}" for i in range(batch)]
        n += batch
        for cid in ids:
            rows.append({"type": "tool_call", "tool": "lookup", "args": {"sku": "A-1"}, "call_id": cid})
        for cid in ids:
            rows.append({"type": "tool_result", "tool": "lookup", "call_id": cid, "output": "out of stock"})
        rows.append({"type": "turn_end"})
    (report,) = replay(iter_events(events(rows)))
    assert [(s["call_index"], s["action"]) for s in report.signals] == [
        (3, "advise"),
        (4, "advise"),
        (5, "advise"),
        (6, "block"),
        (7, "halt"),
    ]


def test_the_state_of_an_earlier_release_loads_with_the_new_fields_at_their_defaults() -> None:
    guard = Guard(clock=FakeClock())
    run(guard, "search_docs", {"q": "x"}, "0 results")
    saved = guard.state.to_dict()
    for name in ("loops", "step", "rung_step", "rung", "stepped", "step_calls", "refused_at", "heard", "files"):
        del saved[name]
    state = SessionState.from_dict(saved)
    assert (state.loops, state.rung_step, state.heard, state.files) == ({}, -1, -1, {})
    resumed = Guard(clock=None, state=state)
    assert [run(resumed, "search_docs", {"q": "x"}, "0 results").action for _ in range(2)] == ["allow", "advise"]


def test_a_turn_ended_before_its_calls_says_how_many_it_asked_for() -> None:
    """An integration that ends the turn as the response arrives (before its calls run) passes
    ``tool_calls``: the response that finally makes a call is not idle."""
    guard = Guard(clock=None)
    assert guard.end_turn(text="Let me think.", tool_calls=0).action == "allow"
    assert guard.end_turn(text="Still thinking.", tool_calls=0).action == "allow"
    assert guard.end_turn(tool_calls=1).action == "allow"
    assert run(guard, "search_docs", {"q": "x"}, "3 hits").action == "allow"
