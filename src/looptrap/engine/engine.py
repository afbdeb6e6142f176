"""The decision core: functions of (configuration, session state, input, time), with no I/O.

The same engine serves a plain ``Guard``, async code, framework middlewares, hook processes, an MCP
proxy and offline replay. It updates the ``SessionState`` it is given in place and returns verdicts;
clocks, locks, logging and stores live in the drivers around it.
"""

from __future__ import annotations

import reprlib
import unicodedata
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import orjson
import xxhash

from looptrap.core.policy import ToolPolicy
from looptrap.core.printable import one_line, printable
from looptrap.core.redact import redact_text
from looptrap.core.state import PENDING, PREVIEWS, SEEN, TOOLS, Entry, Flag, SessionState, new_entry
from looptrap.core.types import ALLOW, NOT_RUN, Call, Signal, Verdict
from looptrap.detectors.base import Detector, TurnEnd
from looptrap.engine.config import GuardConfig
from looptrap.reading.calls import (
    ARG_KEYS,
    NO_WRITE,
    WRITES,
    WRITES_ANYWAY,
    call_target,
    call_traits,
    mutation,
    polls_by_args,
    polls_by_name,
    shell_line,
)
from looptrap.reading.edits import RETURN, SAME, apply_edit, changed_unknown, edit_of, saw_outcome
from looptrap.reading.results import READ_CHARS, result_facts, wrote_nothing
from looptrap.reading.signature import Canonicaliser, comparable, digest_text
from looptrap.reading.volatile import text_scrubber

__all__ = ["Engine", "Usage", "read_usage"]

PREVIEW_CHARS = 120
_REDACT_WINDOW = 2 * PREVIEW_CHARS  # of a call's canonical arguments, read for secrets before the preview is cut
TOOL_CHARS = 128  # tool names longer than this are cut (they are stored in the state)
_LONG = 64
_JSON_TEXT = 1 << 16  # text results up to this size that start with { or [ are parsed as JSON
_FACTS_KEPT = 2048  # the text results whose facts are remembered (READ_CHARS at most; longer ones have none)
_SCRUB_EDGE = 2048  # text results longer than twice this are scrubbed at both ends only
#: Without end_turn, checks that follow an intercepted one within this many seconds, with no result in
#: between, are the parallel calls of the same model turn (a model takes longer than this to answer).
BATCH_GAP = 0.5
#: A model step holds at most this many checks (a code loop that never ends a turn still climbs the ladder).
STEP_CALLS = 16

Usage = tuple[int, float | None]


def _num(v: Any) -> float | None:
    t = type(v)
    if (t is int or t is float or (isinstance(v, (int, float)) and t is not bool)) and v == v and v >= 0:
        return float(v)
    return None


def getattr_or_none(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)`` (a named function, so usage objects and mappings read alike)."""
    return getattr(obj, name, None)


_TOKEN_PARTS = ("input_tokens", "output_tokens", "prompt_tokens", "completion_tokens")
_INF = float("inf")


def read_usage(usage: Any) -> Usage | None:
    """Tokens and cost from a usage report: a mapping or an object with ``input_tokens``, ``output_tokens``
    (or ``total_tokens``, ``prompt_tokens``, ``completion_tokens``) and ``cost_usd`` (or ``cost``). Negative,
    NaN and non-numeric values count as nothing."""
    if usage is None:
        return None
    mapping = type(usage) is dict or isinstance(usage, Mapping)  # an ABC's check costs more than the rest
    get: Callable[[str], Any] = usage.get if mapping else partial(getattr_or_none, usage)
    # a usage names two or three of these keys: an absent one (None) is passed over without a call
    v = get("total_tokens")
    total = None if v is None else _num(v)
    if total is None:
        total = 0.0
        for key in _TOKEN_PARTS:
            v = get(key)
            if v is not None:
                part = _num(v)
                if part is not None and part != _INF:
                    total += part
    v = get("cost_usd")
    cost = None if v is None else _num(v)
    if cost is None:
        v = get("cost")
        cost = None if v is None else _num(v)
    if total == _INF:
        total = 0.0
    return int(total), cost


class _ToolPlan:
    """Everything resolved once per tool name: its policy, canonicaliser and active detectors."""

    __slots__ = ("canon", "checks", "exempt", "name_mutates", "name_polls", "policy", "tool_digest", "tool_key")

    def __init__(self, tool: str, config: GuardConfig, canon: Canonicaliser) -> None:
        self.policy = config.policy(tool)
        self.exempt = self.policy.exempt
        self.canon = canon
        off = self.policy.disable
        # bound once: a method looked up on every call costs a bound-method object each time
        self.checks: tuple[Callable[[Call, SessionState, ToolPolicy], Signal | None], ...] = tuple(
            d.check for d in config.detectors if d.name not in off and type(d).check is not Detector.check
        )
        self.name_mutates = mutation(tool, None)
        polling = self.policy.polling
        self.name_polls: bool | None = polling if polling is not None else (polls_by_name(tool) or None)
        self.tool_key = tool.encode("utf-8", "surrogatepass") + b"\x00"
        self.tool_digest = xxhash.xxh3_64_intdigest(self.tool_key)


class Engine:
    """Pure decision logic for one configuration, shared by any number of sessions."""

    def __init__(self, config: GuardConfig | None = None) -> None:
        self.config = config or GuardConfig()
        self._plans: dict[str, _ToolPlan] = {}
        self._canons: dict[int, Canonicaliser] = {}  # by id of a policy held by the configuration
        self._result_canon: Canonicaliser = self.config.result_canonicaliser()
        self._scrub = text_scrubber(self.config.result_volatile_text)
        self._scrubbed: dict[int, int] = {}
        self._facts: dict[str, int] = {}
        self._escalation = self.config.escalation
        ds = self.config.detectors
        self._observers: tuple[Callable[[Entry, SessionState, float | None], None], ...] = tuple(
            d.observe for d in ds if type(d).observe is not Detector.observe
        )
        self._turn_detectors = tuple(d for d in ds if type(d).end_turn is not Detector.end_turn)
        self._text_detectors = tuple(d for d in ds if type(d).text is not Detector.text)
        self._mutating_cache: dict[int, tuple[int, str, bool]] = {}
        self._polls_cache: dict[tuple[Any, ...], bool] = {}
        self._budgets = self.config.budgets if self.config.budgets.active else None
        self._quiet: Engine | None = None

    def without_previews(self) -> Engine:
        """An engine of this configuration without argument previews and result excerpts (made once: guards
        of a pool that share this engine share it too)."""
        quiet = self._quiet
        if quiet is None:
            quiet = self._quiet = Engine(self.config.replace(previews=False))
        return quiet

    # -- calls --------------------------------------------------------------------------------------
    def plan(self, tool: str) -> _ToolPlan:
        p = self._plans.get(tool)
        if p is None:
            policy = self.config.policy(tool)
            canon = self._canons.get(id(policy))  # tools sharing a policy share its canonicaliser
            if canon is None:
                canon = self._canons[id(policy)] = self.config.arg_canonicaliser(policy)
            p = _ToolPlan(tool, self.config, canon)
            if len(self._plans) < 1024:
                self._plans[tool] = p
        return p

    def call(self, tool: str, args: Any, *, at: float | None = None) -> Call:
        """The canonical call: signature digest, short preview and mutating guess. Never raises."""
        if type(tool) is not str or len(tool) > TOOL_CHARS or not tool.isprintable():
            tool = one_line(str(tool), TOOL_CHARS)  # stored and quoted: bounded, no control characters
        p = self._plans.get(tool) or self.plan(tool)
        pol = p.policy
        basis = args
        if pol.key is not None:
            try:
                basis = pol.key(args)
            except Exception:  # noqa: BLE001 - a broken key function must not break the agent
                basis = {"$key_error": True, "args": args}
        elif pol.keys is not None and isinstance(args, Mapping):
            basis = {k: args[k] for k in pol.keys if k in args}
        data = p.canon.encode(basis)
        digest = xxhash.xxh3_64_intdigest(data, p.tool_digest)  # the tool's digest seeds the call's
        preview = ""
        if self.config.previews:
            # a window wider than the preview: a secret that the cut would split is masked whole
            text = redact_text(data[:_REDACT_WINDOW].decode("utf-8", "ignore"))
            if not text.isprintable():  # canonical JSON escapes control characters; bidi marks stay
                text = one_line(text, _REDACT_WINDOW)
            long = len(text) > PREVIEW_CHARS or len(data) > _REDACT_WINDOW
            preview = f"{tool} {text[:PREVIEW_CHARS]}{'...' if long else ''}"
        effect, family, shell_waits = self._mutation(tool, args, digest, p)
        polls = p.name_polls if p.name_polls is not None else (shell_waits or self._polls_by_args(args))
        edit = None
        if effect != NO_WRITE:  # writes only: what does the file hold afterwards?
            try:
                edit = edit_of(args, shell_line(tool, args) if family != tool else None)
            except Exception:  # noqa: BLE001 - arguments of any shape must not break the call
                edit = None
        return Call(
            tool,
            digest,
            preview,
            effect != NO_WRITE,
            at=at,
            writes_on_failure=effect == WRITES_ANYWAY,
            polling=polls,
            family=family,
            args=args,
            edit=edit,
        )

    def _polls_by_args(self, args: Any) -> bool:
        if type(args) is not dict and not isinstance(args, Mapping):
            return False
        keys = tuple(args)  # argument key sets repeat: cache the answer per key set
        hit = self._polls_cache.get(keys)
        if hit is None:
            hit = polls_by_args(args)
            if len(self._polls_cache) >= 4096:
                self._polls_cache.clear()
            self._polls_cache[keys] = hit
        return hit

    def _mutation(self, tool: str, args: Any, digest: int, p: _ToolPlan) -> tuple[int, str, bool]:
        """The call's effect (``NO_WRITE``, ``WRITES``, ``WRITES_ANYWAY``), family, and whether it is a shell
        command that waits (``sleep``, ``watch``, ``tail -f``)."""
        t = type(args)
        if t is dict:
            by_args = not ARG_KEYS.isdisjoint(args)
        else:
            by_args = t is str or isinstance(args, str) or (isinstance(args, Mapping) and not ARG_KEYS.isdisjoint(args))
        if not by_args:
            effect, family, waits = p.name_mutates, tool, False
        else:
            hit = self._mutating_cache.get(digest)
            if hit is None:
                hit = call_traits(tool, args)
                if len(self._mutating_cache) >= 8192:
                    self._mutating_cache.clear()
                self._mutating_cache[digest] = hit
            effect, family, waits = hit
        rule = p.policy.mutating
        if rule is not None:
            if isinstance(rule, bool):
                return (WRITES if rule else NO_WRITE), family, waits
            try:
                return (WRITES if rule(tool, args) else NO_WRITE), family, waits
            except Exception:  # noqa: BLE001 - a broken rule: fall back to the heuristic
                pass
        return effect, family, waits

    def check(
        self, state: SessionState, call: Call, now: float | None = None, message_id: str | None = None
    ) -> tuple[Call, Verdict]:
        """Before a call runs: count it, and decide. Numbers the call (in place) and returns it with the verdict.
        ``message_id``: the model message (turn) that asked for the call, when the caller knows it: calls of one
        message share one step of the escalation ladder, whatever results come between."""
        state.calls += 1
        state.turn_calls += 1
        call.index = state.calls  # in place: a change applied again after a store conflict sets the same fields
        call.batched = state.open_calls > 0
        if message_id:
            message = xxhash.xxh3_64_intdigest(message_id.encode("utf-8", "surrogatepass"))
            if message != state.message:
                state.message = message
                state.new_step()
            state.stepped = False
            state.refused_at = None
        else:
            if state.message:  # a call whose message is not known, after calls whose message was
                state.message = 0
                state.new_step()
            elif state.turn == 0:  # the caller does not end turns: a step is the calls that arrive together
                refused = state.refused_at
                if (
                    state.stepped  # a result came back since the last check
                    or (refused is not None and (now is None or now - refused > BATCH_GAP))
                    or (state.refused and call.digest in state.refused)  # the caller got this call's answer
                ):
                    state.new_step()
            state.stepped = False
            state.refused_at = None
            if state.step_calls >= STEP_CALLS:
                state.new_step()
        state.step_calls += 1
        if state.started is None and now is not None:
            state.started = now
        per = state.per_tool
        if call.tool in per:
            per[call.tool] += 1
        elif len(per) < TOOLS:
            per[call.tool] = 1
        if call.preview:
            previews = state.previews  # state.remember, inlined: this runs on every call
            if call.digest in previews:
                del previews[call.digest]
            elif len(previews) >= PREVIEWS:
                del previews[next(iter(previews))]
            previews[call.digest] = call.preview
        if state.halted is not None:
            return call, self._halted(state, call.index)
        signals: list[Signal] = self._budgets.check_call(state, call.tool, now) if self._budgets else []
        p = self._plans.get(call.tool) or self.plan(call.tool)
        if not p.exempt:
            policy = p.policy
            for detector_check in p.checks:
                s = detector_check(call, state, policy)
                if s is not None:
                    signals.append(s)
        if signals:
            verdict = self.config.escalation.decide(state, signals, call.index, self.config.report_tool)
            state.note_verdict(call, verdict)  # the session's recent interventions; nothing on the allow path
        else:
            verdict = ALLOW
        if verdict.allowed:
            state.open_calls += 1
            pending = state.pending
            pending.append((call.digest, call.index, call.at, call.batched))
            if len(pending) > PENDING:
                del pending[0]
        else:
            state.refused_at = now if now is not None else 0.0
            if len(state.refused) < STEP_CALLS:
                state.refused.append(call.digest)
        return call, verdict

    def record(
        self,
        state: SessionState,
        call: Call,
        result: Any,
        *,
        is_error: bool = False,
        usage: Any = None,
        now: float | None = None,
        outcome: str | None = None,
    ) -> Entry:
        """After a call ran: remember its outcome. Returns the history entry. ``outcome`` (an
        :data:`~looptrap.core.types.OutcomeKind`) overrides ``is_error``: a call that did not run
        (``cancelled``, ``refused``, ``interrupted``) says nothing about the tool and leaves no entry in the
        history; a refusal is the user's say on what the agent does next (as :meth:`user_message`)."""
        pending = state.pending
        if call.index and pending and pending[-1][1] == call.index:
            pending.pop()  # the common case: the result of the call checked last
        else:
            call = self._claim(state, call)
        if state.open_calls:
            state.open_calls -= 1
        state.stepped = True
        if usage is not None:
            self._add_usage(state, usage)
        if outcome is not None:
            if outcome in NOT_RUN:
                if outcome == "refused":
                    self.user_message(state)
                return new_entry(call.digest, call.tool, 0, Flag.NOT_RUN, call.index, call.family or call.tool)
            is_error = outcome == "error"
        if type(result) is str and result.startswith(("{", "[")) and len(result) <= _JSON_TEXT and _closed(result):
            try:  # noqa: SIM105 - per-call path: a context manager costs more. JSON sent as text (MCP): read it
                result = orjson.loads(result)
            except orjson.JSONDecodeError:
                pass
        if is_error and type(result) is str and call.args is not None:
            result = _without_echoed_args(result, call.args)  # the error, not the arguments it quotes back
        if type(result) is str and len(result) <= READ_CHARS:
            facts = self._facts.get(result)  # the same text again (a re-read, a poll, a loop): read once
            if facts is None:
                facts = result_facts(result, False)
                if len(self._facts) >= _FACTS_KEPT:
                    self._facts.clear()
                self._facts[result] = facts
            flags = facts | Flag.ERROR if is_error else facts
        else:
            flags = result_facts(result, is_error)
        if call.polling and not flags & Flag.ERROR:
            flags |= Flag.PENDING  # a poll waits for something to happen: the same answer again is expected
        if flags & Flag.ERROR and not is_error and type(result) is str and call.args is not None:
            result = _without_echoed_args(result, call.args)  # an error read from the text itself
        p = self._plans.get(call.tool) or self.plan(call.tool)
        result_key = p.policy.result_key
        if result_key is not None:
            try:
                result = result_key(result)
            except Exception:  # noqa: BLE001 - a broken key function must not break the agent
                result = {"$key_error": True, "result": result}
        rd, size, opaque = self._result_digest(result)
        if size > _LONG:
            flags |= Flag.LONG
        if opaque:
            flags |= Flag.OPAQUE
        if call.mutating:
            flags |= Flag.WRITE_ATTEMPT
            if not flags & Flag.ERROR:
                if wrote_nothing(result):
                    flags |= Flag.NOOP
                elif call.edit is not None:
                    edited = apply_edit(state, call.edit)
                    if edited == SAME:  # it wrote what the file already held
                        flags |= Flag.NOOP
                    elif edited == RETURN:
                        flags |= Flag.REVERT
        if call.batched:
            flags |= Flag.BATCHED
        if call.mutating and (call.writes_on_failure or not flags & (Flag.ERROR | Flag.NOOP)):
            flags |= Flag.MUTATED | Flag.NOVEL | Flag.NEWS
            if call.edit is None or flags & Flag.ERROR:
                changed_unknown(state, call.digest ^ state.calls)
            state.new_epoch()
            for d in self.config.detectors:
                d.reset(state)
        elif opaque:  # not comparable: never stale, never new
            state.stale_run = 0
        else:
            saw_outcome(state, call.digest ^ rd)
            seen = state.seen
            if seen.get(call.digest) == rd and not flags & Flag.PENDING:  # "still running" is not stale: time passes
                flags |= Flag.STALE
                state.stale_run += 1
            else:
                state.stale_run = 0
            if call.digest in seen:
                del seen[call.digest]  # re-insert at the end: the oldest entry is evicted first
            elif len(seen) >= SEEN:
                del seen[next(iter(seen))]
            seen[call.digest] = rd
            rkey = rd ^ p.tool_digest
            if rkey not in state.results:
                flags |= Flag.NOVEL
                state.remember(state.results, rkey, 1)
                if not flags & (Flag.ERROR | Flag.EMPTY | Flag.STALE):
                    flags |= Flag.NEWS
        if p.exempt:
            flags &= ~Flag.STALE
            state.stale_run = 0
        target = 0
        if flags & Flag.ERROR and call.args is not None:
            named = call_target(call.args)
            target = digest_text(named) if named is not None else 0
        entry = new_entry(call.digest, call.tool, rd, flags, call.index, call.family or call.tool, target)
        state.history.append(entry)
        if flags & (Flag.ERROR | Flag.EMPTY) and self.config.previews and rd not in state.previews:
            state.remember(state.previews, rd, _excerpt(result), PREVIEWS)
        if not p.exempt:
            at = call.at if call.at is not None else now  # the time the call arrived, else when it returned
            for observe in self._observers:
                observe(entry, state, at)
        if state.level:  # only a session inside a loop needs to know whether this call brought news
            self._escalation.after_call(state, bool(flags & Flag.NEWS))
        return entry

    @staticmethod
    def _claim(state: SessionState, call: Call) -> Call:
        """The checked call this result belongs to: the same call (by index), else the oldest pending call
        with the same digest (a result recorded by another process, or with an equal copy of the arguments),
        else a call that was never checked, which still counts as a call."""
        pending = state.pending
        if call.index:
            for i in range(len(pending) - 1, -1, -1):
                if pending[i][1] == call.index:
                    del pending[i]
                    break
            return call
        for i, (digest, index, at, batched) in enumerate(pending):
            if digest == call.digest:
                del pending[i]
                claimed = call.numbered(index)
                claimed.at = at
                claimed.batched = batched
                return claimed
        state.calls += 1
        return call.numbered(state.calls)

    def _result_digest(self, result: Any) -> tuple[int, int, bool]:
        """The result's digest, its size, and whether it is opaque (not comparable)."""
        if type(result) is str:
            size = len(result)
            raw = xxhash.xxh3_64_intdigest(result.encode("utf-8", "surrogatepass"))  # digest_text, inlined
            if self._scrub is None:
                return raw, size, False
            hit = self._scrubbed.get(raw)  # the same text again (a re-read, a loop): no second scrub
            if hit is None:
                hit = digest_text(self._scrub_text(result))
                if len(self._scrubbed) >= 8192:
                    self._scrubbed.clear()
                self._scrubbed[raw] = hit
            return hit, size, False
        data = self._result_canon.encode(result)
        return xxhash.xxh3_64_intdigest(data), len(data), not comparable(data)

    def _scrub_text(self, text: str) -> str:
        scrub = self._scrub
        assert scrub is not None
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
        if len(text) <= 2 * _SCRUB_EDGE:
            return scrub(text)
        # Long outputs: timestamps sit in the first lines, durations and summaries in the last ones.
        # Scrubbing costs time in proportion to the text, so the middle is compared as it is.
        return f"{scrub(text[:_SCRUB_EDGE])}\x00{text[_SCRUB_EDGE:-_SCRUB_EDGE]}\x00{scrub(text[-_SCRUB_EDGE:])}"

    # -- turns --------------------------------------------------------------------------------------
    def end_turn(
        self,
        state: SessionState,
        *,
        progress: Any = None,
        usage: Any = None,
        text: str | None = None,
        error: str | None = None,
        tool_calls: int | None = None,
        now: float | None = None,
    ) -> Verdict:
        """At the end of a model turn: count it, check budgets and turn-level detectors. ``tool_calls``: how
        many tool calls the turn asked for, when the turn is ended before they run (by default, the calls
        checked since the last turn end)."""
        state.turn += 1
        got = self._add_usage(state, usage)
        fingerprint = None
        if progress is not None:
            fingerprint = xxhash.xxh3_64_intdigest(self._result_canon.encode(progress))
        turn = TurnEnd(
            tool_calls=state.turn_calls if tool_calls is None else tool_calls,
            state_digest=fingerprint,
            text_digest=digest_text(text) if text else None,
            error=error,
            call_index=state.calls,
        )
        state.turn_calls = 0
        state.open_calls = 0  # a new model turn: whatever was in flight has ended
        if state.halted is not None:
            return self._halted(state, state.calls)
        cost_unknown = got is not None and got[1] is None and got[0] > 0
        signals = self._budgets.check_turn(state, now, cost_unknown) if self._budgets else []
        for d in self._turn_detectors:
            s = d.end_turn(turn, state)
            if s is not None:
                signals.append(s)
        verdict = (
            self.config.escalation.decide(state, signals, state.calls, self.config.report_tool) if signals else ALLOW
        )
        state.new_step()  # the next calls belong to the next model turn
        return verdict

    def user_message(self, state: SessionState, text: str | None = None) -> None:
        """New input from the user (an answer, a question, a correction) within the same task: what the agent
        does next answers it, so nothing before it is stale, runs of identical calls start over, the ladder
        starts over and the next reply to the user is not idleness. The text is not kept."""
        state.heard_user()
        for d in self.config.detectors:
            d.user_input(state)

    def text(self, state: SessionState, chunk: str, *, final: bool = False) -> Verdict:
        """More of the model's own words (a streamed chunk, or a whole message with ``final``)."""
        if state.halted is not None:
            return self._halted(state, state.calls)
        signals = []
        for d in self._text_detectors:
            s = d.text(chunk, state, state.calls, final=final)
            if s is not None:
                signals.append(s)
        if not signals:
            return ALLOW
        return self.config.escalation.decide(state, signals, state.calls, self.config.report_tool)

    def _add_usage(self, state: SessionState, usage: Any) -> Usage | None:
        got = read_usage(usage)
        if got is not None:
            state.tokens += got[0]
            if got[1] is not None:
                state.cost = round(state.cost + got[1], 10)
        return got

    def new_task(self, state: SessionState) -> None:
        """A new user request: repetition memory starts over, budgets do not."""
        state.forget_repetition()

    # -- the honest way out -------------------------------------------------------------------------
    def report_blocked(self, state: SessionState, tried: list[str], needed: str) -> Verdict:
        """The model reported that it cannot go on: record it and halt cleanly (reason ``reported_blocked``)."""
        needed = printable(redact_text(needed[:2000]), 500)
        state.needed.append(needed)
        del state.needed[:-32]
        summary = "tried: " + ", ".join(one_line(redact_text(t[:_REDACT_WINDOW]), 200) for t in tried[:20])
        message = f"Reported blocked. Needed: {needed}"
        state.halted = {"reason": "reported_blocked", "kind": "report_blocked", "message": message, "summary": summary}
        return Verdict(
            action="halt",
            kind="report_blocked",
            reason="reported_blocked",
            message=message,
            summary=summary,
            call_index=state.calls,
        )

    def _halted(self, state: SessionState, index: int) -> Verdict:
        h = state.halted or {}
        return Verdict(
            action="halt",
            kind=h.get("kind"),
            reason=h.get("reason"),
            message=h.get("message", ""),
            summary=h.get("summary", ""),
            call_index=index,
        )


def _closed(text: str) -> bool:
    """Whether a text that opens a JSON object or array can be one: it ends the way one does (a text cut
    short, such as a truncated output, cannot be parsed) and no single quote follows the bracket (a Python
    repr, ``{'id': 1}``). A text ruled out is not tried: an exception raised and caught costs more."""
    if text[1:2] == "'":
        return False
    end = text[-1]
    return end == "}" or end == "]" or text.rstrip()[-1:] in ("}", "]")


def _excerpt(result: Any) -> str:
    if isinstance(result, str):
        text = result
    elif isinstance(result, Mapping) and isinstance(result.get("message"), str):
        text = result["message"]
    else:
        try:
            text = reprlib.repr(result)  # bounded however large the value
        except Exception:  # noqa: BLE001 - a broken __repr__ is not our failure
            text = type(result).__name__
    return one_line(redact_text(text[:_REDACT_WINDOW]), PREVIEW_CHARS + 3)


def _without_echoed_args(text: str, args: Any) -> str:
    """An error text with the call's own argument values taken out: "old_str `x` did not appear" and
    "old_str `y` did not appear" are the same error."""
    values: list[str] = []
    stack = [args]
    while stack and len(values) < 32:
        v = stack.pop()
        if type(v) is str:
            if len(v) >= 4:
                values.append(v)
        elif isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v[:32])
    for v in sorted(values, key=len, reverse=True):
        if v in text:
            text = text.replace(v, "<arg>")
    return text
