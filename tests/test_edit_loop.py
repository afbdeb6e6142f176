"""File states and the edit_loop detector (docs/detectors.md: file states, edit_loop)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from looptrap import EditLoop, Guard, Verdict
from looptrap.core.state import Flag, SessionState
from looptrap.reading.edits import NEW, RETURN, SAME, apply_edit, changed_unknown, edit_of, predict_edit, saw_outcome
from looptrap.testing import step

run = step

APP = "src/app.py"


def replace(old: str, new: str, path: str = APP) -> dict[str, Any]:
    return {"command": "str_replace", "path": path, "old_str": old, "new_str": new}


# -- reading edits from their arguments -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "ops"),
    [
        ({"path": APP, "content": "x = 1\n"}, ["w"]),
        ({"command": "create", "path": APP, "file_text": "x = 1"}, ["w"]),
        (replace("a", "b"), ["r"]),
        ({"file_path": APP, "old_string": "a", "new_string": "b", "replace_all": False}, ["r"]),
        (
            {
                "file_path": APP,
                "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}],
            },
            ["r", "r"],
        ),
        ({"command": "undo_edit", "path": APP}, ["u"]),
        ({"command": "insert", "path": APP, "insert_line": 3, "new_str": "y = 2"}, ["x"]),
    ],
    ids=["write", "create", "str_replace", "claude_edit", "multi_edit", "undo", "insert"],
)
def test_edits_are_read_from_the_arguments(args: dict[str, Any], ops: list[str]) -> None:
    edit = edit_of(args)
    assert edit is not None
    assert [op[0] for op in edit[1]] == ops


def test_heredoc_writes_are_read_from_the_shell_line() -> None:
    for line in ("cat > repro.py <<'EOF'\nprint(1)\nEOF", "cat <<EOF > repro.py\nprint(1)\nEOF"):
        edit = edit_of(None, line)
        assert edit is not None
        assert edit == edit_of({"path": "repro.py", "content": "print(1)\n"})
    assert edit_of(None, "cat > a.py <<EOF\nx\nEOF\npython a.py") is None  # a chain: not only a write
    assert edit_of(None, "sed -i 's/a/b/' f.py && pytest") is None
    assert edit_of(None, "sed -i -e 's/a/b/' f.py g.py") is None  # two files
    assert edit_of({"path": APP}) is None  # no content, no replacement
    assert edit_of("not a mapping") is None


def test_sed_substitutions_are_replacements_that_the_reverse_undoes() -> None:
    state = SessionState()
    fwd = edit_of(None, "sed -i 's/zip(self.args/zip_longest(self.args/' sympy/geometry/point.py")
    back = edit_of(None, "sed -i 's/zip_longest(self\\.args/zip(self.args/g' sympy/geometry/point.py")
    other = edit_of(None, "sed -i '283a\\        fill_value=None,' sympy/geometry/point.py")
    assert fwd is not None
    assert back is not None
    assert other is not None
    assert [apply_edit(state, e) for e in (fwd, back, fwd, other)] == [NEW, RETURN, RETURN, NEW]


def test_undo_redo_and_rewrites_as_content_states() -> None:
    state = SessionState()
    a_to_b, b_to_a = edit_of(replace("A", "B")), edit_of(replace("B", "A"))
    assert a_to_b is not None
    assert b_to_a is not None
    assert predict_edit(state, a_to_b) == (NEW, 0, False)
    assert apply_edit(state, a_to_b) == NEW
    assert apply_edit(state, b_to_a) == RETURN  # back to the content as found
    assert apply_edit(state, a_to_b) == RETURN  # redo: a content it already had
    same = edit_of(replace("x", "x"))
    assert same is not None
    assert apply_edit(state, same) == SAME
    undo = edit_of({"command": "undo_edit", "path": APP})
    assert undo is not None
    assert apply_edit(state, undo) == RETURN
    write = edit_of({"path": APP, "content": "v1"})
    assert write is not None
    assert apply_edit(state, write) == NEW
    assert apply_edit(state, write) == SAME  # the content already there
    assert apply_edit(state, edit_of({"path": APP, "content": "v1\n\n"}) or write) == SAME  # trailing blanks


def test_only_returns_after_a_fruitless_visit_count() -> None:
    state = SessionState()
    a_to_b, b_to_a = edit_of(replace("A", "B")), edit_of(replace("B", "A"))
    assert a_to_b is not None
    assert b_to_a is not None
    saw_outcome(state, 1)  # as found: the test fails with E1
    apply_edit(state, a_to_b)
    saw_outcome(state, 2)  # the test fails with E2: new in this state
    assert predict_edit(state, b_to_a) == (RETURN, 0, False)
    apply_edit(state, b_to_a)
    saw_outcome(state, 1)  # back as found, the same E1 again: nothing new here
    assert predict_edit(state, a_to_b) == (RETURN, 0, True)
    apply_edit(state, a_to_b)
    assert predict_edit(state, b_to_a) == (RETURN, 1, False)  # nothing checked yet in this visit
    saw_outcome(state, 2)
    assert predict_edit(state, b_to_a) == (RETURN, 1, True)
    changed_unknown(state, 99)  # a write whose effect is not known: a state never seen
    saw_outcome(state, 2)
    assert predict_edit(state, b_to_a)[2] is False


def test_file_states_are_bounded_and_saved_with_the_state() -> None:
    guard = Guard(clock=None)
    for i in range(200):
        run(guard, "write_file", {"path": f"f{i}.py", "content": f"v{i}"}, "ok")
    assert 0 < len(guard.state.files) <= 64
    again = SessionState.from_dict(guard.state.to_dict())
    assert again.files == guard.state.files


# -- no state change: a write of what is already there ---------------------------------------------------


def test_writing_what_is_already_there_starts_no_epoch() -> None:
    guard = Guard(clock=None)
    write = {"path": APP, "content": "x = 1\n"}
    run(guard, "write_file", write, "ok")
    epoch = guard.state.epoch
    run(guard, "write_file", write, "ok")
    assert guard.state.epoch == epoch
    assert guard.state.history[-1].flags & Flag.NOOP
    # so test, rewrite, test, rewrite is a cycle of stale calls: nothing changed, the third pass is intercepted
    actions = []
    for _ in range(3):
        actions.append(run(guard, "bash", {"command": "pytest -q"}, "1 failed: test_x", is_error=True).kind)
        actions.append(run(guard, "write_file", write, "ok").kind)
    assert actions[:3] == [None, None, None]
    assert actions[3] == "cycle"


# -- flip-flop ----------------------------------------------------------------------------------------------


def flip_flop(guard: Guard, edits: int) -> list[Verdict]:
    """The l04 shape: the test fails; an edit makes another test fail; the revert brings the first failure
    back; and again."""
    out = []
    run(guard, "bash", {"command": "pytest -q tests/test_dates.py"}, "FAILED test_parse_iso", is_error=True)
    for i in range(edits):
        old, new = ("FMT = '%H:%M'", "FMT = '%H:%M%z'") if i % 2 == 0 else ("FMT = '%H:%M%z'", "FMT = '%H:%M'")
        out.append(run(guard, "str_replace_editor", replace(old, new), "The file src/app.py has been edited."))
        fail = "FAILED test_roundtrip" if i % 2 == 0 else "FAILED test_parse_iso"
        run(guard, "bash", {"command": "pytest -q tests/test_dates.py"}, fail, is_error=True)
        guard.end_turn()
    return out


def test_flip_flop_is_caught_at_the_third_return() -> None:
    guard = Guard(clock=None)
    verdicts = flip_flop(guard, 6)
    # edit 1 is new; edit 2 undoes it after a visit that brought a new failure (not counted); edit 3 redoes
    # it after the old failure came back (1st fruitless return); edit 4 would be the 2nd
    assert [v.action for v in verdicts[:3]] == ["allow"] * 3
    assert (verdicts[3].action, verdicts[3].kind) == ("advise", "edit_loop")
    assert verdicts[3].signals[0].details == {"shape": "flip_flop", "returns": 2}
    assert "back to a content it already had" in verdicts[3].message


def test_toggling_a_fix_to_run_other_tests_is_not_a_flip_flop() -> None:
    guard = Guard(clock=None)
    fix, revert = (
        replace("PERMS = None", "PERMS = 0o644", "settings.py"),
        replace("PERMS = 0o644", "PERMS = None", "settings.py"),
    )
    actions = []
    for i in range(6):  # each visit runs another test: something new is learnt every time
        actions.append(run(guard, "str_replace_editor", fix if i % 2 == 0 else revert, "edited").action)
        run(guard, "bash", {"command": f"./runtests.py suite_{i}"}, f"{20 + i} passed", is_error=False)
        guard.end_turn()
    assert set(actions) == {"allow"}


def test_revert_to_verify_then_reapply_is_ordinary_work() -> None:
    guard = Guard(clock=None)
    assert {v.action for v in flip_flop(guard, 3)} == {"allow"}  # fix, revert to see it fail, fix again
    run(guard, "str_replace_editor", replace("FMT = '%H:%M%z'", "FMT = '%Y %H:%M%z'"), "edited")  # onwards


def test_flip_flop_over_whole_file_writes_and_undo() -> None:
    guard = Guard(clock=None, detectors=[EditLoop()])
    actions = []
    for i in range(6):  # b, a (both new: the content as found is unknown), then b, a, b, a: returns
        content = "mode: a" if i % 2 else "mode: b"
        actions.append(run(guard, "write_file", {"path": "cfg.yaml", "content": content}, "ok"))
        run(guard, "bash", {"command": "make check"}, f"check failed: mode {content[-1]}", is_error=True)
    # the 3rd write is a return after a visit that showed a failure new in that state; the 4th and 5th come
    # after visits that only showed the same failure again: the 5th is the 2nd fruitless return
    assert [v.action for v in actions] == ["allow", "allow", "allow", "allow", "advise", "allow"]
    guard2 = Guard(clock=None, detectors=[EditLoop()])
    view = {"command": "view", "path": APP}
    run(guard2, "str_replace_editor", view, "1\ta")
    verdicts = []
    for _ in range(3):  # edit, re-read, undo, re-read: the same lines in each state
        verdicts.append(run(guard2, "str_replace_editor", replace("a", "b"), "edited"))
        run(guard2, "str_replace_editor", view, "1\tb")
        verdicts.append(run(guard2, "str_replace_editor", {"command": "undo_edit", "path": APP}, "undone"))
        run(guard2, "str_replace_editor", view, "1\ta")
    assert [v.action for v in verdicts] == ["allow", "allow", "allow", "advise", "allow", "allow"]


def test_a_failed_edit_changes_no_file_state() -> None:
    guard = Guard(clock=None, detectors=[EditLoop()])
    for _ in range(6):
        v = run(guard, "str_replace_editor", replace("A", "B"), "No replacement was performed", is_error=True)
        assert v.action == "allow"
    assert all(record[3] == 0 for record in guard.state.files.values())


# -- same failure -------------------------------------------------------------------------------------------


def rounds(guard: Guard, n: int, failure: str | None = None) -> list[Verdict]:
    """n edit-then-check rounds; the check fails with ``failure`` (or with a different error each round)."""
    out = []
    for i in range(n):
        out.append(run(guard, "str_replace_editor", replace(f"v{i}", f"v{i + 1}"), "edited"))
        text = failure if failure is not None else f"AssertionError: expected 3, got {i}"
        run(guard, "bash", {"command": "pytest -q tests/test_app.py"}, text, is_error=True)
        guard.end_turn()
    return out


@pytest.mark.parametrize("baseline", [True, False], ids=["failing_first", "no_run_before_the_first_edit"])
def test_same_failure_after_four_rounds_in_a_row(baseline: bool) -> None:
    guard = Guard(clock=None)
    if baseline:
        run(guard, "bash", {"command": "pytest -q tests/test_app.py"}, "E   KeyError: 'tz'", is_error=True)
    verdicts = rounds(guard, 6, "E   KeyError: 'tz'")
    # rounds 1-4 each end in the same failure; the edit that would start round 5 is intercepted
    assert [v.action for v in verdicts[:4]] == ["allow"] * 4
    assert (verdicts[4].action, verdicts[4].kind) == ("advise", "edit_loop")
    assert verdicts[4].signals[0].details["shape"] == "same_failure"
    assert verdicts[4].signals[0].details["rounds"] == 4
    # once per round: the agent may act on the advice and edit again
    assert verdicts[5].action == "allow"


def test_three_attempts_that_leave_the_failure_then_a_fix_are_ordinary_debugging() -> None:
    guard = Guard(clock=None)
    verdicts = rounds(guard, 3, "E   assert 85.5 == 85.0")
    verdicts.append(run(guard, "str_replace_editor", replace("price", "(price - shipping)"), "edited"))
    run(guard, "bash", {"command": "pytest -q tests/test_app.py"}, "10 passed")
    assert {v.action for v in verdicts} == {"allow"}


def test_same_failure_climbs_only_with_more_rounds_of_the_same_failure() -> None:
    guard = Guard(clock=None)
    run(guard, "bash", {"command": "pytest -q tests/test_app.py"}, "E   KeyError: 'tz'", is_error=True)
    actions = [v.action for v in rounds(guard, 9, "E   KeyError: 'tz'")]
    # after each intervention the next edit may run; the one after another round with the same failure
    # climbs: the same loop went on, although the edits in between were state changes
    assert actions == ["allow", "allow", "allow", "allow", "advise", "allow", "block", "allow", "halt"]


@pytest.mark.parametrize("failure", [None, "passes"])
def test_edit_test_rounds_whose_failure_changes_or_that_pass_are_untouched(failure: str | None) -> None:
    guard = Guard(clock=None)
    if failure == "passes":
        verdicts = []
        for i in range(8):
            verdicts.append(run(guard, "str_replace_editor", replace(f"v{i}", f"v{i + 1}"), "edited"))
            run(guard, "bash", {"command": "pytest -q"}, "12 passed", is_error=False)
            guard.end_turn()
    else:
        verdicts = rounds(guard, 8)
    assert {v.action for v in verdicts} == {"allow"}


def test_a_re_run_without_an_edit_is_not_a_round() -> None:
    guard = Guard(clock=None, detectors=[EditLoop()])
    test = {"command": "pytest -q"}
    for _ in range(2):
        run(guard, "str_replace_editor", replace("a", "b"), "edited")
        for _ in range(3):  # the same failure three times, with no edit in between: one round
            run(guard, "bash", test, "E   KeyError: 'tz'", is_error=True)
    assert run(guard, "str_replace_editor", replace("c", "d"), "edited").action == "allow"


# -- any input -------------------------------------------------------------------------------------------


_KEYS = st.sampled_from(
    ["path", "file_path", "content", "old_str", "new_str", "old_string", "new_string", "command", "edits", "x"]
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.sampled_from(["undo_edit", "insert"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)
_LINES = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda a, b, f: f"sed -i 's/{a}/{b}/' {f}", st.text(max_size=8), st.text(max_size=8), st.text(max_size=8)
    ),
    st.builds(lambda f, body: f"cat > {f} <<'EOF'\n{body}\nEOF", st.text(max_size=8), st.text(max_size=30)),
)


@given(st.lists(st.tuples(st.dictionaries(_KEYS, _VALUES, max_size=4), _LINES), max_size=8))
@settings(max_examples=200, deadline=None)
def test_edits_of_any_shape_never_break_the_guard(calls: list[tuple[dict[str, Any], str]]) -> None:
    guard = Guard(clock=None, fail_closed=True)  # an internal error would halt with guard_error
    for args, line in calls:
        for tool, a in (("str_replace_editor", args), ("write_file", args), ("bash", {"command": line})):
            verdict = guard.check(tool, a)
            assert verdict.reason != "guard_error"
            if verdict.allowed:
                guard.record(tool, a, "ok")
    assert SessionState.from_dict(guard.state.to_dict()).files == guard.state.files
