"""CrewAI: a real ``Crew`` (and ``Agent.kickoff``) running its agent executor, driven by a scripted LLM written
against CrewAI's ``BaseLLM`` interface (native tool calls), with looptrap registered as CrewAI hooks."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import os
import uuid
import warnings
from collections import Counter
from typing import Any

import pytest
from pydantic import Field

from conftest import need
from listening import Listening

need("crewai (pip install 'looptrap[crewai]')", importlib.util.find_spec("crewai") is not None, "crewai")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # no network: nothing to send telemetry to

with warnings.catch_warnings():  # crewai's import warns about its own lazy modules (ImportWarning)
    warnings.simplefilter("ignore", ImportWarning)
    from crewai import Agent, Crew, Task
    from crewai.hooks import get_before_tool_call_hooks
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import tool

from looptrap import Budgets, Guard, GuardPool, LoopHalted  # noqa: E402
from looptrap.integrations.crewai import LoopGuard, LoopHaltedAbort  # noqa: E402

ADVICE = "You have called search_docs with these exact arguments 3 times"
BLOCKED = "Blocked: this call was not run."
REFUND = {"query": "refund policy"}
CAP = 20  # the agents' max_iter
# CrewAI reads deprecated fields of its own on every run (function_calling_llm...), set or not.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
Reply = str | list[tuple[str, dict[str, Any]]]  # a final answer, or the tool calls of one response

ran: Counter[str] = Counter()
_ids = itertools.count()


class ScriptedLLM(BaseLLM):
    """Answers each call with the next scripted reply (native tool calls) and keeps every request's messages."""

    replies: list[Reply] = Field(default_factory=list)
    inputs: list[list[dict[str, Any]]] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.inputs.append(json.loads(json.dumps(messages, default=str)))
        self._track_token_usage_internal({"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60})
        reply = self.replies.pop(0)
        if isinstance(reply, str):
            return reply
        return [
            {"id": f"c{next(_ids)}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for n, a in reply
        ]

    async def acall(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.call(messages, *args, **kwargs)

    def supports_function_calling(self) -> bool:
        return True


@tool("search_docs")
def search_docs(query: str) -> str:
    """Search the documentation (each answer carries a request id, as real search APIs' do)."""
    ran["search_docs"] += 1
    if query == "refund policy":
        return f"0 results (request {uuid.uuid4()})"  # CrewAI's own repeat check compares results exactly
    return f"1 result: '{query}' is in the handbook, section 4"


@tool("edit_file")
def edit_file(path: str, change: str) -> str:
    """Edit a file."""
    ran["edit_file"] += 1
    return f"edited {path}: {change}"


@tool("run_tests")
def run_tests() -> str:
    """Run the test suite."""
    ran["run_tests"] += 1
    return f"{3 - ran['edit_file']} failed" if ran["edit_file"] < 3 else "all passed"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def searches(n: int, args: dict[str, Any] = REFUND) -> list[Reply]:
    return [[("search_docs", args)] for _ in range(n)]


def tool_results(llm: ScriptedLLM, turn: int) -> list[str]:
    """The tool results since the last model message, as the LLM received them on its ``turn``-th call."""
    out: list[str] = []
    for message in llm.inputs[turn]:
        if message["role"] == "tool":
            out.append(message["content"])
        elif message["role"] == "assistant":
            out = []
    return out


def crew(replies: list[Reply], *tools: Any, extra: list[Any] | None = None, **options: Any) -> tuple[Crew, ScriptedLLM]:
    llm = ScriptedLLM(model="scripted", replies=list(replies), inputs=[])
    agent = Agent(
        **options,
        role="support",
        goal="answer questions from the documentation",
        backstory="You help customers.",
        llm=llm,
        tools=[*(tools or [search_docs]), *(extra or [])],
        max_iter=CAP,
        verbose=False,
    )
    task = Task(description="What is the refund policy?", expected_output="the policy", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False), llm


def kickoff(team: Crew, asynchronous: bool) -> Any:
    return asyncio.run(team.akickoff()) if asynchronous else team.kickoff()


STUCK = [*searches(CAP), "I could not find the refund policy."]  # the cap's forced final answer comes last


@pytest.mark.parametrize("asynchronous", [False, True], ids=["kickoff", "akickoff"])
def test_a_stuck_agent_gets_advice_then_a_block_then_a_clean_halt(asynchronous: bool) -> None:
    team, llm = crew(STUCK)
    with LoopGuard(Guard(clock=None)), pytest.raises(LoopHalted) as caught:
        kickoff(team, asynchronous)

    assert isinstance(caught.value, LoopHaltedAbort)  # CrewAI's deliberate stop: never retried
    assert (caught.value.reason, caught.value.verdict.action) == ("loop_repeat", "halt")
    assert caught.value.summary is not None
    assert caught.value.summary.startswith("tried: search_docs")
    assert len(llm.inputs) == 5  # the 5th response's call halted the run: the model was not asked again
    assert ran["search_docs"] == 2
    assert tool_results(llm, 3)[0].startswith(ADVICE)  # the model read the advice as the tool's result
    assert tool_results(llm, 4)[0].startswith(BLOCKED)
    assert not get_before_tool_call_hooks()  # the hooks are gone once the block is left


@pytest.mark.skipif(
    importlib.util.find_spec("crewai.agents.crew_agent_executor") is None, reason="crewai 1.15.30 removed it"
)
def test_the_crew_agent_executor_is_guarded_the_same_way() -> None:
    from crewai.agents.crew_agent_executor import CrewAgentExecutor

    team, llm = crew(STUCK, executor_class=CrewAgentExecutor)  # the executor before AgentExecutor became the default
    with LoopGuard(Guard(clock=None)), pytest.raises(LoopHalted) as caught:
        kickoff(team, False)
    assert caught.value.reason == "loop_repeat"
    assert len(llm.inputs) == 5
    assert ran["search_docs"] == 2
    assert tool_results(llm, 3)[0].startswith(ADVICE)


def test_without_the_guard_the_same_script_runs_to_the_cap() -> None:
    team, llm = crew(STUCK)
    out = kickoff(team, False)
    assert out.raw == "I could not find the refund policy."  # max_iter's forced final answer
    assert len(llm.inputs) == CAP + 1
    assert ran["search_docs"] == CAP


@pytest.mark.parametrize("asynchronous", [False, True], ids=["kickoff", "akickoff"])
def test_parallel_identical_calls_of_one_response_all_get_the_advice(asynchronous: bool) -> None:
    three: Reply = [("search_docs", REFUND)] * 3
    team, llm = crew([*searches(2), three, *searches(3), "never reached"])
    with LoopGuard(Guard(clock=None)), pytest.raises(LoopHalted):
        kickoff(team, asynchronous)
    advised = tool_results(llm, 3)
    assert len(advised) == 3
    assert advised == [advised[0]] * 3  # one step of the ladder: the same advice for each
    assert advised[0].startswith(ADVICE)
    assert tool_results(llm, 4)[0].startswith(BLOCKED)
    assert ran["search_docs"] == 2


def edit_test_cycle() -> list[Reply]:
    steps: list[Reply] = []
    for n in range(3):
        steps.append([("edit_file", {"path": "app.py", "change": f"fix {n}"})])
        steps.append([("run_tests", {})])
    steps.append([("search_docs", {"query": "changelog"})])
    steps.append("Fixed: all tests pass.")
    return steps


def test_a_healthy_agent_is_untouched() -> None:
    runs = []
    for guarded in (False, True):
        ran.clear()
        team, llm = crew(edit_test_cycle(), edit_file, run_tests, search_docs)
        if guarded:
            with LoopGuard(Guard(clock=None)):
                out = kickoff(team, False)
        else:
            out = kickoff(team, False)
        seen = [m["content"] for m in llm.inputs[-1] if m["role"] == "tool"]
        runs.append((out.raw, seen, dict(ran)))
    assert runs[0] == runs[1]
    assert runs[1][0] == "Fixed: all tests pass."
    assert runs[1][2] == {"edit_file": 3, "run_tests": 3, "search_docs": 1}


def test_agent_kickoff_is_guarded_too_and_its_input_is_the_users_message() -> None:
    guard = Listening()
    llm = ScriptedLLM(model="scripted", replies=[*searches(3), *searches(1, {"query": "returns"}), "Section 4."])
    agent = Agent(role="support", goal="answer", backstory="b", llm=llm, tools=[search_docs], max_iter=CAP)
    with LoopGuard(guard):
        out = agent.kickoff("What is the refund policy?")
    assert out.raw == "Section 4."
    assert tool_results(llm, 3)[0].startswith(ADVICE)
    assert guard.heard[-1] is not None
    assert "What is the refund policy?" in guard.heard[-1]
    assert (guard.state.task, ran["search_docs"]) == (1, 3)


def test_each_run_has_its_own_session_and_a_budget_halts_at_the_next_model_call() -> None:
    lg = LoopGuard(GuardPool(budgets=Budgets(max_tokens=150), guard_options={"clock": None}))
    team, llm = crew([[("search_docs", {"query": q})] for q in ("a", "b", "c")] + ["never reached"])
    with lg, pytest.raises(LoopHalted) as caught:
        kickoff(team, False)
    assert caught.value.reason == "budget_tokens"
    assert len(llm.inputs) == 3  # 180 tokens after three calls: the fourth is not made
    assert ran["search_docs"] == 3
    guard = lg.guard_for(team.agents[0])
    assert guard is not None
    assert guard.state.tokens == 180  # the deltas of the LLM's counters, one per turn
    assert len(lg.guard) == 1  # type: ignore[arg-type]


def test_report_blocked_is_the_honest_way_out() -> None:
    lg = LoopGuard(Guard(clock=None))
    replies: list[Reply] = [
        [("report_blocked", {"tried": []})],
        [("report_blocked", {"tried": ["search refund policy"], "needed": "the wiki"})],
        "never reached",
    ]
    team, llm = crew(replies, extra=[lg.report_tool()])
    with lg, pytest.raises(LoopHalted) as caught:
        kickoff(team, False)
    assert "'tried' must be a non-empty list" in tool_results(llm, 1)[0]
    assert (caught.value.reason, caught.value.summary) == ("reported_blocked", "tried: search refund policy")
    assert len(llm.inputs) == 2


@pytest.mark.parametrize("shared", [True, False], ids=["one-guard", "pool"])
def test_an_agent_stuck_delegating_the_same_work_is_halted(shared: bool) -> None:
    """The coworker's run happens inside the delegating call: with one guard for both, it is no new task of the
    delegating agent's session; with a pool, it is a run (and a session) of its own."""
    delegate = {"task": "find the refund policy", "context": "a customer asks", "coworker": "researcher"}
    lead_llm = ScriptedLLM(model="scripted", replies=[[("delegate_work_to_coworker", delegate)]] * CAP, inputs=[])
    helper_llm = ScriptedLLM(model="scripted", replies=["nothing found"] * CAP, inputs=[])
    lead = Agent(role="lead", goal="answer", backstory="b", llm=lead_llm, allow_delegation=True, max_iter=CAP)
    helper = Agent(role="researcher", goal="look things up", backstory="b", llm=helper_llm, max_iter=CAP)
    task = Task(description="What is the refund policy?", expected_output="the policy", agent=lead)
    team = Crew(agents=[lead, helper], tasks=[task], verbose=False)

    with LoopGuard(Guard(clock=None) if shared else None), pytest.raises(LoopHalted) as caught:
        kickoff(team, False)

    assert caught.value.reason == "loop_repeat"
    assert len(lead_llm.inputs) == 5
    assert len(helper_llm.inputs) == 2  # the advised, blocked and halted delegations never reached the coworker
    assert tool_results(lead_llm, 3)[0].startswith("You have called delegate_work_to_coworker")


# -- CrewAI's own answer to a repeated input (ReAct tool calls) ----------------------------------------------------
class ReActLLM(BaseLLM):
    """A model without native tool calls: each reply is CrewAI's text format, the same search every time."""

    inputs: list[list[dict[str, Any]]] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.inputs.append(json.loads(json.dumps(messages, default=str)))
        return 'Thought: I should search.\nAction: search_docs\nAction Input: {"query": "refund policy"}'

    async def acall(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.call(messages, *args, **kwargs)

    def supports_function_calling(self) -> bool:
        return False


def observations(llm: ReActLLM, turn: int) -> list[str]:
    """What each tool call answered, as the model read it on its ``turn``-th call (the ReAct observations)."""
    said = [m["content"] for m in llm.inputs[turn] if m["role"] == "assistant"]
    return [text.partition("\nObservation: ")[2] for text in said]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["kickoff", "akickoff"])
def test_a_repeat_crewai_answers_itself_counts_as_the_same_answer_again(asynchronous: bool) -> None:
    """CrewAI does not run a call equal to the agent's last one: it answers "I tried reusing the same input...".
    That call stands for the last one's answer, again (stale): the loop is advised at the 3rd call, as any."""
    llm = ReActLLM(model="scripted")
    agent = Agent(role="support", goal="answer", backstory="b", llm=llm, tools=[search_docs], max_iter=CAP)
    task = Task(description="What is the refund policy?", expected_output="the policy", agent=agent)
    team = Crew(agents=[agent], tasks=[task], verbose=False)
    with LoopGuard(Guard(clock=None)), pytest.raises(LoopHalted) as caught:
        kickoff(team, asynchronous)

    assert caught.value.reason == "loop_repeat"
    assert len(llm.inputs) == 5  # advised at the 3rd call, blocked at the 4th, halted at the 5th
    seen = observations(llm, 4)
    assert seen[0].startswith("0 results")
    assert seen[1].startswith("I tried reusing the same input")  # CrewAI's own answer, passed on as it is
    assert seen[2].startswith(ADVICE)
    assert seen[3].startswith(BLOCKED)
    assert ran["search_docs"] == 1
