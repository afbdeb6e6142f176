"""looptrap.chaos with Pydantic AI's real agent loop, driven by its own FunctionModel: a wrapped ``Tool`` (whose
function takes the ``RunContext``), injected errors as the framework's own tool failures, the ceiling out of
its task groups."""

from __future__ import annotations

import importlib.util
from collections import Counter
from typing import Any

import pytest

from conftest import need

need("pydantic-ai (pip install 'looptrap[pydantic-ai]')", importlib.util.find_spec("pydantic_ai") is not None)

from pydantic_ai import Agent, RunContext, Tool  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from looptrap import Budgets, Guard  # noqa: E402
from looptrap.chaos import Chaos, Empty, Error, Retryable, run  # noqa: E402
from looptrap.integrations.pydantic_ai import LoopGuard  # noqa: E402

ran: Counter[str] = Counter()
seen: list[list[ModelMessage]] = []


@pytest.fixture(autouse=True)
def _reset(own_event_loop: None) -> None:  # run_sync's event loop: see conftest
    ran.clear()
    seen.clear()


def search_docs(ctx: RunContext[None], query: str) -> str:
    """Search the documentation."""
    ran["search_docs"] += 1
    return "3 results: refunds within 30 days"


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model stuck on one search, whatever comes back."""
    seen.append(list(messages))
    return ModelResponse(parts=[ToolCallPart("search_docs", {"query": "refund policy"}, tool_call_id=f"c{len(seen)}")])


def agent(tools: list[Any], guard: Guard | None) -> Any:
    caps = [LoopGuard(guard)] if guard is not None else []
    return Agent(FunctionModel(respond), tools=tools, capabilities=caps).run_sync("Refunds?")


TOOL = Tool(search_docs, max_retries=50)


def test_with_and_without_the_guard() -> None:
    bare = run(agent, [TOOL], Empty(), max_calls=12)
    guarded = run(agent, [TOOL], Empty(), guard=lambda: Guard(clock=None, budgets=Budgets(max_tool_calls=8)))
    assert (bare.outcome, bare.reason, bare.ran) == ("ceiling", "max_calls", 12)  # out of the task groups too
    assert (guarded.outcome, guarded.reason, guarded.ran) == ("halted", "loop_repeat", 2)
    assert bare.log[0].args == {"query": "refund policy"}  # the RunContext is not an argument
    assert ran["search_docs"] == 0


def test_a_plain_function_works_as_a_tool_too() -> None:
    report = run(agent, [search_docs], Empty(when={1}), max_calls=3)
    assert [r.result_kind for r in report.log] == ["empty", "ok", "ok"]
    assert ran["search_docs"] == 2


def test_errors_reach_the_model_as_the_frameworks_tool_failures() -> None:
    run(agent, [TOOL], Error("400 Bad Request: unknown index"), max_calls=3)
    [answered] = seen[1][-1].parts
    assert isinstance(answered, ToolReturnPart)
    assert answered.outcome == "failed"  # ToolFailed: a failed result, no retry asked for
    assert answered.content == "400 Bad Request: unknown index"
    seen.clear()
    run(agent, [TOOL], Retryable(), max_calls=3)  # retryable: ModelRetry, the model is asked to try again
    [answered] = seen[1][-1].parts
    assert isinstance(answered, ToolReturnPart)
    assert answered.outcome == "retried"
    assert answered.content.startswith("503 Service Unavailable")
    wrapped = Chaos(Empty()).wrap(TOOL)
    assert (type(wrapped), wrapped.name, TOOL.function is search_docs) == (Tool, "search_docs", True)
