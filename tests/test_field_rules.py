"""The rules that keep the guard from intervening on healthy work in the field (docs/escalation.md, "When the
guard halts"; docs/detectors.md): different errors are not one error, calls that did not run are not
failures, a halt needs the loop that survived its advice, steps follow model messages, and failures count
across the user's words."""

from __future__ import annotations

from looptrap import Guard, SessionState
from looptrap.analysis import iter_events, replay
from looptrap.core.state import Flag
from looptrap.testing import step as run


def calls(guard: Guard, tool: str, args_list: list[dict[str, object]], result: str, **kw: object) -> list[str]:
    out = []
    for args in args_list:
        out.append(run(guard, tool, args, result, **kw).action)  # type: ignore[arg-type]
        guard.end_turn()
    return out


# -- 1. different errors are not one error --------------------------------------------------------------------


def test_the_same_terse_error_on_different_targets_is_exploration() -> None:
    guard = Guard(clock=None)
    wrong = [{"target": title} for title in ("Blue dress, size M", "Blue dress (kids)", "Navy dress")]
    right = {"target": "Blue summer dress, size M"}
    actions = calls(guard, "click", wrong, "Invalid action!", is_error=True)
    actions.append(run(guard, "click", right, "Added to cart.").action)
    assert actions == ["allow"] * 4  # three wrong clicks, then the right one runs
    assert run(guard, "click", {"target": "Buy Now"}, "Order placed.").action == "allow"


def test_files_that_do_not_exist_while_exploring_are_not_a_loop() -> None:
    guard = Guard(clock=None)
    actions = []
    for i, path in enumerate(["cmd/a/setup.go", "cmd/a/config.go", "internal/setup.go", "pkg/setup.go"]):
        actions.append(run(guard, "Read", {"file_path": path}, "File does not exist.", is_error=True).action)
        actions.append(run(guard, "Glob", {"pattern": f"**/*setup{i}*.go"}, f"cmd/b/setup{i}.go").action)
    assert set(actions) == {"allow"}


def test_the_same_error_on_one_target_is_a_loop_sooner() -> None:
    guard = Guard(clock=None)
    queries = [{"sql": f"SELECT {c} FROM payments"} for c in ("sum(amount)", "count(*)", "*", "currency")]
    actions = calls(guard, "query_db", queries, "ERROR:  permission denied for table payments", is_error=True)
    assert actions == ["allow", "allow", "allow", "advise"]
    verdict = guard.state.verdicts[-1]
    assert verdict.kind == "error_repeat"


def test_different_targets_count_only_while_nothing_else_happens() -> None:
    guard = Guard(clock=None)
    actions = []
    for i in range(8):  # each failed edit on another file is followed by a read that brings something new
        actions.append(
            run(
                guard,
                "Edit",
                {"file_path": f"f{i}.go", "old_string": "a"},
                "File has not been read yet.",
                is_error=True,
            ).action
        )
        actions.append(run(guard, "Read", {"file_path": f"g{i}.go"}, f"package g{i}").action)
    assert set(actions) == {"allow"}


# -- 2. calls that did not run --------------------------------------------------------------------------------


def test_cancelled_siblings_are_not_failures() -> None:
    guard = Guard(clock=None)
    edits = [{"file_path": f"/src/f{i}.go", "old_string": "summarise", "new_string": "summarize"} for i in range(7)]
    actions = []
    for i, edit in enumerate(edits):  # one message: the first edit fails, Claude Code cancels the other six
        actions.append(guard.check("Edit", edit, message_id="msg_1").action)
        if i == 0:
            guard.record("Edit", edit, "<tool_use_error>File does not exist.</tool_use_error>", is_error=True)
        else:
            guard.record(
                "Edit", edit, "<tool_use_error>Sibling tool call errored</tool_use_error>", outcome="cancelled"
            )
    assert set(actions) == {"allow"}
    assert len(guard.state.history) == 1  # only the edit that ran


def test_a_refusal_is_the_users_say_and_no_failure() -> None:
    guard = Guard(clock=None)
    deploy = {"command": "make deploy"}
    for _ in range(4):  # the user refuses the same call four times: not a tool failing
        assert guard.check("Bash", deploy).action == "allow"
        guard.record("Bash", deploy, "The user doesn't want to proceed with this tool use.", outcome="refused")
    assert not guard.state.history
    assert guard.state.heard == guard.state.calls  # the user spoke last


def test_an_outcome_overrides_is_error() -> None:
    guard = Guard(clock=None)
    assert guard.check("fetch", {"url": "u"}).action == "allow"
    guard.record("fetch", {"url": "u"}, "ok", is_error=True, outcome="success")
    assert not guard.state.history[-1].flags & Flag.ERROR


# -- 3. parallel batches in recorded runs ---------------------------------------------------------------------


def _trace(tmp_path, events: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    import orjson

    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"session": "s", **e}) + b"\n" for e in events))
    return replay(iter_events(str(path)))[0]


def test_a_failing_batch_does_not_escalate_inside_itself_in_replay(tmp_path) -> None:  # type: ignore[no-untyped-def]
    events: list[dict[str, object]] = []
    for turn in range(3):  # the same two reads fail in three messages: advice at the third
        for f in ("a", "b"):
            cid = f"{turn}{f}"
            events.append(
                {
                    "type": "tool_call",
                    "tool": "Read",
                    "args": {"file_path": f},
                    "call_id": cid,
                    "message_id": f"m{turn}",
                }
            )
            events.append(
                {"type": "tool_result", "tool": "Read", "call_id": cid, "output": f"EACCES: {f}", "is_error": True}
            )
    for f in ("a", "b", "a", "b"):  # one message, each call answered before the next is asked
        cid = f"9{f}{len(events)}"
        events.append(
            {"type": "tool_call", "tool": "Read", "args": {"file_path": f}, "call_id": cid, "message_id": "m9"}
        )
        events.append(
            {"type": "tool_result", "tool": "Read", "call_id": cid, "output": f"EACCES: {f}", "is_error": True}
        )
    report = _trace(tmp_path, events)
    # the third message goes on with the a/b cycle (advised); the fourth, whose four calls each ran before
    # the next was asked for, is one step: blocked throughout, never halted inside itself
    assert [(s["call_index"], s["action"]) for s in report.signals] == [
        (5, "advise"),
        (6, "advise"),
        (7, "block"),
        (8, "block"),
        (9, "block"),
        (10, "block"),
    ]


def test_outcome_in_a_trace_is_honoured(tmp_path) -> None:  # type: ignore[no-untyped-def]
    events: list[dict[str, object]] = []
    for i in range(6):
        events.append({"type": "tool_call", "tool": "Edit", "args": {"file_path": "x", "n": i}, "call_id": str(i)})
        events.append(
            {
                "type": "tool_result",
                "tool": "Edit",
                "call_id": str(i),
                "output": "Sibling tool call errored",
                "is_error": True,
                "outcome": "cancelled",
            }
        )
    report = _trace(tmp_path, events)
    assert report.first_signal is None


# -- 4. a halt needs the loop that survived its advice ----------------------------------------------------------


def test_a_stall_of_rereads_in_varying_order_never_halts() -> None:
    guard = Guard(clock=None)
    views = [{"path": "app.py", "view_range": [a, a + 20]} for a in (1, 21, 41, 61)]
    for v in views:  # first reads: new content
        run(guard, "view", v, f"lines {v['view_range']}")
        guard.end_turn()
    order = [0, 2, 1, 3, 2, 0, 3, 1, 0, 3, 2, 1, 1, 3, 0, 2]
    actions = []
    for i in order:  # the same parts again, in no fixed order: a stall that may still resume
        actions.append(run(guard, "view", views[i], f"lines {views[i]['view_range']}").action)
        guard.end_turn()
    assert "halt" not in actions
    assert "advise" in actions


def test_an_exact_cycle_that_goes_on_after_advice_and_block_is_halted() -> None:
    guard = Guard(clock=None)
    actions = []
    for _ in range(6):
        for path in ("a.py", "b.py"):
            actions.append(run(guard, "read_file", {"path": path}, f"contents of {path}").action)
            guard.end_turn()
    assert actions[:4] == ["allow"] * 4
    assert actions[4] == "advise"
    assert "halt" in actions


def test_halting_on_an_old_state_format_loads() -> None:
    state = SessionState()
    data = state.to_dict()
    data["loops"] = [123, 456]  # the keys alone, as an earlier release saved them
    loaded = SessionState.from_dict(data)
    assert loaded.loops == {123: [1, 0], 456: [1, 0]}
    assert SessionState.from_dict(loaded.to_dict()).loops == loaded.loops


# -- 5. without turns ----------------------------------------------------------------------------------------


def test_a_plain_code_loop_is_halted_within_a_few_calls() -> None:
    guard = Guard()  # the real clock: calls microseconds apart, no end_turn
    actions = []
    for _ in range(10):
        v = guard.check("fetch_rates", {"currency": "EUR"})
        actions.append(v.action)
        if v.action == "halt":
            break
        if v.allowed:
            guard.record("fetch_rates", {"currency": "EUR"}, "503 Service Unavailable", is_error=True)
    assert actions == ["allow", "allow", "advise", "block", "halt"]


# -- 6. identical failures across user turns ----------------------------------------------------------------


def test_an_identical_failure_is_not_washed_away_by_the_users_words() -> None:
    guard = Guard(clock=None)
    change = {"reservation_id": "Z7K2", "flights": [{"flight": "HAT170", "date": "2024-05-17"}]}
    actions = []
    for said in ("Can you try again?", "Please, it's important.", "We might be going in circles."):
        actions.append(
            run(guard, "update_reservation_flights", change, "Error: flight HAT170 not available", is_error=True).action
        )
        guard.end_turn(text="I'm sorry, that flight is not available.")
        guard.user_message(said)
    actions.append(guard.check("update_reservation_flights", change).action)
    # the third identical attempt is advised, and so is each further one: the user's words start the ladder
    # over (no block or halt while the user is in the conversation), but never make the call look new
    assert actions == ["allow", "allow", "advise", "advise"]


def test_a_lookup_the_user_asks_for_again_is_an_answer() -> None:
    guard = Guard(clock=None)
    actions = []
    for said in ("What's my balance?", "And now?", "Check once more please."):
        guard.user_message(said)
        actions.append(run(guard, "get_balance", {"account": "A-1"}, "EUR 120.00").action)
        guard.end_turn(text="Your balance is EUR 120.00.")
    assert actions == ["allow"] * 3
