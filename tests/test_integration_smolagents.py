"""The smolagents integration: smolagents' own agent loops (ToolCallingAgent, CodeAgent) driven by a scripted model
(a subclass of smolagents' ``Model``, as smolagents' own tests do), with the guard on and off."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from conftest import need

need("smolagents (pip install 'looptrap[smolagents]')", importlib.util.find_spec("smolagents") is not None)

from smolagents import CodeAgent, LogLevel, MultiStepAgent, ToolCallingAgent, tool  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import TokenUsage  # noqa: E402

from looptrap import Budgets, Guard, GuardPool, LoopHalted  # noqa: E402
from looptrap.integrations.smolagents import guard_agent  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."


class ScriptedModel(Model):
    """smolagents' model interface answering from a script; keeps every input it was given."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.replies = replies
        self.inputs: list[str] = []

    def generate(self, messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.inputs.append("\n".join(_text(m) for m in messages))
        return self.replies[len(self.inputs) - 1]


def _text(message: ChatMessage) -> str:
    c = message.content
    return c if isinstance(c, str) else "".join(part.get("text", "") for part in c or [])


def call(name: str, **arguments: Any) -> ChatMessage:
    """A native tool call, as a ToolCallingAgent's model makes it."""
    fn = ChatMessageToolCallFunction(name=name, arguments=arguments)
    return ChatMessage(
        role=MessageRole.ASSISTANT, content="", tool_calls=[ChatMessageToolCall(fn, "call_1", "function")]
    )


def code(source: str) -> ChatMessage:
    """A code blob, as a CodeAgent's model writes it."""
    return ChatMessage(role=MessageRole.ASSISTANT, content=f"Thought: next step.\n<code>\n{source}\n</code>")


class Tools:
    """The tools of these tests, counting how often their bodies ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.attempt = 0

        @tool
        def search_docs(query: str) -> str:
            """Search the documentation.

            Args:
                query: What to look for.
            """
            self.ran.append(f"search_docs {query}")
            return "1 result: refunds within 30 days" if query == "refunds" else "0 results"

        @tool
        def edit_file(path: str, content: str) -> str:
            """Write a file.

            Args:
                path: The file.
                content: Its new content.
            """
            self.ran.append(f"edit_file {path}")
            self.attempt += 1
            return f"wrote {len(content)} bytes to {path}"

        @tool
        def run_tests() -> str:
            """Run the test suite."""
            self.ran.append("run_tests")
            return "all passed" if self.attempt >= 3 else f"{3 - self.attempt} failed"

        self.all = [search_docs, edit_file, run_tests]


AgentFactory = Callable[[Tools, ScriptedModel], MultiStepAgent]


def tool_calling(tools: Tools, model: ScriptedModel) -> MultiStepAgent:
    return ToolCallingAgent(tools=tools.all, model=model, verbosity_level=LogLevel.OFF)


def code_agent(tools: Tools, model: ScriptedModel) -> MultiStepAgent:
    return CodeAgent(tools=tools.all, model=model, verbosity_level=LogLevel.OFF)


# The same scripts for both agents: a tool call, or the code that makes it.
SCRIPTS: dict[str, dict[str, ChatMessage]] = {
    "tool_calling": {
        "search": call("search_docs", query="refund policy"),
        "search_again": call("search_docs", query="refund policy"),
        "refunds": call("search_docs", query="refunds"),
        "answer": call("final_answer", answer="30 days"),
        "report": call("report_blocked", tried=["search_docs refund policy"], needed="the refund policy document"),
    },
    "code": {
        "search": code('result = search_docs("refund policy")\nprint(result)'),
        "search_again": code('print(search_docs(query="refund policy"))'),  # by keyword: the same call
        "refunds": code('print(search_docs(query="refunds"))'),
        "answer": code('final_answer("30 days")'),
        "report": code('report_blocked(tried=["search_docs refund policy"], needed="the refund policy document")'),
    },
}
AGENTS = [
    pytest.param(tool_calling, SCRIPTS["tool_calling"], id="tool_calling"),
    pytest.param(code_agent, SCRIPTS["code"], id="code"),
]


@pytest.mark.parametrize(("make", "say"), AGENTS)
def test_loop_is_advised_then_blocked_then_halted(make: AgentFactory, say: dict[str, ChatMessage]) -> None:
    tools, model = Tools(), ScriptedModel([say["search"], say["search_again"]] * 4)
    agent = make(tools, model)
    guard = Guard(clock=None)
    guard_agent(agent, guard)

    with pytest.raises(LoopHalted) as halted:
        agent.run("What is the refund policy?")

    assert halted.value.reason == "loop_repeat"
    assert "search_docs" in halted.value.summary
    assert guard.halted is not None
    assert guard.halted.reason == "loop_repeat"
    assert tools.ran == ["search_docs refund policy"] * 2  # the advised, blocked and halted calls never ran
    assert len(model.inputs) == 5
    assert ADVICE not in model.inputs[2]
    assert ADVICE in model.inputs[3]  # the advice reached the model as the tool's error, on its next step
    assert BLOCKED not in model.inputs[3]
    assert BLOCKED in model.inputs[4]
    assert agent.memory.steps[-1].error is not None  # the halted step is in the agent's memory


@pytest.mark.parametrize(("make", "say"), AGENTS)
def test_model_that_changes_course_finishes(make: AgentFactory, say: dict[str, ChatMessage]) -> None:
    tools = Tools()
    model = ScriptedModel([say["search"], say["search_again"], say["search"], say["refunds"], say["answer"]])
    agent = make(tools, model)
    guard_agent(agent, Guard(clock=None))

    assert agent.run("What is the refund policy?") == "30 days"
    assert ADVICE in model.inputs[3]
    assert tools.ran == ["search_docs refund policy"] * 2 + ["search_docs refunds"]


@pytest.mark.parametrize(("make", "say"), AGENTS)
def test_report_blocked_halts_with_what_was_needed(make: AgentFactory, say: dict[str, ChatMessage]) -> None:
    tools = Tools()
    model = ScriptedModel([say["search"], say["search_again"], say["search"], say["report"]])
    agent = make(tools, model)
    guard = Guard(clock=None)
    guard_agent(agent, guard)

    with pytest.raises(LoopHalted) as halted:
        agent.run("What is the refund policy?")
    assert halted.value.reason == "reported_blocked"
    assert guard.needed == ["the refund policy document"]
    assert "report_blocked" in model.inputs[0]  # the tool the advice points to is offered to the model


HEALTHY = {
    "tool_calling": [
        call("search_docs", query="test setup"),
        call("edit_file", path="app.py", content="v1"),
        call("run_tests"),
        call("edit_file", path="app.py", content="v2"),
        call("run_tests"),
        call("edit_file", path="app.py", content="v3"),
        call("run_tests"),
        call("final_answer", answer="fixed"),
    ],
    "code": [
        code('print(search_docs("test setup"))'),
        code("x = 2 ** 10\nprint(x)"),  # steps without a tool call are the model acting, not idling
        code("print(x + 1)"),
        code("print(x + 2)"),
        code('edit_file(path="app.py", content="v1")\nprint(run_tests())'),
        code('edit_file("app.py", "v2")\nprint(run_tests())'),
        code('edit_file("app.py", "v3")\nprint(run_tests())'),
        code('final_answer("fixed")'),
    ],
}


@pytest.mark.parametrize(
    ("make", "script"),
    [(tool_calling, HEALTHY["tool_calling"]), (code_agent, HEALTHY["code"])],
    ids=["tool_calling", "code"],
)
def test_healthy_run_is_untouched(make: AgentFactory, script: list[ChatMessage]) -> None:
    def run(guard: Guard | None) -> tuple[Any, list[str], list[str]]:
        tools, model = Tools(), ScriptedModel(script)
        agent = make(tools, model)
        if guard is not None:
            guard_agent(agent, guard)
        return agent.run("Make the tests pass."), tools.ran, model.inputs

    plain = run(None)
    assert plain[0] == "fixed"
    assert plain[1][-1] == "run_tests"
    assert run(Guard(clock=None, report_tool=None)) == plain  # the same answer, tool runs and every model input
    answer, ran, _ = run(Guard(clock=None))  # with report_blocked offered, only the tool list differs
    assert (answer, ran) == plain[:2]


@pytest.mark.parametrize(
    ("make", "script"),
    [
        (tool_calling, [call("search_docs", query=q) for q in ("a", "b", "c", "d")]),
        (code_agent, [code("x = 1"), code("print(x)"), code('print(search_docs("a"))'), code("print(x)")]),
    ],
    ids=["tool_calling", "code"],
)
def test_token_budget_halts_with_the_usage_of_every_step(make: AgentFactory, script: list[ChatMessage]) -> None:
    used = TokenUsage(input_tokens=400, output_tokens=100)
    model = ScriptedModel([dataclasses.replace(reply, token_usage=used) for reply in script])
    agent = make(Tools(), model)
    guard_agent(agent, Guard(clock=None, budgets=Budgets(max_tokens=1500)))

    with pytest.raises(LoopHalted) as halted:
        agent.run("Search.")
    assert halted.value.reason == "budget_tokens"
    assert len(model.inputs) == 3  # steps that ran code without a tool call count with the next turn


def test_parallel_tool_calls_are_each_guarded() -> None:
    tools = Tools()
    both = ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[
            ChatMessageToolCall(
                ChatMessageToolCallFunction(name="search_docs", arguments={"query": "a"}), "call_1", "function"
            ),
            ChatMessageToolCall(
                ChatMessageToolCallFunction(name="search_docs", arguments={"query": "b"}), "call_2", "function"
            ),
        ],
    )
    model = ScriptedModel([both, call("final_answer", answer="done")])
    agent = tool_calling(tools, model)
    guard = Guard(clock=None)
    guard_agent(agent, guard)

    assert agent.run("Search twice.") == "done"
    assert sorted(tools.ran) == ["search_docs a", "search_docs b"]
    assert guard.state.calls == 2


class Recording(Guard):
    """A guard that keeps its verdicts on calls and what the user said, as the integration passes it on."""

    def __init__(self) -> None:
        super().__init__(clock=None)
        self.actions: list[str] = []
        self.heard: list[str | None] = []

    def check(self, tool: str, args: Any = None) -> Any:
        verdict = super().check(tool, args)
        self.actions.append(verdict.action)
        return verdict

    def user_message(self, text: str | None = None) -> None:
        self.heard.append(text)
        super().user_message(text)


def test_identical_parallel_calls_of_one_step_share_one_rung() -> None:
    """A step with three identical calls (run in smolagents' threads), after two single ones: all three are advised;
    the block comes at the next step, the halt at the one after."""
    fn = ChatMessageToolCallFunction(name="search_docs", arguments={"query": "refund policy"})
    three = ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[ChatMessageToolCall(fn, f"call_{i}", "function") for i in range(3)],
    )
    say = SCRIPTS["tool_calling"]
    tools = Tools()
    model = ScriptedModel([say["search"], say["search"], three, say["search"], say["search"], say["answer"]])
    agent = tool_calling(tools, model)
    guard = Recording()
    guard_agent(agent, guard)

    with pytest.raises(LoopHalted) as halted:
        agent.run("What is the refund policy?")
    assert halted.value.reason == "loop_repeat"
    assert guard.actions == ["allow", "allow", "advise", "advise", "advise", "block", "halt"]
    assert ADVICE in model.inputs[3]
    assert BLOCKED not in model.inputs[3]
    assert BLOCKED in model.inputs[4]
    assert tools.ran == ["search_docs refund policy"] * 2


def test_each_task_is_the_users_input() -> None:
    say = SCRIPTS["tool_calling"]
    agent = tool_calling(Tools(), ScriptedModel([say["search"], say["answer"]] * 2))
    guard = Recording()
    guard_agent(agent, guard)
    agent.run("What is the refund policy?")
    agent.run("And for exchanges?", reset=False)  # a follow-up in the same conversation
    assert guard.heard == ["What is the refund policy?", "And for exchanges?"]
    assert guard.state.task == 2


def test_turn_advice_reaches_the_next_step() -> None:
    tools = Tools()
    idle = ChatMessage(role=MessageRole.ASSISTANT, content="I am thinking about it.")  # no tool call: a parse error
    model = ScriptedModel([idle, idle, idle, call("final_answer", answer="done")])
    agent = tool_calling(tools, model)
    guard_agent(agent, Guard(clock=None))

    assert agent.run("Do something.") == "done"
    assert "Your last 3 turns ended without a valid tool call" in model.inputs[3]


def test_streaming_run_halts_the_same_way() -> None:
    say = SCRIPTS["tool_calling"]
    tools, model = Tools(), ScriptedModel([say["search"]] * 6)
    agent = tool_calling(tools, model)
    guard_agent(agent, Guard(clock=None))

    with pytest.raises(LoopHalted) as halted:
        for _ in agent.run("What is the refund policy?", stream=True):
            pass
    assert halted.value.reason == "loop_repeat"
    assert len(tools.ran) == 2


def test_one_guard_across_runs_starts_each_task_afresh() -> None:
    say = SCRIPTS["tool_calling"]
    tools, model = Tools(), ScriptedModel([say["search"]] * 5 + [say["search"], say["answer"]])
    agent = tool_calling(tools, model)
    guard = Guard(clock=None)
    handle = guard_agent(agent, guard)

    with pytest.raises(LoopHalted):
        agent.run("What is the refund policy?")
    assert agent.run("Try once more.") == "30 days"  # a new task: the loop halt is over
    assert handle.guard is guard
    assert guard.halted is None


def test_pool_gives_each_conversation_its_session() -> None:
    say = SCRIPTS["tool_calling"]
    model = ScriptedModel([say["search"], say["answer"]] * 3)
    agent = tool_calling(Tools(), model)
    pool = GuardPool(guard_options={"clock": None})
    handle = guard_agent(agent, pool)

    agent.run("First question.")
    first = handle.session
    agent.run("A follow-up.", reset=False)  # the same conversation, a new task
    assert handle.session == first
    agent.run("A new conversation.")
    assert handle.session != first
    assert first in pool
    assert handle.session in pool

    fixed = tool_calling(Tools(), ScriptedModel([say["search"], say["answer"]]))
    assert guard_agent(fixed, pool, session="user-42").guard is pool.get("user-42")


def test_tools_are_copied_and_agents_guarded_once() -> None:
    tools = Tools()
    agent = tool_calling(tools, ScriptedModel([]))
    guard_agent(agent)
    search = tools.all[0]
    assert agent.tools["search_docs"] is not search
    assert "forward" not in vars(search)  # the caller's tool object is unchanged
    with pytest.raises(ValueError, match="already guarded"):
        guard_agent(agent)


def test_smolagents_has_no_async_agent_api() -> None:
    """If smolagents grows an async run, the integration needs an async path (and this test, a sibling)."""
    members = inspect.getmembers(MultiStepAgent, inspect.isfunction)
    assert not [name for name, fn in members if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)]
