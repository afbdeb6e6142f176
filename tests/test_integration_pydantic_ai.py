"""Pydantic AI: the agent's real run loop, driven by Pydantic AI's own FunctionModel (which receives the whole
message history on every turn), with looptrap attached as the ``LoopGuard`` capability."""

from __future__ import annotations

import asyncio
import importlib.util
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import pytest

from conftest import need
from listening import Listening

need("pydantic-ai (pip install 'looptrap[pydantic-ai]')", importlib.util.find_spec("pydantic_ai") is not None)

from pydantic_ai import Agent, ModelRetry, capture_run_messages  # noqa: E402
from pydantic_ai.exceptions import UnexpectedModelBehavior  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel  # noqa: E402
from pydantic_ai.run import AgentRunResult  # noqa: E402

from looptrap import Budgets, Guard, GuardPool, LoopHalted  # noqa: E402
from looptrap.core.state import Flag  # noqa: E402
from looptrap.integrations.pydantic_ai import LoopGuard  # noqa: E402
from looptrap.testing import step  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
REFUND = {"query": "refund policy"}
T = TypeVar("T")

ran: Counter[str] = Counter()


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
    """Always fails, asking for a retry."""
    ran["flaky"] += 1
    raise ModelRetry("backend down")


@pytest.fixture(autouse=True)
def _reset(own_event_loop: None) -> None:  # run_sync's event loop: see conftest
    ran.clear()


class Script:
    """A FunctionModel's function: ``respond(turn, messages)`` gives each response; every message history the
    model received is kept in ``seen`` (as is the list of tools it was offered)."""

    def __init__(self, respond: Callable[[int, list[ModelMessage]], ModelResponse]) -> None:
        self.respond = respond
        self.seen: list[list[ModelMessage]] = []
        self.tools: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.tools = [t.name for t in info.function_tools]
        return self.respond(len(self.seen) - 1, messages)

    def results(self, turn: int) -> list[tuple[str, Any, str]]:
        """The tool results in the last request the model received on its ``turn``-th call (0-based)."""
        last = self.seen[turn][-1]
        assert isinstance(last, ModelRequest)
        return [(p.tool_name, p.content, p.outcome) for p in last.parts if isinstance(p, ToolReturnPart)]


def call(name: str, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args)])


def answer(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def make_agent(script: Script, *capabilities: Any, **options: Any) -> Agent[None, Any]:
    return Agent(
        FunctionModel(script),
        tools=[search_docs, edit_file, run_tests, flaky],
        capabilities=list(capabilities),
        **options,
    )


Run = Callable[..., AgentRunResult[Any]]


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` in a loop of its own. Not ``asyncio.run``: that would unset the loop ``run_sync`` keeps
    open for the thread (by design), which then warns when it is garbage-collected unclosed."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


@pytest.fixture(params=["run_sync", "run"])
def run(request: pytest.FixtureRequest) -> Run:
    """``agent.run_sync(...)`` or ``await agent.run(...)``: every test runs both ways."""

    def go(agent: Agent[None, Any], prompt: str | None, **options: Any) -> AgentRunResult[Any]:
        if request.param == "run_sync":
            return agent.run_sync(prompt, **options)
        return run_async(agent.run(prompt, **options))

    return go


def expected_messages(n: int) -> list[str]:
    """What a bare guard says to the same ``n`` refund searches (the integration must pass it on verbatim)."""
    guard = Guard(clock=None)
    return [step(guard, "search_docs", REFUND, "0 results").message for _ in range(n)]


def test_loop_is_advised_then_blocked_then_halted(run: Run) -> None:
    script = Script(lambda turn, messages: call("search_docs", **REFUND))
    guard = Guard(clock=None)
    agent = make_agent(script, LoopGuard(guard), retries=0)  # refusals must not spend the tool's retries

    with capture_run_messages() as messages, pytest.raises(LoopHalted) as halted:
        run(agent, "What is the refund policy?")

    assert ran["search_docs"] == 2  # the advised, blocked and halted calls never ran
    expected = expected_messages(4)
    assert script.results(1) == [("search_docs", "0 results", "success")]
    assert script.results(2) == [("search_docs", "0 results", "success")]
    (_, advice, outcome) = script.results(3)[0]
    assert advice.startswith(ADVICE)
    assert advice == expected[2]
    assert outcome == "failed"
    (_, block, outcome) = script.results(4)[0]
    assert block.startswith(BLOCKED)
    assert block == expected[3]
    assert outcome == "failed"
    assert len(script.seen) == 5  # the model was not asked again after the halt
    assert halted.value.reason == "loop_repeat"
    assert "refund policy" in halted.value.summary
    assert guard.halted is not None
    assert guard.halted.reason == "loop_repeat"
    # what the run did up to the halt, for the caller (Pydantic AI's capture_run_messages)
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    assert len(responses) == 5
    assert responses[-1].tool_calls[0].args == REFUND


def test_identical_parallel_calls_of_one_response_share_one_step(run: Run) -> None:
    """One ModelResponse with three identical calls, after two single ones: all three get the advice; the block
    comes with the next response, the halt with the one after."""
    three = ModelResponse(parts=[ToolCallPart("search_docs", dict(REFUND)) for _ in range(3)])
    script = Script(lambda turn, messages: three if turn == 2 else call("search_docs", **REFUND))
    guard = Guard(clock=None)
    with pytest.raises(LoopHalted) as halted:
        run(make_agent(script, LoopGuard(guard)), "What is the refund policy?")

    expected = expected_messages(3)[2]
    assert script.results(3) == [("search_docs", expected, "failed")] * 3  # the same advice for each call
    assert expected.startswith(ADVICE)
    ((_, block, outcome),) = script.results(4)
    assert (block.startswith(BLOCKED), outcome) == (True, "failed")
    assert halted.value.reason == "loop_repeat"
    assert len(script.seen) == 5
    assert ran["search_docs"] == 2


def test_each_response_ends_its_turn_before_its_calls_run(run: Run) -> None:
    guard = Guard(clock=None)
    turns: list[tuple[int, int]] = []

    def where() -> str:
        """Report where the guard is."""
        turns.append((guard.state.turn, guard.state.tokens))
        return "here"

    script = Script(lambda turn, messages: call("where") if turn < 2 else answer("done"))
    agent = Agent(FunctionModel(script), tools=[where], capabilities=[LoopGuard(guard)])
    assert run(agent, "Where are you?").output == "done"
    assert [t for t, _ in turns] == [1, 2]  # the first response's call runs in a declared turn, as every later one
    assert 0 < turns[0][1] < turns[1][1]  # with the usage of the response that asked for it
    assert guard.state.turn == 3  # the answer is a turn too


def test_the_prompt_of_each_run_is_the_users_input(run: Run) -> None:
    guard = Listening()
    agent = make_agent(Script(lambda turn, messages: answer("30 days.")), LoopGuard(guard))
    first = run(agent, "What is the refund policy?")
    run(agent, "And for exchanges?", message_history=first.all_messages())
    run(agent, ["Is this receipt enough?", ImageUrl("https://example.com/receipt.png")])
    assert guard.heard == ["What is the refund policy?", "And for exchanges?", "Is this receipt enough?"]
    assert guard.state.task == 3


def test_refusals_do_not_spend_tool_retries(run: Run) -> None:
    # Pydantic AI's own retry channel: with retries=0 the first ModelRetry ends the run.
    script = Script(lambda turn, messages: call("flaky"))
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries"):
        run(make_agent(script, retries=0), "go")

    # The guard's refusals (advice, then a block) travel as ToolFailed: the same budget is never touched.
    ran.clear()
    script = Script(lambda turn, messages: call("search_docs", **REFUND))
    with pytest.raises(LoopHalted):
        run(make_agent(script, LoopGuard(Guard(clock=None)), retries=0), "go")
    assert [r[0][2] for r in map(script.results, range(1, 5))] == ["success", "success", "failed", "failed"]


def test_model_changes_course_after_advice(run: Run) -> None:
    def respond(turn: int, messages: list[ModelMessage]) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart) and last.outcome == "failed":
            return call("search_docs", query="refunds")
        if isinstance(last, ToolReturnPart) and last.content != "0 results":
            return answer("Refunds are in the handbook, section 4.")
        return call("search_docs", **REFUND)

    script = Script(respond)
    result = run(make_agent(script, LoopGuard(Guard(clock=None))), "What is the refund policy?")

    assert result.output == "Refunds are in the handbook, section 4."
    assert script.results(3)[0][1].startswith(ADVICE)
    assert ran["search_docs"] == 3  # two refund searches, then the new query


HEALTHY = [
    call("search_docs", query="auth module"),
    call("edit_file", path="auth.py", change="fix token check"),
    call("run_tests"),
    call("edit_file", path="auth.py", change="handle expiry"),
    call("run_tests"),
    call("edit_file", path="auth.py", change="refresh on 401"),
    call("run_tests"),
    answer("Fixed: all tests pass."),
]


def transcript(result: AgentRunResult[Any]) -> list[tuple[str, Any, Any]]:
    """The run's messages without ids and timestamps: what each part said."""
    out: list[tuple[str, Any, Any]] = []
    for message in result.all_messages():
        for p in message.parts:
            if isinstance(p, ToolCallPart):
                out.append(("call", p.tool_name, p.args))
            elif isinstance(p, ToolReturnPart):
                out.append(("result", p.content, p.outcome))
            elif isinstance(p, TextPart | UserPromptPart):
                out.append((type(p).__name__, p.content, None))
    return out


def test_healthy_run_is_untouched(run: Run) -> None:
    runs = []
    for capabilities in ((), (LoopGuard(Guard(clock=None)),)):
        ran.clear()
        script = Script(lambda turn, messages: HEALTHY[turn])
        result = run(make_agent(script, *capabilities), "Fix the auth bug.")
        runs.append((result.output, transcript(result), dict(ran)))
    assert runs[0] == runs[1]
    assert runs[1][0] == "Fixed: all tests pass."
    assert runs[1][2] == {"search_docs": 1, "edit_file": 3, "run_tests": 3}


def test_guard_attached_to_one_run_of_an_existing_agent(run: Run) -> None:
    script = Script(lambda turn, messages: call("search_docs", **REFUND))
    with pytest.raises(LoopHalted):
        run(make_agent(script), "refunds?", capabilities=[LoopGuard(Guard(clock=None))])
    assert ran["search_docs"] == 2

    # an agent that has a LoopGuard already: the run's own replaces it
    ran.clear()
    pool, guard = GuardPool(), Guard(clock=None)
    with pytest.raises(LoopHalted):
        run(make_agent(script, LoopGuard(pool)), "refunds?", capabilities=[LoopGuard(guard)])
    assert ran["search_docs"] == 2
    assert guard.halted is not None
    assert len(pool) == 0


def test_failing_tool_is_recorded_as_an_error_and_stopped_before_retries_run_out(run: Run) -> None:
    script = Script(lambda turn, messages: call("flaky"))
    guard = Guard(clock=None)
    with pytest.raises(LoopHalted) as halted:
        run(make_agent(script, LoopGuard(guard), retries=10), "go")
    assert halted.value.reason == "loop_repeat"
    assert ran["flaky"] == 2
    assert all(e.flags & Flag.ERROR for e in guard.state.history)


def test_pool_keeps_one_session_per_conversation() -> None:
    pool = GuardPool(guard_options={"clock": None})

    def respond(turn: int, messages: list[ModelMessage]) -> ModelResponse:
        searches = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
        return call("search_docs", **REFUND) if searches < 2 else answer("none found")

    agent = make_agent(Script(respond), LoopGuard(pool))

    async def two_conversations(agent: Agent[None, Any]) -> list[AgentRunResult[Any]]:
        return list(await asyncio.gather(agent.run("refunds?"), agent.run("refunds?")))

    first, second = run_async(two_conversations(agent))
    assert first.conversation_id != second.conversation_id
    assert first.conversation_id in pool
    assert second.conversation_id in pool
    assert ran["search_docs"] == 4  # two searches each, never advised (one shared session would advise a third)
    assert {p[2] for p in transcript(first) + transcript(second) if p[0] == "result"} == {"success"}

    # a follow-up run in the same conversation continues its session, as a new task
    follow = agent.run_sync("and exchanges?", message_history=first.all_messages())
    assert follow.conversation_id == first.conversation_id
    assert len(pool) == 2
    assert pool.get(first.conversation_id).state.task == 2  # each run with a prompt started a task


def test_report_blocked_tool(run: Run) -> None:
    def respond(turn: int, messages: list[ModelMessage]) -> ModelResponse:
        if turn == 0:
            return call("report_blocked", tried=[])
        return call("report_blocked", tried=["search_docs 'refund policy'"], needed="access to the billing wiki")

    script = Script(respond)
    guard = Guard(clock=None)
    with pytest.raises(LoopHalted) as halted:
        run(make_agent(script, LoopGuard(guard)), "What is the refund policy?")

    assert "report_blocked" in script.tools
    (_, explanation, outcome) = script.results(1)[0]
    assert outcome == "failed"
    assert "'tried' must be a non-empty list" in explanation
    assert halted.value.reason == "reported_blocked"
    assert guard.needed == ["access to the billing wiki"]

    script = Script(lambda turn, messages: answer("ok"))
    run(make_agent(script, LoopGuard(Guard(report_tool=None))), "hi")
    assert "report_blocked" not in script.tools


def test_turns_feed_budgets_and_turn_detectors(run: Run) -> None:
    script = Script(lambda turn, messages: call("search_docs", query=f"q{turn}"))
    guard = Guard(clock=None, budgets=Budgets(max_turns=3))
    with pytest.raises(LoopHalted) as halted:
        run(make_agent(script, LoopGuard(guard)), "go")
    assert halted.value.reason == "budget_turns"
    assert ran["search_docs"] == 2  # the third response reached the budget as it came: its call did not run
    assert guard.state.turn == 3
    assert guard.state.tokens > 0

    # replies that are not a valid output, turn after turn: advice goes with the next request, then a halt
    script = Script(lambda turn, messages: answer("let me think"))
    with pytest.raises(LoopHalted) as halted:
        run(make_agent(script, LoopGuard(Guard(clock=None)), output_type=int, retries=10), "count")
    assert halted.value.reason == "no_action"
    # the first reply answers the prompt (the user's input); the three after it are the stall, and the advice
    # of the third goes with the next request
    told = [str(p.content) for p in script.seen[4][-1].parts if isinstance(p, UserPromptPart)]
    assert any("ended without a valid tool call" in t for t in told)


def test_streamed_run_is_guarded() -> None:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="search_docs", json_args='{"query": "refund policy"}')}

    async def go() -> None:
        agent = Agent(FunctionModel(stream_function=stream), tools=[search_docs], capabilities=[LoopGuard()])
        async with agent.run_stream("What is the refund policy?") as streamed:
            await streamed.get_output()

    with pytest.raises(LoopHalted) as halted:
        run_async(go())
    assert halted.value.reason == "loop_repeat"
    assert ran["search_docs"] == 2


# -- a call the user denies ---------------------------------------------------------------------------------------
def test_a_call_the_user_denies_is_their_say_not_a_tool_error(run: Run) -> None:
    """Two empty searches, a deletion that needs approval and is denied, the same search again: the denial is the
    user's input (the ladder starts over), so the third search runs and is not advised."""
    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied

    def delete_docs(path: str) -> str:
        """Delete a document."""
        ran["delete_docs"] += 1
        return f"deleted {path}"

    replies = [call("search_docs", **REFUND), call("search_docs", **REFUND), call("delete_docs", path="refund.md")]
    replies += [call("search_docs", **REFUND), answer("Nothing on refunds.")]
    script = Script(lambda turn, messages: replies[turn])
    guard = Guard(clock=None)
    agent = make_agent(script, LoopGuard(guard), output_type=[str, DeferredToolRequests])
    agent.tool_plain(requires_approval=True)(delete_docs)

    paused = run(agent, "What is the refund policy?")
    assert isinstance(paused.output, DeferredToolRequests)
    (asked,) = paused.output.approvals
    denied = DeferredToolResults(approvals={asked.tool_call_id: ToolDenied("Not that file.")})
    done = run(agent, None, message_history=paused.all_messages(), deferred_tool_results=denied)

    assert done.output == "Nothing on refunds."
    assert script.results(3) == [("delete_docs", "Not that file.", "denied")]
    assert script.results(4) == [("search_docs", "0 results", "success")]  # not advised: the user spoke
    assert (ran["search_docs"], ran["delete_docs"]) == (3, 0)
    assert guard.state.calls == 4
