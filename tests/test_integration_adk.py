"""Google ADK: the real ``Runner`` loop of an ``LlmAgent`` (``run`` and ``run_async``), driven by a scripted model
written against ADK's ``BaseLlm`` interface, with looptrap attached as the runner plugin ``LooptrapPlugin``."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
from collections import Counter
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from pydantic import Field

from conftest import need
from listening import Listening

need("google-adk (pip install 'looptrap[adk]')", importlib.util.find_spec("google.adk") is not None)

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.agents.invocation_context import LlmCallsLimitExceededError  # noqa: E402
from google.adk.agents.run_config import RunConfig  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.genai import types  # noqa: E402

from looptrap import Budgets, Guard, GuardPool  # noqa: E402
from looptrap.core.state import Flag  # noqa: E402
from looptrap.integrations.adk import LooptrapPlugin  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
REFUND = {"query": "refund policy"}
CAP = RunConfig(max_llm_calls=20)
Reply = list[Any]  # text (str) and tool calls (name, arguments)

ran: Counter[str] = Counter()


class ScriptedLlm(BaseLlm):
    """Answers each request with the next scripted reply and keeps every request's contents."""

    replies: list[Reply] = Field(default_factory=list)
    inputs: list[list[types.Content]] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.inputs.append([c.model_copy(deep=True) for c in llm_request.contents])
        parts = []
        for item in self.replies.pop(0):
            if isinstance(item, str):
                parts.append(types.Part(text=item))
            else:
                name, args = item
                call = types.FunctionCall(id=f"c{next(_ids)}", name=name, args=args)
                parts.append(types.Part(function_call=call))
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=40, candidates_token_count=20, total_token_count=60
        )
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


_ids = itertools.count()


def search_docs(query: str) -> str:
    """Search the documentation."""
    ran["search_docs"] += 1
    return "0 results" if query == "refund policy" else f"1 result: '{query}' is in the handbook, section 4"


def edit_file(path: str, change: str) -> str:
    """Edit a file."""
    ran["edit_file"] += 1
    return f"edited {path}: {change}"


def run_tests() -> str:
    """Run the test suite."""
    ran["run_tests"] += 1
    return f"{3 - ran['edit_file']} failed" if ran["edit_file"] < 3 else "all passed"


def flaky() -> str:
    """Always fails."""
    raise RuntimeError("backend down")


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def searches(n: int, args: dict[str, Any] = REFUND) -> list[Reply]:
    return [[("search_docs", args)] for _ in range(n)]


def responses(model: ScriptedLlm, turn: int) -> list[Any]:
    """The function responses in the last content the model received on its ``turn``-th call."""
    return [p.function_response.response for p in model.inputs[turn][-1].parts or () if p.function_response]


class Chat:
    """An ``LlmAgent`` in an ``App`` (with the plugin when given), its ``InMemoryRunner`` and one session."""

    def __init__(self, replies: list[Reply], plugin: LooptrapPlugin | None, *tools: Any) -> None:
        self.model = ScriptedLlm(model="scripted", replies=replies, inputs=[])
        agent = LlmAgent(name="support", model=self.model, tools=list(tools or [search_docs]))
        app = App(name="support", root_agent=agent, plugins=[plugin] if plugin is not None else [])
        self.runner = InMemoryRunner(app=app)
        session = asyncio.run(self.runner.session_service.create_session(app_name=self.runner.app_name, user_id="u"))
        self.session = session.id

    def send(self, text: str = "What is the refund policy?", *, asynchronous: bool = False) -> list[Event]:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        if not asynchronous:
            return list(self.runner.run(user_id="u", session_id=self.session, new_message=message, run_config=CAP))

        async def collect() -> list[Event]:
            run = self.runner.run_async(user_id="u", session_id=self.session, new_message=message, run_config=CAP)
            return [event async for event in run]

        return asyncio.run(collect())


def final_text(events: list[Event]) -> str:
    last = events[-1]
    assert last.is_final_response()
    assert last.content is not None
    return "".join(p.text or "" for p in last.content.parts or ())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run", "run_async"])
def test_a_stuck_agent_gets_advice_then_a_block_then_a_clean_halt(asynchronous: bool) -> None:
    chat = Chat(searches(30), LooptrapPlugin(Guard(clock=None)))

    events = chat.send(asynchronous=asynchronous)

    assert final_text(events).startswith("Run halted by looptrap (loop_repeat). tried: search_docs")
    meta = events[-1].custom_metadata or {}
    assert meta["looptrap"]["reason"] == "loop_repeat"
    assert len(chat.model.inputs) == 5  # the 5th call halted the run: the model was not asked again
    assert ran["search_docs"] == 2
    assert responses(chat.model, 3)[0]["error"].startswith(ADVICE)  # the model read the advice as the result
    assert responses(chat.model, 4)[0]["error"].startswith(BLOCKED)


def test_without_the_guard_the_same_script_runs_to_the_cap() -> None:
    chat = Chat(searches(30), None)
    with pytest.raises(LlmCallsLimitExceededError):
        chat.send()
    assert len(chat.model.inputs) == 20
    assert ran["search_docs"] == 20


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run", "run_async"])
def test_parallel_identical_calls_of_one_response_all_get_the_advice(asynchronous: bool) -> None:
    three = [("search_docs", REFUND)] * 3
    chat = Chat([*searches(2), three, *searches(2)], LooptrapPlugin(Guard(clock=None)))

    events = chat.send(asynchronous=asynchronous)

    advised = [r["error"] for r in responses(chat.model, 3)]
    assert len(advised) == 3
    assert advised == [advised[0]] * 3  # one step of the ladder: the same advice for each
    assert advised[0].startswith(ADVICE)
    assert responses(chat.model, 4)[0]["error"].startswith(BLOCKED)
    assert "loop_repeat" in final_text(events)
    assert ran["search_docs"] == 2


def edit_test_cycle() -> list[Reply]:
    steps: list[Reply] = []
    for n in range(3):
        steps.append([("edit_file", {"path": "app.py", "change": f"fix {n}"})])
        steps.append([("run_tests", {})])
    steps.append([("search_docs", {"query": "changelog"})])
    steps.append(["Fixed: all tests pass."])
    return steps


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run", "run_async"])
def test_a_healthy_agent_is_untouched(asynchronous: bool) -> None:
    runs = []
    for plugin in (None, LooptrapPlugin(Guard(clock=None))):
        ran.clear()
        chat = Chat(edit_test_cycle(), plugin, edit_file, run_tests, search_docs)
        events = chat.send(asynchronous=asynchronous)
        seen = [
            [p.function_response.response for p in c.parts or () if p.function_response] for c in chat.model.inputs[-1]
        ]
        runs.append((final_text(events), seen, dict(ran)))
    assert runs[0] == runs[1]
    assert runs[1][0] == "Fixed: all tests pass."
    assert runs[1][2] == {"edit_file": 3, "run_tests": 3, "search_docs": 1}


def test_a_model_that_changes_course_after_the_advice_finishes() -> None:
    chat = Chat([*searches(3), *searches(1, {"query": "returns"}), ["Section 4."]], LooptrapPlugin(Guard(clock=None)))
    assert final_text(chat.send()) == "Section 4."
    assert responses(chat.model, 3)[0]["error"].startswith(ADVICE)
    assert ran["search_docs"] == 3


def test_each_message_is_a_new_task_and_the_users_input() -> None:
    guard = Listening()
    chat = Chat([*searches(2), ["no luck"], *searches(2), ["still no luck"]], LooptrapPlugin(guard))
    assert final_text(chat.send()) == "no luck"
    assert final_text(chat.send("Try again, please.")) == "still no luck"  # the same searches: no repeat now
    assert guard.heard == ["What is the refund policy?", "Try again, please."]
    assert guard.state.task == 2
    assert ran["search_docs"] == 4


def test_a_session_per_adk_session_by_default() -> None:
    plugin = LooptrapPlugin()  # a new GuardPool
    chat = Chat([*searches(2), ["no luck"], *searches(2), ["no luck"]], plugin)
    chat.send()
    chat.send()
    pool = plugin.guard
    assert isinstance(pool, GuardPool)
    assert f"u:{chat.session}" in pool
    assert plugin.guard_for("u", chat.session).state.task == 2


def test_each_response_ends_a_turn_with_its_tokens_and_a_budget_halts_before_its_calls() -> None:
    guard = Guard(clock=None)
    steps = [[("search_docs", {"query": q})] for q in ("a", "b", "c")]
    Chat([*steps, ["done"]], LooptrapPlugin(guard)).send()
    assert (guard.state.turn, guard.state.tokens) == (4, 240)

    ran.clear()
    chat = Chat([*steps, ["never reached"]], LooptrapPlugin(Guard(clock=None, budgets=Budgets(max_tokens=150))))
    events = chat.send(asynchronous=True)
    assert final_text(events).startswith("Run halted by looptrap (budget_tokens)")
    assert ran["search_docs"] == 2  # the response that crossed the budget was replaced: its call never ran
    assert len(chat.model.inputs) == 3
    assert final_text(chat.send("Try again.")).startswith("Run halted by looptrap (budget_tokens)")
    assert len(chat.model.inputs) == 3  # a budget halt outlives the task: the next run makes no model call


def test_report_blocked_is_the_honest_way_out() -> None:
    replies: list[Reply] = [
        [("report_blocked", {"tried": []})],
        [("report_blocked", {"tried": ["search refund policy"], "needed": "the wiki"})],
        ["never reached"],
    ]
    plugin = LooptrapPlugin(Guard(clock=None))
    chat = Chat(replies, plugin)
    events = chat.send()
    assert "'tried' must be a non-empty list" in responses(chat.model, 1)[0]["error"]
    assert final_text(events).startswith("Run halted by looptrap (reported_blocked). tried: search refund policy")
    assert plugin.guard_for("u", chat.session).needed == ["the wiki"]
    assert len(chat.model.inputs) == 2


@pytest.mark.parametrize("pooled", [False, True], ids=["guard", "pool"])
@pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")  # AgentTool's own
def test_an_agent_stuck_calling_an_agent_tool_is_halted(pooled: bool) -> None:
    """The agent tool's own run (a runner and session of its own, with the app's plugins) is no new task of the
    caller's session, and a pool keeps no session for it once it is over."""
    helper_model = ScriptedLlm(model="helper", replies=[["nothing found"]] * 30, inputs=[])
    helper = LlmAgent(name="helper", model=helper_model, description="Looks things up.")
    plugin = LooptrapPlugin(None if pooled else Guard(clock=None))
    chat = Chat([[("helper", {"request": "refund policy"})]] * 30, plugin, AgentTool(helper))

    events = chat.send(asynchronous=pooled)

    assert final_text(events).startswith("Run halted by looptrap (loop_repeat). tried: helper")
    assert len(chat.model.inputs) == 5
    assert len(helper_model.inputs) == 2  # the advised, blocked and halted calls never reached the helper
    assert responses(chat.model, 3)[0]["error"].startswith(ADVICE.replace("search_docs", "helper"))
    if pooled:
        assert isinstance(plugin.guard, GuardPool)
        assert (len(plugin.guard), f"u:{chat.session}" in plugin.guard) == (1, True)


def test_a_tool_that_raises_is_recorded_as_a_failure() -> None:
    guard = Guard(clock=None)
    chat = Chat([[("flaky", {})], ["never reached"]], LooptrapPlugin(guard), flaky)
    with pytest.raises(RuntimeError, match="backend down"):  # ADK's own handling of a raising tool
        chat.send()
    assert [bool(e.flags & Flag.ERROR) for e in guard.state.history] == [True]


# -- a tool that requires confirmation ----------------------------------------------------------------------------
def confirm(chat: Chat, events: list[Event], confirmed: bool) -> list[Event]:
    """The user's answer to the agent's confirmation request in ``events`` (a function response, no words)."""
    (asked,) = [
        p.function_call
        for e in events
        for p in (e.content.parts or () if e.content else ())
        if p.function_call and p.function_call.name == "adk_request_confirmation"
    ]
    answer = types.FunctionResponse(id=asked.id, name=asked.name, response={"confirmed": confirmed})
    message = types.Content(role="user", parts=[types.Part(function_response=answer)])
    return list(chat.runner.run(user_id="u", session_id=chat.session, new_message=message, run_config=CAP))


@pytest.mark.parametrize("confirmed", [False, True], ids=["rejected", "confirmed"])
def test_a_call_that_needs_confirmation_is_checked_once_and_a_rejection_is_the_users_say(confirmed: bool) -> None:
    """Two empty searches, an edit whose tool requires confirmation, the same search again. The user's answer
    continues the task (it is no new request), the edit is checked once, not again when it comes back with the
    answer; rejected, it is the user's refusal (the ladder starts over), not a failed call."""
    from google.adk.tools import FunctionTool

    guard = Guard(clock=None)
    edit = ("edit_file", {"path": "refund.md", "change": "30 days"})
    replies: list[Reply] = [*searches(2), [edit], *searches(1), ["Nothing on refunds."]]
    chat = Chat(replies, LooptrapPlugin(guard), FunctionTool(edit_file, require_confirmation=True), search_docs)
    events = chat.send()
    assert responses(chat.model, 2) == [{"result": "0 results"}]
    out = confirm(chat, events, confirmed)

    assert final_text(out) == "Nothing on refunds."
    assert responses(chat.model, 3) == [
        {"result": "edited refund.md: 30 days"} if confirmed else {"error": "This tool call is rejected."}
    ]
    assert ran == Counter(search_docs=3, edit_file=1 if confirmed else 0)
    assert guard.state.calls == 4  # the edit counted once
    assert guard.state.task == 1  # the answer goes on with the task
    history = [e.tool for e in guard.state.history]
    assert history == (["search_docs"] * 2 + ["edit_file", "search_docs"] if confirmed else ["search_docs"] * 3)
    assert guard.state.heard == (0 if confirmed else 3)  # the rejection: the user's input, as of the edit
    assert responses(chat.model, 4) == [{"result": "0 results"}]
