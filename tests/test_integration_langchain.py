"""LangChain 1.x and LangGraph: the real ``create_agent`` loop and a hand-built ``StateGraph`` with a ``ToolNode``,
driven by LangChain's own fake chat model (scripted AIMessages), guarded by ``LooptrapMiddleware``."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from conftest import need
from listening import Listening

need("langchain (pip install 'looptrap[langchain]')", importlib.util.find_spec("langchain") is not None)

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402
from pydantic import Field  # noqa: E402

from looptrap import Budgets, Guard, GuardPool, LoopHalted  # noqa: E402
from looptrap.core.state import Flag  # noqa: E402
from looptrap.integrations.langchain import LooptrapMiddleware  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
REFUND = {"query": "refund policy"}

ran: Counter[str] = Counter()


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, scripted with AIMessages; it accepts tools and keeps every input it got."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        self.bound[:] = [t.name if hasattr(t, "name") else t["name"] for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def model(*replies: AIMessage) -> ScriptedModel:
    return ScriptedModel(messages=iter(replies))


def calls(*calls: tuple[str, dict[str, Any]], text: str = "", **kwargs: Any) -> AIMessage:
    """One model message asking for these tool calls (ids are unique per test run)."""
    tcs = [{"name": n, "args": a, "id": f"call_{n}_{i}_{id(a)}", "type": "tool_call"} for i, (n, a) in enumerate(calls)]
    return AIMessage(text, tool_calls=tcs, **kwargs)


def search(args: dict[str, Any] = REFUND) -> AIMessage:
    return calls(("search_docs", dict(args)))


@tool
def search_docs(query: str) -> str:
    """Search the documentation."""
    ran["search_docs"] += 1
    return "3 results: returns within 30 days" if "return" in query else "0 results"


@tool
def edit_file(path: str, text: str) -> str:
    """Write a file."""
    ran["edit_file"] += 1
    return f"wrote {len(text)} bytes to {path}"


_test_runs: list[str] = []


@tool
def run_tests() -> str:
    """Run the test suite."""
    ran["run_tests"] += 1
    _test_runs.append("x")
    return "3 passed" if len(_test_runs) % 3 == 0 else "1 failed: test_refund"


TOOLS = [search_docs, edit_file, run_tests]


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()
    _test_runs.clear()


def pool() -> GuardPool:
    return GuardPool(guard_options={"clock": None})


def agent(m: ScriptedModel, mw: LooptrapMiddleware | None) -> Any:
    return create_agent(m, TOOLS, middleware=[mw] if mw else [])


def run(graph: Any, mode: str, thread: str = "t1") -> dict[str, Any]:
    inp = {"messages": [("user", "What is the refund policy?")]}
    config = {"configurable": {"thread_id": thread}}
    if mode == "async":
        return asyncio.run(graph.ainvoke(inp, config))
    return graph.invoke(inp, config)  # type: ignore[no-any-return]


def tool_results(messages: Sequence[AnyMessage]) -> list[tuple[str, str]]:
    return [(m.status, str(m.content)) for m in messages if isinstance(m, ToolMessage)]


MODES = ["sync", "async"]


# -- the loop: advice, block, halt -------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_advice_reaches_the_model_then_block_then_halt_raises(mode: str) -> None:
    m = model(*(search() for _ in range(8)), AIMessage("never reached"))
    with pytest.raises(LoopHalted) as exc:
        run(agent(m, LooptrapMiddleware(pool())), mode)
    assert exc.value.reason == "loop_repeat"
    assert "search_docs" in exc.value.summary
    assert ran["search_docs"] == 2  # the advised, blocked and halted calls never ran
    assert len(m.seen) == 5
    advised, blocked = m.seen[3][-1], m.seen[4][-1]  # what the model read as its 3rd and 4th call's results
    assert isinstance(advised, ToolMessage)
    assert advised.status == "error"
    assert str(advised.content).startswith(ADVICE)
    assert advised.tool_call_id == m.seen[3][-2].tool_calls[0]["id"]  # type: ignore[attr-defined]
    assert isinstance(blocked, ToolMessage)
    assert blocked.status == "error"
    assert str(blocked.content).startswith(BLOCKED)


@pytest.mark.parametrize("mode", MODES)
def test_halt_can_end_the_run_with_a_final_message(mode: str) -> None:
    m = model(*(search() for _ in range(8)), AIMessage("never reached"))
    mw = LooptrapMiddleware(pool(), on_halt="end")
    out = run(agent(m, mw), mode)
    final = out["messages"][-1]
    assert isinstance(final, AIMessage)
    assert not final.tool_calls
    assert str(final.content).startswith("Run halted by looptrap (loop_repeat).")
    assert final.response_metadata["looptrap"]["reason"] == "loop_repeat"
    assert ran["search_docs"] == 2
    assert len(m.seen) == 5  # the model is not called again after the halt
    results = tool_results(out["messages"])
    assert [s for s, _ in results] == ["success", "success", "error", "error", "error"]
    assert results[4][1].startswith("Halted (loop_repeat)")
    assert mw.guard_for("t1").halted is not None


@pytest.mark.parametrize("mode", MODES)
def test_a_model_that_changes_course_finishes_normally(mode: str) -> None:
    m = model(search(), search(), search(), search({"query": "returns"}), AIMessage("Returns within 30 days."))
    out = run(agent(m, LooptrapMiddleware(pool())), mode)
    assert out["messages"][-1].content == "Returns within 30 days."
    assert str(m.seen[3][-1].content).startswith(ADVICE)
    assert [s for s, _ in tool_results(out["messages"])] == ["success", "success", "error", "success"]
    assert ran["search_docs"] == 3


# -- a healthy run is untouched --------------------------------------------------------------------
def healthy_script() -> list[AIMessage]:
    out: list[AIMessage] = [search({"query": "refund"})]
    for i in range(3):
        out.append(calls(("edit_file", {"path": "refund.py", "text": f"days = {30 + i}"})))
        out.append(calls(("run_tests", {})))
    return [*out, AIMessage("Fixed: the tests pass.")]


def transcript(messages: Sequence[AnyMessage]) -> list[tuple[Any, ...]]:
    return [
        (
            type(msg).__name__,
            msg.content,
            getattr(msg, "status", None),
            [(c["name"], c["args"]) for c in getattr(msg, "tool_calls", [])],
        )
        for msg in messages
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_healthy_run_is_identical_with_and_without_the_guard(mode: str) -> None:
    bare = run(agent(model(*healthy_script()), None), mode)
    bare_ran = Counter(ran)
    ran.clear()
    _test_runs.clear()
    m = model(*healthy_script())
    guarded = run(agent(m, LooptrapMiddleware(pool())), mode)
    assert transcript(guarded["messages"]) == transcript(bare["messages"])
    assert ran == bare_ran == Counter(search_docs=1, edit_file=3, run_tests=3)
    assert guarded["messages"][-1].content == "Fixed: the tests pass."
    assert "report_blocked" in m.bound  # the honest way out is offered to the model


# -- sessions and concurrency ----------------------------------------------------------------------
def test_two_threads_through_one_middleware_do_not_mix() -> None:
    mw = LooptrapMiddleware(pool(), on_halt="end")

    @tool
    async def lookup(query: str) -> str:
        """Look something up."""
        await asyncio.sleep(0.001)  # let the two runs interleave
        return "0 results"

    def looping() -> Any:
        script = [calls(("lookup", {"query": "refund policy"})) for _ in range(8)]
        return create_agent(model(*script, AIMessage("never reached")), [lookup], middleware=[mw])

    async def both() -> list[dict[str, Any]]:
        return list(await asyncio.gather(run_async(looping(), "a"), run_async(looping(), "b")))

    async def run_async(graph: Any, thread: str) -> dict[str, Any]:
        return await graph.ainvoke({"messages": [("user", "refund?")]}, {"configurable": {"thread_id": thread}})  # type: ignore[no-any-return]

    for out in asyncio.run(both()):  # each thread on its own: advice at its own 3rd call, not at the 2nd overall
        assert [s for s, _ in tool_results(out["messages"])] == ["success", "success", "error", "error", "error"]
        assert out["messages"][-1].response_metadata["looptrap"]["reason"] == "loop_repeat"
    assert mw.guard_for("a") is not mw.guard_for("b")
    assert mw.guard_for("a").state.calls == mw.guard_for("b").state.calls == 5

    m = model(search({"query": "returns"}), AIMessage("Returns within 30 days."))  # a halted thread stops no other
    out = run(agent(m, mw), "sync", thread="c")
    assert out["messages"][-1].content == "Returns within 30 days."


def test_parallel_tool_calls_in_one_message_run_concurrently_and_are_each_guarded() -> None:
    barrier = threading.Barrier(3, timeout=10)

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        barrier.wait()  # all three calls of the message are in flight at once
        return f"page {url}"

    urls = [{"url": u} for u in ("a", "b", "c")]
    mw = LooptrapMiddleware(pool())
    m = model(calls(*(("fetch", u) for u in urls)), AIMessage("done"))
    out = create_agent(m, [fetch], middleware=[mw]).invoke(
        {"messages": [("user", "fetch")]}, {"configurable": {"thread_id": "p"}}
    )
    asked = out["messages"][1].tool_calls
    answers = {t.tool_call_id: t.content for t in out["messages"] if isinstance(t, ToolMessage)}
    assert answers == {c["id"]: f"page {c['args']['url']}" for c in asked}
    state = mw.guard_for("p").state
    assert state.calls == 3
    assert len(state.history) == 3  # each call recorded against its own check


@pytest.mark.parametrize("mode", MODES)
def test_identical_parallel_calls_in_one_message(mode: str) -> None:
    def same() -> AIMessage:
        return calls(*(("search_docs", dict(REFUND)) for _ in range(4)))

    m = model(same(), same(), AIMessage("gave up"))
    mw = LooptrapMiddleware(pool(), on_halt="end")
    out = run(agent(m, mw), mode)
    results = tool_results(out["messages"])
    assert len(results) == 8  # every call of both messages is answered, run or not
    assert sum(s == "success" for s, _ in results) == ran["search_docs"]
    assert any(s == "error" for s, _ in results)  # four more identical empty searches are a loop
    assert mw.guard_for("t1").state.calls == 8


@pytest.mark.parametrize("mode", MODES)
def test_identical_parallel_calls_of_one_message_share_one_step(mode: str) -> None:
    """Three identical calls in one AIMessage, after two single ones: all three get the advice (one model turn is
    one step of the ladder); the block comes at the next turn, the halt at the one after."""
    three = calls(*(("search_docs", dict(REFUND)) for _ in range(3)))
    m = model(search(), search(), three, search(), search(), AIMessage("never reached"))
    mw = LooptrapMiddleware(pool(), on_halt="end")
    out = run(agent(m, mw), mode)
    answers = {t.tool_call_id: t for t in out["messages"] if isinstance(t, ToolMessage)}
    advised = [answers[c["id"]] for c in three.tool_calls]
    assert [(t.status, str(t.content).startswith(ADVICE)) for t in advised] == [("error", True)] * 3
    assert len({str(t.content) for t in advised}) == 1  # the same advice, not advice then a block
    results = tool_results(out["messages"])
    assert [s for s, _ in results] == ["success", "success", "error", "error", "error", "error", "error"]
    assert results[5][1].startswith(BLOCKED)
    assert results[6][1].startswith("Halted (loop_repeat)")
    assert ran["search_docs"] == 2
    assert len(m.seen) == 5  # the model was not called after the halt
    assert out["messages"][-1].response_metadata["looptrap"]["reason"] == "loop_repeat"


def test_a_conversation_on_a_thread_hears_each_human_message_once() -> None:
    guard = Listening()
    mw = LooptrapMiddleware(guard)
    questions = ["Hi!", "What is the refund policy?", "And for exchanges?", "Thanks, bye."]
    replies = [AIMessage(f"Answer {i}.") for i in range(len(questions))]
    graph = create_agent(model(*replies), TOOLS, middleware=[mw], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "chat"}}
    for i, question in enumerate(questions):
        out = graph.invoke({"messages": [("user", question)]}, config)
        assert out["messages"][-1].content == f"Answer {i}."  # text-only replies: never an intervention
        assert "looptrap" not in out["messages"][-1].response_metadata
    assert len(out["messages"]) == 8  # the whole conversation is in the thread
    assert guard.heard == questions  # each once, though the thread's history holds every earlier one
    assert guard.state.turn == 4
    assert guard.halted is None


def test_a_human_message_added_during_the_run_is_heard_once() -> None:
    """The run stops before each model call (an interrupt); the user adds a message, the run resumes. The search the
    model makes again after it answers the user: it is not a repeat of the searches before."""
    guard = Listening()
    mw = LooptrapMiddleware(guard)
    m = model(search(), search(), search(), AIMessage("Still nothing on refunds."))
    graph = create_agent(m, TOOLS, middleware=[mw], checkpointer=InMemorySaver(), interrupt_before=["model"])
    config: Any = {"configurable": {"thread_id": "paused"}}
    graph.invoke({"messages": [("user", "What is the refund policy?")]}, config)
    for _ in range(2):
        graph.invoke(None, config)  # a model turn: one search
    graph.update_state(config, {"messages": [HumanMessage("I just published it, search again.")]})
    while graph.get_state(config).next:
        graph.invoke(None, config)
    out = graph.get_state(config).values
    assert out["messages"][-1].content == "Still nothing on refunds."
    assert [s for s, _ in tool_results(out["messages"])] == ["success"] * 3  # the third search was not advised
    assert ran["search_docs"] == 3
    assert guard.heard == ["What is the refund policy?", "I just published it, search again."]


# -- the honest way out and budgets ----------------------------------------------------------------
@pytest.mark.parametrize("on_halt", ["raise", "end"])
def test_report_blocked_halts_with_its_reason(on_halt: str) -> None:
    report = calls(("report_blocked", {"tried": ["search_docs refund policy"], "needed": "the policy document"}))
    m = model(search(), report, AIMessage("never reached"))
    mw = LooptrapMiddleware(pool(), on_halt=on_halt)  # type: ignore[arg-type]
    if on_halt == "raise":
        with pytest.raises(LoopHalted) as exc:
            run(agent(m, mw), "sync")
        assert exc.value.reason == "reported_blocked"
    else:
        out = run(agent(m, mw), "sync")
        assert out["messages"][-1].response_metadata["looptrap"]["reason"] == "reported_blocked"
    assert mw.guard_for("t1").needed == ["the policy document"]


def test_a_malformed_report_is_answered_with_what_to_fix() -> None:
    m = model(calls(("report_blocked", {"tried": []})), AIMessage("ok"))
    out = run(agent(m, LooptrapMiddleware(pool())), "sync")
    status, text = tool_results(out["messages"])[0]
    assert status == "error"
    assert "'tried' must be a non-empty list" in text


@pytest.mark.parametrize("mode", MODES)
def test_token_budget_from_the_models_usage_ends_the_run_before_its_tools_run(mode: str) -> None:
    usage = {"input_tokens": 40, "output_tokens": 20, "total_tokens": 60}
    replies = [calls(("search_docs", {"query": f"q{i}"}), usage_metadata=usage) for i in range(5)]
    mw = LooptrapMiddleware(GuardPool(budgets=Budgets(max_tokens=150), guard_options={"clock": None}), on_halt="end")
    out = run(agent(model(*replies), mw), mode)
    assert out["messages"][-1].response_metadata["looptrap"]["reason"] == "budget_tokens"
    assert ran["search_docs"] == 2  # the third reply crossed the budget: its call is answered, not run
    assert tool_results(out["messages"])[-1][0] == "error"
    m = model(AIMessage("never reached"))
    again = run(agent(m, mw), mode)  # a budget outlives the run: the next one stops before the model
    assert again["messages"][-1].response_metadata["looptrap"]["reason"] == "budget_tokens"
    assert m.seen == []


def test_a_new_run_on_the_thread_is_a_new_task() -> None:
    mw = LooptrapMiddleware(pool(), on_halt="end")
    first = run(agent(model(*(search() for _ in range(5))), mw), "sync")
    assert first["messages"][-1].response_metadata["looptrap"]["reason"] == "loop_repeat"
    second = run(agent(model(search(), AIMessage("Nothing found.")), mw), "sync")
    assert second["messages"][-1].content == "Nothing found."


def test_a_single_guard_serves_every_thread() -> None:
    guard = Guard(clock=None)
    mw = LooptrapMiddleware(guard)
    run(agent(model(search(), AIMessage("ok")), mw), "sync", thread="x")
    assert mw.guard_for("y") is guard
    assert guard.state.calls == 1


def test_a_failing_tool_is_recorded_as_an_error_and_its_exception_propagates() -> None:
    @tool
    def deploy(target: str) -> str:
        """Deploy."""
        raise RuntimeError("permission denied")

    mw = LooptrapMiddleware(pool())
    graph = create_agent(model(calls(("deploy", {"target": "prod"})), AIMessage("ok")), [deploy], middleware=[mw])
    with pytest.raises(RuntimeError, match="permission denied"):
        graph.invoke({"messages": [("user", "deploy")]}, {"configurable": {"thread_id": "d"}})
    assert mw.guard_for("d").state.history[-1].flags & Flag.ERROR


def test_no_report_tool_when_the_guard_has_none() -> None:
    assert LooptrapMiddleware(GuardPool(report_tool=None)).tools == []


def test_on_halt_is_validated() -> None:
    with pytest.raises(ValueError, match="on_halt"):
        LooptrapMiddleware(on_halt="stop")  # type: ignore[arg-type]


# -- LangGraph: a hand-built graph with a ToolNode -------------------------------------------------
def hand_built(m: ScriptedModel, mw: LooptrapMiddleware | None) -> Any:
    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [m.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    tools = (
        ToolNode(TOOLS, wrap_tool_call=mw.wrap_tool_call, awrap_tool_call=mw.awrap_tool_call) if mw else ToolNode(TOOLS)
    )
    graph.add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile()


@pytest.mark.parametrize("mode", MODES)
def test_tool_node_in_a_hand_built_graph(mode: str) -> None:
    m = model(*(search() for _ in range(8)), AIMessage("never reached"))
    mw = LooptrapMiddleware(pool())
    with pytest.raises(LoopHalted) as exc:
        run(hand_built(m, mw), mode)
    assert exc.value.reason == "loop_repeat"
    assert ran["search_docs"] == 2
    assert str(m.seen[3][-1].content).startswith(ADVICE)
    assert str(m.seen[4][-1].content).startswith(BLOCKED)
    assert mw.guard_for("t1").halted is not None


@pytest.mark.parametrize("mode", MODES)
def test_tool_node_healthy_run_is_untouched(mode: str) -> None:
    def ask(graph_of: Callable[[ScriptedModel], Any]) -> list[tuple[Any, ...]]:
        _test_runs.clear()
        return transcript(run(graph_of(model(*healthy_script())), mode)["messages"])

    bare = ask(lambda m: hand_built(m, None))
    guarded = ask(lambda m: hand_built(m, LooptrapMiddleware(pool())))
    assert guarded == bare
    assert bare[-1][1] == "Fixed: the tests pass."


def test_tool_node_answers_report_blocked_without_registering_it() -> None:
    report = calls(("report_blocked", {"tried": ["search_docs refund policy"], "needed": "the policy document"}))
    mw = LooptrapMiddleware(pool())
    with pytest.raises(LoopHalted) as exc:
        run(hand_built(model(report, AIMessage("never reached")), mw), "sync")
    assert exc.value.reason == "reported_blocked"
    assert [t.name for t in mw.tools] == ["report_blocked"]  # to bind to the model alongside the graph's tools


# -- a raised halt leaves the thread valid (a checkpointer keeps it for the next user message) ---------------
def assert_every_call_answered(messages: Sequence[BaseMessage]) -> None:
    """What OpenAI and Anthropic require of a history: every tool call of an AIMessage has its ToolMessage
    before the next message of another kind."""
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage) and m.tool_calls:
            answered = set()
            for later in messages[i + 1 :]:
                if not isinstance(later, ToolMessage):
                    break
                answered.add(later.tool_call_id)
            assert {c["id"] for c in m.tool_calls} <= answered, (m.tool_calls, messages[i + 1 :])


def halting_setup(where: str) -> tuple[list[AIMessage], GuardPool]:
    if where == "tool call":  # the 5th identical search halts in the tool wrapper
        return [search() for _ in range(5)], pool()
    if where == "parallel calls":  # the halted call shares its message with another call
        return [
            *(search() for _ in range(4)),
            calls(("search_docs", dict(REFUND)), ("edit_file", {"path": "a", "text": "b"})),
        ], pool()
    if where == "turn end":  # the token budget is crossed by a model message whose calls never run
        usage = {"input_tokens": 40, "output_tokens": 20, "total_tokens": 60}
        return [calls(("search_docs", {"query": f"q{i}"}), usage_metadata=usage) for i in range(3)], GuardPool(
            budgets=Budgets(max_tokens=150), guard_options={"clock": None}
        )
    report = calls(("report_blocked", {"tried": ["search_docs refund policy"], "needed": "the policy document"}))
    return [search(), report], pool()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ["tool call", "parallel calls", "turn end", "report"])
def test_a_raised_halt_answers_the_halted_calls_so_the_thread_stays_valid(mode: str, where: str) -> None:
    script, guards = halting_setup(where)
    m = model(*script, AIMessage("Sorry, I could not find the refund policy."), AIMessage("spare"))
    mw = LooptrapMiddleware(guards)  # on_halt="raise", the default
    graph = create_agent(m, TOOLS, middleware=[mw], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "kept"}}
    seen = len(script)

    def ask(text: str) -> Any:
        inp = {"messages": [("user", text)]}
        return asyncio.run(graph.ainvoke(inp, config)) if mode == "async" else graph.invoke(inp, config)

    with pytest.raises(LoopHalted) as exc:
        ask("What is the refund policy?")
    assert len(m.seen) == seen  # the model was not called after the halt
    messages = graph.get_state(config).values["messages"]
    assert_every_call_answered(messages)
    last_ai = next(x for x in reversed(messages) if isinstance(x, AIMessage))
    assert last_ai.tool_calls
    answers = [
        x for x in messages if isinstance(x, ToolMessage) and x.tool_call_id in {c["id"] for c in last_ai.tool_calls}
    ]
    assert {a.status for a in answers} == {"error"}
    assert exc.value.verdict.message in {str(a.content) for a in answers}  # what the model was told
    assert not any(isinstance(x, AIMessage) and "looptrap" in x.response_metadata for x in messages)  # no final message
    if where == "turn end":
        with pytest.raises(LoopHalted):  # a budget outlives the run; the thread stays valid
            ask("Try again.")
        assert_every_call_answered(graph.get_state(config).values["messages"])
        return
    out = ask("Never mind, what can you tell me?")  # the next user message: a new task, a valid history
    assert out["messages"][-1].content == "Sorry, I could not find the refund policy."
    assert_every_call_answered(m.seen[-1])


# -- a hand-built graph: each invocation is a new task --------------------------------------------------------
def hand_built_graph(
    m: ScriptedModel,
    mw: LooptrapMiddleware,
    *,
    checkpointer: Any = None,
    interrupt_before: list[str] | None = None,
    critic: bool = False,
) -> Any:
    """model -> tools -> model ... ; with ``critic``, a node that adds a human message after every tool step
    (inside the same invocation)."""

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [m.invoke(state["messages"])]}

    def review(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [HumanMessage("Not good enough yet, keep going.")]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS, wrap_tool_call=mw.wrap_tool_call, awrap_tool_call=mw.awrap_tool_call))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    if critic:
        graph.add_node("review", review)
        graph.add_edge("tools", "review")
        graph.add_edge("review", "model")
    else:
        graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer, interrupt_before=interrupt_before)


def invoke(graph: Any, mode: str, inp: Any, config: Any) -> Any:
    return asyncio.run(graph.ainvoke(inp, config)) if mode == "async" else graph.invoke(inp, config)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("thread", [None, "t1"], ids=["no thread id", "one thread"])
def test_hand_built_graph_each_invocation_is_a_new_task(mode: str, thread: str | None) -> None:
    """A process serving requests: after one request halts, the next is not halted at its first tool call."""
    m = model(*(search() for _ in range(15)), search(), AIMessage("Nothing about refunds."))
    mw = LooptrapMiddleware(pool())
    graph = hand_built_graph(m, mw, checkpointer=InMemorySaver() if thread else None)
    config = {"configurable": {"thread_id": thread}} if thread else None
    inp = {"messages": [("user", "What is the refund policy?")]}
    for request in range(3):  # each request loops, and is stopped at its own 5th call, not the 1st
        ran.clear()
        with pytest.raises(LoopHalted) as exc:
            invoke(graph, mode, inp, config)
        assert exc.value.reason == "loop_repeat"
        assert ran["search_docs"] == 2, request
    out = invoke(graph, mode, inp, config)  # a healthy request after them is untouched
    assert out["messages"][-1].content == "Nothing about refunds."
    assert mw.guard_for(thread).halted is None


@pytest.mark.parametrize("mode", MODES)
def test_hand_built_graph_resumed_after_interrupts_is_the_same_task(mode: str) -> None:
    """Approval before every tool step (an interrupt, then ``invoke(None)``): each resume is an invocation, but
    not new input, so the loop is still caught."""
    m = model(*(search() for _ in range(8)))
    mw = LooptrapMiddleware(pool())
    graph = hand_built_graph(m, mw, checkpointer=InMemorySaver(), interrupt_before=["tools"])
    config: Any = {"configurable": {"thread_id": "approve"}}
    invoke(graph, mode, {"messages": [("user", "What is the refund policy?")]}, config)
    for _ in range(4):  # the calls before the halt: two run, then advice, then a block
        invoke(graph, mode, None, config)
    with pytest.raises(LoopHalted):
        invoke(graph, mode, None, config)
    assert ran["search_docs"] == 2
    assert mw.guard_for("approve").state.calls == 5


@pytest.mark.parametrize("mode", MODES)
def test_hand_built_graph_human_messages_inside_one_invocation_are_the_same_task(mode: str) -> None:
    m = model(*(search() for _ in range(8)))
    mw = LooptrapMiddleware(pool())
    with pytest.raises(LoopHalted):
        invoke(hand_built_graph(m, mw, critic=True), mode, {"messages": [("user", "Refund policy?")]}, None)
    assert ran["search_docs"] == 2


# -- a hand-built graph: the calls of one model message are one step ---------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_hand_built_graph_calls_of_one_model_message_share_one_step(mode: str) -> None:
    """Nothing ends turns in a hand-built graph: the wrapper passes the id of the AIMessage that asked for each
    call. Three identical calls of one message all get the advice; the next message's is blocked, the one after
    halts. The guard keeps its real clock: the steps do not depend on timing."""
    three = calls(*(("search_docs", dict(REFUND)) for _ in range(3)))
    m = model(search(), search(), three, search(), search(), AIMessage("never reached"))
    mw = LooptrapMiddleware(GuardPool())
    with pytest.raises(LoopHalted) as exc:
        run(hand_built(m, mw), mode)
    assert exc.value.reason == "loop_repeat"
    assert len(m.seen) == 5  # halted at the 5th model message's call
    advised = [x for x in m.seen[3] if isinstance(x, ToolMessage)][-3:]
    assert [x.tool_call_id for x in advised] == [c["id"] for c in three.tool_calls]
    assert [str(x.content).startswith(ADVICE) for x in advised] == [True] * 3
    assert len({str(x.content) for x in advised}) == 1  # the same advice, not advice then a block then a halt
    assert str(m.seen[4][-1].content).startswith(BLOCKED)
    assert ran["search_docs"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_hand_built_graph_a_repeated_call_is_advised_blocked_and_halted_promptly(mode: str) -> None:
    m = model(*(search() for _ in range(8)), AIMessage("never reached"))
    mw = LooptrapMiddleware(GuardPool())  # the real clock, as in production
    with pytest.raises(LoopHalted):
        run(hand_built(m, mw), mode)
    assert len(m.seen) == 5
    assert str(m.seen[3][-1].content).startswith(ADVICE)
    assert str(m.seen[4][-1].content).startswith(BLOCKED)
    assert [v.action for v in mw.guard_for("t1").state.verdicts] == ["advise", "block", "halt"]


# -- human in the loop: a refusal is the user's say, an interrupted call is checked once --------------------------
def hitl_agent(m: ScriptedModel, guard: Guard, interrupt_mode: str) -> Any:
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    hitl = HumanInTheLoopMiddleware({"edit_file": True}, interrupt_mode=interrupt_mode)  # type: ignore[arg-type]
    return create_agent(m, TOOLS, middleware=[LooptrapMiddleware(guard), hitl], checkpointer=InMemorySaver())


@pytest.mark.parametrize("interrupt_mode", ["per_call", "batched"])
def test_a_call_the_user_rejects_is_their_say_not_a_tool_error(interrupt_mode: str) -> None:
    """Two empty searches, an edit the user rejects, the same search again: the rejection is the user's input
    (the ladder starts over), so the third search runs; the edit, stopped by interrupt() after its check, is
    counted once."""
    from langgraph.types import Command

    guard = Listening()
    edit = calls(("edit_file", {"path": "refund.md", "text": "30 days"}))
    m = model(search(), search(), edit, search(), AIMessage("Nothing on refunds yet."))
    graph = hitl_agent(m, guard, interrupt_mode)
    config: Any = {"configurable": {"thread_id": "review"}}
    out = graph.invoke({"messages": [("user", "What is the refund policy?")]}, config)
    (pause,) = out["__interrupt__"]
    no = {"type": "reject", "message": "not now"}
    out = graph.invoke(Command(resume={"decisions": [no]} if interrupt_mode == "batched" else {pause.id: no}), config)
    assert out["messages"][-1].content == "Nothing on refunds yet."
    results = tool_results(out["messages"])
    assert [s for s, _ in results] == ["success", "success", "error", "success"]
    assert results[2][1].startswith("User rejected the tool call for `edit_file`")
    assert results[3][1] == "0 results"  # not advised: the user spoke since the first two searches
    assert (ran["search_docs"], ran["edit_file"]) == (3, 0)
    assert guard.state.calls == (4 if interrupt_mode == "per_call" else 3)  # batched: the edit never reached a tool
    assert guard.state.turn == 5  # every model message ended its turn, the one with the rejected call too
    if interrupt_mode == "batched":
        assert guard.heard == ["What is the refund policy?", None]  # the refusal, heard as the user's input


def test_a_call_approved_after_an_interrupt_is_checked_once() -> None:
    from langgraph.types import Command

    guard = Guard(clock=None)
    edit = calls(("edit_file", {"path": "refund.md", "text": "30 days"}))
    graph = hitl_agent(model(edit, AIMessage("Edited.")), guard, "per_call")
    config: Any = {"configurable": {"thread_id": "approve"}}
    out = graph.invoke({"messages": [("user", "Write the refund policy.")]}, config)
    (pause,) = out["__interrupt__"]
    out = graph.invoke(Command(resume={pause.id: {"type": "approve"}}), config)
    assert out["messages"][-1].content == "Edited."
    assert ran["edit_file"] == 1
    assert guard.state.calls == 1  # checked before interrupt(), not again when it ran on resume
    assert len(guard.state.history) == 1
