"""``looptrap hook claude-code|gemini-cli|codex``, run as a real subprocess per event (as the CLIs run it), fed
payloads written from each CLI's documented hook schema (tests/data/hooks/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from looptrap.engine.engine import BATCH_GAP

DATA = Path(__file__).parent / "data" / "hooks"


def think() -> None:
    """The model reading a refusal and answering: without end_turn, refusals closer together than
    BATCH_GAP are the parallel calls of one model turn."""
    time.sleep(BATCH_GAP + 0.1)


def payload(cli: str, name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / cli / f"{name}.json").read_text())
    data.update(changes)
    return data


class Hook:
    """Runs the hook command the way a CLI does: a fresh process per event, JSON on stdin."""

    def __init__(self, cli: str, store: str, *extra: str, cwd: Path | None = None, env: dict[str, str] | None = None):
        self.cli = cli
        self.args = [sys.executable, "-m", "looptrap.cli.main", "hook", cli, "--store", store, *extra]
        self.cwd = cwd
        self.env = env

    def raw(self, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        env = None if self.env is None else {**os.environ, **self.env}
        return subprocess.run(self.args, input=stdin, capture_output=True, timeout=60, cwd=self.cwd, env=env)

    def __call__(self, name: str, **changes: Any) -> tuple[int, dict[str, Any] | None]:
        proc = self.raw(json.dumps(payload(self.cli, name, **changes)).encode())
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode().strip()
        return proc.returncode, (json.loads(out) if out else None)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/hooks.db"


# -- Claude Code -------------------------------------------------------------------------------------------
def test_claude_code_loop_gets_advice_then_a_block_then_a_stop(store: str) -> None:
    hook = Hook("claude-code", store)
    answers = []
    for _ in range(6):
        _, out = hook("pre_grep_empty")
        answers.append(out)
        if out is None:  # the CLI ran the tool: its PostToolUse follows
            assert hook("post_grep_empty") == (0, None)
        else:
            think()
    assert answers[:2] == [None, None]  # allowed silently: the user's own permission rules apply
    advice = answers[2]
    assert advice == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": advice["hookSpecificOutput"]["permissionDecisionReason"],
        }
    }
    reason = advice["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("You have called Grep with these exact arguments 3 times")
    assert "report_blocked" not in reason  # Claude Code has no such tool
    assert "say so in your answer" in reason
    block = answers[3]
    assert block is not None
    assert block["hookSpecificOutput"]["permissionDecisionReason"].startswith("Blocked: this call was not run.")
    stop = answers[4]
    assert stop is not None
    assert stop["continue"] is False
    assert stop["stopReason"].startswith("looptrap stopped the run (loop_repeat)")
    assert stop["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert answers[5] is not None
    assert answers[5]["continue"] is False  # halted stays halted


def test_a_loop_without_pauses_is_halted_within_a_few_calls(store: str) -> None:
    """No turns reach a hook: the very call just denied, asked again at once, is the next step (the CLI read
    the denial), so the ladder does not stall on one step however fast the calls come."""
    hook = Hook("claude-code", store)
    actions = []
    for _ in range(6):
        _, out = hook("pre_grep_empty")
        if out is None:
            actions.append("allow")
            assert hook("post_grep_empty") == (0, None)
        elif out.get("continue") is False:
            actions.append("halt")
        else:
            reason = out["hookSpecificOutput"]["permissionDecisionReason"]
            actions.append("block" if reason.startswith("Blocked") else "advise")
    assert actions == ["allow", "allow", "advise", "block", "halt", "halt"]


def test_parallel_calls_of_one_turn_share_a_step_through_the_hook(store: str) -> None:
    """Claude Code runs a turn's read-only calls together: their PreToolUse events come back to back, with no
    result in between. Two calls that each failed three times, asked for together: both advised (one step),
    not advised then blocked."""
    hook = Hook("claude-code", store)
    commands = ["make test-a", "make test-b"]
    for attempt in ("timed out", "connection reset", "503"):
        for cmd in commands:
            tool_input = {"command": cmd, "description": "run"}
            assert hook("pre_bash_error", tool_input=tool_input) == (0, None)
            assert hook("post_bash_error", tool_input=tool_input, error=f"Exit code 1\n{attempt} #{cmd[-1]}") == (
                0,
                None,
            )

    def reasons() -> list[str]:
        out = []
        for cmd in commands:  # the two PreToolUse events of one turn, back to back
            _, answer = hook("pre_bash_error", tool_input={"command": cmd, "description": "run"})
            assert answer is not None
            out.append(answer["hookSpecificOutput"]["permissionDecisionReason"])
        return out

    first = reasons()
    assert not any(r.startswith("Blocked") for r in first)  # advice, twice
    think()
    assert all(r.startswith("Blocked") for r in reasons())  # the next turn: blocked


@pytest.mark.parametrize(
    ("cli", "pre", "post", "changes"),
    [
        ("claude-code", "pre_bash_error", "post_bash_error", {"is_interrupt": True, "error": "Interrupted"}),
        ("codex", "pre_bash", "post_bash", {"tool_response": "Wall time: 8.1 seconds\naborted by user"}),
        ("codex", "pre_bash", "post_bash", {"tool_response": "exec command rejected by user"}),
        (
            "gemini-cli",
            "pre_shell",
            "post_shell",
            {"tool_response": {"error": "[Operation Cancelled] Reason: User cancelled tool execution."}},
        ),
    ],
)
def test_calls_that_did_not_run_are_no_failures(store: str, cli: str, pre: str, post: str, changes: Any) -> None:
    """An interrupted or refused call, again and again, is not the tool failing: nothing to intervene on."""
    hook = Hook(cli, store)
    allow = hook(pre)[1]
    for _ in range(5):
        assert hook(pre)[1] == allow
        _, out = hook(post, **changes)
        assert out == allow


def test_claude_code_healthy_session_is_untouched(store: str) -> None:
    hook = Hook("claude-code", store)
    for name in ("read", "grep", "glob", "edit", "bash", "write", "mcp", "bash_subagent"):
        assert hook(f"pre_{name}") == (0, None)
        if (DATA / "claude-code" / f"post_{name}.json").exists():
            assert hook(f"post_{name}") == (0, None)
    # edit-then-test rounds: the same test command after each edit is not a loop
    for _ in range(5):
        assert hook("pre_edit") == (0, None)
        assert hook("post_edit") == (0, None)
        assert hook("pre_bash") == (0, None)
        assert hook("post_bash") == (0, None)


def test_claude_code_failures_arrive_as_post_tool_use_failure(store: str) -> None:
    hook = Hook("claude-code", store)
    outs = []
    for _ in range(5):
        _, out = hook("pre_bash_error")
        outs.append(out)
        if out is None:
            assert hook("post_bash_error") == (0, None)
    first = next(i for i, o in enumerate(outs) if o is not None)
    assert first <= 3  # the same failing command: caught by its third or fourth run
    assert "failed" in json.dumps(outs[first]) or "error" in json.dumps(outs[first]).lower()


def test_a_new_user_prompt_starts_a_new_task(store: str) -> None:
    hook = Hook("claude-code", store)
    prompt = {
        "session_id": payload("claude-code", "pre_grep")["session_id"],
        "hook_event_name": "UserPromptSubmit",
        "prompt": "now look for the footer parser",
        "cwd": "/home/user/project",
    }
    for _ in range(2):
        assert hook("pre_grep_empty") == (0, None)
        assert hook("post_grep_empty") == (0, None)
    proc = hook.raw(json.dumps(prompt).encode())
    assert (proc.returncode, proc.stdout) == (0, b"")
    for _ in range(2):  # without the new task, the first of these would be advised
        assert hook("pre_grep_empty") == (0, None)
        assert hook("post_grep_empty") == (0, None)


@pytest.mark.parametrize(
    ("cli", "event"),
    [("claude-code", "UserPromptSubmit"), ("codex", "UserPromptSubmit"), ("gemini-cli", "BeforeAgent")],
)
def test_a_prompt_is_a_new_task_and_the_users_input(store: str, cli: str, event: str) -> None:
    from looptrap.stores import open_store

    hook = Hook(cli, store)
    session = payload(cli, "pre_grep")["session_id"]
    prompt = {
        "session_id": session,
        "transcript_path": f"/home/user/.{cli}/sessions/{session}.jsonl",
        "cwd": "/home/user/project",
        "hook_event_name": event,
        "prompt": "the footer parser drops the last line, fix it",
    }
    for _ in range(2):
        hook("pre_grep")
        hook("post_grep_empty")
    proc = hook.raw(json.dumps(prompt).encode())
    assert proc.returncode == 0
    assert proc.stdout.strip() in (b"", b"{}")  # the prompt goes on as the user wrote it
    backend = open_store(store)
    try:
        snap = backend.load(session)
    finally:
        backend.close()
    assert snap is not None
    state = snap.state
    assert state.task == 1  # a new task: what came before is not repeated by what comes next
    assert state.heard == state.calls > 0  # and the user spoke after the calls so far
    assert not state.history


def test_sessions_are_kept_apart(store: str) -> None:
    hook = Hook("claude-code", store)
    for i in range(4):
        assert hook("pre_grep_empty", session_id=f"session-{i}") == (0, None)
        assert hook("post_grep_empty", session_id=f"session-{i}") == (0, None)


# -- failures of the hook itself -----------------------------------------------------------------------------
@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"hook_event_name": "PreToolUse"}', b"\xff\xfe"])
def test_bad_input_allows_the_call_and_says_why(store: str, stdin: bytes) -> None:
    proc = Hook("claude-code", store).raw(stdin)
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert b"looptrap hook claude-code" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_fail_closed_blocks_on_bad_input(store: str) -> None:
    proc = Hook("claude-code", store, "--fail-closed").raw(b"not json")
    assert proc.returncode == 2  # Claude Code: exit 2 blocks the call and shows stderr
    assert b"failing closed" in proc.stderr


def test_an_unreachable_store_allows_the_call(tmp_path: Path) -> None:
    dead = "redis://127.0.0.1:1/0"
    proc = Hook("claude-code", dead).raw(json.dumps(payload("claude-code", "pre_grep")).encode())
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert b"store was unavailable" in proc.stderr


@pytest.mark.parametrize("cli", ["claude-code", "gemini-cli", "codex"])
def test_fail_closed_with_the_store_down_blocks_the_call_and_lets_the_run_go_on(cli: str) -> None:
    """docs/hooks.md: with --fail-closed, a hook that fails (a store that cannot be reached) exits 2 with the
    reason on stderr: the call is blocked, the run is not stopped."""
    closed = Hook(cli, "redis://127.0.0.1:1/0", "--fail-closed")
    proc = closed.raw(json.dumps(payload(cli, "pre_grep")).encode())
    assert proc.returncode == 2
    assert proc.stdout == b""  # no "continue": false
    assert b"session store" in proc.stderr
    assert b"failing closed" in proc.stderr
    after = closed.raw(json.dumps(payload(cli, "post_grep_empty")).encode())
    assert after.returncode == 0  # after the call there is nothing left to block


def test_events_the_guard_does_not_use_are_allowed(store: str) -> None:
    other = {"session_id": "s", "hook_event_name": "Notification", "message": "Claude needs your permission"}
    proc = Hook("claude-code", store).raw(json.dumps(other).encode())
    assert (proc.returncode, proc.stdout) == (0, b"")


# -- Gemini CLI ---------------------------------------------------------------------------------------------
def test_gemini_cli_answers_in_its_own_format(store: str) -> None:
    hook = Hook("gemini-cli", store)
    answers = []
    for _ in range(5):
        _, out = hook("pre_grep")
        answers.append(out)
        if out == {}:
            assert hook("post_grep_empty") == (0, {})
        else:
            think()
    assert answers[:2] == [{}, {}]  # Gemini parses stdout as JSON: an allow is {}
    assert answers[2] is not None
    assert set(answers[2]) == {"decision", "reason"}
    assert answers[2]["decision"] == "deny"
    assert "grep_search" in answers[2]["reason"]
    halt = answers[4]
    assert halt is not None
    assert halt["continue"] is False
    assert halt["decision"] == "deny"


def test_gemini_cli_shell_results_ignore_process_ids(store: str) -> None:
    hook = Hook("gemini-cli", store)
    outs = []
    for pgid in (48211, 48377, 48502, 48630):
        _, out = hook("pre_shell", tool_input={"command": "ls /home/user/project/missing"})
        outs.append(out)
        response = {"llmContent": f"Output: (empty)\nProcess Group PGID: {pgid}", "returnDisplay": ""}
        hook("post_shell", tool_input={"command": "ls /home/user/project/missing"}, tool_response=response)
    assert outs[:2] == [{}, {}]
    assert outs[2] is not None
    assert outs[2].get("decision") == "deny"  # the same empty output, whatever the process id


# -- Codex ---------------------------------------------------------------------------------------------------
def test_codex_denies_in_pre_and_stops_only_from_post(store: str) -> None:
    hook = Hook("codex", store)
    answers = []
    for _ in range(5):
        _, out = hook("pre_grep")
        answers.append(out)
        if out is None:
            assert hook("post_grep_empty") == (0, None)
        else:
            think()
    assert answers[:2] == [None, None]
    for out in answers[2:]:
        assert out is not None
        assert set(out) == {"hookSpecificOutput"}  # Codex fails a hook on any undocumented field
        assert set(out["hookSpecificOutput"]) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
    assert answers[4] is not None
    assert answers[4]["hookSpecificOutput"]["permissionDecisionReason"].startswith("looptrap stopped the run")
    # Any tool that still completes after the halt ends the run from its PostToolUse.
    assert hook("post_bash") == (
        0,
        {"continue": False, "stopReason": answers[4]["hookSpecificOutput"]["permissionDecisionReason"]},
    )


def test_hook_options_and_help(store: str, tmp_path: Path) -> None:
    # --store=URL and --session given in either form, in any order
    args = [sys.executable, "-m", "looptrap.cli.main", "hook", "--session", "fixed", "claude-code", f"--store={store}"]
    for _ in range(3):
        pre = subprocess.run(
            args,
            input=json.dumps(payload("claude-code", "pre_grep_empty", session_id="a")).encode(),
            capture_output=True,
            timeout=60,
        )
        post = json.dumps(payload("claude-code", "post_grep_empty", session_id="b")).encode()
        subprocess.run(args, input=post, capture_output=True, timeout=60, check=True)
    assert b"permissionDecision" in pre.stdout  # one session, whatever session_id the payloads carried
    helped = subprocess.run([*args[:4], "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0
    assert "--fail-closed" in helped.stdout
    bad = subprocess.run([*args[:4], "vim"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "invalid choice" in bad.stderr


# -- the configuration file ---------------------------------------------------------------------------------
def loop(hook: Hook, times: int = 5) -> list[dict[str, Any] | None]:
    answers = []
    for _ in range(times):
        _, out = hook("pre_grep_empty")
        answers.append(out)
        if out is None:
            assert hook("post_grep_empty") == (0, None)
        else:
            think()
    return answers


def test_the_configuration_file_in_the_project_sets_the_hooks_guard(store: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "looptrap.toml").write_text("[tools.Grep]\nexempt = true\n\n[detectors.repeat]\nthreshold = 2\n")
    answers = loop(Hook("claude-code", store, cwd=project / "src"))  # found from the working directory upward
    assert answers[0] is None
    assert answers[1] is not None  # the project tightens (the 2nd identical call); it cannot exempt the tool
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "looptrap" / "looptrap.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[tools.Grep]\nexempt = true\n")  # the user's own file may
    mine = loop(Hook("claude-code", store, "--session", "mine", cwd=project / "src"))
    assert mine == [None] * 5
    other = tmp_path / "other.toml"
    other.write_text("[detectors.repeat]\nthreshold = 4\n")
    named = loop(Hook("claude-code", store, "--session", "named", cwd=tmp_path, env={"LOOPTRAP_CONFIG": str(other)}))
    assert named[:3] == [None, None, None]
    assert named[3] is not None  # the 4th identical call, as the named file says


def test_a_bad_configuration_file_fails_open_with_one_line(store: str, tmp_path: Path) -> None:
    (tmp_path / "looptrap.toml").write_text("[detectors.repeat]\nthreshhold = 4\n")
    proc = Hook("claude-code", store, cwd=tmp_path).raw(json.dumps(payload("claude-code", "pre_grep")).encode())
    assert (proc.returncode, proc.stdout) == (0, b"")
    err = proc.stderr.decode()
    assert err.count("\n") == 1
    assert f"{tmp_path / 'looptrap.toml'}:2: detectors.repeat.threshhold: unknown key" in err
    assert "(allowing the call)" in err
    assert "ConfigError" not in err  # words for the reader, not a Python class name
    closed = Hook("claude-code", store, "--fail-closed", cwd=tmp_path)
    assert closed.raw(json.dumps(payload("claude-code", "pre_grep")).encode()).returncode == 2


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        (b"not json", "looptrap hook claude-code: stdin is not a JSON hook payload"),
        (b"[1, 2]", "looptrap hook claude-code: stdin is not a JSON object"),
    ],
)
def test_hook_failures_are_said_without_python_class_names(store: str, stdin: bytes, said: str) -> None:
    proc = Hook("claude-code", store).raw(stdin)
    err = proc.stderr.decode()
    assert proc.returncode == 0
    assert err.startswith(said)
    assert "Error:" not in err
