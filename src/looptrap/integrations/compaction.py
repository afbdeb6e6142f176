"""History compaction: collapse runs of failed or stale tool attempts into one short summary.

A model that sees five failed searches in its history believes it is still trying. ``compact_openai``,
``compact_anthropic`` and ``compact_langchain`` return a new history in which each run of two or more
consecutive failed or stale attempts is one call whose result reads "Already tried: ...; none worked.", with
the API's pairing rules kept (every remaining call keeps exactly one result, in its place) and the last
``keep_last`` model turns left as they are.

An attempt is failed when its result is an error or empty ("0 results", "not found", ``[]``, ``""``), and
stale when the same tool returned the same result before (since the last successful write), as the guard
judges results (:func:`looptrap.reading.results.result_facts`, volatile ids and timestamps ignored). Successful
writes, polls and tools exempt in the configuration are never compacted.

No SDK is imported here: OpenAI and Anthropic histories are plain dicts (SDK objects are read too), and
LangChain messages are copied with their own ``model_copy``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

import orjson

from looptrap.core.state import Flag, SessionState
from looptrap.engine.config import GuardConfig
from looptrap.engine.engine import Engine

__all__ = [
    "Attempt",
    "Compacted",
    "Run",
    "compact_anthropic",
    "compact_langchain",
    "compact_openai",
    "find_runs",
]

T = TypeVar("T")
Key = tuple[int, int]  # (message index, block index; -1 for the whole message)

_PREFIX = "Already tried: "
_FAILED_TAIL = "; none worked."
_STALE_TAIL = "; none returned anything new."
_OWN_SUMMARY = re.compile(
    r"^Already tried: (?P<items>.*)(?P<tail>; none worked\.|; none returned anything new\.)$", re.S
)
_SHORT_RESULT = 48  # a result this short is quoted in the summary as it is
_ARGS_CHARS = 80
_ITEMS = 10
_SUMMARY_CHARS = 1200


class Attempt(NamedTuple):
    """One tool call and its result, in no particular API's form."""

    call_id: str
    tool: str
    args: Any
    result: Any
    is_error: bool = False


class Run(NamedTuple):
    """Consecutive failed or stale attempts that collapse into one: the last keeps its call, and its result
    becomes ``summary``; the others go. ``positions`` index the sequence given to :func:`find_runs`."""

    positions: tuple[int, ...]
    attempts: tuple[Attempt, ...]
    summary: str


@dataclass(frozen=True)
class Compacted(Generic[T]):
    """A compacted history: ``messages`` (a new list; unchanged messages are the same objects as in the input),
    the ``runs`` that were collapsed, and how many messages went."""

    messages: list[T]
    runs: tuple[Run, ...] = ()
    removed_messages: int = 0

    @property
    def removed_attempts(self) -> int:
        """Tool calls removed with their results (each run keeps one)."""
        return sum(len(r.attempts) - 1 for r in self.runs)


# -- the neutral core ---------------------------------------------------------------------------------------
class _Judged(NamedTuple):
    failed: bool  # an error or empty result (else: stale, the same result as before)
    tool: str | None  # None for the items of an earlier summary
    text: str  # how the summary lists it, after the tool's name


def find_runs(attempts: Sequence[Attempt | None], *, min_run: int = 2, config: GuardConfig | None = None) -> list[Run]:
    """The runs of ``min_run`` or more consecutive failed or stale attempts, oldest first. ``None`` in
    ``attempts`` is a break (a user message, a final answer): no run spans it. ``config`` supplies tool
    policies (exempt tools, polling, volatile fields), as for the guard."""
    engine = Engine(config)
    state = SessionState()
    runs: list[Run] = []
    current: list[tuple[int, Attempt, _Judged]] = []

    def close() -> None:
        if len(current) >= max(min_run, 2):
            runs.append(
                Run(tuple(p for p, _, _ in current), tuple(a for _, a, _ in current), _render(j for _, _, j in current))
            )
        current.clear()

    for pos, attempt in enumerate(attempts):
        judged = None if attempt is None else _judge(engine, state, attempt)
        if attempt is None or judged is None:
            close()
        else:
            current.append((pos, attempt, judged))
    close()
    return runs


def _judge(engine: Engine, state: SessionState, a: Attempt) -> _Judged | None:
    """How a wasted attempt is listed, or None when it is not wasted (it stays)."""
    own = _OWN_SUMMARY.match(a.result) if isinstance(a.result, str) else None
    if own is not None:  # a summary left by an earlier compaction joins the new one
        return _Judged(own["tail"] == _FAILED_TAIL, None, own["items"])
    flags = engine.record(state, engine.call(a.tool, a.args), a.result, is_error=a.is_error).flags
    if engine.plan(a.tool).exempt or flags & (Flag.MUTATED | Flag.PENDING):
        return None
    failed = bool(flags & (Flag.ERROR | Flag.EMPTY))
    if not failed and flags & Flag.NOVEL:
        return None
    text = " ".join(a.result.split()) if isinstance(a.result, str) else None
    if text is not None and len(text) <= _SHORT_RESULT:
        label = text or "empty result"
    elif not failed:
        label = "same result as before"
    elif flags & Flag.ERROR:
        label = f"{text[:_SHORT_RESULT]}..." if text else "error"
    else:
        label = "nothing found"
    return _Judged(failed, a.tool, f"{_args_text(a.args)} ({label})".lstrip())


def _args_text(args: Any) -> str:
    if isinstance(args, Mapping) and len(args) == 1:
        (value,) = args.values()
        if isinstance(value, str):
            text = f"'{value}'" if "'" not in value and value.isprintable() else _json(value)
        elif isinstance(value, (int, float, bool)) or value is None:
            text = _json(value)
        else:
            text = _json(args)
    elif isinstance(args, str):
        text = f"'{args}'" if "'" not in args and args.isprintable() else _json(args)
    elif not args:
        text = ""
    else:
        text = _json(args)
    return text if len(text) <= _ARGS_CHARS else text[: _ARGS_CHARS - 3] + "..."


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:
        return repr(value)


def _render(judged: Iterable[_Judged]) -> str:
    """ "Already tried: tool 'a' (0 results), 'b' (0 results) ...; none worked." (the tool is named once for a
    series of calls of the same tool; repeats are counted)."""
    counts: dict[tuple[str | None, str], int] = {}
    failed = True
    for j in judged:
        counts[j.tool, j.text] = counts.get((j.tool, j.text), 0) + 1
        failed = failed and j.failed
    parts: list[str] = []
    last_tool = None
    for (tool, text), n in list(counts.items())[:_ITEMS]:
        if tool is not None and tool != last_tool:
            text = f"{tool} {text}"
        if tool is not None and n > 1:
            text = text[:-1] + f", {n} times)"
        parts.append(text)
        last_tool = tool
    if len(counts) > _ITEMS:
        parts.append(f"and {len(counts) - _ITEMS} more")
    items = ", ".join(parts)
    if len(items) > _SUMMARY_CHARS:
        half = _SUMMARY_CHARS // 2
        items = f"{items[:half]} ... {items[-half:]}"
    return _PREFIX + items + (_FAILED_TAIL if failed else _STALE_TAIL)


# -- shared plumbing of the adapters ------------------------------------------------------------------------
def _get(obj: Any, name: str) -> Any:
    """A field of a dict or of an SDK object (histories often hold the response objects themselves)."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dict(dump(exclude_none=True))
    return dict(vars(obj))


def _parse_args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def _text(content: Any) -> Any:
    """A result's content as the guard reads it: text parts joined, other parts named ("[image]")."""
    if content is None or isinstance(content, (str, Mapping)):
        return "" if content is None else content
    if not isinstance(content, Sequence):
        return str(content)
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        else:
            text = _get(part, "text")
            parts.append(text if isinstance(text, str) else f"[{_get(part, 'type') or 'content'}]")
    return "\n".join(parts)


class _Scan:
    """Calls, results and breaks in history order, paired by call id (each result answers the latest open
    call with its id, so ids reused across turns still pair correctly)."""

    def __init__(self) -> None:
        self.events: list[Key | None] = []  # a call's key, or None for a break
        self.calls: dict[Key, tuple[str, str, Any]] = {}
        self.results: dict[Key, tuple[Key, Any, bool]] = {}
        self._open: dict[str, list[Key]] = {}

    def call(self, key: Key, call_id: Any, tool: Any, args: Any) -> None:
        if isinstance(call_id, str) and isinstance(tool, str):
            self.events.append(key)
            self.calls[key] = (call_id, tool, args)
            self._open.setdefault(call_id, []).append(key)

    def result(self, key: Key, call_id: Any, result: Any, is_error: bool = False) -> None:
        waiting = self._open.get(call_id) if isinstance(call_id, str) else None
        if waiting:
            self.results[waiting.pop()] = (key, result, is_error)

    def brk(self) -> None:
        self.events.append(None)

    def plan(self, cut: int, min_run: int, config: GuardConfig | None) -> _Plan:
        """Which calls and results go, and which results become summaries (nothing at or after ``cut``)."""
        attempts: list[Attempt | None] = []
        where: list[tuple[Key, Key] | None] = []
        for key in self.events:
            res = self.results.get(key) if key is not None else None
            if key is None or res is None or key[0] >= cut or res[0][0] >= cut:
                attempts.append(None)
                where.append(None)
                continue
            call_id, tool, args = self.calls[key]
            attempts.append(Attempt(call_id, tool, args, res[1], res[2]))
            where.append((key, res[0]))
        runs = find_runs(attempts, min_run=min_run, config=config)
        plan = _Plan(runs=tuple(runs))
        for run in runs:
            *gone, kept = (w for w in (where[p] for p in run.positions) if w is not None)
            for call_key, result_key in gone:
                plan.drop.update((call_key, result_key))
            plan.summaries[kept[1]] = run.summary
        return plan


@dataclass
class _Plan:
    runs: tuple[Run, ...]
    drop: set[Key] = field(default_factory=set)
    summaries: dict[Key, str] = field(default_factory=dict)


def _cut(starts: list[int], keep_last: int, length: int) -> int:
    """The index from which the last ``keep_last`` model turns (turn starts given) are left alone."""
    if keep_last <= 0:
        return length
    return starts[-keep_last] if len(starts) >= keep_last else 0


def _filter(
    i: int, blocks: Sequence[Any], plan: _Plan, replace: Callable[[Any, str], Any]
) -> tuple[list[Any], bool, bool]:
    """The blocks of message ``i`` without dropped ones, summaries in place; whether anything changed and
    whether anything was dropped."""
    out: list[Any] = []
    dropped = False
    changed = False
    for j, block in enumerate(blocks):
        if (i, j) in plan.drop:
            dropped = changed = True
        elif (i, j) in plan.summaries:
            out.append(replace(block, plan.summaries[(i, j)]))
            changed = True
        else:
            out.append(block)
    return out, changed, dropped


def _with(obj: Any, **fields: Any) -> dict[str, Any]:
    new = _as_dict(obj)
    new.update(fields)
    return new


# -- OpenAI: Chat Completions messages and Responses input items ---------------------------------------------
_RESPONSES_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_RESPONSES_OUTPUTS = frozenset(["function_call_output", "custom_tool_call_output"])
_RESPONSES_NARRATION = frozenset(["reasoning", "message"])  # dropped with a model turn whose calls all go


def _responses_model_item(item: Any) -> bool:
    kind = _get(item, "type")
    if kind == "message" or kind is None:
        return bool(_get(item, "role") == "assistant")
    return isinstance(kind, str) and (
        kind == "reasoning" or kind.endswith("_call") or kind in ("mcp_list_tools", "mcp_approval_request")
    )


def compact_openai(
    messages: Sequence[Any], *, keep_last: int = 2, min_run: int = 2, config: GuardConfig | None = None
) -> Compacted[Any]:
    """Compact an OpenAI history: Chat Completions messages (assistant ``tool_calls`` and ``role: tool``
    results) or Responses input items (``function_call`` / ``function_call_output``, custom tool calls).

    A model turn is an assistant message (Chat Completions) or a series of output items (Responses);
    the last ``keep_last`` turns and everything after them stay as they are. An assistant message or turn
    whose calls all go is removed with its text and reasoning items.
    """
    scan = _Scan()
    starts: list[int] = []
    turns: list[list[int]] = []  # Responses: the items of each model turn
    open_turn = False

    def end_turn() -> None:
        nonlocal open_turn
        if open_turn and not any(_get(messages[j], "type") in _RESPONSES_CALLS for j in turns[-1]):
            scan.brk()  # a turn without calls: a final answer
        open_turn = False

    for i, msg in enumerate(messages):
        role, kind = _get(msg, "role"), _get(msg, "type")
        chat_calls = _get(msg, "tool_calls") if role == "assistant" else None
        if chat_calls:
            end_turn()
            starts.append(i)
            for j, tc in enumerate(chat_calls):
                fn = _get(tc, "function")
                if fn is not None:
                    scan.call((i, j), _get(tc, "id"), _get(fn, "name"), _parse_args(_get(fn, "arguments")))
                else:  # a custom tool call: free-form input
                    custom = _get(tc, "custom")
                    scan.call((i, j), _get(tc, "id"), _get(custom, "name"), _get(custom, "input"))
        elif role == "tool":
            end_turn()
            scan.result((i, -1), _get(msg, "tool_call_id"), _text(_get(msg, "content")))
        elif _responses_model_item(msg):
            if not open_turn:
                starts.append(i)
                turns.append([])
                open_turn = True
            turns[-1].append(i)
            if kind in _RESPONSES_CALLS:
                raw = _get(msg, _RESPONSES_CALLS[kind])
                scan.call((i, -1), _get(msg, "call_id"), _get(msg, "name"), _parse_args(raw))
        elif kind in _RESPONSES_OUTPUTS:
            end_turn()
            scan.result((i, -1), _get(msg, "call_id"), _text(_get(msg, "output")))
        else:
            end_turn()
            scan.brk()
    end_turn()

    plan = scan.plan(_cut(starts, keep_last, len(messages)), min_run, config)
    if not plan.runs:
        return Compacted(list(messages))
    gone_turns: set[int] = set()
    for items in turns:
        calls = [j for j in items if _get(messages[j], "type") in _RESPONSES_CALLS]
        if (
            calls
            and all((j, -1) in plan.drop for j in calls)
            and all(j in calls or _narration(messages[j]) for j in items)
        ):
            gone_turns.update(items)  # nothing but reasoning and text about the calls that went
    out: list[Any] = []
    for i, msg in enumerate(messages):
        if (i, -1) in plan.drop or i in gone_turns:
            continue
        if (i, -1) in plan.summaries:
            field_name = "content" if _get(msg, "role") == "tool" else "output"
            out.append(_with(msg, **{field_name: plan.summaries[(i, -1)]}))
            continue
        chat_calls = _get(msg, "tool_calls") if _get(msg, "role") == "assistant" else None
        if chat_calls:
            kept, changed, _ = _filter(i, list(chat_calls), plan, lambda tc, _s: tc)
            if not changed:
                out.append(msg)
            elif kept:
                out.append(_with(msg, tool_calls=kept))
            continue  # else: every call went, and the message goes with its text
        out.append(msg)
    return Compacted(out, plan.runs, len(messages) - len(out))


def _narration(item: Any) -> bool:
    return _get(item, "type") in _RESPONSES_NARRATION or (
        _get(item, "type") is None and _get(item, "role") == "assistant"
    )


# -- Anthropic Messages API -----------------------------------------------------------------------------------
_ANTHROPIC_NARRATION = frozenset(["text", "thinking", "redacted_thinking"])


def compact_anthropic(
    messages: Sequence[Any], *, keep_last: int = 2, min_run: int = 2, config: GuardConfig | None = None
) -> Compacted[Any]:
    """Compact an Anthropic Messages history (assistant ``tool_use`` blocks, ``tool_result`` blocks in the
    next user message). A model turn is an assistant message; the last ``keep_last`` turns and everything after
    them stay as they are. An assistant message whose ``tool_use`` blocks all go is removed with its text and
    thinking blocks, and so is the user message that held only their results; ``tool_result`` blocks keep
    their order (first in their message)."""
    scan = _Scan()
    starts: list[int] = []
    for i, msg in enumerate(messages):
        role, content = _get(msg, "role"), _get(msg, "content")
        blocks = content if isinstance(content, Sequence) and not isinstance(content, str) else None
        if role == "assistant":
            starts.append(i)
            uses = [(j, b) for j, b in enumerate(blocks or ()) if _get(b, "type") == "tool_use"]
            if not uses:
                scan.brk()
            for j, b in uses:
                scan.call((i, j), _get(b, "id"), _get(b, "name"), _get(b, "input"))
            continue
        other = blocks is None or role != "user"
        for j, b in enumerate(blocks or ()):
            if _get(b, "type") == "tool_result":
                scan.result((i, j), _get(b, "tool_use_id"), _text(_get(b, "content")), bool(_get(b, "is_error")))
            else:
                other = True
        if other:
            scan.brk()  # the user (or system) said something: runs end here

    plan = scan.plan(_cut(starts, keep_last, len(messages)), min_run, config)
    if not plan.runs:
        return Compacted(list(messages))
    out: list[Any] = []
    for i, msg in enumerate(messages):
        content = _get(msg, "content")
        if isinstance(content, str) or not isinstance(content, Sequence):
            out.append(msg)
            continue
        kept, changed, dropped = _filter(i, list(content), plan, lambda b, s: _with(b, content=s))
        if not changed:
            out.append(msg)
        elif (
            dropped and _get(msg, "role") == "assistant" and all(_get(b, "type") in _ANTHROPIC_NARRATION for b in kept)
        ):
            continue  # no tool_use left, only text and thinking about the calls that went: the message goes
        elif kept:
            out.append(_with(msg, content=kept))
    return Compacted(out, plan.runs, len(messages) - len(out))


# -- LangChain messages ----------------------------------------------------------------------------------------
def compact_langchain(
    messages: Sequence[Any], *, keep_last: int = 2, min_run: int = 2, config: GuardConfig | None = None
) -> Compacted[Any]:
    """Compact LangChain messages (``AIMessage.tool_calls`` and ``ToolMessage``). A model turn is an
    ``AIMessage``; the last ``keep_last`` turns and everything after them stay as they are. Changed messages
    are copies (``model_copy``) with the same ids; an ``AIMessage`` whose calls all go is removed with its
    text. Tool-call blocks in the message's content and OpenAI-style ``additional_kwargs["tool_calls"]`` are
    kept in step with ``tool_calls``."""
    scan = _Scan()
    starts: list[int] = []
    for i, msg in enumerate(messages):
        kind = _get(msg, "type")
        if kind in ("ai", "AIMessageChunk"):
            starts.append(i)
            calls = _get(msg, "tool_calls") or []
            if not calls:
                scan.brk()
            for j, tc in enumerate(calls):
                scan.call((i, j), _get(tc, "id"), _get(tc, "name"), _get(tc, "args"))
        elif kind == "tool":
            scan.result((i, -1), _get(msg, "tool_call_id"), _text(_get(msg, "content")), _get(msg, "status") == "error")
        else:
            scan.brk()

    plan = scan.plan(_cut(starts, keep_last, len(messages)), min_run, config)
    if not plan.runs:
        return Compacted(list(messages))
    out: list[Any] = []
    for i, msg in enumerate(messages):
        if (i, -1) in plan.drop:
            continue
        if (i, -1) in plan.summaries:
            out.append(msg.model_copy(update={"content": plan.summaries[(i, -1)]}))
            continue
        calls = _get(msg, "tool_calls") if _get(msg, "type") in ("ai", "AIMessageChunk") else None
        if not calls:
            out.append(msg)
            continue
        kept, changed, _ = _filter(i, list(calls), plan, lambda tc, _s: tc)
        if not changed:
            out.append(msg)
        elif kept:
            out.append(msg.model_copy(update=_langchain_update(msg, {tc["id"] for tc in kept})))
        # else: every call went, and the message goes with its text
    return Compacted(out, plan.runs, len(messages) - len(out))


def _langchain_update(msg: Any, ids: set[Hashable]) -> dict[str, Any]:
    calls = [tc for tc in msg.tool_calls if tc.get("id") in ids]
    update: dict[str, Any] = {"tool_calls": calls}
    raw = msg.additional_kwargs.get("tool_calls")
    if isinstance(raw, list):
        update["additional_kwargs"] = {**msg.additional_kwargs, "tool_calls": [t for t in raw if t.get("id") in ids]}
    if isinstance(msg.content, list):
        update["content"] = [
            b
            for b in msg.content
            if not (
                isinstance(b, Mapping)
                and b.get("type") in ("tool_use", "tool_call", "function_call")
                and (b.get("id") or b.get("call_id")) not in ids
            )
        ]
    return update
