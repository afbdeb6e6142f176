"""History compaction: runs of failed or stale attempts collapse into one summary, the API's pairing rules hold,
and each SDK accepts the result (its own request types, its real client against a mock transport)."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import need
from looptrap import GuardConfig, ToolPolicy
from looptrap.integrations.compaction import (
    Attempt,
    compact_anthropic,
    compact_langchain,
    compact_openai,
    find_runs,
)

QUESTION = "What is the refund policy?"
QUERIES = ["refund policy", "refunds policy", "refund-policy", "refund policies", "policy refund"]
LOOP_SUMMARY = (
    "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (0 results), 'refund-policy' "
    "(0 results), 'refund policies' (0 results), 'policy refund' (0 results); none worked."
)
DOC = "Refunds: items can be returned within 30 days of delivery for a full refund."


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def need_openai() -> None:
    need("openai (pip install openai)", _has("openai") and _has("pydantic"))


def need_anthropic() -> None:
    need("anthropic (pip install anthropic)", _has("anthropic") and _has("pydantic"))


def _anthropic_http() -> str:
    """The HTTP package the installed anthropic SDK is built on (``httpx``, or ``httpx2`` in newer releases)."""
    import anthropic._base_client as base

    return "httpx2" if "httpx2" in vars(base) else "httpx"


def need_langchain() -> None:
    need("langchain (pip install langchain)", _has("langchain") and _has("langchain_core"))


# -- histories ------------------------------------------------------------------------------------------------
def tool_call(cid: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}


def chat_turn(*calls: tuple[str, str, dict[str, Any], str]) -> list[dict[str, Any]]:
    """An assistant message with these (id, tool, args, result) calls, then their results."""
    return [
        {"role": "assistant", "content": None, "tool_calls": [tool_call(c, t, a) for c, t, a, _ in calls]},
        *({"role": "tool", "tool_call_id": c, "content": r} for c, _, _, r in calls),
    ]


def chat_loop(n: int = 5, final: bool = True) -> list[dict[str, Any]]:
    """A question, ``n`` searches that find nothing, and (``final``) the model's answer."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You answer from the docs."}]
    msgs.append({"role": "user", "content": QUESTION})
    for i, q in enumerate(QUERIES[:n]):
        msgs += chat_turn((f"call_{i}", "search_docs", {"query": q}, "0 results"))
    if final:
        msgs.append({"role": "assistant", "content": "I could not find the refund policy."})
    return msgs


def chat_pairing_errors(messages: list[Any]) -> list[str]:
    """What the Chat Completions API rejects: a tool call without exactly one ``tool`` message right after its
    assistant message, or a ``tool`` message that answers no call of the assistant message before it."""
    errors = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            errors.append(f"message {i}: tool result {m['tool_call_id']} answers no preceding tool call")
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [tc["id"] for tc in m["tool_calls"]]
            j = i + 1
            answered = []
            while j < len(messages) and messages[j]["role"] == "tool":
                answered.append(messages[j]["tool_call_id"])
                j += 1
            if sorted(answered) != sorted(ids):
                errors.append(f"message {i}: calls {ids} answered by {answered}")
            i = j
            continue
        i += 1
    return errors


def anthropic_pairing_errors(messages: list[Any]) -> list[str]:
    """What the Messages API rejects: every ``tool_use`` answered in the next user message by ``tool_result``
    blocks that come first in it; no ``tool_result`` for anything else. Stricter than the API: roles alternate."""
    errors = []
    expected: list[str] = []
    for i, m in enumerate(messages):
        role = _field(m, "role")
        blocks = _field(m, "content")
        blocks = [] if isinstance(blocks, str) else list(blocks)
        if i and role == _field(messages[i - 1], "role"):
            errors.append(f"message {i}: two {role} messages in a row")
        if role == "user":
            results = [_field(b, "tool_use_id") for b in blocks if _field(b, "type") == "tool_result"]
            firsts = [_field(b, "tool_use_id") for b in blocks[: len(results)]]
            if sorted(results) != sorted(expected) or firsts != results:
                errors.append(f"message {i}: results {results} (first: {firsts}) for calls {expected}")
            expected = []
        elif role == "assistant":
            if expected:
                errors.append(f"message {i}: calls {expected} not answered")
            expected = [_field(b, "id") for b in blocks if _field(b, "type") == "tool_use"]
    return errors


def responses_pairing_errors(items: list[Any]) -> list[str]:
    """What the Responses API rejects: a ``function_call`` without exactly one later output, an output without
    its call, a ``reasoning`` item not followed by the item it belongs to."""
    errors = []
    calls = [it["call_id"] for it in items if it.get("type") == "function_call"]
    outputs = [it["call_id"] for it in items if it.get("type") == "function_call_output"]
    if sorted(calls) != sorted(outputs) or len(set(calls)) != len(calls):
        errors.append(f"calls {calls} vs outputs {outputs}")
    for i, it in enumerate(items):
        if it.get("type") == "reasoning":
            nxt = items[i + 1] if i + 1 < len(items) else {}
            if nxt.get("type") not in ("function_call", "reasoning") and nxt.get("role") != "assistant":
                errors.append(f"item {i}: reasoning {it['id']} without its following item")
    return errors


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name)


def materialize(value: Any) -> Any:
    """pydantic validates ``Iterable[...]`` fields lazily: walk everything so each item is validated."""
    if isinstance(value, Mapping):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return [materialize(v) for v in value]
    return value


# -- the core on OpenAI Chat Completions dicts (no SDK needed) ------------------------------------------------
def test_a_looping_search_collapses_into_one_summary() -> None:
    history = chat_loop()
    before = copy.deepcopy(history)
    out = compact_openai(history, keep_last=1)
    assert history == before  # the input is not touched
    assert out.messages == [
        history[0],
        history[1],
        history[10],  # the last attempt keeps its call...
        {"role": "tool", "tool_call_id": "call_4", "content": LOOP_SUMMARY},  # ...and its result is the summary
        history[-1],
    ]
    assert out.messages[0] is history[0]  # unchanged messages are shared
    assert out.messages[-1] is history[-1]
    assert len(history) - len(out.messages) == out.removed_messages == 8
    assert out.removed_attempts == 4
    assert [len(r.attempts) for r in out.runs] == [5]
    assert [a.call_id for a in out.runs[0].attempts] == [f"call_{i}" for i in range(5)]
    assert chat_pairing_errors(out.messages) == []


def test_the_last_turns_are_untouched() -> None:
    history = chat_loop(final=False)  # the agent is still looping: compaction before its next model call
    out = compact_openai(history, keep_last=2)
    assert out.messages[2:4] == [
        history[6],
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (0 results), "
            "'refund-policy' (0 results); none worked.",
        },
    ]
    assert all(a is b for a, b in zip(out.messages[-4:], history[-4:], strict=True))  # the last 2 turns, as they were
    assert len(history) - len(out.messages) == 4
    assert compact_openai(history, keep_last=5).messages == history  # every attempt is in the last 5 turns
    assert compact_openai(history, keep_last=4).messages == history  # one attempt before them: no run
    assert chat_pairing_errors(out.messages) == []


def test_successful_attempts_split_runs_and_stay() -> None:
    order = '{"id": 42, "status": "shipped", "items": ["kettle"]}'
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    history += chat_turn(("c1", "search_docs", {"query": "refund policy"}, "0 results"))
    history += chat_turn(("c2", "search_docs", {"query": "refunds"}, "No matches found."))
    history += chat_turn(("c3", "get_order", {"order_id": 42}, order))
    history += chat_turn(("c4", "search_docs", {"query": "refund"}, "[]"))
    history += chat_turn(("c5", "search_docs", {"query": "returns"}, ""))
    history += chat_turn(("c6", "search_docs", {"query": "money back"}, "Error: search backend timed out"))
    history += [{"role": "assistant", "content": "Your order 42 shipped; I found no refund policy."}]
    out = compact_openai(history, keep_last=1)
    assert [m.get("content") for m in out.messages if m["role"] == "tool"] == [
        "Already tried: search_docs 'refund policy' (0 results), 'refunds' (No matches found.); none worked.",
        order,
        "Already tried: search_docs 'refund' ([]), 'returns' (empty result), 'money back' (Error: search backend "
        "timed out); none worked.",
    ]
    assert history[5] in out.messages  # get_order, call and result, untouched
    assert history[6] in out.messages
    assert (out.removed_attempts, out.removed_messages) == (3, 6)
    assert chat_pairing_errors(out.messages) == []


def test_parallel_calls_keep_their_successful_neighbours() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    history += chat_turn(
        ("c1", "get_order", {"order_id": 42}, '{"id": 42, "status": "shipped"}'),
        ("c2", "search_docs", {"query": "refund policy"}, "0 results"),
        ("c3", "search_docs", {"query": "refunds"}, "0 results"),
    )
    history += chat_turn(("c4", "search_docs", {"query": "returns"}, "0 results"))
    history += chat_turn(
        ("c5", "search_docs", {"query": "money back"}, "0 results"),
        ("c6", "search_docs", {"query": "refund window"}, "0 results"),
        ("c7", "get_policy", {"name": "refunds"}, "Refunds within 30 days."),
    )
    history += [{"role": "assistant", "content": "Refunds within 30 days."}]
    out = compact_openai(history, keep_last=1)
    assert out.messages[1]["tool_calls"] == [history[1]["tool_calls"][0]]  # get_order stays in its message
    assert out.messages[2] is history[2]
    assert out.messages[3]["tool_calls"] == history[7]["tool_calls"][1:]
    assert out.messages[4] == {
        "role": "tool",
        "tool_call_id": "c6",
        "content": "Already tried: search_docs 'refund policy' (0 results), 'refunds' (0 results), 'returns' "
        "(0 results), 'money back' (0 results), 'refund window' (0 results); none worked.",
    }
    assert out.messages[5] is history[10]  # get_policy's result
    assert (out.removed_attempts, out.removed_messages) == (4, 5)
    assert chat_pairing_errors(out.messages) == []


def test_stale_results_collapse_and_the_first_one_stays() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    history += chat_turn(("c1", "search_docs", {"query": "refund"}, DOC))
    history += chat_turn(("c2", "search_docs", {"query": "refund policy"}, DOC))
    history += chat_turn(("c3", "search_docs", {"query": "refund rules"}, DOC))
    history += [{"role": "assistant", "content": "30 days."}]
    out = compact_openai(history, keep_last=1)
    assert out.messages[:3] == history[:3]  # the first time the document came back
    assert out.messages[4]["content"] == (
        "Already tried: search_docs 'refund policy' (same result as before), 'refund rules' (same result as "
        "before); none returned anything new."
    )
    assert out.removed_messages == 2


def test_a_successful_write_makes_the_same_result_new_again() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix f."}]
    source = "def f():\n    return 1  # the answer is supposed to be 2, see the tests in tests/test_f.py"
    history += chat_turn(("c1", "read_file", {"path": "f.py"}, source))
    history += chat_turn(("c2", "edit_file", {"path": "f.py", "old": "1", "new": "2"}, "ok"))
    history += chat_turn(("c3", "read_file", {"path": "f.py"}, source))
    history += [{"role": "assistant", "content": "Done."}]
    assert compact_openai(history, keep_last=0).runs == ()


def test_failed_writes_collapse_too() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix f."}]
    for i in range(3):
        args = {"path": "f.py", "old": "return 1", "new": "return 2"}
        history += chat_turn((f"c{i}", "edit_file", args, "Error: the old string does not occur in f.py"))
    history += [{"role": "assistant", "content": "I cannot edit f.py."}]
    out = compact_openai(history, keep_last=1)
    assert out.messages[2]["content"] == (
        'Already tried: edit_file {"path":"f.py","old":"return 1","new":"return 2"} (Error: the old string does '
        "not occur in f.py, 3 times); none worked."
    )


def test_polls_and_exempt_tools_are_never_compacted() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Deploy."}]
    for i in range(4):
        history += chat_turn((f"p{i}", "poll_job", {"job": "j1"}, "status: running"))
    for i in range(3):
        history += chat_turn((f"d{i}", "debug_step", {}, "0 results"))
    history += [{"role": "assistant", "content": "Still running."}]
    config = GuardConfig(tools={"debug_*": ToolPolicy(exempt=True)})
    assert compact_openai(history, keep_last=0, config=config).runs == ()
    assert len(compact_openai(history, keep_last=0).runs) == 1  # without the policy, the debug steps collapse


def test_a_user_message_ends_a_run() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    history += chat_turn(("c1", "search_docs", {"query": "refund policy"}, "0 results"))
    history += chat_turn(("c2", "search_docs", {"query": "refunds"}, "0 results"))
    history += [{"role": "assistant", "content": "Nothing found."}, {"role": "user", "content": "Try 'returns'."}]
    history += chat_turn(("c3", "search_docs", {"query": "returns"}, "0 results"))
    history += chat_turn(("c4", "search_docs", {"query": "return policy"}, "0 results"))
    history += [{"role": "assistant", "content": "Nothing found either."}]
    out = compact_openai(history, keep_last=1)
    assert [len(r.attempts) for r in out.runs] == [2, 2]
    assert history[5] in out.messages
    assert history[6] in out.messages
    assert chat_pairing_errors(out.messages) == []


def test_compaction_is_idempotent_and_earlier_summaries_merge() -> None:
    history = chat_loop(final=False)
    once = compact_openai(history, keep_last=2).messages
    assert compact_openai(once, keep_last=2).messages == once
    more = once + chat_turn(("call_5", "search_docs", {"query": "refund terms"}, "0 results"))
    more += chat_turn(("call_6", "search_docs", {"query": "refund rules"}, "0 results"))
    again = compact_openai(more, keep_last=2)
    assert next(m["content"] for m in again.messages if m["role"] == "tool") == (
        "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (0 results), 'refund-policy' "
        "(0 results), search_docs 'refund policies' (0 results), 'policy refund' (0 results); none worked."
    )
    assert len(again.messages) == len(once)
    assert chat_pairing_errors(again.messages) == []


def test_the_neutral_core() -> None:
    attempts: list[Attempt | None] = [
        Attempt("1", "search_docs", {"query": "a"}, "0 results"),
        Attempt("2", "search_docs", {"query": "b"}, "boom", is_error=True),
        None,  # a break
        Attempt("3", "search_docs", {"query": "c"}, "0 results"),
        Attempt("4", "get_order", {"order_id": 1}, {"id": 1, "items": []}),  # an empty collection: nothing found
        Attempt("5", "get_order", {"order_id": 2}, {"id": 2, "items": ["kettle"]}),
    ]
    runs = find_runs(attempts)
    assert [r.positions for r in runs] == [(0, 1), (3, 4)]
    assert runs[0].summary == "Already tried: search_docs 'a' (0 results), 'b' (boom); none worked."
    assert runs[1].summary == "Already tried: search_docs 'c' (0 results), get_order 1 (nothing found); none worked."
    assert find_runs(attempts, min_run=3) == []


# each turn: the results of its (parallel) calls, or "user" for a user message between tool turns
_TURNS = st.lists(
    st.one_of(
        st.just("user"),
        st.lists(st.sampled_from(["empty", "error", "new", "same"]), min_size=1, max_size=3),
    ),
    max_size=12,
)


def _random_history(turns: list[Any], fmt: str) -> list[Any]:
    msgs: list[Any] = [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    n = 0
    for turn in turns:
        if turn == "user" and fmt == "anthropic" and msgs[-1]["role"] == "user":
            msgs[-1] = {**msgs[-1], "content": [*msgs[-1]["content"], {"type": "text", "text": "Go on."}]}
        elif turn == "user":
            msgs.append({"role": "user", "content": [{"type": "text", "text": "Go on."}]})
        else:
            calls = []
            for kind in turn:
                n += 1
                result = {"empty": "0 results", "error": "Error: timeout", "new": f"doc {n}", "same": DOC}[kind]
                calls.append((f"c{n}", "search_docs", {"query": f"q{n % 3}"}, result))
            msgs += anthropic_turn(*calls, text=None) if fmt == "anthropic" else chat_turn(*calls)
    return msgs


@settings(max_examples=150, deadline=None)
@given(turns=_TURNS, keep_last=st.integers(0, 3), fmt=st.sampled_from(["openai", "anthropic"]))
def test_any_history_stays_valid(turns: list[Any], keep_last: int, fmt: str) -> None:
    """Random histories (failures, new results, repeats, parallel calls, user messages between): the result is
    valid for the API, compacting it again changes nothing, and every new result is still there."""
    history = _random_history(turns, fmt)
    compact, errors = (
        (compact_anthropic, anthropic_pairing_errors) if fmt == "anthropic" else (compact_openai, chat_pairing_errors)
    )
    before = copy.deepcopy(history)
    out = compact(history, keep_last=keep_last)
    assert history == before
    assert errors(out.messages) == []
    assert compact(out.messages, keep_last=keep_last).messages == out.messages
    assert len(history) - len(out.messages) == out.removed_messages
    new_results = re.findall(r'"doc \d+"', json.dumps(history))
    assert len(new_results) == sum(t.count("new") for t in turns if t != "user")
    assert re.findall(r'"doc \d+"', json.dumps(out.messages)) == new_results  # every new result stays


# -- OpenAI: the SDK's own types and its client ----------------------------------------------------------------
def fake_openai_api(
    answers: list[dict[str, Any]], check: Callable[[list[Any]], list[str]], key: str
) -> tuple[Any, list[dict[str, Any]]]:
    """An OpenAI client whose transport answers like the API: 400 for a history the API rejects, else the next
    scripted answer. Returns the client and the request bodies it received."""
    import httpx
    import openai

    bodies: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        errors = check(body[key])
        if errors:
            return httpx.Response(400, json={"error": {"message": "; ".join(errors), "type": "invalid_request_error"}})
        return httpx.Response(200, json=answers[len(bodies) - 1])

    transport = httpx.MockTransport(handle)
    client = openai.OpenAI(api_key="test", base_url="http://api.test/v1", http_client=httpx.Client(transport=transport))
    return client.with_options(max_retries=0), bodies


def chat_completion(message: dict[str, Any]) -> dict[str, Any]:
    choice = {"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop", "message": message}
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-test", "choices": [choice]}


def test_openai_chat_types_accept_the_compacted_history() -> None:
    need_openai()
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import TypeAdapter

    out = compact_openai(chat_loop(), keep_last=1).messages
    assert materialize(TypeAdapter(list[ChatCompletionMessageParam]).validate_python(out)) == out


def test_openai_chat_client_sends_the_compacted_history() -> None:
    """A real loop over the real client: the model's messages (SDK objects) go back into the history, which is
    compacted before every request; the fake API checks the pairing of each request as the API does."""
    need_openai()
    calls = [tool_call(f"call_{i}", "search_docs", {"query": q}) for i, q in enumerate(QUERIES)]
    answers = [chat_completion({"role": "assistant", "content": None, "tool_calls": [c]}) for c in calls]
    answers.append(chat_completion({"role": "assistant", "content": "I could not find it."}))
    client, bodies = fake_openai_api(answers, chat_pairing_errors, "messages")
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    while True:
        sent = compact_openai(history, keep_last=2).messages
        message = client.chat.completions.create(model="gpt-test", messages=sent).choices[0].message
        history.append(message)  # the SDK's ChatCompletionMessage, as the OpenAI docs do it
        if not message.tool_calls:
            break
        history += [{"role": "tool", "tool_call_id": tc.id, "content": "0 results"} for tc in message.tool_calls]
    assert len(bodies) == 6
    assert len(history) == 12
    last = bodies[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert last[2]["content"] == (
        "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (0 results), 'refund-policy' "
        "(0 results); none worked."
    )
    assert last[1]["tool_calls"][0]["id"] == "call_2"


def responses_loop(n: int = 5) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    for i, q in enumerate(QUERIES[:n]):
        items += [
            {"type": "reasoning", "id": f"rs_{i}", "summary": []},
            {
                "type": "function_call",
                "id": f"fc_{i}",
                "call_id": f"call_{i}",
                "name": "search_docs",
                "arguments": json.dumps({"query": q}),
            },
            {"type": "function_call_output", "call_id": f"call_{i}", "output": "0 results"},
        ]
    return items


def test_openai_responses_items() -> None:
    history = responses_loop()
    history.append(
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Not found.", "annotations": []}],
        }
    )
    out = compact_openai(history, keep_last=1)
    assert out.messages == [
        history[0],
        history[13],  # the last attempt's reasoning and call stay
        history[14],
        {"type": "function_call_output", "call_id": "call_4", "output": LOOP_SUMMARY},
        history[-1],
    ]
    assert (out.removed_attempts, out.removed_messages) == (4, 12)  # each attempt: reasoning, call, output
    assert responses_pairing_errors(out.messages) == []


def test_openai_responses_types_and_client_accept_the_compacted_items() -> None:
    need_openai()
    import openai
    from openai.types.responses import ResponseInputParam
    from pydantic import TypeAdapter

    items = compact_openai(responses_loop(), keep_last=1).messages
    assert materialize(TypeAdapter(ResponseInputParam).validate_python(items)) == items
    answer = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Not found.", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    client, bodies = fake_openai_api([answer], responses_pairing_errors, "input")
    assert client.responses.create(model="gpt-test", input=items).output_text == "Not found."
    assert bodies[0]["input"] == items
    with pytest.raises(openai.BadRequestError, match="without its following item"):  # the fake API rejects bad input
        client.responses.create(model="gpt-test", input=[items[0], items[1], items[3]])


# -- Anthropic --------------------------------------------------------------------------------------------------
def anthropic_turn(*calls: tuple[str, str, dict[str, Any], str], text: str | None = "Let me search.") -> list[Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": c, "name": t, "input": a} for c, t, a, _ in calls]
    results = [{"type": "tool_result", "tool_use_id": c, "content": r} for c, _, _, r in calls]
    return [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]


def anthropic_loop() -> list[Any]:
    msgs: list[Any] = [{"role": "user", "content": QUESTION}]
    for i, q in enumerate(QUERIES):
        msgs += anthropic_turn((f"toolu_{i}", "search_docs", {"query": q}, "0 results"))
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "I could not find it."}]})
    return msgs


def test_anthropic_messages() -> None:
    history = anthropic_loop()
    history[4]["content"][0]["is_error"] = True
    history[4]["content"][0]["content"] = [{"type": "text", "text": "search backend timed out"}]
    before = copy.deepcopy(history)
    out = compact_anthropic(history, keep_last=1)
    assert history == before
    assert out.messages == [
        history[0],
        history[9],
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_4",
                    "content": "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (search "
                    "backend timed out), 'refund-policy' (0 results), 'refund policies' (0 results), 'policy refund' "
                    "(0 results); none worked.",
                }
            ],
        },
        history[-1],
    ]
    assert (out.removed_attempts, out.removed_messages) == (4, 8)
    assert anthropic_pairing_errors(out.messages) == []


def test_anthropic_parallel_calls_and_user_text() -> None:
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    history += anthropic_turn(
        ("t1", "search_docs", {"query": "refund policy"}, "0 results"),
        ("t2", "get_order", {"order_id": 42}, '{"id": 42, "status": "shipped"}'),
        ("t3", "search_docs", {"query": "refunds"}, "0 results"),
    )
    history += anthropic_turn(("t4", "search_docs", {"query": "returns"}, "0 results"))
    history[-1]["content"].append({"type": "text", "text": "Hurry up, please."})  # the user speaks: a run ends
    history += anthropic_turn(("t5", "search_docs", {"query": "money back"}, "0 results"), text=None)
    history += anthropic_turn(("t6", "search_docs", {"query": "refund window"}, "0 results"), text=None)
    history.append({"role": "assistant", "content": [{"type": "text", "text": "Nothing."}]})
    out = compact_anthropic(history, keep_last=1)
    assert [len(r.attempts) for r in out.runs] == [2, 2]
    assert [b["type"] for b in out.messages[1]["content"]] == ["text", "tool_use", "tool_use"]
    assert [b["tool_use_id"] for b in out.messages[2]["content"]] == ["t1", "t2"]  # t1 alone is no run
    assert out.messages[3] is history[3]
    assert out.messages[4]["content"][1] == {"type": "text", "text": "Hurry up, please."}
    assert out.messages[4]["content"][0]["content"] == (
        "Already tried: search_docs 'refunds' (0 results), 'returns' (0 results); none worked."
    )
    assert (out.removed_attempts, out.removed_messages) == (2, 2)
    assert anthropic_pairing_errors(out.messages) == []


def test_anthropic_types_accept_the_compacted_history() -> None:
    need_anthropic()
    from anthropic.types import MessageParam
    from pydantic import TypeAdapter

    out = compact_anthropic(anthropic_loop(), keep_last=1).messages
    assert materialize(TypeAdapter(list[MessageParam]).validate_python(out)) == out


def test_anthropic_client_sends_the_compacted_history() -> None:
    """A real loop over the real client: ``response.content`` (SDK block objects) goes back into the history, as
    the Anthropic docs do it; the fake API checks each request's pairing as the API does."""
    need_anthropic()
    import anthropic

    httpx = importlib.import_module(_anthropic_http())

    def message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }

    answers = [
        message([{"type": "tool_use", "id": f"toolu_{i}", "name": "search_docs", "input": {"query": q}}], "tool_use")
        for i, q in enumerate(QUERIES)
    ]
    answers.append(message([{"type": "text", "text": "I could not find it."}], "end_turn"))
    bodies: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        errors = anthropic_pairing_errors(bodies[-1]["messages"])
        if errors:
            return httpx.Response(400, json={"type": "error", "error": {"type": "invalid_request_error"}})
        return httpx.Response(200, json=answers[len(bodies) - 1])

    http = httpx.Client(transport=httpx.MockTransport(handle))
    client = anthropic.Anthropic(api_key="test", base_url="http://api.test", http_client=http, max_retries=0)
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    while True:
        sent = compact_anthropic(history, keep_last=2).messages
        response = client.messages.create(model="claude-test", max_tokens=100, messages=sent)
        history.append({"role": "assistant", "content": response.content})
        uses = [b for b in response.content if b.type == "tool_use"]
        if not uses:
            break
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id} for b in uses]})
        history[-1]["content"][0]["content"] = "0 results"
    assert len(bodies) == 6
    last = bodies[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"][0]["id"] == "toolu_2"
    assert last[2]["content"][0]["content"].startswith("Already tried: search_docs 'refund policy' (0 results)")


# -- LangChain ----------------------------------------------------------------------------------------------------
def langchain_loop() -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    msgs: list[Any] = [HumanMessage(QUESTION, id="h")]
    for i, q in enumerate(QUERIES):
        call = {"name": "search_docs", "args": {"query": q}, "id": f"call_{i}", "type": "tool_call"}
        msgs.append(AIMessage("", tool_calls=[call], id=f"ai_{i}"))
        msgs.append(ToolMessage("0 results", tool_call_id=f"call_{i}", id=f"tool_{i}"))
    msgs.append(AIMessage("I could not find it.", id="final"))
    return msgs


def test_langchain_messages_convert_to_a_valid_openai_history() -> None:
    need_langchain()
    need_openai()
    from langchain_core.messages import convert_to_openai_messages
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import TypeAdapter

    history = langchain_loop()
    before = [m.model_copy(deep=True) for m in history]
    out = compact_langchain(history, keep_last=1)
    assert history == before
    assert [m.id for m in out.messages] == ["h", "ai_4", "tool_4", "final"]
    assert out.messages[2].content == LOOP_SUMMARY
    assert out.messages[1] is history[9]
    assert (out.removed_attempts, out.removed_messages) == (4, 8)
    converted = convert_to_openai_messages(out.messages)
    assert materialize(TypeAdapter(list[ChatCompletionMessageParam]).validate_python(converted)) == converted
    assert chat_pairing_errors(converted) == []


def test_langchain_provider_blocks_follow_the_tool_calls() -> None:
    """Calls also appear as provider blocks in the content and OpenAI-style ``additional_kwargs``: they go too."""
    need_langchain()
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    order = {"name": "get_order", "args": {"order_id": 42}, "id": "c0", "type": "tool_call"}
    search = {"name": "search_docs", "args": {"query": "a"}, "id": "c1", "type": "tool_call"}
    raw = [{"id": c, "type": "function", "function": {"name": "x", "arguments": "{}"}} for c in ("c0", "c1")]
    first = AIMessage(
        [
            {"type": "text", "text": "Looking up the order and the policy."},
            {"type": "tool_use", "id": "c0", "name": "get_order", "input": {"order_id": 42}},
            {"type": "tool_use", "id": "c1", "name": "search_docs", "input": {"query": "a"}},
        ],
        tool_calls=[order, search],
        additional_kwargs={"tool_calls": raw},
    )
    second = AIMessage("", tool_calls=[{**search, "id": "c2", "args": {"query": "b"}}])
    history = [
        HumanMessage(QUESTION),
        first,
        ToolMessage("order 42: shipped", tool_call_id="c0"),
        ToolMessage("0 results", tool_call_id="c1", status="error"),
        second,
        ToolMessage("0 results", tool_call_id="c2"),
        AIMessage("Shipped; no policy found."),
    ]
    out = compact_langchain(history, keep_last=1)
    assert out_types(out.messages) == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    kept = out.messages[1]
    assert kept.tool_calls == [order]
    assert [b.get("id") for b in kept.content] == [None, "c0"]
    assert kept.additional_kwargs == {"tool_calls": raw[:1]}
    assert first.tool_calls == [order, search]  # the original is untouched
    assert len(first.content) == 3
    assert out.messages[4].content == "Already tried: search_docs 'a' (0 results), 'b' (0 results); none worked."


def out_types(messages: list[Any]) -> list[str]:
    return [type(m).__name__ for m in messages]


def test_langchain_agent_middleware_compacts_the_model_input() -> None:
    """The docs' middleware on a real ``create_agent`` loop with a scripted model: the model's last input is the
    compacted history, while the agent's own state keeps every message."""
    need_langchain()
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelRequest, ModelResponse, wrap_model_call
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    seen: list[list[Any]] = []

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
            return self

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    script = [
        AIMessage("", tool_calls=[{"name": "search_docs", "args": {"query": q}, "id": f"call_{i}"}])
        for i, q in enumerate(QUERIES)
    ]
    script.append(AIMessage("I could not find it."))
    runs = 0

    def search_docs(query: str) -> str:
        """Search the documentation."""
        nonlocal runs
        runs += 1
        return "0 results"

    @wrap_model_call
    def compact_history(request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(request.override(messages=compact_langchain(request.messages).messages))

    agent = create_agent(ScriptedModel(messages=iter(script)), [search_docs], middleware=[compact_history])
    result = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    assert runs == 5
    assert len(result["messages"]) == 12  # the agent's state keeps everything
    last = seen[-1]
    assert out_types(last) == ["HumanMessage", *["AIMessage", "ToolMessage"] * 3]
    assert last[2].content == (
        "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (0 results), 'refund-policy' "
        "(0 results); none worked."
    )
    assert result["messages"][-1].content == "I could not find it."


# -- OpenAI Agents SDK ----------------------------------------------------------------------------------------------
def test_openai_agents_input_filter_compacts_the_model_input() -> None:
    """The docs' ``call_model_input_filter`` on the SDK's real Runner with its own ScriptedModel."""
    need("openai-agents (pip install openai-agents)", _has("agents"))
    import asyncio

    from agents import Agent, RunConfig, Runner, function_tool
    from agents.run_config import CallModelData, ModelInputData
    from agents.testing import ScriptedModel, assistant_message, function_call

    @function_tool
    def search_docs(query: str) -> str:
        """Search the documentation."""
        return "0 results"

    def compact_input(data: CallModelData[Any]) -> ModelInputData:
        items = compact_openai(data.model_data.input).messages
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    steps: list[Any] = [
        [function_call("search_docs", {"query": q}, call_id=f"call_{i}")] for i, q in enumerate(QUERIES)
    ]
    model = ScriptedModel([*steps, [assistant_message("I could not find it.")]])
    agent = Agent(name="support", model=model, tools=[search_docs])
    config = RunConfig(tracing_disabled=True, call_model_input_filter=compact_input)
    loop = asyncio.new_event_loop()
    try:
        result = loop.run_until_complete(Runner.run(agent, QUESTION, run_config=config))
    finally:
        loop.close()
    assert result.final_output == "I could not find it."
    assert len(result.to_input_list()) == 12  # the run's own history keeps everything
    assert model.last_call is not None
    sent = list(model.last_call.input)
    assert [it.get("type", "message") for it in sent] == ["message", *["function_call", "function_call_output"] * 3]
    assert sent[2]["output"] == (
        "Already tried: search_docs 'refund policy' (0 results), 'refunds policy' (0 results), 'refund-policy' "
        "(0 results); none worked."
    )
    assert responses_pairing_errors(sent) == []
