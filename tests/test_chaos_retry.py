"""Retry amplification made visible: tenacity and stamina tell the guard about each attempt (``report_attempts``),
so budgets and the rate detector see the real count, a refused attempt stops the retrying, and a chaos run
reports agent-level calls against tool-level attempts."""

from __future__ import annotations

import contextlib
import importlib.util
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import need
from looptrap import Budgets, Guard, GuardConfig, LoopHalted, Rate
from looptrap.chaos import Empty, RetryInside, RetryRefused, report_attempts, run
from looptrap.testing import FakeClock

need("tenacity (pip install 'looptrap[tenacity]')", importlib.util.find_spec("tenacity") is not None)
need("stamina (pip install 'looptrap[stamina]')", importlib.util.find_spec("stamina") is not None)

import stamina  # noqa: E402
import tenacity  # noqa: E402

ran: Counter[str] = Counter()
ARGS = {"url": "https://api.example.test/orders/A-1042"}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    ran.clear()
    stamina.set_testing(True, attempts=20)  # no waiting between attempts
    yield
    stamina.set_testing(False)
    stamina.instrumentation.set_on_retry_hooks(None)  # stamina's own hooks again


def down(url: str) -> str:
    """A backend that never answers."""
    ran["fetch"] += 1
    raise ConnectionError("connection reset by peer")


def with_tenacity(guard: Guard | None = None, attempts: int = 20, **kwargs: Any) -> Any:
    return tenacity.retry(
        stop=tenacity.stop_after_attempt(attempts),
        reraise=True,
        before_sleep=report_attempts(guard, **kwargs),
    )(down)


def agent_call(guard: Guard, fetch: Any) -> BaseException:
    """What an agent loop does with one tool call: check it, run it; the exception it ends with."""
    assert guard.check("down", ARGS).allowed
    with pytest.raises(Exception) as caught:  # noqa: PT011 - which one is the point of each test
        fetch(**ARGS)
    return caught.value


def test_a_budget_sees_every_attempt_and_stops_the_retrying() -> None:
    guard = Guard(GuardConfig(detectors=()), clock=None, budgets=Budgets(max_tool_calls=4))
    exc = agent_call(guard, with_tenacity(guard))
    assert isinstance(exc, LoopHalted)
    assert exc.reason == "budget_tool_calls"
    assert ran["fetch"] == 4  # not 20: the fifth attempt was the guard's to refuse
    assert guard.state.calls == 5


def test_without_the_hook_the_guard_sees_one_call() -> None:
    guard = Guard(GuardConfig(detectors=()), clock=None, budgets=Budgets(max_tool_calls=4))
    fetch = tenacity.retry(stop=tenacity.stop_after_attempt(20), reraise=True)(down)
    exc = agent_call(guard, fetch)
    assert isinstance(exc, ConnectionError)
    assert (ran["fetch"], guard.state.calls) == (20, 1)  # twenty attempts, one call for the guard


def test_the_rate_detector_sees_a_retry_storm() -> None:
    clock = FakeClock()
    guard = Guard(GuardConfig(detectors=(Rate(threshold=5),)), clock=clock)

    def storm(url: str) -> str:
        clock.advance(0.01)  # an attempt every 10 ms: no model thinks that fast
        return down(url)

    fetch = tenacity.retry(stop=tenacity.stop_after_attempt(50), before_sleep=report_attempts(guard), reraise=True)(
        storm
    )
    exc = agent_call(guard, fetch)
    assert isinstance(exc, RetryRefused)
    assert exc.verdict.reason == "rate"
    assert ran["fetch"] == 4


def test_repeated_failing_attempts_get_the_guards_advice() -> None:
    guard = Guard(clock=None)
    exc = agent_call(guard, with_tenacity(guard))
    assert isinstance(exc, RetryRefused)
    assert (exc.verdict.action, exc.verdict.reason) == ("advise", "loop_repeat")
    assert str(exc).startswith("You have called down with these exact arguments 3 times")
    assert ran["fetch"] == 2


def test_the_tool_name_and_arguments_can_be_the_agents() -> None:
    guard = Guard(GuardConfig(detectors=()), clock=None)
    assert guard.check("orders.get", {"id": "A-1042"}).allowed
    fetch = with_tenacity(guard, attempts=3, tool="orders.get", args=lambda url: {"id": url.rsplit("/", 1)[1]})
    with pytest.raises(ConnectionError):
        fetch(**ARGS)
    assert guard.state.per_tool == {"orders.get": 3}


def test_stamina_retries_are_reported_too() -> None:
    guard = Guard(GuardConfig(detectors=()), clock=None, budgets=Budgets(max_tool_calls=3))
    stamina.instrumentation.set_on_retry_hooks([report_attempts(guard)])
    fetch = stamina.retry(on=ConnectionError, attempts=20)(down)
    exc = agent_call(guard, fetch)
    assert isinstance(exc, LoopHalted)
    assert exc.reason == "budget_tool_calls"
    assert ran["fetch"] == 3
    assert guard.state.per_tool == {"down": 4}


def test_an_async_guard_is_refused() -> None:
    from looptrap import AsyncGuard

    with pytest.raises(TypeError, match="AsyncGuard"):
        report_attempts(AsyncGuard())  # type: ignore[arg-type]


# -- inside a chaos run: agent-level calls, tool-level attempts ------------------------------------------
def agent(tools: list[Any], guard: Guard | None) -> None:
    """Calls its tool three times, whatever happens."""
    for _ in range(3):
        if guard is not None:
            verdict = guard.check("lookup", {"key": "k"})
            if verdict.action == "halt":
                return
        with contextlib.suppress(ConnectionError, RetryRefused):  # the agent reads the error, calls again
            tools[0](key="k")


def test_a_chaos_run_counts_the_retry_librarys_attempts() -> None:
    def lookup(key: str) -> str:
        @tenacity.retry(stop=tenacity.stop_after_attempt(4), reraise=True, before_sleep=report_attempts())
        def backend() -> str:
            ran["lookup"] += 1
            raise ConnectionError("connection reset by peer")

        return backend()

    report = run(agent, [lookup], guard=None)
    assert (report.calls, report.attempts) == (3, 12)  # three agent-level calls, twelve attempts behind them
    assert report.per_tool["lookup"] == {"calls": 3, "ran": 3, "refused": 0, "attempts": 12}
    assert [r.attempts for r in report.log] == [4, 4, 4]
    assert ran["lookup"] == 12
    assert report.summary() == "finished @3 [12 attempts]"


def test_retry_inside_can_tell_the_guard_too() -> None:
    def lookup(key: str) -> str:
        return "k: 3 rows"

    budget = Budgets(max_tool_calls=5)
    silent = run(agent, [lookup], RetryInside(attempts=3), guard=lambda: Guard(clock=None, budgets=budget))
    assert (silent.outcome, silent.attempts) == ("finished", 9)  # nine attempts, the budget of five never knew
    told = run(agent, [lookup], RetryInside(attempts=3, report=True) + Empty(), guard=lambda: Guard(budgets=budget))
    assert (told.outcome, told.reason) == ("halted", "budget_tool_calls")
    assert told.attempts <= 6
