"""Heuristics: which calls change state and what a result says (docs/detectors.md, reading/calls.py, results.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from looptrap import Engine, Guard, GuardConfig, ToolPolicy, outcome
from looptrap.core.state import Flag
from looptrap.reading.calls import (
    NO_WRITE,
    WRITES,
    WRITES_ANYWAY,
    is_mutating,
    shell_command_effect,
    shell_command_mutates,
)
from looptrap.reading.results import ResultFacts, result_facts
from looptrap.testing import step

# -- shell command lines --------------------------------------------------------------------------------

WRITING_COMMANDS = [
    "cat <<'EOF' > f.py\nprint('hi')\nEOF",
    'cat > notes.md <<"EOF"\n# title\nEOF',
    "sed -i 's/a/b/' f.py",
    "sed -i.bak -e 's/a/b/' f.py",
    "perl -i -pe 's/a/b/' f",
    "rm f.py",
    "rm -rf build",
    "/bin/rm f",
    "git commit -m 'fix'",
    "git checkout -b feature",
    "git apply fix.diff",
    "git add -A",
    "echo x > f",
    "echo x >> f",
    "printf 'a' 1> out.txt",
    "ls | tee out.txt",
    "cd src && rm x",
    "mkdir -p d",
    "touch f",
    "mv a b",
    "cp a b",
    "pip install requests",
    "python -m pip install requests",
    "npm install",
    "sudo rm x",
    "FOO=1 rm x",
    "timeout 5 rm x",
    "python -c \"open('f','w').write(1)\"",
    "python3 -c \"from pathlib import Path; Path('f').write_text('x')\"",
]
READING_COMMANDS = [
    "grep -r foo .",
    "ls -la 2>/dev/null",
    "grep foo f 2>/dev/null",
    "make > /dev/null 2>&1",
    "head -n 5 f 2>&1",
    "ls 1>&2",
    "cat f.py",
    "git status",
    "git log --oneline",
    "git diff",
    "git show HEAD",
    "python -m pytest -q",
    "pytest",
    "echo 'a > b'",
    "grep '>' f",
    "sed 's/a/b/' f",
    "find . -name '*.py'",
    "pip list",
    "echo done; ls",
    "python -c \"print(open('f').read())\"",
    "cat <<EOF\nrm -rf /\nEOF",  # heredoc bodies are not commands
    "python - <<'EOF'\nprint('rm -rf x')\nEOF",
]


@pytest.mark.parametrize("cmd", WRITING_COMMANDS)
def test_writing_shell_commands_mutate(cmd: str) -> None:
    assert shell_command_mutates(cmd) is True
    assert shell_command_effect(cmd) in (WRITES, WRITES_ANYWAY)
    assert is_mutating("bash", {"command": cmd}) is True
    assert Engine().call("bash", {"command": cmd}).mutating is True


@pytest.mark.parametrize("cmd", READING_COMMANDS)
def test_reading_shell_commands_do_not_mutate(cmd: str) -> None:
    assert shell_command_mutates(cmd) is False
    assert shell_command_effect(cmd) == NO_WRITE
    assert is_mutating("bash", {"command": cmd}) is False
    assert Engine().call("bash", {"command": cmd}).mutating is False


def test_dev_null_redirect_is_not_a_write_but_a_file_redirect_is() -> None:
    assert not shell_command_mutates("grep foo f 2>/dev/null")
    assert shell_command_mutates("grep foo f 2>errors.txt")


def test_capturing_output_in_a_log_file_is_not_a_write() -> None:
    assert not shell_command_mutates("make test 2>&1 | tee build.log")
    assert not shell_command_mutates("pytest -q > out.log 2>&1")
    assert not shell_command_mutates("python run.py | tee -a logs/run.txt")
    assert shell_command_mutates("cat template | tee config.py")


def test_a_write_in_a_chain_writes_even_when_the_line_fails() -> None:
    assert shell_command_effect("sed -i 's/a/b/' f.py && pytest -q") == WRITES_ANYWAY
    assert shell_command_effect("sed -i 's/a/b/' f.py") == WRITES
    # a failed chain that wrote still starts a new epoch: the re-run after it is new work
    engine = Engine()
    assert engine.call("bash", {"command": "sed -i 's/a/b/' f.py && pytest -q"}).writes_on_failure is True
    assert engine.call("bash", {"command": "rm f.py"}).writes_on_failure is False


def test_shell_forms_of_arguments() -> None:
    assert is_mutating("bash", "rm x") is True
    assert is_mutating("bash", "ls") is False
    assert is_mutating("bash", {"command": ["rm", "x"]}) is True
    assert is_mutating("bash", {"cmd": "echo hi > f"}) is True
    # any tool whose command argument is a command line is judged by it
    assert is_mutating("run_tests", {"command": "pytest -q"}) is False
    assert is_mutating("run_tests", {"cmd": "rm -rf x"}) is True


# -- sub-commands and tool names ------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["str_replace_based_edit_tool", "str_replace_editor", "editor"])
def test_editor_view_reads_and_edits_write(tool: str) -> None:
    assert is_mutating(tool, {"command": "view", "path": "a.py"}) is False
    for sub in ("str_replace", "create", "insert", "undo_edit"):
        assert is_mutating(tool, {"command": sub, "path": "a.py"}) is True, sub


def test_http_method_decides() -> None:
    assert is_mutating("http_request", {"method": "GET", "url": "https://x"}) is False
    assert is_mutating("http_request", {"method": "POST", "url": "https://x"}) is True
    assert is_mutating("http_request", {"method": "delete", "url": "https://x"}) is True


@pytest.mark.parametrize(
    "tool",
    ["write_file", "edit", "edit_file", "send_email", "create_ticket", "git_commit", "deleteUser", "apply_patch"],
)
def test_mutating_tool_names(tool: str) -> None:
    assert is_mutating(tool, {"x": 1}) is True
    assert is_mutating(tool, None) is True
    assert Engine().call(tool, {"x": 1}).mutating is True


@pytest.mark.parametrize(
    "tool", ["read_file", "search_docs", "get_order", "list_files", "fetch_url", "calculator", "lookup"]
)
def test_reading_tool_names(tool: str) -> None:
    assert is_mutating(tool, {"x": 1}) is False
    assert Engine().call(tool, {"x": 1}).mutating is False


def test_policy_overrides_the_heuristic() -> None:
    engine = Engine(
        GuardConfig(
            tools={
                "deploy_check": ToolPolicy(mutating=True),
                "write_file": ToolPolicy(mutating=False),
                "kubectl": ToolPolicy(mutating=lambda tool, args: args.get("verb") in {"apply", "delete"}),
                "broken": ToolPolicy(mutating=lambda tool, args: 1 / 0 > 0),
            }
        )
    )
    assert engine.call("deploy_check", {}).mutating is True
    assert engine.call("write_file", {"path": "a"}).mutating is False
    assert engine.call("kubectl", {"verb": "apply"}).mutating is True
    assert engine.call("kubectl", {"verb": "get"}).mutating is False
    assert engine.call("broken", {}).mutating is False  # a broken rule falls back to the heuristic


# -- result facts ---------------------------------------------------------------------------------------

EMPTY: list[Any] = [
    None,
    "",
    "   ",
    [],
    {},
    (),
    set(),
    "0 results",
    "No results found",
    "no matches found",
    "File not found",
    "Order A1 not found",
    "[]",
    {"results": []},
    {"items": [], "count": 0},
    {"total": 0},
    "<returncode>1</returncode>",
    {"issues": [], "pageInfo": {"hasNextPage": False, "endCursor": None}},  # pagination metadata only
]
NOT_EMPTY = [
    "3 results",
    "found it",
    {"results": [1]},
    "def foo(): pass",
    [0],
    {"count": 2},
    "x" * 301,
    {"flag": {"enabled": False}},  # an answer that is false is an answer
    {"issues": [{"id": 1}], "pageInfo": {"hasNextPage": False}},
]
ACK = ["ok", "OK", "Done.", "sent", "sent successfully", "saved", {"ok": True}, {"status": "done"}]
PENDING = [
    "running",
    "Job is still in progress",
    "Status: queued",
    {"status": "pending"},
    "queued",
    "in progress",
    "Running...",
    "Queued (3 ahead of you)",
    "Build #42 in progress",
    "Job 8812 queued",
    "state = running",
    "The export is still running.",
    "Your request is being processed",
    "The report has not finished yet.",
    "Service not ready",
    "Stack status: UPDATE_IN_PROGRESS",
    {"StackStatus": "UPDATE_IN_PROGRESS"},
    {"job_state": "job_running"},
]
#: A status word inside other prose is not a stated status.
NOT_PENDING = [
    "Here's the result of running `cat -n` on /repo/src/app.py:\n     1\timport os\n     2\timport sys",
    "Tests passed after running the suite twice.",
    "pending_orders.csv\nreport.txt\nrunning_totals.py",
    "The function handles pending requests and returns them in order.",
    "Build log: compiling module 3 of 9, then running tests",
    "3 passed in 0.41s (ran test_running_mean, test_pending_queue)",
    "Error while building the wheel: missing header",
]


@pytest.mark.parametrize("result", EMPTY, ids=repr)
def test_empty_results(result: Any) -> None:
    assert result_facts(result, False) & ResultFacts.EMPTY


@pytest.mark.parametrize("result", NOT_EMPTY, ids=lambda r: repr(r)[:30])
def test_results_with_content_are_not_empty(result: Any) -> None:
    assert not result_facts(result, False) & ResultFacts.EMPTY


@pytest.mark.parametrize("result", ACK, ids=repr)
def test_acknowledgements(result: Any) -> None:
    facts = result_facts(result, False)
    assert facts & ResultFacts.ACK
    assert not facts & (ResultFacts.EMPTY | ResultFacts.ERROR)


def test_long_text_is_not_an_acknowledgement() -> None:
    assert not result_facts("Email sent to the customer with the refund form attached", False) & ResultFacts.ACK


@pytest.mark.parametrize("result", PENDING, ids=repr)
def test_pending_results(result: Any) -> None:
    """docs/detectors.md: pending is "running", "queued", "in progress"."""
    assert result_facts(result, False) & ResultFacts.PENDING


@pytest.mark.parametrize("result", NOT_PENDING, ids=lambda r: repr(r)[:40])
def test_a_status_word_in_other_prose_is_not_pending(result: Any) -> None:
    """docs/detectors.md: pending means a stated status; a status word inside other prose is not one."""
    assert not result_facts(result, False) & ResultFacts.PENDING


@pytest.mark.parametrize(
    ("text", "empty"),
    [
        ("<returncode>1</returncode><output></output>", True),
        ("<output>\n</output>", True),
        ("<br/>", True),
        ("<article 0>", False),
        ("<article 0> <article 1>", False),
        ("<output>3 rows</output>", False),
        ("<result><item>a</item></result>", False),
    ],
)
def test_only_paired_and_self_closing_tags_are_markup(text: str, empty: bool) -> None:
    assert bool(result_facts(text, False) & ResultFacts.EMPTY) is empty


def test_errors() -> None:
    assert result_facts("anything", True) & ResultFacts.ERROR
    assert result_facts({"ok": False}, False) & ResultFacts.ERROR
    assert result_facts({"error": "boom"}, False) & ResultFacts.ERROR
    assert not result_facts({"error": None, "value": 3}, False) & ResultFacts.ERROR
    assert not result_facts("3 results", False) & ResultFacts.ERROR


def test_outcome_protocol_facts() -> None:
    e = ResultFacts
    assert result_facts(outcome.error("bad id", retryable=False), False) == e.ERROR | e.NON_RETRYABLE
    assert result_facts(outcome.error("timeout", retryable=True), False) == e.ERROR | e.RETRYABLE
    assert result_facts(outcome.not_found("no such customer"), False) == e.EMPTY | e.NON_RETRYABLE
    assert result_facts(outcome.not_found("not yet", retryable=True), False) == e.EMPTY | e.RETRYABLE
    assert result_facts(outcome.success(), False) & e.ACK
    assert not result_facts(outcome.success({"id": "C-1"}), False) & (e.ACK | e.EMPTY | e.ERROR)
    assert not result_facts(outcome.partial([1, 2], "first 2 of 9"), False) & (e.EMPTY | e.ERROR)
    assert result_facts({"status": "running", "retryable": True}, False) == e.PENDING | e.RETRYABLE
    # status: error counts as a failure even when is_error was not passed
    assert result_facts({"status": "error", "message": "x"}, False) & e.ERROR
    # flags mirror the state's history flags
    assert (e.ERROR, e.EMPTY, e.ACK, e.PENDING, e.NON_RETRYABLE, e.RETRYABLE) == (
        Flag.ERROR,
        Flag.EMPTY,
        Flag.ACK,
        Flag.PENDING,
        Flag.NON_RETRYABLE,
        Flag.RETRYABLE,
    )


@dataclass
class OutcomeObject:
    status: str
    retryable: bool
    data: Any = None


def test_outcome_objects_are_read_too() -> None:
    facts = result_facts(OutcomeObject("error", False), False)
    assert facts == ResultFacts.ERROR | ResultFacts.NON_RETRYABLE
    assert result_facts(OutcomeObject("not_found", True), False) == ResultFacts.EMPTY | ResultFacts.RETRYABLE


# -- the facts as the guard uses them -------------------------------------------------------------------


def test_failed_mutating_call_does_not_start_an_epoch_but_a_successful_one_does() -> None:
    guard = Guard(clock=None)
    guard.check("write_file", {"path": "a"})
    guard.record("write_file", {"path": "a"}, "permission denied", is_error=True)
    assert guard.state.epoch == 0
    guard.check("write_file", {"path": "a"})
    guard.record("write_file", {"path": "a"}, "ok")
    assert guard.state.epoch == 1
    assert guard.state.history[-1].flags & Flag.MUTATED
    guard.check("bash", {"command": "sed -i 's/a/b/' f.py && pytest -q"})
    guard.record("bash", {"command": "sed -i 's/a/b/' f.py && pytest -q"}, "1 failed", is_error=True)
    assert guard.state.epoch == 2  # the edit ran even though the line failed


def test_queued_poll_uses_the_pending_threshold() -> None:
    """docs/detectors.md: when the last result says the work is still going ("queued" included), the repeat
    threshold is pending_threshold (12)."""
    guard = Guard(clock=None)
    actions = [step(guard, "job_status", {"job": "j1"}, "queued").action for _ in range(6)]
    assert actions == ["allow"] * 6


def test_an_error_text_that_says_not_found_is_an_error_and_empty() -> None:
    flags = result_facts("Error: old string not found in src/app.py", False)
    assert flags & Flag.ERROR
    assert flags & Flag.EMPTY
    assert result_facts("An error occurred while running the tool. Please try again. Error: boom", False) == Flag.ERROR


def test_a_failed_edit_reported_as_text_is_not_a_state_change() -> None:
    guard = Guard(clock=None)
    args = {"path": "src/app.py", "old": "x", "new": "y"}
    assert guard.check("edit_file", args).allowed
    guard.record("edit_file", args, "Error: old string not found in src/app.py")
    entry = guard.state.history[-1]
    assert entry.flags & Flag.ERROR
    assert not entry.flags & Flag.MUTATED


def test_apply_patch_with_a_patch_in_command_writes() -> None:
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-x\n+y\n*** End Patch"
    assert is_mutating("apply_patch", {"command": patch})


def test_a_text_read_before_gets_the_same_facts_with_or_without_an_error() -> None:
    from looptrap.engine.engine import _FACTS_KEPT

    engine = Engine(GuardConfig())
    g = Guard(engine)
    for i in range(3):
        g.check("search", {"q": f"a{i}"})
        g.record("search", {"q": f"a{i}"}, "0 results", is_error=i == 1)
    flags = [e.flags for e in g.state.history]
    assert [f & (Flag.ERROR | Flag.EMPTY) for f in flags] == [Flag.EMPTY, Flag.ERROR | Flag.EMPTY, Flag.EMPTY]
    for i in range(3000):  # the engine's memory of texts stays bounded
        g.record("search", {"q": "b"}, f"row {i}")
    assert 0 < len(engine._facts) <= _FACTS_KEPT
