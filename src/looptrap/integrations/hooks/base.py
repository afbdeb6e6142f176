"""What every hook shares: read the event, apply the guard against the store, answer; never crash the CLI."""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from typing import Any, Literal, NamedTuple

import orjson

from looptrap.core.printable import one_line
from looptrap.core.types import OutcomeKind, Verdict

__all__ = ["PROTOCOLS", "Answer", "HookEvent", "HookRunner", "Protocol", "run_hook"]

Phase = Literal["before", "after", "prompt", "other"]


# Plain tuples, not dataclasses: the hook is a fresh process per tool call, and every import and class
# definition is paid on each one.
class HookEvent(NamedTuple):
    """One hook payload, read into the guard's vocabulary."""

    phase: Phase  # before a tool runs, after it ran, a new user prompt, or an event the guard ignores
    session: str
    tool: str = ""
    args: Any = None
    result: Any = None
    is_error: bool = False
    prompt: str | None = None  # what the user wrote (a new prompt)
    outcome: OutcomeKind | None = None  # the call did not run: cancelled, refused, interrupted


class Answer(NamedTuple):
    """What the hook process prints and how it exits."""

    stdout: str = ""
    exit_code: int = 0
    stderr: str = ""


class Protocol(ABC):
    """One CLI's hook format: how to read its payloads and how to answer a verdict."""

    name = ""
    allow = Answer()  # exit 0, nothing on stdout: no opinion, the CLI's own permission rules apply

    @abstractmethod
    def parse(self, payload: dict[str, Any]) -> HookEvent:
        """The payload in the guard's vocabulary (``ValueError`` when it lacks what the guard needs)."""

    @abstractmethod
    def refuse(self, verdict: Verdict, event: HookEvent) -> Answer:
        """Advice or a block: the call is denied and the model reads ``verdict.message``."""

    @abstractmethod
    def halt(self, verdict: Verdict, event: HookEvent) -> Answer:
        """The run stops; ``event`` is the call that met the halt (before it ran, or after)."""

    def failed_closed(self, reason: str) -> Answer:
        """``--fail-closed`` and the hook itself failed: block the call (exit 2, reason on stderr)."""
        return Answer(exit_code=2, stderr=reason)


def _json(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def stop_reason(verdict: Verdict) -> str:
    """The text a CLI shows when looptrap stops the run (the reason once, then what the model was told)."""
    reason = verdict.reason or "halt"
    message = verdict.message.removeprefix(f"Halted ({reason}): ")
    return f"looptrap stopped the run ({reason}): {message}"


class ClaudeCode(Protocol):
    """Claude Code: ``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure`` and ``UserPromptSubmit``."""

    name = "claude-code"

    @staticmethod
    def kind_of(text: object) -> OutcomeKind | None:
        """The CLI's own message in place of a result (a call it cancelled, the user refused...)."""
        from looptrap.reading.outcome_kinds import claude_code_kind

        return claude_code_kind(text)

    def parse(self, payload: dict[str, Any]) -> HookEvent:
        from looptrap.integrations.hooks.results import claude_result

        event = payload.get("hook_event_name")
        session = _session(payload)
        if event == "UserPromptSubmit":
            return HookEvent("prompt", session, prompt=_prompt(payload))
        if event not in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
            return HookEvent("other", session)
        tool = _tool(payload)
        args = payload.get("tool_input")
        if event == "PreToolUse":
            return HookEvent("before", session, tool, args)
        if event == "PostToolUseFailure":
            error = payload.get("error") or ""
            kind = "interrupted" if payload.get("is_interrupt") is True else self.kind_of(error)
            return HookEvent("after", session, tool, args, error, is_error=True, outcome=kind)
        result = claude_result(tool, payload.get("tool_response"))
        return HookEvent("after", session, tool, args, result, outcome=self.kind_of(result))

    def refuse(self, verdict: Verdict, event: HookEvent) -> Answer:
        return Answer(_json({"hookSpecificOutput": _deny(verdict.message)}))

    def halt(self, verdict: Verdict, event: HookEvent) -> Answer:
        out: dict[str, Any] = {"continue": False, "stopReason": stop_reason(verdict)}
        if event.phase == "before":
            out["hookSpecificOutput"] = _deny(verdict.message)
        return Answer(_json(out))


class Codex(ClaudeCode):
    """OpenAI Codex CLI: Claude Code's format, but a run can only be stopped from ``PostToolUse`` (``continue``
    in a ``PreToolUse`` answer fails the hook and runs the tool), and unknown output fields are errors."""

    name = "codex"

    @staticmethod
    def kind_of(text: object) -> OutcomeKind | None:
        from looptrap.reading.outcome_kinds import codex_kind

        return codex_kind(text)

    def halt(self, verdict: Verdict, event: HookEvent) -> Answer:
        if event.phase == "before":  # deny with the stop text; the next PostToolUse stops the run
            return Answer(_json({"hookSpecificOutput": _deny(stop_reason(verdict))}))
        return Answer(_json({"continue": False, "stopReason": stop_reason(verdict)}))


class GeminiCli(Protocol):
    """Gemini CLI: ``BeforeTool``, ``AfterTool`` and ``BeforeAgent``; decisions are top-level fields, and
    stdout must always hold a JSON object."""

    name = "gemini-cli"
    allow = Answer("{}")

    def parse(self, payload: dict[str, Any]) -> HookEvent:
        from looptrap.integrations.hooks.results import gemini_result

        event = payload.get("hook_event_name")
        session = _session(payload)
        if event == "BeforeAgent":
            return HookEvent("prompt", session, prompt=_prompt(payload))
        if event not in ("BeforeTool", "AfterTool"):
            return HookEvent("other", session)
        tool = _tool(payload)
        args = payload.get("tool_input")
        if event == "BeforeTool":
            return HookEvent("before", session, tool, args)
        from looptrap.reading.outcome_kinds import gemini_kind

        response = payload.get("tool_response")
        result, is_error = gemini_result(response)
        error = response.get("error") if isinstance(response, dict) else None
        if isinstance(error, dict):
            error = error.get("message")
        said = error if isinstance(error, str) and error else result
        return HookEvent("after", session, tool, args, result, is_error, outcome=gemini_kind(None, said))

    def refuse(self, verdict: Verdict, event: HookEvent) -> Answer:
        return Answer(_json({"decision": "deny", "reason": verdict.message}))

    def halt(self, verdict: Verdict, event: HookEvent) -> Answer:
        out: dict[str, Any] = {"continue": False, "stopReason": stop_reason(verdict)}
        if event.phase == "before":
            out.update(decision="deny", reason=verdict.message)
        return Answer(_json(out))


def _deny(reason: str) -> dict[str, str]:
    return {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}


def _session(payload: dict[str, Any]) -> str:
    s = payload.get("session_id")
    if not isinstance(s, str) or not s:
        raise ValueError("the hook payload has no session_id")
    return s[:512]


def _prompt(payload: dict[str, Any]) -> str | None:
    p = payload.get("prompt")
    return p if isinstance(p, str) and p else None


def _tool(payload: dict[str, Any]) -> str:
    t = payload.get("tool_name")
    if not isinstance(t, str) or not t:
        raise ValueError("the hook payload has no tool_name")
    return t


PROTOCOLS: dict[str, type[Protocol]] = {p.name: p for p in (ClaudeCode, GeminiCli, Codex)}


def run_hook(
    protocol: Protocol,
    stdin: bytes,
    *,
    store_url: str | None = None,
    session: str | None = None,
    fail_closed: bool = False,
    config: str | None = None,
) -> Answer:
    """Handle one hook invocation. ``store_url``: the store (default: ``$LOOPTRAP_STORE``, else the
    configuration file's ``store``, else the SQLite file in the user's cache folder); ``config``: the
    configuration file (default: ``$LOOPTRAP_CONFIG``, else found from the working directory upward).
    Never raises: a failure allows the call (exit 0, a note on stderr), or with ``fail_closed`` blocks it."""
    runner = HookRunner(store_url=store_url, session=session, fail_closed=fail_closed, config=config)
    try:
        return runner.answer(protocol, stdin)
    finally:
        runner.close()


class HookRunner:
    """Answers hook events with one configuration: it reads the configuration file and opens the store on
    the first event that needs them, and keeps the engine and the store for the next events (a resident hook
    server answers many events with one; a hook process one). ``config``: a named file (``--config``);
    ``project``: the project's file already found (``""``: none; ``None``: find it from the working
    directory)."""

    def __init__(
        self,
        *,
        store_url: str | None = None,
        session: str | None = None,
        fail_closed: bool = False,
        config: str | None = None,
        env_store: str | None = None,
        project: str | None = None,
    ) -> None:
        self.store_url, self.session, self.fail_closed, self.config = store_url, session, fail_closed, config
        self.project = project
        self.env_store = env_store if env_store is not None else os.environ.get("LOOPTRAP_STORE")
        self._engine: Any = None
        self._store: Any = None
        self._store_url = ""

    def answer(self, protocol: Protocol, stdin: bytes) -> Answer:
        """One event's answer. Never raises."""
        try:
            return self._handle(protocol, stdin)
        except Exception as exc:  # noqa: BLE001 - a hook must never break the user's tools
            reason = one_line(f"looptrap hook {protocol.name}: {_said(exc)}", 1000)
            if self.fail_closed:
                return protocol.failed_closed(reason + " (failing closed)")
            return Answer(protocol.allow.stdout, 0, reason + " (allowing the call)")

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def _prepare(self) -> None:
        from pathlib import Path

        from looptrap.config_file import resolve
        from looptrap.engine.engine import Engine
        from looptrap.stores import open_store

        if self.project is None:  # found from the working directory upward
            settings = resolve(self.config)
        else:  # the project's file the hook found (a resident server's folder is not the project's)
            settings = resolve(self.config, project=Path(self.project) if self.project else None, find_project=False)
        # the CLI has no report_blocked tool: advice tells the model to say so instead
        self._engine = Engine(settings.guard.replace(report_tool=None))
        self._store_url = self.store_url or self.env_store or settings.store or _default_store()
        # (a long-lived runner, the resident server, keeps this store: a SQLite store opens the file now at
        # its path when it was deleted or replaced, so no event goes to a file no other command sees)
        self._store = open_store(self._store_url)

    def _handle(self, protocol: Protocol, stdin: bytes) -> Answer:
        try:
            payload = orjson.loads(stdin)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"stdin is not a JSON hook payload ({exc})") from None
        if not isinstance(payload, dict):
            raise ValueError("stdin is not a JSON object")
        event = protocol.parse(payload)
        if event.phase == "other":
            return protocol.allow
        if self._engine is None:
            self._prepare()
        return self._apply(protocol, event)

    def _apply(self, protocol: Protocol, event: HookEvent) -> Answer:
        from looptrap.drivers.guard import Guard

        guard = Guard(
            self._engine,
            store=self._store,
            session=self.session or event.session,
            on_store_error="closed" if self.fail_closed else "open",
        )
        if event.phase == "prompt":  # a new request, and what the user said
            guard.new_task()
            guard.user_message(event.prompt)
            return protocol.allow
        if event.phase == "before":
            verdict = guard.check(event.tool, event.args)
        else:
            guard.record(event.tool, event.args, event.result, is_error=event.is_error, outcome=event.outcome)
            verdict = guard.halted or Verdict()
        note = _store_note(guard)
        if verdict.kind == "store":  # --fail-closed and the store is down: block this call, do not stop the run
            reason = note or "looptrap: the session store is unavailable"
            if event.phase == "before":
                return protocol.failed_closed(reason + " (failing closed)")
            return Answer(protocol.allow.stdout, 0, reason)
        if verdict.action == "halt":
            return _with_note(protocol.halt(verdict, event), note)
        if verdict.action in ("advise", "block"):
            return _with_note(protocol.refuse(verdict, event), note)
        return _with_note(protocol.allow, note)


def _said(exc: Exception) -> str:
    """A hook failure in words for the person reading the CLI's log: what went wrong, not a class name."""
    from looptrap.config_file import ConfigError
    from looptrap.stores.base import StoreError

    if isinstance(exc, (ConfigError, StoreError, ValueError)):
        return str(exc) or "a bad value"
    if isinstance(exc, OSError):
        return f"cannot read or write a file: {exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    if isinstance(exc, ImportError):
        return f"a package it needs is missing: {exc}"
    return f"an internal error ({exc}); please report it with the command and the event"


def _store_note(guard: Any) -> str:
    if not guard.store_errors:
        return ""
    from looptrap.core.figures import count

    return f"looptrap: the session store was unavailable ({count(guard.store_errors, 'failed update')})"


def _with_note(answer: Answer, note: str) -> Answer:
    return Answer(answer.stdout, answer.exit_code, note) if note else answer


def _default_store() -> str:
    from looptrap.stores.sqlite import default_path

    return f"sqlite:///{default_path()}"


def main_io(
    protocol_name: str,
    store_url: str | None,
    session: str | None,
    fail_closed: bool,
    config: str | None = None,
    stdin: bytes | None = None,
) -> int:
    """Read stdin (unless the event is given), answer on stdout/stderr, return the exit code (the CLI's
    entry point). A closed stdin is an empty payload (answered as a hook failure, never a crash)."""
    if stdin is None:
        stdin = sys.stdin.buffer.read() if sys.stdin is not None else b""
    answer = run_hook(
        PROTOCOLS[protocol_name](),
        stdin,
        store_url=store_url,
        session=session,
        fail_closed=fail_closed,
        config=config,
    )
    if answer.stdout:
        sys.stdout.write(answer.stdout + "\n")
    if answer.stderr:
        sys.stderr.write(answer.stderr + "\n")
    return answer.exit_code
