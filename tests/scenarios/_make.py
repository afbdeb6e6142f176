"""Generator for the labelled scenario corpus in ``tests/scenarios/`` (trace format v1, one session per file).

Run it from the repository root to rewrite the generated ``*.jsonl`` files (``hand_*.jsonl`` are written by
hand and are never touched)::

    .venv/bin/python tests/scenarios/_make.py

Each scenario function below is written by hand: tool names, arguments and outputs are the realistic part.
The builder only adds call ids, timestamps, the ``tool_result`` events and ``turn_end`` events. The FIRST
event line of every file carries the label (unknown fields are ignored by the trace reader)::

    "expect": {"first_intervention": {"kind": K, "action": "advise", "call_index": N} | null,
               "onset": M | null, "latest": L | null, "label": "loop" | "healthy", "description": "...",
               "known_issue": "..."}   # optional, see below

``latest`` is the latest call at which a loop's first intervention is still acceptable (a loop caught later
has cost too much); it defaults to the expected call.

How the labels were made: from docs/detectors.md, docs/outcome-protocol.md and the escalation ladder (the
first intervention of a run is always ``advise``), worked out by hand in the comment next to each expectation,
never by running the guard. The defaults used: Repeat fires on the 3rd identical call (the 2nd after a
``retryable: false`` result, the 12th after a pending one); ErrorRepeat on the call after 3 failures of the
identical call (1 if non-retryable) or after the same error 3 times from the tool (2 if non-retryable);
Cycle on the call that would be the 5th stale call in a row; Drift on the call after 5 fruitless calls of the
tool; Rate when the last 30 calls span less than 2.9 s; NoProgress / NoAction at the 3rd turn end.
When the implementation disagrees with the documented semantics (or a documented default makes a healthy run
fail) the label is kept and the scenario carries ``known_issue`` (the reason); tests/test_scenarios.py marks
those as strict xfails, so they turn into failures once fixed.

``onset`` is the 1-based index of the first tool call that repeats work the loop then keeps repeating:

* repeat / error_repeat: the second call of the run of identical (or same-error) calls;
* cycle: the first call of the second pass (the first stale call);
* drift: the first retry (a reworded call of the same tool) that brings nothing new;
* rate: the first call of the machine-speed burst;
* no_progress: the first call of the first turn that ends with an unchanged state;
* no_action: the number of tool calls made before the first idle turn.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
T0 = 1764460800.0  # 2025-11-30T00:00:00Z
_UNSET: Any = object()

Scenario = Callable[[], "Trace"]
SCENARIOS: list[Scenario] = []


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS.append(fn)
    return fn


@dataclass
class Trace:
    """A session being written: ``call`` adds a tool_call and its tool_result, ``turn`` a turn_end."""

    name: str
    id_prefix: str = "toolu_01"
    now: float = T0
    with_ids: bool = True
    result_ts: bool = True
    events: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    expect: dict[str, Any] | None = None

    def _emit(self, event: dict[str, Any]) -> None:
        self.events.append({"session": self.name, **event})

    def _call_event(self, tool: str, args: Any, message: str | None = None) -> dict[str, Any]:
        self.calls += 1
        ev: dict[str, Any] = {"type": "tool_call", "tool": tool, "args": args}
        if self.with_ids:
            ev["call_id"] = f"{self.id_prefix}{self.calls:04d}"
        if message is not None:
            ev["message_id"] = message
        ev["ts"] = round(self.now, 4)
        return ev

    def _result_event(
        self, index: int, tool: str, output: Any, error: bool, outcome: str | None = None
    ) -> dict[str, Any]:
        ev: dict[str, Any] = {"type": "tool_result", "tool": tool}
        if self.with_ids:
            ev["call_id"] = f"{self.id_prefix}{index:04d}"
        ev["output"] = output
        ev["is_error"] = error
        if outcome is not None:
            ev["outcome"] = outcome
        if self.result_ts:
            ev["ts"] = round(self.now, 4)
        return ev

    def call(
        self,
        tool: str,
        args: Any,
        output: Any,
        *,
        error: bool = False,
        think: float = 4.0,
        took: float = 0.6,
        message: str | None = None,
        outcome: str | None = None,
    ) -> int:
        """One tool call and its result; returns the call's 1-based index. ``message``: the id of the model
        message that asked for it (``message_id``); ``outcome``: a call that did not run (``cancelled``,
        ``refused``, ``interrupted``)."""
        self.now += think
        ev = self._call_event(tool, args, message)
        self._emit(ev)
        self.now += took
        self._emit(self._result_event(self.calls, tool, output, error, outcome))
        return self.calls

    def parallel(
        self,
        items: list[tuple[str, Any, Any]],
        *,
        think: float = 3.0,
        gap: float = 0.004,
        took: float = 0.4,
        message: str | None = None,
        errors: list[bool] | None = None,
        outcomes: list[str | None] | None = None,
        interleaved: bool = False,
    ) -> list[int]:
        """Parallel tool calls in one model message: all calls first, then all results (``interleaved``: each
        call's result before the next call, as an agent that runs one message's calls one by one writes them).
        ``errors`` and ``outcomes`` per item."""
        self.now += think
        first = self.calls + 1
        n = len(items)
        errs = errors or [False] * n
        kinds = outcomes or [None] * n
        if interleaved:
            for i, (tool, args, output) in enumerate(items):
                if i:
                    self.now += 0.7
                self._emit(self._call_event(tool, args, message))
                self.now += took
                self._emit(self._result_event(self.calls, tool, output, errs[i], kinds[i]))
            return list(range(first, self.calls + 1))
        for i, (tool, args, _) in enumerate(items):
            if i:
                self.now += gap
            self._emit(self._call_event(tool, args, message))
        self.now += took
        for i, (tool, _, output) in enumerate(items):
            self.now += 0.01
            self._emit(self._result_event(first + i, tool, output, errs[i], kinds[i]))
        return list(range(first, self.calls + 1))

    def text(self, text: str) -> None:
        self._emit({"type": "text", "text": text})

    def user(self, text: str) -> None:
        """The user says something (a ``user_message`` event)."""
        self.now += 6.0
        self._emit({"type": "user_message", "text": text, "ts": round(self.now, 4)})

    def turn(self, state: Any = _UNSET, *, error: str | None = None, tokens: tuple[int, int] = (2400, 160)) -> None:
        self.now += 0.2
        cost = round(tokens[0] * 3e-6 + tokens[1] * 15e-6, 6)
        usage = {"input_tokens": tokens[0], "output_tokens": tokens[1], "cost_usd": cost}
        self._emit(
            {
                "type": "turn_end",
                "state": None if state is _UNSET else state,
                "usage": usage,
                "error": error,
                "ts": round(self.now, 4),
            }
        )

    def answer(self, text: str) -> None:
        """The final turn: words, no tool call."""
        self.text(text)
        self.turn()

    # -- labels -------------------------------------------------------------------------------------
    def loop(
        self,
        kind: str | None,
        at: int | None,
        onset: int,
        description: str,
        *,
        latest: int | None = None,
        known_issue: str = "",
        halt: Any = _UNSET,
    ) -> Trace:
        """A loop: its onset, the expected first intervention, and the latest acceptable call for it
        (``latest``, by default the expected call itself); ``halt``: the call at which the run is expected to
        be halted (``None``: never), when the scenario is about halting."""
        first = None if kind is None else {"kind": kind, "action": "advise", "call_index": at}
        self.expect = {
            "first_intervention": first,
            "onset": onset,
            "latest": latest if latest is not None else at,
            "label": "loop",
            "description": description,
        }
        if halt is not _UNSET:
            self.expect["halt"] = halt
        if known_issue:
            self.expect["known_issue"] = known_issue
        return self

    def healthy(self, description: str, *, known_issue: str = "") -> Trace:
        self.expect = {"first_intervention": None, "onset": None, "label": "healthy", "description": description}
        if known_issue:
            self.expect["known_issue"] = known_issue
        return self

    def dump(self, directory: Path) -> Path:
        if self.expect is None:
            raise ValueError(f"{self.name}: no expectation")
        if not self.name.replace("_", "").isalnum():
            raise ValueError(f"{self.name}: bad name")
        lines = []
        for i, ev in enumerate(self.events):
            out = {**ev, "expect": self.expect} if i == 0 else ev
            lines.append(json.dumps(out, ensure_ascii=False))
        path = directory / f"{self.name}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def numbered(text: str, start: int = 1) -> str:
    """A file as an editor tool shows it: right-aligned line numbers and a tab."""
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.strip("\n").splitlines(), start))


# =================================================================================================
# repeat: the 3rd identical call in a row when the previous 2 returned the same result
# =================================================================================================


@scenario
def repeat_weather_travel_planner() -> Trace:
    t = Trace("repeat_weather_travel_planner")
    t.call(
        "search_flights",
        {"origin": "LHR", "destination": "LIS", "date": "2025-12-12", "passengers": 2},
        {
            "flights": [
                {"flight": "TP1351", "dep": "07:05", "arr": "09:45", "price_gbp": 118},
                {"flight": "BA500", "dep": "09:55", "arr": "12:35", "price_gbp": 164},
                {"flight": "U28617", "dep": "17:40", "arr": "20:20", "price_gbp": 92},
            ]
        },
    )
    t.turn()
    args = {"city": "Lisbon", "units": "metric", "days": 3}
    wx = "Lisbon, PT. Fri 12 Dec: 17°C, light rain (70%). Sat 13 Dec: 18°C, cloudy. Sun 14 Dec: 16°C, showers."
    t.call("get_weather", args, wx)
    t.turn()
    onset = t.call("get_weather", args, wx)
    t.turn()
    at = t.call("get_weather", args, wx)  # 3rd identical call in a row, the previous 2 returned the same text
    t.turn()
    t.call(
        "search_hotels",
        {"city": "Lisbon", "check_in": "2025-12-12", "nights": 2, "max_price_eur": 180},
        [{"name": "Memmo Alfama", "price_eur": 171}, {"name": "Lisboa Pessoa", "price_eur": 149}],
    )
    t.answer("TP1351 on the 12th, rain expected Friday; Lisboa Pessoa is within budget.")
    return t.loop("repeat", at, onset, "Weather lookup repeated verbatim three times with the same forecast.")


@scenario
def repeat_status_page_volatile() -> Trace:
    t = Trace("repeat_status_page_volatile")
    t.call(
        "search_runbooks",
        {"query": "payments api 503 upstream"},
        [
            {"id": "RB-114", "title": "Payments API returns 503: check PSP status first"},
            {"id": "RB-090", "title": "Draining a bad payments pod"},
        ],
    )
    t.turn()
    t.call(
        "read_runbook",
        {"id": "RB-114"},
        "1. Check https://status.psp.example/api/v2/summary.json. 2. If the PSP is degraded, enable the queue "
        "fallback (payments.fallback=true). 3. Otherwise page the payments on-call.",
    )
    t.turn()
    url = {"url": "https://status.psp.example/api/v2/summary.json"}
    bodies = [
        ("2025-11-30T05:19:53Z", "6f1d2c1e-8a4b-4f0e-9a53-1c2b3d4e5f60", "212 ms"),
        ("2025-11-30T05:20:41Z", "0b7e4a9d-2c3f-4d1a-8e6b-7f8091a2b3c4", "187 ms"),
        ("2025-11-30T05:21:30Z", "d3c2b1a0-9f8e-4d7c-b6a5-948372615049", "240 ms"),
    ]
    idx = []
    for when, rid, took in bodies:
        body = (
            f"Status as of {when}. All systems operational except: Card payments API (degraded performance). "
            f"Incident INC-2291 open. request {rid}, served in {took}"
        )
        idx.append(t.call("fetch_url", url, body, think=6.0))
        t.turn()
    # volatile timestamp, uuid and duration are scrubbed: the three results compare equal
    return t.loop(
        "repeat", idx[2], idx[1], "Status page fetched three times; only timestamp, request uuid and latency differ."
    )


@scenario
def repeat_issue_search_key_order() -> Trace:
    t = Trace("repeat_issue_search_key_order")
    t.call("list_repos", {"org": "acme"}, ["acme/web", "acme/api", "acme/infra", "acme/mobile"])
    hits = [
        {"number": 1841, "title": "Login times out after SSO redirect", "state": "open", "comments": 12},
        {"number": 1790, "title": "Session cookie not refreshed: users logged out", "state": "open", "comments": 4},
        {"number": 1702, "title": "Timeout on /login under load", "state": "open", "comments": 9},
    ]
    t.call("search_issues", {"repo": "acme/web", "query": "login timeout", "state": "open", "limit": 20}, hits)
    t.turn()
    onset = t.call("search_issues", {"limit": 20, "state": "open", "query": "login timeout", "repo": "acme/web"}, hits)
    t.turn()
    at = t.call("search_issues", {"query": "login timeout", "repo": "acme/web", "limit": 20, "state": "open"}, hits)
    t.turn()
    t.call(
        "get_issue",
        {"repo": "acme/web", "number": 1841},
        {
            "number": 1841,
            "body": "After the Okta redirect the page spins for 30s then shows 504.",
            "labels": ["bug", "auth"],
        },
    )
    t.answer("Issue #1841 matches the report.")
    # canonical arguments: key order does not matter, so calls 2, 3 and 4 are identical
    return t.loop("repeat", at, onset, "Same issue search three times with the argument keys in a different order.")


@scenario
def repeat_invoices_int_vs_float() -> Trace:
    t = Trace("repeat_invoices_int_vs_float")
    t.call(
        "get_customer",
        {"customer_id": "cus_Nq81xT"},
        {"id": "cus_Nq81xT", "name": "Hollis & Grey Ltd", "currency": "eur", "balance": -4200},
    )
    t.turn()
    page = [
        {"id": "in_1QaZ", "amount_due": 129900, "status": "open"},
        {"id": "in_1QbY", "amount_due": 42000, "status": "paid"},
        {"id": "in_1QcX", "amount_due": 42000, "status": "void"},
    ]
    t.call("list_invoices", {"customer": "cus_Nq81xT", "page": 1, "per_page": 25}, {"data": page, "has_more": False})
    t.turn()
    onset = t.call(
        "list_invoices", {"customer": "cus_Nq81xT", "page": 1.0, "per_page": 25}, {"data": page, "has_more": False}
    )
    t.turn()
    at = t.call(
        "list_invoices", {"customer": "cus_Nq81xT", "page": 1, "per_page": 25.0}, {"data": page, "has_more": False}
    )
    t.answer("One open invoice (in_1QaZ, EUR 1,299.00).")
    # numbers compare by value: page 1 == 1.0, per_page 25 == 25.0
    return t.loop("repeat", at, onset, "Invoice listing repeated with 1 vs 1.0 / 25 vs 25.0 in the arguments.")


@scenario
def repeat_account_volatile_keys() -> Trace:
    t = Trace("repeat_account_volatile_keys")
    t.call(
        "get_user",
        {"email": "ops@northwind.example"},
        {"user_id": "usr_2231", "account_id": "acct_1042", "role": "owner"},
    )
    t.turn()
    idx = []
    for i, (rid, when, ms) in enumerate(
        [
            ("req_8f2K1x", "2025-11-30T08:01:12Z", 83),
            ("req_Qm30Zp", "2025-11-30T08:01:40Z", 61),
            ("req_71hWcv", "2025-11-30T08:02:05Z", 97),
        ]
    ):
        idx.append(
            t.call(
                "get_account",
                {"account_id": "acct_1042"},
                {
                    "id": "acct_1042",
                    "plan": "team",
                    "seats": 14,
                    "seats_used": 14,
                    "billing": "annual",
                    "request_id": rid,
                    "fetched_at": when,
                    "latency_ms": ms,
                    "etag": f'W/"{i}a9"',
                },
            )
        )
        t.turn()
    return t.loop(
        "repeat",
        idx[2],
        idx[1],
        "Account fetched three times; request_id, fetched_at, latency_ms and etag keys change.",
    )


@scenario
def repeat_same_changelog_write() -> Trace:
    t = Trace("repeat_same_changelog_write")
    t.call("read_file", {"path": "CHANGELOG.md"}, numbered("# Changelog\n\n## 2.3.0\n- Faster cold start\n"))
    t.turn()
    content = (
        "# Changelog\n\n## 2.4.0\n- Retry budget for outbound webhooks\n- Fix: CSV export drops the header "
        "row\n\n## 2.3.0\n- Faster cold start\n"
    )
    args = {"path": "CHANGELOG.md", "content": content}
    t.call("write_file", args, "Wrote 142 bytes to CHANGELOG.md")
    t.turn()
    onset = t.call("write_file", args, "Wrote 142 bytes to CHANGELOG.md")
    t.turn()
    # Repeat does not care about epochs: same call, same result, 3rd time in a row
    at = t.call("write_file", args, "Wrote 142 bytes to CHANGELOG.md")
    t.answer("Changelog updated.")
    return t.loop("repeat", at, onset, "The same file written with the same content three times in a row.")


@scenario
def repeat_pending_forever() -> Trace:
    t = Trace("repeat_pending_forever")
    t.call(
        "start_deployment",
        {"service": "checkout", "image": "checkout:2025.11.30-3"},
        {"deployment_id": "dep_5521", "status": "queued"},
    )
    t.turn()
    idx = []
    for i in range(16):
        idx.append(
            t.call(
                "check_deployment",
                {"deployment_id": "dep_5521"},
                {
                    "deployment_id": "dep_5521",
                    "status": "in_progress",
                    "step": "waiting for health checks",
                    "elapsed_s": 30 * (i + 1),
                },
                think=30.0,
            )
        )
        t.turn()
    # The last result says the work is still going, so Repeat's threshold is pending_threshold=12: the 12th
    # identical poll (idx[11]) is intercepted. "Polling that ends is left alone" also rules out an earlier
    # intervention by Cycle on the same polls (see healthy_poll_pending_eight_then_done).
    return t.loop(
        "repeat",
        idx[11],
        idx[1],
        "Deployment stuck in_progress: the same poll 16 times; pending_threshold applies.",
    )


@scenario
def repeat_http_get_actions_runs() -> Trace:
    t = Trace("repeat_http_get_actions_runs")
    t.call(
        "http_request",
        {
            "method": "GET",
            "url": "https://api.github.com/repos/acme/api/pulls/512",
            "headers": {"Accept": "application/vnd.github+json"},
        },
        {"number": 512, "title": "Bump grpcio to 1.66", "head": {"ref": "deps/grpcio-1.66"}, "mergeable": True},
    )
    t.turn()
    runs = {
        "total_count": 2,
        "workflow_runs": [
            {"id": 11853201, "name": "ci", "head_branch": "deps/grpcio-1.66", "conclusion": "failure"},
            {"id": 11852977, "name": "lint", "head_branch": "deps/grpcio-1.66", "conclusion": "success"},
        ],
    }
    args = {
        "method": "GET",
        "url": "https://api.github.com/repos/acme/api/actions/runs?branch=deps/grpcio-1.66",
        "headers": {"Accept": "application/vnd.github+json"},
    }
    t.call("http_request", args, runs)
    t.turn()
    onset = t.call("http_request", args, runs)
    t.turn()
    at = t.call("http_request", args, runs)  # method GET reads; 3rd identical call, same JSON
    return t.loop("repeat", at, onset, "GET of the same CI runs endpoint three times in a row.")


@scenario
def repeat_sql_error_uuid_only() -> Trace:
    t = Trace("repeat_sql_error_uuid_only")
    t.call("list_tables", {"schema": "public"}, ["users", "orders", "order_items", "payments", "refunds"])
    t.turn()
    sql = {"query": "SELECT id, email FROM users WHERE created_at > now() - interval '7 days'"}
    conns = [
        "3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "9b2e7c10-44d1-4c2a-a0f3-5e6d7c8b9a01",
        "e1d2c3b4-a596-4877-8a69-5b4c3d2e1f00",
    ]
    idx = []
    for c in conns:
        idx.append(
            t.call(
                "run_sql",
                sql,
                f"psycopg.OperationalError: server closed the connection unexpectedly (connection {c})",
                error=True,
            )
        )
        t.turn()
    # the error texts differ only by a uuid: same result digest, so Repeat fires on the 3rd identical call
    # (ErrorRepeat would need 3 failures before the call, i.e. the 4th)
    return t.loop("repeat", idx[2], idx[1], "Identical SQL failing three times; error texts differ only by a uuid.")


@scenario
def repeat_search_zero_results_verbatim() -> Trace:
    t = Trace("repeat_search_zero_results_verbatim")
    t.call(
        "get_ticket",
        {"ticket_id": 88213},
        {
            "subject": "SAML login broken after IdP cert rotation",
            "requester": "it@brightlane.example",
            "priority": "high",
        },
    )
    t.call("get_org", {"org_id": 5120}, {"name": "Brightlane", "plan": "enterprise", "sso": "saml"})
    t.turn()
    q = {"query": "SAML certificate rotation"}
    t.call("search_docs", q, "0 results")
    t.turn()
    onset = t.call("search_docs", q, "0 results")
    t.turn()
    at = t.call("search_docs", q, "0 results")
    return t.loop("repeat", at, onset, "The same doc search returning '0 results' three times in a row.")


@scenario
def shell_repeat_cat_settings() -> Trace:
    t = Trace("shell_repeat_cat_settings")
    t.call("bash", {"command": "ls src/app"}, "__init__.py\nmain.py\nsettings.py\nroutes.py\nmodels.py\n")
    t.call(
        "bash",
        {"command": 'grep -n "DATABASE_URL" -r src/'},
        'src/app/settings.py:14:DATABASE_URL = os.environ.get("DATABASE_URL", "sqlite:///dev.db")\n',
    )
    t.turn()
    settings = numbered(
        'import os\n\nDEBUG = os.environ.get("DEBUG") == "1"\n'
        'SECRET_KEY = os.environ["SECRET_KEY"]'
        '\nALLOWED_HOSTS = ["*"]\n\nDATABASE_URL = os.environ.get("DATABASE_URL", '
        '"sqlite:///dev.db")\nPOOL_SIZE = int(os.environ.get("POOL_SIZE", "5"))\n'
    )
    cmd = {"command": "cat src/app/settings.py"}
    t.call("bash", cmd, settings)
    t.turn()
    onset = t.call("bash", cmd, settings)
    t.turn()
    at = t.call("bash", cmd, settings)
    return t.loop("repeat", at, onset, "bash: the same `cat` of a settings file three times in a row.")


# =================================================================================================
# error_repeat: identical call failed 3 times (once if non-retryable); same error 3 times (2) per tool
# =================================================================================================


@scenario
def error_identical_call_varied_errors() -> Trace:
    t = Trace("error_identical_call_varied_errors")
    t.call("list_exports", {"bucket": "finance-exports"}, ["q1_revenue.csv", "q2_revenue.csv", "q3_revenue.csv"])
    t.turn()
    url = {"url": "https://data.acme-internal.net/exports/q3_revenue.csv"}
    errs = [
        "ReadTimeout: HTTPSConnectionPool(host='data.acme-internal.net', port=443): Read timed out. (read timeout=30)",
        "ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))",
        "HTTPError: 502 Server Error: Bad Gateway for url: https://data.acme-internal.net/exports/q3_revenue.csv",
    ]
    idx = [t.call("fetch_url", url, e, error=True, think=8.0) for e in errs]
    # different error texts, so not Repeat; the identical call has failed 3 times -> the 4th is intercepted
    at = t.call("fetch_url", url, "HTTPError: 504 Server Error: Gateway Timeout", error=True)
    t.turn()
    return t.loop("error_repeat", at, idx[1], "The same download failing with three different errors, then retried.")


@scenario
def error_same_error_changing_sql() -> Trace:
    t = Trace("error_same_error_changing_sql")
    t.call(
        "describe_table",
        {"table": "payments"},
        "id bigint, order_id bigint, amount_cents integer, currency char(3), status text, created_at timestamptz",
    )
    t.turn()
    queries = [
        "SELECT sum(amount_cents) FROM payments WHERE created_at >= '2025-11-01'",
        "SELECT count(*) FROM payments WHERE status = 'succeeded'",
        "SELECT * FROM payments ORDER BY created_at DESC LIMIT 10",
        "SELECT currency, sum(amount_cents) FROM payments GROUP BY currency",
    ]
    err = "ERROR:  permission denied for table payments"
    idx = [t.call("query_db", {"sql": q}, err, error=True) for q in queries]
    t.turn()
    # same error 3 times from query_db, whatever the SQL -> the 4th query_db call is intercepted
    return t.loop("error_repeat", idx[3], idx[1], "Different SQL each time, same 'permission denied' error.")


@scenario
def error_same_error_request_ids() -> Trace:
    t = Trace("error_same_error_request_ids")
    t.call("search_tickets", {"project": "OPS", "query": "disk full"}, [{"key": "OPS-3381", "status": "Done"}])
    t.turn()
    titles = [
        "db-replica-2: disk at 91%",
        "db-replica-2 disk usage above threshold",
        "Grow volume on db-replica-2",
        "Disk alert db-replica-2 (follow-up)",
    ]
    rids = [
        "9c1e5a77-2b3d-4e8f-a1b2-c3d4e5f60718",
        "1f2e3d4c-5b6a-4789-9abc-def012345678",
        "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d",
        "aa11bb22-cc33-4d44-8e55-ff6677889900",
    ]
    idx = []
    for title, rid in zip(titles, rids, strict=True):
        idx.append(
            t.call(
                "create_ticket",
                {"project": "OPS", "title": title, "priority": "P2"},
                f"403 Forbidden: token is missing scope 'tickets:write' (request_id={rid})",
                error=True,
            )
        )
        t.turn()
    # failed mutating calls start no epoch; the error is the same once the uuid is scrubbed: create_ticket
    # returned the same error 3 times, so its 4th call is intercepted "whatever the arguments"
    return t.loop(
        "error_repeat",
        idx[3],
        idx[1],
        "Ticket creation retried with new titles; same 403 scope error.",
    )


@scenario
def repeat_nonretryable_refund_retry() -> Trace:
    t = Trace("repeat_nonretryable_refund_retry")
    t.call(
        "get_payment",
        {"payment_id": "pi_3PqX81"},
        {"id": "pi_3PqX81", "amount": 4999, "currency": "usd", "refunded": True, "amount_refunded": 4999},
    )
    t.turn()
    args = {"payment_id": "pi_3PqX81", "amount": 4999, "reason": "requested_by_customer"}
    out = {
        "status": "error",
        "retryable": False,
        "message": "Charge pi_3PqX81 has already been refunded in full.",
        "next_action_hint": "Tell the customer the refund was issued on 2025-11-28.",
    }
    t.call("refund_payment", args, out, error=True)
    t.turn()
    # the first identical retry of a non-retryable result: Repeat(non_retryable_threshold=2) and
    # ErrorRepeat(non_retryable=1) both fire; Repeat comes first in the default order
    at = t.call("refund_payment", args, out, error=True)
    return t.loop("repeat", at, at, "A non-retryable refund error, and the identical refund tried again.")


@scenario
def error_nonretryable_same_error_new_args() -> Trace:
    t = Trace("error_nonretryable_same_error_new_args")
    t.call(
        "get_order",
        {"order_id": "ORD-58812"},
        {"id": "ORD-58812", "carrier": "DHL", "tracking": ["JD0146000012", "JD0146000013", "JD0146000014"]},
    )
    t.turn()
    out = {
        "status": "error",
        "retryable": False,
        "message": "Carrier API credentials expired. An administrator must renew the DHL integration.",
    }
    idx = [
        t.call("track_shipment", {"carrier": "dhl", "tracking_number": n}, out, error=True)
        for n in ["JD0146000012", "JD0146000013", "JD0146000014"]
    ]
    t.turn()
    # same non-retryable error twice (same_error_non_retryable=2) -> the 3rd call to the tool is intercepted
    return t.loop("error_repeat", idx[2], idx[1], "Three parcels tracked; the same non-retryable credentials error.")


@scenario
def repeat_not_found_nonretryable_retry() -> Trace:
    t = Trace("repeat_not_found_nonretryable_retry")
    t.call("find_customer", {"email": "m.okafor@example.org"}, {"customer_id": "C-20417", "orders": 3})
    t.turn()
    args = {"order_id": "A-77812"}
    out = {
        "status": "not_found",
        "retryable": False,
        "message": "No order with id A-77812.",
        "next_action_hint": "Ask the customer for the order number printed on the confirmation email.",
    }
    t.call("get_order", args, out)
    t.turn()
    onset = t.call("get_order", args, out)
    t.turn()
    t.call("get_order", args, out)
    t.turn()
    # outcome protocol: "the first identical retry of a non-retryable result is advised" (Repeat with
    # non_retryable_threshold=2); not_found is an empty result, not a failure, so ErrorRepeat is silent
    return t.loop(
        "repeat", onset, onset, "get_order said not_found, retryable:false; the identical lookup is made again."
    )


@scenario
def drift_not_found_nonretryable_emails() -> Trace:
    t = Trace("drift_not_found_nonretryable_emails")
    t.call(
        "search_tickets",
        {"query": "duplicate charge", "requester": "Dana Whitfield"},
        [{"id": 4471, "subject": "Charged twice for annual plan"}],
    )
    t.turn()
    out = {
        "status": "not_found",
        "retryable": False,
        "message": "No customer matches this email address.",
        "next_action_hint": "Search by phone number or ask the customer which email they signed up with.",
    }
    emails = [
        "dana.whitfield@gmail.com",
        "dana.whitfield@outlook.com",
        "d.whitfield@gmail.com",
        "danawhitfield@gmail.com",
        "dana.w@whitfield-design.com",
        "whitfield.dana@gmail.com",
    ]
    idx = [t.call("find_customer", {"email": e}, out) for e in emails]
    t.turn()
    # not_found is an empty result (drift), not an error; each email differs, so no identical retry.
    # 5 empty lookups (idx[0..4]) -> the 6th is intercepted
    return t.loop("drift", idx[5], idx[1], "Customer lookup by six email guesses, each not_found with retryable:false.")


@scenario
def error_schema_validation_same_error() -> Trace:
    t = Trace("error_schema_validation_same_error")
    t.call(
        "get_schema",
        {"name": "order.created.v2"},
        {"required": ["order_id", "customer_id", "total"], "properties": {"order_id": {"type": "string"}}},
    )
    t.turn()
    payloads = [
        {"order_id": "o_1", "total": 1999},
        {"order_id": "o_1", "total": 1999, "currency": "EUR"},
        {"order_id": "o_1", "total": {"amount": 1999, "currency": "EUR"}},
        {"order_id": "o_1", "customer": "c_9", "total": 1999},
    ]
    err = "ValidationError: 'customer_id' is a required property\n\nFailed validating 'required' in schema"
    idx = [t.call("validate_event", {"schema": "order.created.v2", "payload": p}, err, error=True) for p in payloads]
    t.turn()
    return t.loop("error_repeat", idx[3], idx[1], "Payload reshaped three times; the same required-field error.")


@scenario
def error_pytest_rerun_without_edit() -> Trace:
    t = Trace("error_pytest_rerun_without_edit")
    t.call("bash", {"command": "ls tests/"}, "conftest.py\ntest_billing.py\ntest_tax.py\ntest_invoice_pdf.py\n")
    t.call(
        "bash",
        {"command": "git log --oneline -3"},
        "a41c9e2 tax: round per line item\n7d03b11 billing: proration for seat changes\n52e9f0c ci: cache uv\n",
    )
    t.call(
        "bash",
        {"command": 'grep -n "def compute_tax" -r src/'},
        "src/billing/tax.py:31:def compute_tax(lines, region):\n",
    )
    t.turn()
    fail = (
        "F..........\n=================================== FAILURES ===================================\n"
        "________________________ test_tax_rounding_per_line ________________________\n"
        "    assert compute_tax(lines, 'DE') == Decimal('3.80')\nE   AssertionError: assert Decimal('3.79') == "
        "Decimal('3.80')\n\ntests/test_billing.py:88: AssertionError\n1 failed, 11 passed in 0.84s\n"
    )
    tax = numbered(
        'from decimal import Decimal, ROUND_HALF_UP\n\nRATES = {"DE": Decimal("0.19"), "FR": '
        'Decimal("0.20")}\n\n\ndef compute_tax(lines, region):\n    rate = RATES[region]\n    total = '
        'sum(l.amount for l in lines) * rate\n    return total.quantize(Decimal("0.01"), ROUND_HALF_UP)\n',
        25,
    )
    test = {"command": "pytest tests/test_billing.py -q"}
    cat = {"command": "cat -n src/billing/tax.py | sed -n '25,40p'"}
    t.call("bash", test, fail, error=True)
    t.call("bash", cat, tax)
    t.turn()
    onset = t.call("bash", test, fail.replace("0.84s", "0.79s"), error=True)
    t.call("bash", cat, tax)
    t.turn()
    t.call("bash", test, fail.replace("0.84s", "0.91s"), error=True)
    t.turn()
    # test, cat, test, cat: a short cycle (period 2) whose second pass (onset, onset+1) is stale (durations
    # are scrubbed), so the call that starts its third pass, the third test run (onset+2), is intercepted
    # by Cycle; ErrorRepeat would wait for a 3rd failure of the identical call.
    t.call("bash", cat, tax)
    t.call("bash", test, fail, error=True)
    return t.loop("cycle", onset + 2, onset, "Failing test re-run, file re-read, no edit in between.")


@scenario
def error_str_replace_not_found_cycle() -> Trace:
    t = Trace("error_str_replace_not_found_cycle")
    src = numbered(
        "import time\n\nSESSION_TTL = 3600\n\n\ndef is_expired(session):\n    return time.time() - "
        "session.created > SESSION_TTL\n\n\ndef refresh(session):\n    session.created = time.time()\n"
        "    return session\n"
    )
    view = {"command": "view", "path": "/repo/src/auth/session.py"}
    t.call("str_replace_editor", view, src)
    t.call(
        "bash",
        {"command": 'grep -rn "SESSION_TTL" src/'},
        "src/auth/session.py:3:SESSION_TTL = 3600\nsrc/auth/middleware.py:12:from .session import SESSION_TTL\n",
    )
    t.turn()
    edit = {
        "command": "str_replace",
        "path": "/repo/src/auth/session.py",
        "old_str": "def is_expired(session):\n    return time.time() - session.created >= SESSION_TTL",
        "new_str": "def is_expired(session, now=None):\n    now = now or time.time()\n    return now - "
        "session.created >= SESSION_TTL",
    }
    err = (
        "No replacement was performed, old_str `def is_expired(session):\n    return time.time() - session.created "
        ">= SESSION_TTL` did not appear verbatim in /repo/src/auth/session.py."
    )
    t.call("str_replace_editor", edit, err, error=True)
    t.turn()
    onset = t.call("str_replace_editor", view, src)  # re-view, no change: stale
    t.turn()
    t.call("str_replace_editor", edit, err, error=True)
    t.turn()
    t.call("str_replace_editor", view, src)
    t.turn()
    # edit, view, edit, view: a short cycle (period 2) whose second pass (the 2nd failed edit and the view
    # after it) is stale, so the 3rd edit, which starts the third pass, is intercepted by Cycle (call 7),
    # before the tool's same error comes back a 3rd time (ErrorRepeat would intercept the call after that)
    at = t.call("str_replace_editor", edit, err, error=True)
    t.turn()
    t.call("str_replace_editor", view, src)
    t.call("str_replace_editor", edit, err, error=True)
    return t.loop(
        "cycle",
        at,
        onset,
        "str_replace with a wrong old_str (>= vs >) retried after each re-view of the unchanged file.",
    )


@scenario
def healthy_traceback_line_numbers_change() -> Trace:
    t = Trace("healthy_traceback_line_numbers_change")
    t.call(
        "read_file",
        {"path": "data/orders_sample.json"},
        '[{"id": 1, "amount": "12.50", "customer": {"id": 7}}, {"id": 2, "total": "3.10", "customer": null}]',
    )
    t.turn()
    codes = [
        (
            "import json\nrows = json.load(open('data/orders_sample.json'))\nprint(sum(float(r['amount']) for r in "
            "rows))",
            3,
            "KeyError: 'amount'",
        ),
        (
            "import json\nrows = json.load(open('data/orders_sample.json'))\nfor r in rows:\n    v = r.get('amount') "
            "or r['total']\n    print(r['customer']['id'], v)",
            5,
            "TypeError: 'NoneType' object is not subscriptable",
        ),
        (
            "import json\nrows = json.load(open('data/orders_sample.json'))\nout = []\nfor r in rows:\n    v = "
            "r.get('amount') or r.get('total')\n    cid = (r['customer'] or {}).get('id')\n    out.append((cid, "
            "float(v)))\nprint(out)\nprint(sum(x for _, x in out) / len(rows) + rows)",
            9,
            "TypeError: unsupported operand type(s) for +: 'float' and 'list'",
        ),
    ]
    for code, line, err in codes:
        t.call(
            "run_python",
            {"code": code},
            f'Traceback (most recent call last):\n  File "<stdin>", line {line}, in <module>\n{err}',
            error=True,
        )
        t.turn()
    t.call(
        "run_python",
        {
            "code": "import json\nrows = json.load(open('data/orders_sample.json'))\nprint([(r.get("
            "'amount') or r.get('total')) for r in rows])"
        },
        "['12.50', '3.10']",
    )
    t.answer("Two orders, 12.50 and 3.10; one has no customer.")
    # different code each time, different errors: no identical call failed 3 times, no error 3 times
    return t.healthy("Debugging a script: each attempt fails differently, then it works.")


# =================================================================================================
# cycle: a call that would be the 5th stale call in a row (same call, same result, same epoch)
# =================================================================================================


@scenario
def cycle_p2_search_and_open() -> Trace:
    t = Trace("cycle_p2_search_and_open")
    t.call(
        "get_conversation",
        {"conversation_id": "cv_7781"},
        {"messages": [{"from": "customer", "text": "How do I rotate my API key without downtime?"}]},
    )
    t.call("get_account", {"account_id": "acct_332"}, {"plan": "business", "api_keys": 2})
    t.turn()
    hits = [
        {"doc_id": "kb-2291", "title": "Rotating API keys"},
        {"doc_id": "kb-1877", "title": "API key scopes"},
        {"doc_id": "kb-3010", "title": "Zero-downtime credential rollover"},
    ]
    doc = (
        "Rotating API keys\n\nCreate a second key, deploy it to all clients, then revoke the first key. Keys "
        "cannot be renamed. Each account may hold at most two active keys. Last reviewed 2025-10-02."
    )
    s, o = {"query": "rotate api key"}, {"doc_id": "kb-2291"}
    t.call("search_docs", s, hits)
    t.call("open_doc", o, doc)
    t.turn()
    onset = t.call("search_docs", s, hits)
    t.call("open_doc", o, doc)
    t.turn()
    t.call("search_docs", s, hits)
    t.call("open_doc", o, doc)
    t.turn()
    # a short cycle (period 2): the second pass (onset, onset+1) is stale; the third pass starts at
    # onset+2 and is intercepted. Drift per tool: 2 non-new results each, far below 5.
    t.call("search_docs", s, hits)
    t.call("open_doc", o, doc)
    return t.loop("cycle", onset + 2, onset, "Two-tool ping-pong: the same search and the same article, over and over.")


@scenario
def cycle_p3_three_tools() -> Trace:
    t = Trace("cycle_p3_three_tools")
    t.call("get_incident", {"id": "INC-4410"}, {"title": "p99 latency spike on /search", "started": "04:12Z"})
    t.call(
        "list_deploys",
        {"service": "search-api", "since": "2025-11-29"},
        [{"sha": "c0ffee1", "at": "03:58Z", "author": "lmarsh"}],
    )
    t.call("get_runbook", {"service": "search-api"}, "Check the dashboard, the recent deploys, then the error logs.")
    t.turn()
    dash = {"p50_ms": 41, "p99_ms": 2210, "rps": 830, "error_rate": 0.004}
    logs = (
        "04:12:09 WARN slow query shard=7 took=1.9s\n04:12:11 WARN slow query shard=7 took=2.2s\n"
        "04:12:15 WARN slow query shard=7 took=2.0s\n"
    )
    diff = "c0ffee1: search-api: raise default page size 20 -> 200 (config/search.yaml)"
    calls = [
        ("get_dashboard", {"service": "search-api", "window": "1h"}, dash),
        ("query_logs", {"service": "search-api", "level": "WARN", "window": "1h"}, logs),
        ("get_deploy_diff", {"sha": "c0ffee1"}, diff),
    ]
    for tool, args, out in calls:
        t.call(tool, args, out)
    t.turn()
    onset = t.calls + 1
    for _ in range(2):
        for tool, args, out in calls:
            t.call(tool, args, out, think=5.0)
        t.turn()
    # a short cycle (period 3): the second pass (onset..onset+2) is stale; the third pass starts at onset+3
    return t.loop(
        "cycle",
        onset + 3,
        onset,
        "Dashboard, logs, deploy diff, again and again with nothing new.",
    )


@scenario
def cycle_p3_incident_triage() -> Trace:
    t = Trace("cycle_p3_incident_triage")
    t.call("get_incident", {"id": "INC-4471"}, {"title": "Checkout 5xx rate above 2%", "since": "11:02Z"})
    t.call("get_oncall", {"team": "payments"}, {"primary": "a.moreau", "secondary": "j.kim"})
    t.turn()
    three = [
        (
            "get_service_health",
            {"service": "checkout", "window": "30m"},
            {"status": "degraded", "error_rate": 0.027, "p99_ms": 1830, "top_error": "UpstreamTimeout(psp)"},
        ),
        (
            "search_logs",
            {"query": "service:checkout status:5xx", "window": "30m", "limit": 20},
            {"hits": ["11:02:14Z 504 POST /pay upstream=psp", "11:02:19Z 504 POST /pay upstream=psp"], "total": 2212},
        ),
        (
            "get_psp_status",
            {"provider": "adyen"},
            "Adyen: all systems operational (last incident resolved 2025-11-27).",
        ),
    ]
    for tool, args, out in three:
        t.call(tool, args, out)
    t.turn()
    onset = t.calls + 1
    for _ in range(2):
        for tool, args, out in three:
            t.call(tool, args, out, think=5.0)
        t.turn()
    # a short cycle (period 3): pass 2 is stale from onset; the start of pass 3 (onset+3) is intercepted
    return t.loop("cycle", onset + 3, onset, "Health, logs, PSP status, again and again while nothing changes.")


@scenario
def cycle_p5_browser_tools() -> Trace:
    t = Trace("cycle_p5_browser_tools")
    t.call(
        "web_search",
        {"query": "Hetzner CCX33 price per month"},
        [{"title": "Dedicated vCPU cloud servers", "url": "https://www.hetzner.com/cloud"}],
    )
    t.call(
        "browser_navigate",
        {"url": "https://www.hetzner.com/cloud"},
        "Page loaded: Cloud servers: Shared vCPU | Dedicated vCPU | Regions",
    )
    t.turn()
    five = [
        ("browser_click", {"selector": "button#tab-dedicated"}, "Clicked button#tab-dedicated"),
        (
            "browser_snapshot",
            {},
            "Dedicated vCPU. CCX13 2 vCPU 8 GB. CCX23 4 vCPU 16 GB. CCX33 8 vCPU 32 GB. "
            "Prices shown after selecting a location.",
        ),
        ("browser_select", {"selector": "select#location", "value": "fsn1"}, "Selected fsn1"),
        ("browser_get_text", {"selector": "table.pricing"}, "CCX13 | CCX23 | CCX33 (price: select a location)"),
        ("browser_scroll", {"direction": "down", "amount": 800}, "Scrolled to y=800"),
    ]
    for tool, args, out in five:
        t.call(tool, args, out, think=3.0)
    t.turn()
    onset = t.calls + 1
    for _ in range(2):
        for tool, args, out in five:
            t.call(tool, args, out, think=3.0)
        t.turn()
    return t.loop(
        "cycle",
        onset + 4,
        onset,
        "Browser agent repeating a 5-step click/select/read sequence on a page that never changes.",
    )


@scenario
def cycle_p12_reread_mixed_tools() -> Trace:
    t = Trace("cycle_p12_reread_mixed_tools")
    t.call(
        "git_status", {}, "On branch feat/export-xlsx\nChanges not staged for commit:\n  modified: src/export/xlsx.py"
    )
    t.call("git_diff", {"path": "src/export/xlsx.py"}, "@@ -40,6 +40,9 @@\n+    ws.freeze_panes = 'A2'\n")
    t.call("run_tests", {"path": "tests/export"}, "14 passed, 1 failed: test_xlsx_header_style")
    t.turn()
    twelve = [
        (
            "read_file",
            {"path": "src/export/xlsx.py"},
            numbered("def write_header(ws, cols):\n    for i, c in enumerate(cols, 1):\n        ws.cell(1, i, c)\n"),
        ),
        (
            "grep_search",
            {"pattern": "header_style", "path": "src"},
            "src/export/styles.py:8:HEADER_STYLE = NamedStyle(name='header')",
        ),
        (
            "read_file",
            {"path": "src/export/styles.py"},
            numbered(
                "from openpyxl.styles import NamedStyle, Font\n\n"
                "HEADER_STYLE = NamedStyle(name='header')\n"
                "HEADER_STYLE.font = Font(bold=True)\n"
            ),
        ),
        ("list_dir", {"path": "tests/export"}, ["test_csv.py", "test_xlsx.py", "fixtures/"]),
        (
            "read_file",
            {"path": "tests/export/test_xlsx.py"},
            numbered(
                "def test_xlsx_header_style(tmp_path):\n    "
                "ws = build(tmp_path)\n    assert ws['A1']."
                "style == 'header'\n"
            ),
        ),
        (
            "grep_search",
            {"pattern": "NamedStyle", "path": "src"},
            "src/export/styles.py:1:from openpyxl.styles import NamedStyle, Font",
        ),
        ("git_log", {"path": "src/export/styles.py", "n": 3}, "e3a9f01 styles: header font\n0c1d2e3 init"),
        (
            "read_file",
            {"path": "src/export/__init__.py"},
            numbered("from .csv import write_csv\nfrom .xlsx import write_xlsx\n"),
        ),
        ("list_dir", {"path": "src/export"}, ["__init__.py", "csv.py", "xlsx.py", "styles.py"]),
        (
            "grep_search",
            {"pattern": "write_header", "path": "src"},
            "src/export/xlsx.py:1:def write_header(ws, cols):\nsrc/export/xlsx.py:52:    write_header(ws, cols)",
        ),
        ("read_file", {"path": "tests/export/fixtures/expected.json"}, '{"A1": {"style": "header", "bold": true}}'),
        ("git_show", {"rev": "e3a9f01", "stat": True}, "src/export/styles.py | 2 ++"),
    ]
    for tool, args, out in twelve:
        t.call(tool, args, out, think=3.5)
        if t.calls % 4 == 0:
            t.turn()
    onset = t.calls + 1
    for tool, args, out in twelve[:8]:
        t.call(tool, args, out, think=3.5)
    t.turn()
    # pass 2: read_file, grep, read_file, list_dir are stale (4), the 5th call (read_file) is
    # intercepted ("a 12-call re-read cycle at the 5th call of its second pass")
    return t.loop(
        "cycle",
        onset + 4,
        onset,
        "A twelve-call re-read (files, greps, git) restarted from the top with nothing changed.",
    )


@scenario
def cycle_after_long_prefix_p3() -> Trace:
    t = Trace("cycle_after_long_prefix_p3")
    mods = ["parser", "lexer", "ast", "eval", "env", "builtins", "errors", "repl"]
    for m in mods:  # 8 reads
        t.call(
            "read_file",
            {"path": f"src/minilang/{m}.py"},
            numbered(
                f'"""{m} for minilang."""\n\nfrom __future__ import annotations\n\n\nclass {m.title()}:\n    ...\n'
            ),
            think=3.0,
        )
        if t.calls % 3 == 0:
            t.turn()
    t.call(
        "grep_search",
        {"pattern": "raise MiniError", "path": "src/minilang"},
        "src/minilang/eval.py:41\nsrc/minilang/eval.py:77\nsrc/minilang/env.py:19",
    )
    t.call("run_tests", {"path": "tests"}, "52 passed, 3 failed (test_closure_capture, test_shadowing, test_recur)")
    t.turn()
    for i, (m, fix) in enumerate(
        [
            ("env", "lookup walks parent scopes"),
            ("eval", "closures capture env"),
            ("eval", "tail call in let"),
            ("env", "define shadows outer"),
        ]
    ):
        t.call(
            "edit_file",
            {"path": f"src/minilang/{m}.py", "old": f"# TODO {i}", "new": f"# {fix}"},
            f"Edited src/minilang/{m}.py (1 replacement)",
        )
        t.call(
            "read_file",
            {"path": f"src/minilang/{m}.py"},
            numbered(f"class {m.title()}:\n    # {fix}\n    pass  # rev {i}\n"),
        )
        t.call("run_tests", {"path": "tests"}, f"{53 + i} passed, {2 - min(i, 2)} failed")
        t.turn()
    for name in ["test_recur", "test_closure_capture", "test_let_scoping"]:
        t.call(
            "read_file",
            {"path": f"tests/test_{name[5:]}.py"},
            numbered(f"def {name}():\n    assert run('{name}') == 'ok'\n"),
        )
    t.turn()
    for i, m in enumerate(["builtins", "errors", "repl", "lexer"]):
        t.call(
            "edit_file",
            {"path": f"src/minilang/{m}.py", "old": "pass", "new": f"return None  # {i}"},
            f"Edited src/minilang/{m}.py (1 replacement)",
        )
        t.call("run_tests", {"path": "tests"}, f"56 passed, 1 failed (test_gc_cycles) round {i}")
        t.turn()
    assert t.calls >= 30
    # now the agent reads the failing test, the GC module and the test output, over and over
    three = [
        (
            "read_file",
            {"path": "tests/test_gc_cycles.py"},
            numbered("def test_gc_cycles():\n    a = run('(let ((x (cons 1 x))) x)')\n    assert a.collected\n"),
        ),
        (
            "grep_search",
            {"pattern": "collected", "path": "src/minilang"},
            "src/minilang/env.py:88:    collected = False",
        ),
        ("run_tests", {"path": "tests/test_gc_cycles.py"}, "1 failed: AssertionError: assert False"),
    ]
    for tool, args, out in three:
        t.call(tool, args, out)
    t.turn()
    onset = t.calls + 1
    for _ in range(3):
        for tool, args, out in three:
            t.call(tool, args, out)
        t.turn()
    # a short cycle (period 3): the second pass (onset..onset+2) is stale; the third starts at onset+3
    return t.loop(
        "cycle",
        onset + 3,
        onset,
        "After 33 healthy calls (reads, edits, tests) the agent cycles over the same test, grep and test run.",
    )


@scenario
def cycle_after_long_prefix_git_tools() -> Trace:
    t = Trace("cycle_after_long_prefix_git_tools")
    files = [
        "api/handlers.go",
        "api/routes.go",
        "api/middleware.go",
        "store/pg.go",
        "store/cache.go",
        "store/migrate.go",
        "cmd/server/main.go",
        "internal/auth/jwt.go",
        "internal/auth/keys.go",
        "internal/log/log.go",
        "internal/log/fields.go",
        "internal/config/config.go",
        "internal/config/env.go",
        "api/errors.go",
        "store/tx.go",
        "store/retry.go",
    ]
    for f in files:
        t.call("read_file", {"path": f}, numbered(f"package {f.split('/')[-2]}\n\n// {f}\nfunc init() {{}}\n"))
        if t.calls % 2 == 0:
            t.turn()
    t.call(
        "search_code",
        {"query": "context.WithTimeout", "lang": "go"},
        "api/handlers.go:57\nstore/pg.go:112\nstore/cache.go:40",
    )
    t.call(
        "run_command",
        {"command": "go test ./..."},
        "ok  \tapi\t0.41s\nFAIL\tstore\t1.02s\nok  \tinternal/auth\t0.2s",
        error=True,
    )
    t.turn()
    for i, f in enumerate(["store/pg.go", "store/cache.go", "api/handlers.go", "store/pg.go"]):
        t.call("edit_file", {"path": f, "find": f"timeout{i}", "replace": f"ctxTimeout{i}"}, "ok")
        t.call("run_command", {"command": "go vet ./store/..."}, f"vet: {3 - i} issues" if i < 3 else "")
        t.call(
            "run_command",
            {"command": "go test ./store/..."},
            f"--- FAIL: TestPgTimeout{i} (0.0{i}s)\nFAIL\tstore" if i < 3 else "ok  \tstore\t0.88s",
            error=i < 3,
        )
        t.turn()
    for f in ["store/pg_test.go", "store/cache_test.go", "api/handlers_test.go"]:
        t.call("read_file", {"path": f}, numbered(f"package store\n\n// tests for {f}\n"))
    t.call(
        "run_command", {"command": "go test ./..."}, "ok  \tapi\t0.40s\nok  \tstore\t0.90s\nok  \tinternal/auth\t0.2s"
    )
    t.turn()
    t.call(
        "edit_file",
        {"path": "CHANGELOG.md", "find": "## Unreleased", "replace": "## Unreleased\n- store: context timeouts"},
        "ok",
    )
    t.turn()
    assert t.calls >= 30
    status = (
        "On branch fix/ctx-timeouts\nChanges not staged for commit:\n  modified: CHANGELOG.md\n  modified: "
        "api/handlers.go\n  modified: store/cache.go\n  modified: store/pg.go"
    )
    diff = (
        "diff --git a/store/pg.go b/store/pg.go\n@@ -110,7 +110,7 @@\n-\tctx, cancel := context.WithTimeout(ctx, "
        "timeout0)\n+\tctx, cancel := context.WithTimeout(ctx, ctxTimeout0)"
    )
    t.call("git_status", {"repo_path": "."}, status)
    t.call("git_diff_unstaged", {"repo_path": "."}, diff)
    t.turn()
    onset = t.calls + 1
    for _ in range(4):
        t.call("git_status", {"repo_path": "."}, status)
        t.call("git_diff_unstaged", {"repo_path": "."}, diff)
        t.turn()
    # a short cycle (period 2): the second pass (onset, onset+1) is stale; the third starts at onset+2
    return t.loop(
        "cycle",
        onset + 2,
        onset,
        f"After {onset - 3} healthy calls, git status / git diff ping-pong without committing.",
    )


@scenario
def cycle_ticket_volatile_fields() -> Trace:
    t = Trace("cycle_ticket_volatile_fields")
    t.call("search_tickets", {"query": "export stuck at 99%"}, [{"id": 4412, "subject": "CSV export stuck at 99%"}])
    t.call("get_customer", {"customer_id": 9917}, {"name": "Pellucid Labs", "plan": "pro"})
    t.turn()
    onset = 0
    for i in range(5):
        when = f"2025-11-30T09:{10 + i:02d}:{(7 * i) % 60:02d}Z"
        t.call(
            "get_ticket",
            {"id": 4412},
            {
                "id": 4412,
                "status": "open",
                "subject": "CSV export stuck at 99%",
                "assignee": None,
                "updated_at": "2025-11-29T17:02:11Z",
                "fetched_at": when,
                "request_id": f"req_{i}x{9 * i}",
            },
        )
        t.call(
            "list_comments",
            {"ticket_id": 4412},
            {
                "comments": [
                    {"author": "Pellucid Labs", "body": "Still stuck, tried twice."},
                    {"author": "bot", "body": f"Auto-reply sent {when}"},
                ],
                "next_page": None,
                "took_ms": 40 + i,
            },
        )
        t.turn()
        if i == 0:
            onset = t.calls + 1
    # volatile keys/timestamps differ each time: results still equal, so the calls are stale; a short
    # cycle (period 2): the third pass starts at onset+2
    return t.loop(
        "cycle", onset + 2, onset, "get_ticket / list_comments ping-pong; only fetch times and request ids change."
    )


@scenario
def cycle_p4_support_lookup() -> Trace:
    t = Trace("cycle_p4_support_lookup")
    t.call("get_conversation", {"id": "conv_55"}, {"text": "Where is my package? Order from last Tuesday."})
    t.turn()
    four = [
        ("get_customer", {"email": "r.santos@example.com"}, {"id": "cus_77", "name": "Rita Santos"}),
        (
            "list_orders",
            {"customer_id": "cus_77", "limit": 5},
            [{"id": "ORD-9131", "placed": "2025-11-25", "status": "shipped"}],
        ),
        (
            "get_order",
            {"order_id": "ORD-9131"},
            {"id": "ORD-9131", "status": "shipped", "carrier": "GLS", "tracking": "GLS88310452"},
        ),
        ("search_kb", {"query": "GLS delivery time Portugal"}, [{"id": "kb-71", "title": "Delivery times by carrier"}]),
    ]
    for tool, args, out in four:
        t.call(tool, args, out)
    t.turn()
    onset = t.calls + 1
    for _ in range(2):
        for tool, args, out in four:
            t.call(tool, args, out)
        t.turn()
    return t.loop("cycle", onset + 4, onset, "Support agent re-running the same four lookups instead of answering.")


@scenario
def cycle_p2_short_bash_outputs() -> Trace:
    t = Trace("cycle_p2_short_bash_outputs")
    t.call(
        "bash",
        {"command": "cat src/worker.py | head -40"},
        numbered("import queue\nimport threading\n\n# TODO: backoff\n# TODO: metrics\n\nclass Worker:\n    ...\n"),
    )
    t.call(
        "bash",
        {"command": "git log -3 --format='%h %s' -- src/worker.py"},
        "9e1f0aa worker: drain on SIGTERM\n41b2c3d worker: bounded queue\n0aa1b2c init\n",
    )
    t.turn()
    a, b = {"command": "grep -c TODO src/worker.py"}, {"command": "wc -l src/worker.py"}
    t.call("bash", a, "7\n")
    t.call("bash", b, "318 src/worker.py\n")
    t.turn()
    onset = t.calls + 1
    for _ in range(4):
        t.call("bash", a, "7\n")
        t.call("bash", b, "318 src/worker.py\n")
        t.turn()
    # short identical outputs are neutral for Drift; a short cycle (period 2): the third pass starts at onset+2
    return t.loop("cycle", onset + 2, onset, "bash ping-pong of `grep -c` and `wc -l` with nothing edited.")


@scenario
def shell_reread_cycle_long_outputs() -> Trace:
    t = Trace("shell_reread_cycle_long_outputs")
    t.call(
        "bash",
        {"command": "ls -la src/net"},
        "total 48\n-rw-r--r-- 1 dev dev 3120 client.py\n-rw-r--r-- 1 dev dev "
        "1890 retry.py\n-rw-r--r-- 1 dev dev 905 __init__.py\n",
    )
    t.call(
        "bash",
        {"command": "git log --oneline -5 -- src/net"},
        "b71a0c2 net: jitter in backoff\n3f9e812 net: retry 429\n5c4d3e2 net: pool size\n",
    )
    t.call("bash", {"command": "python -c 'import net; print(net.__version__)'"}, "0.14.2\n")
    t.call(
        "bash",
        {"command": "pip show httpx | head -3"},
        "Name: httpx\nVersion: 0.27.2\nSummary: The next generation HTTP client.\n",
    )
    t.turn()
    three = [
        (
            {"command": 'grep -rn "retry_policy" src/'},
            "src/net/client.py:22:    retry_policy = RetryPolicy(max_attempts=5, backoff=0.5)\n"
            "src/net/client.py:61:        for attempt in retry_policy.attempts():\n"
            "src/net/retry.py:9:class RetryPolicy:\n",
        ),
        (
            {"command": "cat src/net/client.py | sed -n '15,70p'"},
            numbered(
                "class Client:\n    def __init__(self, base):\n        self.base = base\n        "
                "retry_policy = RetryPolicy(max_attempts=5, backoff=0.5)\n",
                15,
            ),
        ),
        (
            {"command": "sed -n '1,40p' src/net/retry.py"},
            numbered(
                "import random\n\n\nclass RetryPolicy:\n    def __init__(self, max_attempts, backoff):\n"
                "        self.max_attempts = max_attempts\n"
            ),
        ),
    ]
    for args, out in three:
        t.call("bash", args, out)
    t.turn()
    onset = t.calls + 1
    for _ in range(2):
        for args, out in three:
            t.call("bash", args, out)
        t.turn()
    # a short cycle (period 3): its second pass (onset..onset+2) is stale, so the start of the third pass
    # (onset+3) is intercepted by Cycle; Drift (one tool, long outputs it already returned) would only fire
    # on the call after 5 nothing-new results (onset+5)
    return t.loop(
        "cycle", onset + 3, onset, "bash re-running the same grep / cat / sed over unchanged files (long outputs)."
    )


@scenario
def cycle_p2_read_pingpong_long() -> Trace:
    t = Trace("cycle_p2_read_pingpong_long")
    t.call("list_dir", {"path": "config"}, ["base.yaml", "prod.yaml", "staging.yaml"])
    base = numbered(
        "server:\n  port: 8080\n  workers: 4\ncache:\n  ttl_s: 300\n  backend: redis\nfeature_flags:\n"
        "  new_checkout: false\n"
    )
    prod = numbered("server:\n  workers: 16\ncache:\n  ttl_s: 900\nfeature_flags:\n  new_checkout: true\n")
    t.call("read_file", {"path": "config/base.yaml"}, base)
    t.call("read_file", {"path": "config/prod.yaml"}, prod)
    t.turn()
    onset = t.calls + 1
    for _ in range(3):
        t.call("read_file", {"path": "config/base.yaml"}, base)
        t.call("read_file", {"path": "config/prod.yaml"}, prod)
        t.turn()
    # a short cycle (period 2): the second pass (onset, onset+1) is stale, so the call that starts the
    # third pass (onset+2) is intercepted. Drift would need 5 nothing-new read_file results first.
    return t.loop("cycle", onset + 2, onset, "read_file ping-pong between two config files that never change.")


# =================================================================================================
# drift: the next call of a tool once 5 of its calls in a row (since it last returned something new)
# returned nothing new
# =================================================================================================


@scenario
def drift_search_docs_reworded_empty() -> Trace:
    t = Trace("drift_search_docs_reworded_empty")
    t.call("get_ticket", {"ticket_id": 90211}, {"subject": "Okta SAML: 'audience mismatch' after migration"})
    t.turn()
    tries = [
        ("okta saml audience mismatch", "0 results"),
        ("SAML audience restriction error", 'No results found for "SAML audience restriction error"'),
        ("audience URI okta", "No matches found."),
        ("single sign-on audience", "0 results for 'single sign-on audience'"),
        ("SSO entity id wrong", "Nothing found."),
        ("okta integration troubleshooting", "0 results"),
    ]
    idx = []
    for q, out in tries:
        idx.append(t.call("search_docs", {"query": q, "limit": 10}, out))
        t.turn()
    # 5 empty results (idx[0..4]) -> the 6th search is intercepted
    return t.loop("drift", idx[5], idx[1], "Reworded doc searches: '0 results', 'No matches found', 'Nothing found'.")


@scenario
def drift_help_center_default_hits() -> Trace:
    t = Trace("drift_help_center_default_hits")
    t.call("get_conversation", {"id": "conv_901"}, {"text": "Can I move my subscription to another workspace?"})
    t.turn()
    default = [
        {"id": "hc-1", "title": "Getting started with Teamflow"},
        {"id": "hc-2", "title": "How to reset your password"},
        {"id": "hc-3", "title": "Billing FAQ"},
        {"id": "hc-4", "title": "Inviting members to a workspace"},
        {"id": "hc-5", "title": "Contacting support"},
    ]
    qs = [
        "move subscription to another workspace",
        "transfer plan between workspaces",
        "change workspace billing owner",
        "migrate subscription workspace",
        "switch workspace plan",
        "workspace transfer",
        "subscription portability",
        "reassign subscription",
    ]
    idx = [t.call("search_help_center", {"query": q, "locale": "en"}, default, think=5.0) for q in qs]
    t.turn()
    # the first call returned the default list for the first time (new); idx[1..5] returned it again
    # (5 x nothing new) -> idx[6] is intercepted
    return t.loop("drift", idx[6], idx[1], "Every reworded query gets the same default 'popular articles' list.")


@scenario
def drift_web_search_empty_json() -> Trace:
    t = Trace("drift_web_search_empty_json")
    t.call(
        "read_file",
        {"path": "notes/task.md"},
        "Find the 2019 paper that introduced 'ReZero' initialisation and its exact arXiv id.",
    )
    t.call(
        "web_search",
        {"query": "ReZero initialization paper"},
        {
            "results": [
                {
                    "title": "ReZero is All You Need: Fast Convergence at Large Depth",
                    "url": "https://example.org/rezero",
                }
            ],
            "total_results": 1,
            "search_time_ms": 190,
        },
    )
    t.turn()
    qs = [
        "ReZero arXiv id 2020",
        '"ReZero is all you need" arxiv number',
        "rezero bachlechner arxiv identifier",
        "arxiv 2003 rezero",
        "rezero fast convergence large depth arxiv",
        "rezero paper identifier",
    ]
    idx = [
        t.call("web_search", {"query": q}, {"results": [], "total_results": 0, "search_time_ms": 150 + 9 * i})
        for i, q in enumerate(qs)
    ]
    t.turn()
    # the hit at call 2 was new; then 5 empty results -> the 6th reworded query is intercepted
    return t.loop("drift", idx[5], idx[0], "After one hit, four reworded web searches with empty result lists.")


@scenario
def drift_sku_not_found_retryable() -> Trace:
    t = Trace("drift_sku_not_found_retryable")
    t.call("get_cart", {"cart_id": "cart_71"}, {"items": [{"name": "Trail runner GTX, size 44, graphite", "qty": 1}]})
    t.turn()
    skus = ["TRG-44-GRA", "TRGTX-44-GR", "TR-GTX-44-GRAPHITE", "TRAIL-GTX-44", "TRG44GRA", "TRGTX44"]
    idx = [
        t.call(
            "lookup_sku",
            {"sku": s},
            {"status": "not_found", "retryable": True, "message": f"SKU '{s}' not found in catalog"},
        )
        for s in skus
    ]
    t.turn()
    return t.loop("drift", idx[5], idx[1], "Guessing SKU spellings; every lookup is not_found (retryable).")


@scenario
def drift_bash_grep_patterns_empty() -> Trace:
    t = Trace("drift_bash_grep_patterns_empty")
    t.call("bash", {"command": "ls"}, "Makefile\nREADME.md\nsrc\ntests\npyproject.toml\n")
    t.call(
        "bash",
        {"command": "cat README.md | head -20"},
        "# ledgerd\n\nDouble-entry ledger service.\n\n## Config\nSee `ledgerd.toml`.\n",
    )
    t.call("bash", {"command": "ls src/ledgerd"}, "__init__.py\napi.py\nbooks.py\nposting.py\nstore.py\n")
    t.turn()
    pats = [
        'grep -rn "rounding_mode" src/',
        'grep -rni "round_half" src/',
        'grep -rn "quantize(" src/',
        'grep -rn "ROUNDING" src/ tests/',
        'grep -rn "decimal.Context" .',
        'grep -rn "getcontext" src/',
    ]
    idx = [t.call("bash", {"command": p}, "") for p in pats]
    t.turn()
    return t.loop("drift", idx[5], idx[1], "bash: six greps for rounding config, every one with empty output.")


@scenario
def drift_orders_search_after_hits() -> Trace:
    t = Trace("drift_orders_search_after_hits")
    t.call("get_conversation", {"id": "c_3310"}, {"text": "I ordered two lamps in October and only got one."})
    t.call(
        "search_orders",
        {"customer_email": "kwame.a@example.net"},
        [{"id": "ORD-7001", "items": ["Arc floor lamp"], "placed": "2025-10-03"}],
    )
    t.call(
        "get_order",
        {"order_id": "ORD-7001"},
        {"id": "ORD-7001", "items": [{"sku": "ARC-FL", "qty": 1}], "status": "delivered"},
    )
    t.turn()
    t.call(
        "search_orders",
        {"customer_email": "kwame.a@example.net", "status": "any"},
        [
            {"id": "ORD-7001", "items": ["Arc floor lamp"]},
            {"id": "ORD-6820", "items": ["Desk lamp"], "placed": "2025-09-12"},
        ],
    )
    t.call(
        "get_order",
        {"order_id": "ORD-6820"},
        {"id": "ORD-6820", "items": [{"sku": "DSK-L", "qty": 1}], "status": "delivered"},
    )
    t.turn()
    empties = [
        {"customer_name": "Kwame Asante", "month": "2025-10"},
        {"phone": "+44 7700 900123"},
        {"customer_email": "kwame.asante@example.net"},
        {"sku": "ARC-FL", "month": "2025-10"},
        {"customer_name": "K. Asante"},
        {"customer_email": "kwame.a@example.net", "month": "2025-10"},
    ]
    idx = []
    for i, q in enumerate(empties):
        idx.append(t.call("search_orders", q, []))
        if i == 1:
            t.call("get_customer", {"email": "kwame.a@example.net"}, {"id": "cus_19", "phones": []})
        t.turn()
    # search_orders had returned something new at call 4; then 5 empty lists -> the 6th is intercepted
    return t.loop("drift", idx[5], idx[0], "Order search finds two orders, then five reworded searches find nothing.")


@scenario
def healthy_reworded_search_while_reading_new_files() -> Trace:
    t = Trace("healthy_reworded_search_while_reading_new_files")
    t.call("read_file", {"path": "docs/architecture.md"}, "Events flow from ingest/ to enrich/ to sink/.")
    t.turn()
    files = ["src/ingest/kafka.py", "src/enrich/geo.py", "src/enrich/user.py", "src/sink/bigquery.py"]
    queries = [
        "dead letter queue",
        "dlq topic",
        "poison message",
        "failed events retry",
        "error topic",
        "undeliverable events",
    ]
    idx = []
    for i, q in enumerate(queries):
        idx.append(t.call("search_code", {"query": q, "repo": "events-pipeline"}, "No results found."))
        if i < len(files):
            t.call(
                "read_file",
                {"path": files[i]},
                numbered(f"# {files[i]}\nimport logging\n\nlog = logging.getLogger({files[i]!r})\n"),
            )
        t.turn()
    # search_code comes back empty 6 times, but every read in between brings a new file: the agent is
    # exploring, not drifting (drift is judged for the session: new content anywhere starts the counts over)
    del idx
    return t.healthy("Code search for a DLQ reworded 6 times while each turn also reads a new file.")


@scenario
def drift_recommendations_same_fallback() -> Trace:
    t = Trace("drift_recommendations_same_fallback")
    t.call("get_user_profile", {"user_id": "u_4410"}, {"likes": ["cycling", "espresso"], "country": "NL"})
    t.turn()
    fallback = {
        "items": [
            {"sku": "GIFT-CARD-25", "title": "Gift card EUR 25"},
            {"sku": "MUG-LOGO", "title": "Logo mug"},
            {"sku": "TOTE-01", "title": "Canvas tote"},
        ],
        "source": "fallback_bestsellers",
    }
    cats = ["cycling", "cycling accessories", "bike lights", "espresso", "coffee grinders", "bike tools", "outdoor"]
    idx = [t.call("get_recommendations", {"user_id": "u_4410", "category": c}, fallback) for c in cats]
    t.turn()
    # idx[0] new; idx[1..5] the same long fallback again -> idx[6] is intercepted
    return t.loop(
        "drift", idx[6], idx[1], "Recommendation API returns the same fallback bestsellers for every category tried."
    )


@scenario
def error_then_drift_not_confused() -> Trace:
    t = Trace("error_then_drift_not_confused")
    t.call("get_project", {"key": "MOB"}, {"name": "Mobile app", "lead": "jlee"})
    t.turn()
    # errors are left to the other detectors: they neither count for Drift nor reset it
    t.call("search_issues", {"jql": 'project = MOB AND text ~ "crash on launch"'}, [])
    t.call("search_issues", {"jql": "project = MOB AND summary ~ crash AND created >= -7d"}, [])
    t.call(
        "search_issues",
        {"jql": "project = MOB AND labels = crash AND"},
        "JQL syntax error: Expecting a field name after 'AND'",
        error=True,
    )
    t.call("search_issues", {"jql": "project = MOB AND labels = crash"}, [])
    t.turn()
    t.call("search_issues", {"jql": "project = MOB AND component = iOS AND text ~ launch"}, [])
    t.call("search_issues", {"jql": "project = MOB AND fixVersion = 4.12 AND text ~ crash"}, [])
    t.turn()
    # non-error results: 2, 3, 5, 6, 7 all empty (the error at 4 neither counts nor resets) -> call 8
    at = t.call("search_issues", {"jql": "project = MOB AND text ~ startup"}, [])
    return t.loop("drift", at, 3, "Jira searches: empty, empty, a JQL error (ignored by Drift), empty, empty, again.")


@scenario
def drift_empty_named_collection() -> Trace:
    t = Trace("drift_empty_named_collection")
    t.call("get_ticket", {"ticket_id": 66120}, {"subject": "Merge duplicate accounts for Ortega Foods"})
    t.turn()
    tries = [
        {"name": "Ortega Foods"},
        {"name": "Ortega Foods Ltd"},
        {"domain": "ortegafoods.es"},
        {"name": "Ortega"},
        {"vat_id": "ESB12345678"},
        {"name": "Ortega Alimentación"},
        {"domain": "ortega-foods.com"},
    ]
    idx = [t.call("search_accounts", q, {"accounts": [], "page": 1}) for q in tries]
    t.turn()
    # docs: "a collection field that is empty" is an empty result -> 5 empties, the 6th search is intercepted
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        "Account search reworded seven times; every answer has accounts: [].",
    )


@scenario
def shell_tee_rebuild_blind_spot() -> Trace:
    t = Trace("shell_tee_rebuild_blind_spot")
    t.call(
        "bash", {"command": "cat Makefile | head -20"}, "build:\n\tgo build ./...\ntest:\n\tgo test ./... -count=1\n"
    )
    t.turn()
    out = (
        "--- FAIL: TestLedgerBalance (0.01s)\n    ledger_test.go:77: balance = 99.99, want 100.00\nFAIL\n"
        "FAIL\tgithub.com/acme/ledger\t0.214s\nmake: *** [Makefile:4: test] Error 1"
    )
    tail = "    ledger_test.go:77: balance = 99.99, want 100.00\nFAIL\nmake: *** [Makefile:4: test] Error 1"
    for _ in range(6):
        t.call("bash", {"command": "make test 2>&1 | tee build.log"}, out)  # exit status is tee's: 0
        t.call("bash", {"command": "tail -n 3 build.log"}, tail)
        t.turn()
    # Capturing output in a log file (`| tee build.log`) is not a state change (docs/detectors.md), so nothing
    # resets the epoch: calls 2-3 are new, 4-5 are a stale second pass of a period-2 cycle, and call 6 starts
    # its third pass -> Cycle advises at 6.
    return t.loop(
        "cycle",
        6,
        4,
        "make test | tee build.log, then tail, six times with no edit: writing the log is not a change, so "
        "the second pass is stale.",
    )


# =================================================================================================
# rate: a call that makes the last 30 calls arrive faster than 10 per second
# =================================================================================================


@scenario
def healthy_machine_speed_quotes() -> Trace:
    t = Trace("healthy_machine_speed_quotes")
    syms = [
        "AAPL",
        "MSFT",
        "NVDA",
        "AMZN",
        "GOOGL",
        "META",
        "TSLA",
        "BRK.B",
        "AVGO",
        "JPM",
        "LLY",
        "V",
        "UNH",
        "XOM",
        "MA",
        "JNJ",
        "PG",
        "HD",
        "COST",
        "MRK",
        "ABBV",
        "CVX",
        "CRM",
        "BAC",
        "NFLX",
        "AMD",
        "KO",
        "PEP",
        "TMO",
        "WMT",
        "ADBE",
        "LIN",
        "MCD",
        "CSCO",
        "ACN",
        "ORCL",
        "ABT",
        "DHR",
        "INTU",
        "TXN",
    ]
    for i, s in enumerate(syms):
        t.call("get_quote", {"symbol": s}, f"{s} {100 + 7.31 * i:.2f} USD", think=0.01 if i else 2.0, took=0.004)
    # calls 1..30 arrive 0.01 s apart (the 30th makes 30 calls within 0.29 s), but each quote is new:
    # speed alone is not a loop, rate warns at most
    return t.healthy("A code loop fetching quotes for 40 symbols, ~70 calls per second, each a new quote.")


@scenario
def healthy_machine_speed_metrics_after_slow_prefix() -> Trace:
    t = Trace("healthy_machine_speed_metrics_after_slow_prefix")
    for i, (tool, args, out) in enumerate(
        [
            ("get_alert", {"id": "AL-9931"}, {"title": "CPU > 90% on web tier", "hosts": 40}),
            ("list_hosts", {"tier": "web"}, [f"web-{n:02d}" for n in range(40)]),
            ("get_dashboard", {"name": "web-tier"}, {"cpu_avg": 0.93, "rps": 12400}),
            ("query_logs", {"service": "web", "level": "ERROR", "window": "15m"}, "1204 lines: upstream timeout"),
            ("get_deploys", {"service": "web", "n": 3}, [{"sha": "aa01"}, {"sha": "9f3e"}]),
            ("read_runbook", {"id": "RB-web-cpu"}, "Check per-host CPU; drain hot hosts."),
        ]
    ):
        t.call(tool, args, out, think=6.0 + i)
        t.turn()
    onset = t.calls + 1
    for n in range(40):
        t.call(
            "fetch_metric",
            {"name": "cpu.util", "host": f"web-{n:02d}", "window": "5m"},
            {"host": f"web-{n:02d}", "avg": round(0.8 + (n % 7) * 0.03, 2)},
            think=5.0 if n == 0 else 0.01,
            took=0.004,
        )
    # the burst starts at `onset`; from its 30th call the last 30 calls lie within it, but each host's
    # metric is new: rate warns at most
    del onset
    return t.healthy("After 6 thoughtful calls, a script reads 40 hosts' metrics at machine speed.")


@scenario
def healthy_machine_speed_page_scrape() -> Trace:
    t = Trace("healthy_machine_speed_page_scrape")
    t.call(
        "web_search",
        {"query": "site:shop.example.com espresso grinders"},
        [{"url": "https://shop.example.com/c/grinders?page=1"}],
    )
    t.turn()
    onset = t.calls + 1
    for p in range(1, 46):
        t.call(
            "http_get",
            {"url": f"https://shop.example.com/c/grinders?page={p}"},
            f"<html><title>Grinders, page {p} of 45</title><ul>{p * 24 - 23}..{p * 24}</ul></html>",
            think=4.0 if p == 1 else 0.02,
            took=0.012,
        )
    # 45 pages at 50 per second, each page new: a program paging through results, rate warns at most
    del onset
    return t.healthy("Scraper loop: 45 pages fetched 50 per second, each page new.")


@scenario
def rate_ts_on_calls_only() -> Trace:
    t = Trace("rate_ts_on_calls_only", result_ts=False)
    for i in range(36):
        t.call(
            "get_invoice",
            {"invoice_id": f"in_2025_{1000 + i}"},
            {"id": f"in_2025_{1000 + i}", "error": f"ledger-{(i * 7) % 31:02d}: connection reset by peer"},
            error=True,
            think=2.0 if i == 0 else 0.01,
            took=0.003,
        )
    # only the tool_call events carry ts; the rate rule is about calls arriving: the 30th call makes 30
    # calls within 0.3 s, and every one of them failed (each with another ledger node in its error, so no
    # error repeats): a code loop around a backend that is down
    return t.loop(
        "rate",
        30,
        1,
        "Invoice fetch loop at ~75 calls/s against a ledger that is down; the trace timestamps only the calls.",
    )


# =================================================================================================
# no_progress / no_action: turn-level
# =================================================================================================


@scenario
def progress_research_state_stuck() -> Trace:
    t = Trace("progress_research_state_stuck")
    t.call(
        "web_search",
        {"query": "EU AI Act general purpose model obligations date"},
        [{"title": "AI Act timeline", "url": "https://example.eu/ai-act-timeline"}],
    )
    t.call(
        "fetch_url",
        {"url": "https://example.eu/ai-act-timeline"},
        "Entry into force 1 Aug 2024. GPAI obligations apply 12 months later.",
    )
    t.turn(state={"found": [], "answer": None})
    t.call("web_search", {"query": "GPAI obligations 2 August 2025"}, [{"title": "Commission Q&A"}])
    t.call(
        "fetch_url",
        {"url": "https://example.eu/gpai-qa"},
        "Providers of GPAI models placed on the market before 2 Aug 2025 have until 2 Aug 2027.",
    )
    t.turn(state={"found": ["GPAI: 2 Aug 2025"], "answer": None})
    onset = t.calls + 1
    t.call("web_search", {"query": "AI Act article 53 obligations summary"}, [{"title": "Article 53"}])
    t.call(
        "fetch_url",
        {"url": "https://example.eu/art53"},
        "Article 53: technical documentation, copyright policy, training data summary.",
    )
    t.turn(state={"answer": None, "found": ["GPAI: 2 Aug 2025"]})  # same state, keys in another order
    t.call("web_search", {"query": "AI Act codes of practice GPAI"}, [{"title": "Code of practice"}])
    t.call("fetch_url", {"url": "https://example.eu/cop"}, "The code of practice was published in July 2025.")
    t.turn(state={"found": ["GPAI: 2 Aug 2025"], "answer": None})
    # 3rd turn end in a row with the same state fingerprint -> intercepted at the turn end (call index 8)
    return t.loop("no_progress", t.calls, onset, "New pages every turn, but the task state stays the same for 3 turns.")


@scenario
def progress_tests_counter_despite_edits() -> Trace:
    t = Trace("progress_tests_counter_despite_edits")
    t.call("run_tests", {"path": "tests/"}, "38 passed, 6 failed")
    t.turn(state={"passing": 38, "failing": 6})
    fixes = [
        ("src/dates.py", "tz-aware now()"),
        ("src/dates.py", "parse ISO week"),
        ("src/money.py", "banker's rounding"),
        ("src/money.py", "currency minor units"),
    ]
    onset = 0
    for i, (path, what) in enumerate(fixes):
        t.call("edit_file", {"path": path, "instruction": what}, f"Applied edit to {path}")
        t.call(
            "run_tests",
            {"path": "tests/"},
            f"41 passed, 3 failed (run {i + 1}: test_week_53, test_dst_gap, test_jpy_minor)",
        )
        t.turn(state={"passing": 41, "failing": 3})
        if i == 0:
            onset = t.calls + 1
    # states: 38/6, 41/3, 41/3, 41/3 -> the 3rd identical state at the end of the 3rd fix turn.
    # Writes do not reset no_progress: the caller's state is the judge.
    return t.loop("no_progress", 7, onset, "Edits and test runs each turn, the pass count stuck at 41/44.")


@scenario
def progress_same_draft_answer() -> Trace:
    t = Trace("progress_same_draft_answer")
    draft = "Draft: The refund window is 30 days from delivery; opened items get store credit only."
    t.call("search_policies", {"query": "refund window"}, [{"id": "pol-3", "title": "Returns & refunds"}])
    t.turn(state="Draft: (none)")
    t.call("read_policy", {"id": "pol-3"}, "Items may be returned within 30 days of delivery.")
    t.turn(state=draft)
    onset = t.calls + 1
    t.call("read_policy", {"id": "pol-7"}, "Opened software and personalised items cannot be refunded.")
    t.turn(state=draft)
    t.call("search_policies", {"query": "store credit opened items"}, [{"id": "pol-9", "title": "Store credit"}])
    t.turn(state=draft)
    return t.loop("no_progress", t.calls, onset, "The draft answer is identical at the end of three turns in a row.")


@scenario
def action_invalid_json_tool_calls() -> Trace:
    t = Trace("action_invalid_json_tool_calls")
    t.call("list_calendars", {}, [{"id": "primary", "name": "Work"}, {"id": "fam", "name": "Family"}])
    t.call(
        "list_events",
        {"calendar_id": "primary", "date": "2025-12-01"},
        [{"title": "Standup", "start": "09:30"}, {"title": "1:1 Maya", "start": "14:00"}],
    )
    t.turn()
    t.call(
        "find_free_slots",
        {"calendar_id": "primary", "date": "2025-12-01", "duration_min": 45},
        ["10:00-11:30", "15:00-17:00"],
    )
    t.call("get_contact", {"name": "Jonas Berg"}, {"email": "jonas.berg@example.com"})
    t.turn()
    onset = t.calls
    for err in [
        "invalid tool call: arguments are not valid JSON (Expecting ',' delimiter: line 1 column 88)",
        "invalid tool call: arguments are not valid JSON (Unterminated string starting at: line 1 column 61)",
        "invalid tool call: arguments are not valid JSON (Expecting ',' delimiter: line 1 column 91)",
    ]:
        t.turn(error=err)
    return t.loop("no_action", t.calls, onset, "Three turns in a row whose create_event call had malformed JSON.")


@scenario
def action_text_only_turns() -> Trace:
    t = Trace("action_text_only_turns")
    t.call("read_file", {"path": "logs/deploy.log"}, "deploy 2025-11-30 07:02 failed: migration 0042 timed out")
    t.call("read_file", {"path": "migrations/0042_add_index.sql"}, "CREATE INDEX idx_events_ts ON events (ts);")
    t.call("query_db", {"sql": "SELECT count(*) FROM events"}, "[[418220931]]")
    t.turn()
    onset = t.calls
    for words in [
        "I'll create the index concurrently to avoid locking the table.",
        "Next I will rewrite the migration with CREATE INDEX CONCURRENTLY.",
        "I'll create the index concurrently to avoid locking the table.",
    ]:
        t.text(words)
        t.turn()
    return t.loop("no_action", t.calls, onset, "The model announces the fix three turns in a row without a call.")


@scenario
def action_unknown_tool_name() -> Trace:
    t = Trace("action_unknown_tool_name")
    t.call("web_search", {"query": "python 3.13 free-threaded build flag"}, [{"title": "PEP 703"}])
    t.turn()
    t.call(
        "fetch_url",
        {"url": "https://peps.python.org/pep-0703/"},
        "Making the Global Interpreter Lock Optional in CPython ... --disable-gil",
    )
    t.turn()
    onset = t.calls
    for tool in ["browse", "open_url", "browse"]:
        t.turn(error=f"unknown tool '{tool}' (available: web_search, fetch_url, read_file)")
    return t.loop("no_action", t.calls, onset, "The model calls tools that do not exist, three turns in a row.")


# =================================================================================================
# healthy runs: must pass untouched
# =================================================================================================


@scenario
def healthy_pagination_pages() -> Trace:
    t = Trace("healthy_pagination_pages")
    t.call("get_shop", {}, {"name": "Fernhill Ceramics", "currency": "GBP", "orders_total": 431})
    t.turn()
    for page in range(1, 11):
        n = 50 if page < 9 else (31 if page == 9 else 0)
        first = 1000 + (page - 1) * 50
        data = [{"id": f"#{first + i}", "total": round(18.5 + ((first + i) * 7) % 120, 2)} for i in range(min(n, 3))]
        out = {"data": data + ([{"...": f"{n - 3} more"}] if n > 3 else []), "page": page, "has_more": page < 9}
        if n == 0:
            out = {"data": [], "page": page, "has_more": False}
        t.call("list_orders", {"status": "any", "page": page, "per_page": 50, "sort": "created_at"}, out)
        if page % 3 == 0:
            t.turn(state={"pages_read": page})
    t.answer("431 orders in total; 12 above GBP 120.")
    return t.healthy("Ten pages of orders (page=1..10), the last one empty.")


@scenario
def healthy_pagination_cursor() -> Trace:
    t = Trace("healthy_pagination_cursor", id_prefix="call_")
    t.call("find_channel", {"name": "incident-2291"}, {"id": "C07QX2LM1", "members": 14})
    cursor = None
    cursors = [
        "dXNlcjpVMEc5V0ZYTkM=",
        "dXNlcjpVMDYxTkZUVDI=",
        "dXNlcjpVMEg4MlJOUVo=",
        "dXNlcjpVMDJBQjlLRlE=",
        "dXNlcjpVMEtROUw3WEw=",
        None,
    ]
    for i, nxt in enumerate(cursors):
        args: dict[str, Any] = {"channel": "C07QX2LM1", "limit": 200}
        if cursor:
            args["cursor"] = cursor
        msgs = [
            {"ts": f"1764471{i}{j:02d}.0019{j}", "user": f"U0{j % 5}X", "text": f"update {i * 200 + j}"}
            for j in range(3)
        ]
        t.call(
            "conversations_history",
            args,
            {
                "ok": True,
                "messages": msgs,
                "has_more": nxt is not None,
                "response_metadata": {"next_cursor": nxt or ""},
            },
            think=2.5,
        )
        cursor = nxt
    t.turn()
    t.answer("Timeline assembled from 1,062 messages.")
    return t.healthy("Slack-style history read with next_cursor pagination (6 pages).")


@scenario
def healthy_pagination_offset() -> Trace:
    t = Trace("healthy_pagination_offset")
    for off in range(0, 1300, 100):
        lines = [
            f"2025-11-30T03:{(off // 100) % 60:02d}:{k:02d}Z ERROR payment-svc timeout calling psp "
            f"(attempt {k % 3 + 1}) order={70000 + off + k}"
            for k in range(3)
        ]
        t.call(
            "search_logs",
            {"query": "service:payment-svc level:ERROR", "from": "now-6h", "offset": off, "limit": 100},
            {"hits": lines, "total": 1247, "offset": off},
            think=3.0,
        )
        if off % 400 == 300:
            t.turn()
    t.answer("1,247 timeouts, all against the PSP, starting 03:00Z.")
    return t.healthy("Log search paged with offset=0..1200.")


@scenario
def healthy_poll_changing_progress() -> Trace:
    t = Trace("healthy_poll_changing_progress")
    t.call("trigger_build", {"pipeline": "web", "ref": "main"}, {"build_id": 812, "status": "queued"})
    t.turn()
    steps = [
        "running: step 1/9 checkout",
        "running: step 2/9 install deps",
        "running: step 3/9 lint",
        "running: step 4/9 unit tests (312/1480)",
        "running: step 4/9 unit tests (1022/1480)",
        "running: step 5/9 build bundle",
        "running: step 7/9 e2e (12/40)",
        "running: step 7/9 e2e (33/40)",
        "running: step 9/9 upload artifacts",
        "passed in 14m02s",
    ]
    for s in steps:
        t.call("get_build", {"build_id": 812}, {"build_id": 812, "status": s}, think=45.0)
        t.turn()
    t.answer("Build 812 passed.")
    return t.healthy("Polling a CI build whose status moves on every time.")


@scenario
def healthy_poll_pending_then_done() -> Trace:
    t = Trace("healthy_poll_pending_then_done")
    t.call(
        "create_export",
        {"dataset": "events", "format": "parquet", "range": "2025-11"},
        {"export_id": "exp_77", "status": "pending"},
    )
    t.turn()
    for _ in range(4):
        t.call("get_export", {"export_id": "exp_77"}, {"status": "pending"}, think=20.0)
        t.turn()
    t.call(
        "get_export",
        {"export_id": "exp_77"},
        {"status": "done", "url": "https://exports.example.com/exp_77.parquet", "bytes": 88123904},
        think=20.0,
    )
    t.turn()
    t.call(
        "download_file",
        {"url": "https://exports.example.com/exp_77.parquet", "dest": "data/events.parquet"},
        "saved data/events.parquet (84.0 MiB)",
    )
    t.answer("Export downloaded.")
    return t.healthy("Export polled: 'pending' four times, then done.")


@scenario
def healthy_poll_pending_eight_then_done() -> Trace:
    t = Trace("healthy_poll_pending_eight_then_done")
    t.call("start_index_rebuild", {"index": "products-v7", "shards": 12}, {"job_id": "job_20931", "status": "queued"})
    t.turn()
    for i in range(8):
        t.call(
            "get_job",
            {"job_id": "job_20931"},
            {
                "job_id": "job_20931",
                "status": "running",
                "started_at": "2025-11-30T10:00:03Z",
                "elapsed_s": 30 * (i + 1),
            },
            think=30.0,
        )
        t.turn()
    t.call(
        "get_job", {"job_id": "job_20931"}, {"job_id": "job_20931", "status": "succeeded", "docs": 1840221}, think=30.0
    )
    t.turn()
    t.answer("Index products-v7 rebuilt (1.84M docs).")
    # Repeat: the last result says "running" -> pending_threshold=12; 8 polls then done: "polling that ends
    # is left alone"
    return t.healthy("A 4-minute index rebuild polled every 30 s: 'running' eight times, then succeeded.")


@scenario
def healthy_poll_long_pending_then_done() -> Trace:
    t = Trace("healthy_poll_long_pending_then_done")
    t.call(
        "start_service_rollout",
        {"service": "checkout", "task_definition": "checkout:412"},
        {"rollout_id": "ro-7f21", "status": "queued"},
    )
    t.turn()
    for i in range(9):
        t.call(
            "get_rollout",
            {"rollout_id": "ro-7f21"},
            {
                "rollout_id": "ro-7f21",
                "status": "in_progress",
                "message": "Waiting for service checkout to reach steady state (3 of 3 new tasks pending health "
                "checks on target group tg-checkout-blue)",
                "elapsed_s": 20 * (i + 1),
            },
            think=20.0,
        )
        t.turn()
    t.call(
        "get_rollout",
        {"rollout_id": "ro-7f21"},
        {"rollout_id": "ro-7f21", "status": "succeeded", "healthy_tasks": 3},
        think=20.0,
    )
    t.answer("checkout rolled out to task definition 412.")
    # the last result says the work is still going (in_progress): Repeat waits for pending_threshold=12, and
    # "polling that ends is left alone"; an unchanged status poll is not a reworded search (Drift)
    return t.healthy(
        "A rollout polled every 20 s: the same long in_progress status nine times, then succeeded.",
    )


@scenario
def healthy_poll_cloudformation_status() -> Trace:
    t = Trace("healthy_poll_cloudformation_status")
    t.call(
        "update_stack",
        {"stack_name": "payments-api", "template_url": "s3://cfn/payments-api/v88.yaml"},
        {"StackId": "arn:aws:cloudformation:eu-west-1:111122223333:stack/payments-api/1a2b"},
    )
    t.turn()
    for _ in range(5):
        t.call("describe_stack", {"stack_name": "payments-api"}, {"StackStatus": "UPDATE_IN_PROGRESS"}, think=15.0)
        t.turn()
    t.call("describe_stack", {"stack_name": "payments-api"}, {"StackStatus": "UPDATE_COMPLETE"}, think=15.0)
    t.answer("payments-api updated.")
    # UPDATE_IN_PROGRESS says the work is still going: pending_threshold=12 applies, 5 polls then done
    return t.healthy(
        "CloudFormation stack polled: UPDATE_IN_PROGRESS five times, then UPDATE_COMPLETE.",
    )


@scenario
def healthy_edit_test_rounds_tools() -> Trace:
    t = Trace("healthy_edit_test_rounds_tools")
    test = {"command": "pytest tests/test_slugify.py -q"}
    fail_a = (
        "F.....\n________________ test_unicode_dashes ________________\nE   AssertionError: assert "
        "'caf-au-lait' == 'cafe-au-lait'\n1 failed, 5 passed in 0.12s"
    )
    t.call("bash", test, fail_a, error=True)
    t.call(
        "read_file",
        {"path": "src/textkit/slug.py"},
        numbered(
            "import re\n\n\ndef slugify(s):\n    s = re.sub(r'[^a-z0-9]+', '-', s.lower())\n    return s.strip('-')\n"
        ),
    )
    t.turn()
    t.call(
        "edit_file",
        {"path": "src/textkit/slug.py", "old": "s.lower()", "new": "s.casefold()"},
        "Edited src/textkit/slug.py",
    )
    t.call("bash", test, fail_a.replace("0.12s", "0.10s"), error=True)
    t.turn()
    t.call(
        "edit_file",
        {"path": "src/textkit/slug.py", "old": "import re", "new": "import re\nimport unicodedata"},
        "Edited src/textkit/slug.py",
    )
    t.call("bash", test, fail_a.replace("0.12s", "0.11s"), error=True)
    t.turn()
    t.call(
        "read_file",
        {"path": "src/textkit/slug.py"},
        numbered(
            "import re\nimport unicodedata\n\n\ndef slugify(s):\n    s = re.sub(r'[^a-z0-9]+', '-', "
            "s.casefold())\n    return s.strip('-')\n"
        ),
    )
    t.call(
        "write_file",
        {
            "path": "src/textkit/slug.py",
            "content": "import re\nimport unicodedata\n\n\ndef "
            "slugify(s):\n    s = unicodedata.normalize("
            "'NFKD', s)\n    s = s.encode('ascii', 'ignore')"
            ".decode()\n    s = re.sub(r'[^a-z0-9]+', '-', "
            "s.casefold())\n    return s.strip('-')\n",
        },
        "Wrote 211 bytes to src/textkit/slug.py",
    )
    t.call(
        "bash",
        test,
        "F.....\nE   AssertionError: assert 'cafe-au-lait-' == 'cafe-au-lait'\n1 failed, 5 passed",
        error=True,
    )
    t.turn()
    t.call(
        "edit_file",
        {"path": "src/textkit/slug.py", "old": "return s.strip('-')", "new": "return re.sub('-+', '-', s).strip('-')"},
        "Edited src/textkit/slug.py",
    )
    t.call("bash", test, "......\n6 passed in 0.09s")
    t.call("bash", {"command": "pytest -q"}, "..........................................\n42 passed in 1.31s")
    t.answer("Fixed slugify for accented input; all 42 tests pass.")
    return t.healthy(
        "Edit-then-test rounds (edit_file / write_file) with the same failing test command, "
        "same failure three rounds in a row."
    )


@scenario
def healthy_edit_test_rounds_sed() -> Trace:
    t = Trace("healthy_edit_test_rounds_sed")
    test = {"command": "python -m pytest -q tests/test_pricing.py 2>&1 | tail -5"}
    t.call(
        "bash",
        {"command": "python -m pytest -q tests/test_pricing.py 2>&1 | tail -5"},
        "FAILED tests/test_pricing.py::test_bulk_discount - assert 90.0 == 85.0\n1 failed, 9 passed in 0.31s",
        error=True,
    )
    t.call("bash", {"command": 'grep -n "BULK" src/shop/pricing.py'}, "7:BULK_THRESHOLD = 10\n8:BULK_DISCOUNT = 0.10\n")
    t.turn()
    rounds = [
        (
            "sed -i 's/BULK_DISCOUNT = 0.10/BULK_DISCOUNT = 0.15/' src/shop/pricing.py",
            "FAILED tests/test_pricing.py::test_bulk_discount - assert 85.5 == 85.0\n1 failed, 9 passed in 0.30s",
        ),
        (
            "sed -i 's/qty > BULK_THRESHOLD/qty >= BULK_THRESHOLD/' src/shop/pricing.py",
            "FAILED tests/test_pricing.py::test_bulk_discount - assert 85.5 == 85.0\n1 failed, 9 passed in 0.29s",
        ),
        (
            "sed -i.bak -e 's/round(total, 1)/round(total, 2)/' src/shop/pricing.py",
            "FAILED tests/test_pricing.py::test_bulk_discount - assert 85.5 == 85.0\n1 failed, 9 passed in 0.33s",
        ),
        (
            "sed -i 's/price \\* (1 - BULK_DISCOUNT)/(price - shipping) * (1 - BULK_DISCOUNT) + shipping/' "
            "src/shop/pricing.py",
            "10 passed in 0.28s",
        ),
    ]
    for i, (sed, out) in enumerate(rounds):
        t.call("bash", {"command": sed}, "")
        if i == 2:
            t.call("bash", {"command": "git diff --stat"}, " src/shop/pricing.py | 6 +++---\n 1 file changed")
        t.call("bash", test, out, error=not out.startswith("10 passed"))
        t.turn()
    t.answer("Discount now applies to the pre-shipping price; tests pass.")
    return t.healthy("Edit-then-test rounds where edits are `sed -i` via bash and the test command never changes.")


@scenario
def healthy_edit_test_rounds_heredoc() -> Trace:
    t = Trace("healthy_edit_test_rounds_heredoc")
    test = {"command": "cd /workspace && python -m pytest tests/test_ratelimit.py -q"}
    t.call(
        "bash",
        {"command": "cat src/ratelimit.py"},
        "class TokenBucket:\n    def __init__(self, rate, burst):\n        raise NotImplementedError\n",
    )
    t.call("bash", test, "EEEE\nE   NotImplementedError\n4 errors in 0.05s", error=True)
    t.turn()
    bodies = [
        "import time\n\n\nclass TokenBucket:\n    def __init__(self, rate, burst):\n        self.rate = rate\n"
        "        self.tokens = burst\n\n    def take(self):\n        if self.tokens < 1:\n            return False\n"
        "        self.tokens -= 1\n        return True\n",
        "import time\n\n\nclass TokenBucket:\n    def __init__(self, rate, burst, clock=time.monotonic):\n"
        "        self.rate, self.burst, self.clock = rate, burst, clock\n        self.tokens = burst\n"
        "        self.at = clock()\n\n    def take(self):\n        now = self.clock()\n        self.tokens = min("
        "self.burst, self.tokens + (now - self.at) * self.rate)\n        self.at = now\n        if self.tokens < 1:"
        "\n            return False\n        self.tokens -= 1\n        return True\n",
    ]
    outs = ["..FF\nE   assert False is True  (test_refill)\n2 failed, 2 passed in 0.06s", "....\n4 passed in 0.05s"]
    for body, out in zip(bodies, outs, strict=True):
        t.call("bash", {"command": f"cat > src/ratelimit.py <<'EOF'\n{body}EOF"}, "")
        t.call("bash", test, out, error="failed" in out)
        t.turn()
    t.call("bash", {"command": "cat >> CHANGELOG.md <<'EOF'\n- ratelimit: token bucket with refill\nEOF"}, "")
    t.call("bash", test, "....\n4 passed in 0.04s")
    t.call("bash", {"command": "python -m pytest -q"}, "........................\n24 passed in 0.61s")
    t.answer("Token bucket implemented; tests pass.")
    return t.healthy("Edit-then-test rounds where the file is rewritten with `cat > f <<'EOF'` heredocs.")


@scenario
def healthy_reread_after_writes() -> Trace:
    t = Trace("healthy_reread_after_writes")
    v = [
        numbered("[tool.ruff]\nline-length = 88\n"),
        numbered("[tool.ruff]\nline-length = 120\n"),
        numbered('[tool.ruff]\nline-length = 120\n\n[tool.ruff.lint]\nselect = ["E", "F", "I"]\n'),
        numbered('[tool.ruff]\nline-length = 120\n\n[tool.ruff.lint]\nselect = ["E", "F", "I", "B"]\n'),
    ]
    view = {"command": "view", "path": "/repo/ruff.toml"}
    t.call("str_replace_editor", view, v[0])
    t.turn()
    edits = [
        {
            "command": "str_replace",
            "path": "/repo/ruff.toml",
            "old_str": "line-length = 88",
            "new_str": "line-length = 120",
        },
        {
            "command": "insert",
            "path": "/repo/ruff.toml",
            "insert_line": 2,
            "new_str": '\n[tool.ruff.lint]\nselect = ["E", "F", "I"]',
        },
        {"command": "str_replace", "path": "/repo/ruff.toml", "old_str": '"I"]', "new_str": '"I", "B"]'},
    ]
    for i, e in enumerate(edits):
        t.call("str_replace_editor", e, "The file /repo/ruff.toml has been edited.")
        t.call("str_replace_editor", view, v[i + 1])  # re-read after the write: new epoch
        t.call(
            "bash",
            {"command": "ruff check . --statistics"},
            f"{40 - 13 * i}\tE501\tline-too-long" if i < 2 else "3\tB008\tfunction-call-in-default-argument",
        )
        t.turn()
    t.answer("ruff config updated.")
    return t.healthy("A config file viewed, edited, viewed again after each edit (same view call each time).")


@scenario
def healthy_search_refinement_succeeds() -> Trace:
    t = Trace("healthy_search_refinement_succeeds")
    t.call("get_ticket", {"ticket_id": 51230}, {"subject": "Webhook signatures fail after secret rotation"})
    t.turn()
    t.call("search_docs", {"query": "webhook secret rotation signature invalid"}, "0 results")
    t.call("search_docs", {"query": "rotate webhook signing secret"}, "No matches found.")
    t.turn()
    t.call("search_docs", {"query": "webhook signing secret"}, "0 results")
    # 3 empty so far: Drift needs 5 before it intercepts
    t.call(
        "search_docs",
        {"query": "webhook signature"},
        [
            {"id": "dev-118", "title": "Verifying webhook signatures"},
            {"id": "dev-131", "title": "Rolling webhook secrets with a grace period"},
        ],
    )
    t.turn()
    t.call(
        "open_doc",
        {"id": "dev-131"},
        "During rotation both the old and the new secret are valid for 24 hours. "
        "Verify against each secret in the Webhook-Signature header.",
    )
    t.answer("Both secrets are valid for 24h; verify against both.")
    return t.healthy("Three empty searches, then a broader query finds the article.")


@scenario
def healthy_batch_send_email() -> Trace:
    t = Trace("healthy_batch_send_email")
    t.call(
        "list_attendees",
        {"event_id": "ev_2025_offsite"},
        [
            {"name": n, "email": f"{n.lower()}@acme.example"}
            for n in ["Ava", "Ben", "Chloe", "Dev", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jia", "Kofi", "Lena"]
        ],
    )
    t.turn()
    for n in ["Ava", "Ben", "Chloe", "Dev", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jia", "Kofi", "Lena"]:
        t.call(
            "send_email",
            {
                "to": f"{n.lower()}@acme.example",
                "subject": "Offsite: travel details",
                "body": f"Hi {n}, your train leaves 08:12 from platform 4. Seat info attached.",
            },
            "sent",
            think=1.5,
        )
    t.turn()
    t.answer("12 emails sent.")
    return t.healthy("Twelve distinct emails, each acknowledged with the same 'sent'.")


@scenario
def healthy_batch_notify_acks() -> Trace:
    t = Trace("healthy_batch_notify_acks")
    t.call(
        "list_affected_customers",
        {"incident": "INC-2291"},
        [f"cus_{n}" for n in (118, 240, 377, 401, 455, 512, 689, 702, 811, 930)],
    )
    t.turn()
    acks: list[Any] = ["sent", "sent", "queued", {"ok": True}, "sent", "ok", "sent", {"ok": True}, "sent", "sent"]
    for n, ack in zip((118, 240, 377, 401, 455, 512, 689, 702, 811, 930), acks, strict=True):
        t.call(
            "notify_customer",
            {
                "customer_id": f"cus_{n}",
                "template": "incident_update",
                "vars": {"incident": "INC-2291", "eta": "14:00 UTC"},
            },
            ack,
            think=1.2,
        )
    t.turn()
    t.answer("All 10 affected customers notified.")
    # notify_customer is not a mutating name, so Drift sees these: short acknowledgements are not "nothing new"
    return t.healthy("Ten notifications with identical short acknowledgements ('sent', 'ok', {ok: true}).")


@scenario
def healthy_alternating_tools_new_inputs() -> Trace:
    t = Trace("healthy_alternating_tools_new_inputs")
    pkgs = ["auth", "billing", "catalog", "checkout", "email", "inventory", "search", "shipping"]
    for p in pkgs:
        t.call("list_dir", {"path": f"services/{p}"}, ["handler.go", "service.go", f"{p}_test.go"])
        t.call(
            "grep_search",
            {"pattern": "os.Getenv\\(", "path": f"services/{p}"},
            f'services/{p}/service.go:{12 + len(p)}: url := os.Getenv("{p.upper()}_DB_URL")',
        )
        t.call(
            "read_file",
            {"path": f"services/{p}/service.go", "start_line": 1, "end_line": 30},
            numbered(
                f'package {p}\n\nimport "os"\n\nfunc New() *Service {{\n\turl := os.Getenv("'
                f'{p.upper()}_DB_URL")\n\treturn &Service{{url: url}}\n}}\n'
            ),
        )
        t.turn()
    t.answer("Each service reads <NAME>_DB_URL; list attached.")
    return t.healthy("list_dir / grep / read_file alternating over eight different services.")


@scenario
def healthy_transient_error_then_success() -> Trace:
    t = Trace("healthy_transient_error_then_success")
    url = {"url": "https://api.exchangerate.example/v1/latest?base=EUR", "timeout": 10}
    t.call("http_get", url, "503 Service Unavailable (request id 4be0e0c2-31d4-4c8a-9e43-6a0b9f7a1f11)", error=True)
    t.call("http_get", url, "502 Bad Gateway", error=True, think=10.0)
    t.call("http_get", url, {"base": "EUR", "rates": {"USD": 1.0572, "GBP": 0.8321, "JPY": 158.94}}, think=20.0)
    t.turn()
    t.call(
        "query_db",
        {"sql": "SELECT currency, sum(amount) FROM invoices WHERE month = '2025-11' GROUP BY 1"},
        "TimeoutError: canceling statement due to statement timeout",
        error=True,
    )
    t.call(
        "query_db",
        {"sql": "SELECT currency, sum(amount) FROM invoices WHERE month = '2025-11' GROUP BY 1"},
        [["USD", 181200.5], ["GBP", 40210.0], ["EUR", 99120.75]],
        think=6.0,
    )
    t.turn()
    t.answer("November revenue is EUR 347,790 at today's rates.")
    return t.healthy("Two transient failures then success; a DB timeout then success.")


@scenario
def healthy_immediate_double_call() -> Trace:
    t = Trace("healthy_immediate_double_call")
    args = {"path": "src/orders/service.py"}
    body = numbered("class OrderService:\n    def cancel(self, order_id):\n        ...\n")
    t.call("read_file", args, body)
    t.call("read_file", args, body, think=0.5)  # the model asked for the same file twice in one message
    t.turn()
    t.call("get_balance", {"account": "ops-float"}, {"balance": 1204.33, "currency": "EUR"})
    t.call("get_balance", {"account": "ops-float"}, {"balance": 1204.33, "currency": "EUR"})
    t.call(
        "list_transactions",
        {"account": "ops-float", "limit": 5},
        [{"id": "tx_1", "amount": -40.0}, {"id": "tx_2", "amount": 250.0}],
    )
    t.call("get_balance", {"account": "ops-float"}, {"balance": 1204.33, "currency": "EUR"})
    t.call("get_balance", {"account": "ops-float"}, {"balance": 1204.33, "currency": "EUR"})
    t.turn()
    t.call("grep_search", {"pattern": "def cancel", "path": "src"}, "src/orders/service.py:2")
    t.answer("cancel() is a stub; the float balance is EUR 1,204.33.")
    return t.healthy("Immediate double calls (twice in a row, never three times).")


@scenario
def healthy_get_order_distinct_ids() -> Trace:
    t = Trace("healthy_get_order_distinct_ids")
    t.call(
        "search_orders",
        {"customer_email": "p.nguyen@example.com", "since": "2025-09-01"},
        ["ORD-41177", "ORD-41530", "ORD-42012", "ORD-42896", "ORD-43350", "ORD-44101"],
    )
    t.turn()
    info = [
        ("ORD-41177", "delivered", 54.90, "Linen duvet cover"),
        ("ORD-41530", "delivered", 12.00, "Pillowcases"),
        ("ORD-42012", "returned", 89.00, "Wool throw"),
        ("ORD-42896", "delivered", 23.50, "Tea towels x3"),
        ("ORD-43350", "shipped", 140.00, "Bedside lamp"),
        ("ORD-44101", "processing", 35.00, "Candle set"),
    ]
    for oid, status, total, item in info:
        t.call(
            "get_order",
            {"order_id": oid},
            {"id": oid, "status": status, "total": total, "items": [item], "currency": "EUR"},
        )
    t.turn()
    t.answer("One return (ORD-42012), one still processing.")
    return t.healthy("get_order over six different order ids, different contents.")


@scenario
def healthy_order_status_numeric_ids() -> Trace:
    t = Trace("healthy_order_status_numeric_ids")
    ids = ["1048830121", "1048830157", "1048830188", "1048830203", "1048830249", "1048830262", "1048830290"]
    t.call(
        "get_shipment",
        {"shipment_id": "SHP-20451"},
        {"carrier": "DHL Express", "orders": ids, "status": "delayed at hub LEJ"},
    )
    t.turn()
    for oid in ids:
        t.call(
            "get_order_status",
            {"order_id": oid},
            {
                "order_id": oid,
                "status": "in_transit",
                "carrier": "DHL Express",
                "shipment_id": "SHP-20451",
                "eta": "2025-12-03",
            },
            think=2.0,
        )
    t.turn()
    t.answer("All 7 orders of SHP-20451 are in transit, ETA 3 Dec.")
    # each result names a different order id: every result is new. Drift must not treat them as "the same
    # long result the tool had already returned".
    return t.healthy(
        "Status of seven orders from one delayed shipment; results differ only by the order id.",
    )


@scenario
def healthy_parallel_burst_reads() -> Trace:
    t = Trace("healthy_parallel_burst_reads")
    sizes = [8, 12, 6, 10, 8]
    n = 0
    for b, size in enumerate(sizes):
        items = []
        for _ in range(size):
            n += 1
            items.append(
                (
                    "read_file",
                    {"path": f"docs/adr/{n:04d}-decision.md"},
                    f"# ADR {n:04d}\n\nStatus: {'accepted' if n % 5 else 'superseded'}\n\nContext: "
                    f"decision {n} about {['storage', 'queues', 'auth', 'api'][n % 4]}.",
                )
            )
        t.parallel(items, think=4.0 + b, gap=0.003)
        t.turn()
    t.answer("44 ADRs read; 8 superseded.")
    return t.healthy("Five parallel bursts (6-12 distinct reads within ~30 ms each), seconds apart: 44 calls.")


@scenario
def healthy_pip_install_then_rerun() -> Trace:
    t = Trace("healthy_pip_install_then_rerun")
    test = {"command": "python -m pytest tests/test_schedule.py -q"}
    t.call(
        "bash",
        test,
        "ImportError while importing test module 'tests/test_schedule.py'.\nE   "
        "ModuleNotFoundError: No module named 'freezegun'",
        error=True,
    )
    t.call("bash", {"command": "grep -n freezegun pyproject.toml"}, '31:  "freezegun>=1.5",\n')
    t.turn()
    t.call("bash", {"command": "pip install -e '.[test]'"}, "Successfully installed freezegun-1.5.1 schedule-0.4.0")
    t.call(
        "bash",
        test,
        "......F\nE   AssertionError: next run 2025-12-01 09:00 != 2025-12-01 08:00\n1 failed, 6 passed",
        error=True,
    )
    t.turn()
    t.call("bash", {"command": "sed -i 's/hour=8/hour=9/' tests/test_schedule.py"}, "")
    t.call("bash", test, ".......\n7 passed in 0.22s")
    t.answer("Missing test dependency installed; expectation fixed.")
    return t.healthy("Test fails on a missing module, pip install, re-run, sed fix, re-run.")


@scenario
def healthy_state_changes_each_turn() -> Trace:
    t = Trace("healthy_state_changes_each_turn")
    facts: list[str] = []
    plan = [
        ("search_papers", {"query": "retrieval augmented generation survey 2024"}, "Gao et al. 2024", True),
        ("get_paper", {"id": "arXiv:2312.10997"}, "RAG survey: naive, advanced, modular RAG.", True),
        ("search_papers", {"query": "RAG evaluation benchmarks"}, [{"title": "RAGAS"}, {"title": "ARES"}], False),
        ("get_paper", {"id": "arXiv:2309.15217"}, "RAGAS: reference-free evaluation.", True),
        ("get_paper", {"id": "arXiv:2311.09476"}, "ARES: automated RAG evaluation.", True),
        ("search_papers", {"query": "long context vs RAG"}, [{"title": "LC vs RAG 2024"}], False),
        ("get_paper", {"id": "arXiv:2407.16833"}, "Long context beats RAG on average but costs more.", True),
    ]
    for i, (tool, args, out, new_fact) in enumerate(plan):
        t.call(tool, args, out)
        if new_fact:
            facts.append(f"fact {i}")
        t.turn(state={"facts": list(facts), "sections_drafted": len(facts) // 2})
    t.answer("Survey notes ready.")
    return t.healthy("Research turns with a state that changes most turns (same twice at most).")


@scenario
def healthy_occasional_idle_turns() -> Trace:
    t = Trace("healthy_occasional_idle_turns")
    t.call("get_weather", {"city": "Oslo"}, "Oslo: -3°C, snow showers")
    t.turn()
    t.turn(error="invalid tool call: missing required argument 'date'")
    t.call("get_forecast", {"city": "Oslo", "date": "2025-12-02"}, "Oslo 2 Dec: -5°C, clear")
    t.turn()
    t.text("Let me compare both days before recommending a date.")
    t.turn()
    t.text("Tuesday looks better; checking the train times.")
    t.turn()
    t.call("search_trains", {"from": "Bergen", "to": "Oslo", "date": "2025-12-02"}, [{"dep": "07:58", "arr": "14:41"}])
    t.turn()
    t.answer("Take the 07:58 on Tuesday 2 Dec: clear and -5°C.")
    return t.healthy("One invalid call, two text-only turns, never three idle turns in a row.")


@scenario
def healthy_check_stock_short_answers() -> Trace:
    t = Trace("healthy_check_stock_short_answers")
    t.call(
        "get_cart",
        {"cart_id": "c_881"},
        {"skus": ["BK-101", "BK-202", "BK-303", "BK-404", "BK-505", "BK-606", "BK-707", "BK-808"]},
    )
    t.turn()
    for sku in ["BK-101", "BK-202", "BK-303", "BK-404", "BK-505", "BK-606", "BK-707", "BK-808"]:
        t.call(
            "check_stock",
            {"sku": sku, "warehouse": "AMS"},
            "out of stock" if sku == "BK-505" else "in stock",
            think=1.0,
        )
    t.turn()
    t.answer("All in stock except BK-505.")
    return t.healthy("Stock check of eight SKUs: the same short answer 'in stock' seven times.")


@scenario
def healthy_web_research_varied() -> Trace:
    t = Trace("healthy_web_research_varied")
    topics = [
        "heat pump COP at -10C",
        "air-to-water heat pump noise regulations Germany",
        "BAFA heat pump subsidy 2025",
        "KfW 458 application steps",
        "heat pump sizing rule of thumb kW per m2",
        "R290 vs R32 heat pumps",
        "buffer tank needed heat pump underfloor",
        "heat pump tariff Stadtwerke",
    ]
    for i, q in enumerate(topics):
        t.call(
            "web_search",
            {"query": q, "num": 5},
            [{"title": f"{q.title()} - guide", "url": f"https://example.de/a/{i}"}],
        )
        t.call("fetch_url", {"url": f"https://example.de/a/{i}"}, f"Article {i}: key numbers about {q}.")
        t.turn(state={"answered": i + 1})
    t.answer("Summary with subsidy steps and sizing.")
    return t.healthy("Sixteen calls: eight different searches, each followed by a new page.")


@scenario
def healthy_git_bash_workflow() -> Trace:
    t = Trace("healthy_git_bash_workflow")
    seq = [
        ("git status --short", " M src/api/users.py\n?? tests/test_users_api.py\n"),
        (
            "git diff src/api/users.py",
            "@@ -12,6 +12,10 @@ def list_users(req):\n+    limit = min(int(req.args.get('limit', 50)), 200)\n",
        ),
        ("python -m pytest tests/test_users_api.py -q", "....\n4 passed in 0.40s"),
        ("git add src/api/users.py tests/test_users_api.py", ""),
        ("git status --short", "M  src/api/users.py\nA  tests/test_users_api.py\n"),
        (
            "git commit -m 'api: cap users page size at 200'",
            "[feat/limit 5e1a2b3] api: cap users page size at 200\n 2 files changed, 31 insertions(+)",
        ),
        ("git log --oneline -3", "5e1a2b3 api: cap users page size at 200\nd4c3b2a api: users endpoint\n"),
        ("git status --short", ""),
        ("git push -u origin feat/limit", "branch 'feat/limit' set up to track 'origin/feat/limit'."),
        ("gh pr create --fill", "https://github.com/acme/api/pull/733"),
    ]
    for cmd, out in seq:
        t.call("bash", {"command": cmd}, out)
        if cmd.startswith(("git commit", "git push")):
            t.turn()
    t.answer("PR #733 opened.")
    return t.healthy("git status / diff / test / add / status / commit / log / push: status repeated around writes.")


@scenario
def healthy_queue_consumer_human_pace() -> Trace:
    t = Trace("healthy_queue_consumer_human_pace")
    batches: list[Any] = [
        [{"id": "m1", "body": "refund ORD-1"}],
        [{"id": "m2", "body": "refund ORD-7"}, {"id": "m3", "body": "address"}],
        [],
        [{"id": "m4", "body": "cancel ORD-9"}],
        [],
        [],
        [{"id": "m5", "body": "refund ORD-12"}],
        [{"id": "m6", "body": "invoice copy"}],
        [],
    ]
    for i, b in enumerate(batches):
        t.call("receive_messages", {"queue": "support-actions", "max": 10, "wait_s": 20}, b, think=22.0)
        for m in b:
            t.call("handle_action", {"message_id": m["id"], "action": m["body"]}, f"handled {m['id']}")
        t.turn(state={"handled": sum(len(x) for x in batches[: i + 1]), "polls": i + 1})
    t.answer("Queue drained: 6 actions handled.")
    # Repeat's rule ("3rd identical call in a row when the previous 2 returned the same result") applies to
    # the poll after two empty long-polls; an empty queue is waiting for work, like a pending job
    return t.healthy(
        "Queue long-polled every ~20 s; new messages arrive after at most two empty polls.",
    )


@scenario
def healthy_verify_absence_greps() -> Trace:
    t = Trace("healthy_verify_absence_greps")
    renames = [
        ("get_user_by_mail", "find_user_by_email"),
        ("UserRepoImpl", "SqlUserRepository"),
        ("mk_session", "create_session"),
        ("OLD_TIMEOUT_S", "REQUEST_TIMEOUT_S"),
        ("usr_cache", "user_cache"),
    ]
    t.call(
        "bash",
        {"command": 'grep -rln "get_user_by_mail\\|UserRepoImpl\\|mk_session" src/ tests/'},
        "src/users/repo.py\nsrc/users/service.py\nsrc/auth/session.py\ntests/test_users.py\n",
    )
    t.turn()
    for old, new in renames:
        t.call("bash", {"command": f"grep -rl '{old}' src/ tests/ | xargs sed -i 's/{old}/{new}/g'"}, "")
    t.call("bash", {"command": "python -m pytest -q"}, "...........................................\n61 passed")
    t.turn()
    for old, _ in renames:  # confirm nothing is left: an empty grep is the answer wanted here
        t.call("bash", {"command": f"grep -rn '{old}' src/ tests/"}, "")
    t.answer("Renames done, no leftovers, 61 tests pass.")
    # 5 empty greps, then the answer: Drift would intercept only a 6th call
    return t.healthy("After five renames, five greps confirm each old name is gone (empty output is success).")


@scenario
def healthy_search_empty_across_writes() -> Trace:
    t = Trace("healthy_search_empty_across_writes")
    t.call("get_alert", {"id": "AL-3310"}, {"title": "Unknown host in allowlist audit", "hosts": 3})
    t.turn()
    hosts = ["build-07.ci.internal", "tmp-runner-3.ci.internal", "legacy-ftp.corp.internal"]
    for h in hosts:
        t.call("search_cmdb", {"hostname": h}, "No records found")
        t.call("search_cmdb", {"ip_of": h}, "0 results")
        t.call("create_ticket", {"queue": "SEC", "title": f"Unregistered host {h}"}, {"key": f"SEC-{812 + len(h)}"})
        t.turn()
    t.answer("Three unregistered hosts ticketed.")
    # every create_ticket succeeds and starts a new epoch: Drift's count starts over each time
    return t.healthy("Two empty CMDB lookups per host, each pair followed by a ticket (a write): six empties total.")


@scenario
def healthy_str_replace_editor_session() -> Trace:
    t = Trace("healthy_str_replace_editor_session")
    ed = "str_replace_based_edit_tool"
    t.call(
        ed,
        {"command": "view", "path": "/repo/app/models.py"},
        numbered("class Invoice(Model):\n    number = CharField()\n    total = DecimalField()\n"),
    )
    t.call(ed, {"command": "view", "path": "/repo/app/views.py"}, numbered("def invoice_pdf(request, pk):\n    ...\n"))
    t.turn()
    t.call(
        ed,
        {
            "command": "str_replace",
            "path": "/repo/app/models.py",
            "old_str": "    total = DecimalField()",
            "new_str": "    total = DecimalField(max_digits=12, decimal_places=2)",
        },
        "The file /repo/app/models.py has been edited.",
    )
    t.call(
        ed,
        {
            "command": "create",
            "path": "/repo/app/migrations/0031_invoice_total.py",
            "file_text": "from django.db import migrations, models\n",
        },
        "File created successfully.",
    )
    t.call(
        ed,
        {"command": "view", "path": "/repo/app/models.py"},
        numbered(
            "class Invoice(Model):\n    number = CharField()\n    total = DecimalField(max_digits=12, "
            "decimal_places=2)\n"
        ),
    )
    t.turn()
    t.call("bash", {"command": "python manage.py makemigrations --check --dry-run"}, "No changes detected")
    t.call("bash", {"command": "python manage.py test app.tests.test_invoice"}, "Ran 9 tests in 0.8s\n\nOK")
    t.answer("Invoice.total now has max_digits/decimal_places; migration added.")
    return t.healthy("Editor tool session: view, str_replace, create, view again.")


@scenario
def healthy_long_refactor_session() -> Trace:
    t = Trace("healthy_long_refactor_session")
    mods = [
        "client",
        "auth",
        "billing",
        "catalog",
        "checkout",
        "emails",
        "geo",
        "inventory",
        "payments",
        "search",
        "shipping",
        "users",
        "webhooks",
    ]
    t.call(
        "bash",
        {"command": "grep -rln 'import requests' src/ | sort"},
        "\n".join(f"src/shop/{m}.py" for m in mods) + "\n",
    )
    t.call(
        "read_file",
        {"path": "pyproject.toml"},
        numbered('[project]\nname = "shop"\ndependencies = ["requests>=2.31", "pydantic>=2"]\n'),
    )
    t.call("edit_file", {"path": "pyproject.toml", "old": '"requests>=2.31"', "new": '"httpx>=0.27"'}, "ok")
    t.call("bash", {"command": "pip install -e ."}, "Successfully installed httpx-0.27.2 shop-0.9.0")
    t.turn(state={"migrated": []})
    done: list[str] = []
    for i, m in enumerate(mods):
        t.call(
            "read_file",
            {"path": f"src/shop/{m}.py"},
            numbered(
                f"import requests\n\nTIMEOUT = {5 + i}\n\n\ndef fetch_{m}(url):\n    r = requests.get(url, "
                f"timeout=TIMEOUT)\n    r.raise_for_status()\n    return r.json()\n"
            ),
        )
        t.call(
            "grep_search",
            {"pattern": f"fetch_{m}\\(", "path": "src"},
            f"src/shop/{m}.py:6\nsrc/shop/api/{m}_routes.py:{20 + i}",
        )
        t.call("edit_file", {"path": f"src/shop/{m}.py", "old": "import requests", "new": "import httpx"}, "ok")
        t.call("edit_file", {"path": f"src/shop/{m}.py", "old": "requests.get(", "new": "httpx.get("}, "ok")
        if i % 3 == 2:
            t.call("bash", {"command": f"ruff check src/shop/{m}.py"}, "All checks passed!")
        t.call(
            "run_tests",
            {"path": f"tests/test_{m}.py"},
            f"{6 + i % 4} passed" if i != 4 else "1 failed: test_checkout_retry (httpx has no Retry adapter)",
            error=i == 4,
        )
        if i == 4:
            t.call(
                "read_file",
                {"path": "src/shop/checkout.py"},
                numbered("import httpx\nfrom requests.adapters import HTTPAdapter, Retry\n"),
            )
            t.call(
                "edit_file",
                {
                    "path": "src/shop/checkout.py",
                    "old": "from requests.adapters import HTTPAdapter, Retry",
                    "new": "transport = httpx.HTTPTransport(retries=3)",
                },
                "ok",
            )
            t.call("run_tests", {"path": "tests/test_checkout.py"}, "7 passed")
        done.append(m)
        t.turn(state={"migrated": list(done)})
    t.call("bash", {"command": "grep -rn 'requests' src/"}, "src/shop/webhooks.py:40:    # requests are signed")
    t.call("run_tests", {"path": "tests"}, "212 passed in 9.8s")
    t.call("bash", {"command": "git diff --stat"}, " 14 files changed, 41 insertions(+), 41 deletions(-)")
    t.call(
        "bash",
        {"command": "git add -A && git commit -m 'Move from requests to httpx'"},
        "[main 0f3e2d1] Move from requests to httpx",
    )
    t.turn(state={"migrated": list(done), "committed": True})
    t.answer("All 13 modules moved to httpx; 212 tests pass.")
    assert t.calls >= 80, t.calls
    return t.healthy(f"A {t.calls}-call refactor (requests -> httpx) over 13 modules: reads, greps, edits, tests.")


@scenario
def healthy_long_support_session() -> Trace:
    t = Trace("healthy_long_support_session")
    tickets = [
        (7101, "Can't log in after changing email", "auth email change", True),
        (7102, "Invoice shows wrong VAT number", "update VAT number invoice", True),
        (7103, "Export to CSV missing columns", "csv export columns", False),
        (7104, "Cancel my subscription", "cancel subscription", True),
        (7105, "2FA codes not accepted", "two factor codes rejected time drift", True),
        (7106, "Add a second admin", "add admin user", True),
        (7107, "Refund for duplicate charge", "duplicate charge refund", False),
        (7108, "API rate limit too low", "api rate limit increase", True),
        (7109, "Dark mode request", "dark mode", False),
        (7110, "Webhook retries", "webhook retry policy", True),
        (7111, "Data retention question", "data retention period", True),
        (7112, "SSO setup help", "saml sso setup", True),
        (7113, "Password reset email never arrives", "password reset email spam", True),
        (7114, "Change billing currency", "billing currency change", False),
    ]
    t.call("list_tickets", {"queue": "tier1", "status": "open", "limit": 20}, [x[0] for x in tickets])
    t.turn()
    for n, (tid, subject, query, kb_hit) in enumerate(tickets):
        t.call("get_ticket", {"ticket_id": tid}, {"id": tid, "subject": subject, "customer_id": f"cus_{3000 + n}"})
        t.call(
            "get_customer",
            {"customer_id": f"cus_{3000 + n}"},
            {"id": f"cus_{3000 + n}", "plan": ["free", "pro", "business"][n % 3], "seats": 3 + n},
        )
        if kb_hit:
            t.call("search_kb", {"query": query}, [{"id": f"kb-{500 + n}", "title": subject + " (how-to)"}])
            t.call("get_article", {"id": f"kb-{500 + n}"}, f"Steps for: {subject}. 1) Open settings. 2) ...")
        else:
            t.call("search_kb", {"query": query}, "0 results")
            t.call("search_kb", {"query": query.split()[0] + " help"}, "No matches found.")
        if n % 4 == 1:
            t.call("get_invoices", {"customer_id": f"cus_{3000 + n}", "limit": 3}, [{"id": f"in_{n}", "total": 49}])
        t.call(
            "reply_ticket", {"ticket_id": tid, "body": f"Hi, thanks for reaching out about '{subject}'. ..."}, "sent"
        )
        t.call(
            "update_ticket", {"ticket_id": tid, "status": "pending", "tags": ["tier1", query.split()[0]]}, {"ok": True}
        )
        t.turn(state={"closed": n + 1})
    t.answer("14 tickets answered.")
    assert t.calls >= 80, t.calls
    return t.healthy(f"A {t.calls}-call support shift over 14 tickets: lookups, KB searches (some empty), replies.")


# =================================================================================================
# Second batch. Labels worked out by hand from docs/detectors.md, docs/escalation.md, docs/guard.md,
# docs/trace-format.md and docs/signatures.md (see the comment next to each expectation).
#
# Two onsets this batch adds to the list in the module docstring:
# * edit_loop, flip-flop: the first edit that starts repeating the pattern (the redo after the first undo:
#   A->B, B->A is a try and a revert; the next A->B starts the second pass);
# * edit_loop, same failure: the edit of the second edit-then-check round that ends in the same failure.
# Conversations use ``t.user`` (a ``user_message`` event): it starts a new epoch, clears the detectors'
# memory and starts the escalation ladder over.
# Flip-flops follow docs/detectors.md as it now reads: a return to an earlier content counts only after a
# visit (the calls since the last change) that brought nothing not seen before in that state of the files,
# and the 2nd such return is intercepted (the first labels used "the 3rd return"; for alternating edits
# with a repeated check in between both rules pick the same edit).
# =================================================================================================


def cat_n(path: str, text: str, start: int = 1) -> str:
    """An editor tool's ``view`` output (Anthropic's text editor tool and Claude Code print this header)."""
    return f"Here's the result of running `cat -n` on {path}:\n{numbered(text, start)}\n"


def cc_edited(path: str, snippet: str, start: int) -> str:
    """Claude Code's ``Edit`` result."""
    return (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited "
        f"file:\n{numbered(snippet, start)}"
    )


# -------------------------------------------------------------------------------------------------
# conversations with a user
# -------------------------------------------------------------------------------------------------


@scenario
def conv_clarifying_reservation_number() -> Trace:
    t = Trace("conv_clarifying_reservation_number")
    t.user("Hi, can I move our dinner booking on Friday from 7pm to 8:30pm? Still four people.")
    t.text("Of course. Could you give me the reservation number? It starts with R- and is in your confirmation email.")
    t.turn()  # text only, asking the user: idle turn 1, then the user answers (the count starts over)
    t.user("Sure, it's R-20931.")
    t.call(
        "get_reservation",
        {"reservation_id": "R-20931"},
        {
            "reservation_id": "R-20931",
            "restaurant_id": "rst_118",
            "restaurant": "Osteria Lupa",
            "date": "2025-12-05",
            "time": "19:00",
            "party_size": 4,
            "name": "N. Haddad",
        },
    )
    t.turn()
    t.call(
        "check_availability",
        {"restaurant_id": "rst_118", "date": "2025-12-05", "time": "20:30", "party_size": 4},
        {"available": True, "tables": [{"id": "T12", "note": "window"}, {"id": "T7", "note": "near the bar"}]},
    )
    t.turn()
    t.text("A table for four is free at 20:30 on Friday 5 December: T12 by the window or T7 near the bar. Move it?")
    t.turn()
    t.user("Yes please, the window one.")
    t.call(
        "update_reservation",
        {"reservation_id": "R-20931", "time": "20:30", "table_id": "T12"},
        {
            "reservation_id": "R-20931",
            "time": "20:30",
            "table_id": "T12",
            "confirmation_sent_to": "n.haddad@example.com",
        },
    )
    t.turn()
    t.answer(
        "Done: R-20931 is now Friday 5 December at 20:30, window table, four people. A new confirmation is on its way."
    )
    # never more than one text-only turn before the user writes again; every call is a first lookup
    return t.healthy(
        "Restaurant agent asks for the reservation number, the user answers, lookup, availability, update, answer."
    )


@scenario
def conv_customer_repeats_order_status() -> Trace:
    t = Trace("conv_customer_repeats_order_status")
    order = {
        "order_id": "55120",
        "placed": "2025-11-24",
        "items": [{"sku": "BOOT-W-39", "name": "Winter boots, size 39", "qty": 1}],
        "carrier": "dpd",
        "tracking_number": "01905512034871",
        "promised_by": "2025-11-29",
    }
    track = {
        "tracking_number": "01905512034871",
        "events": [
            {"at": "2025-11-26T18:02:00Z", "where": "Hub Unna", "what": "Parcel received"},
            {"at": "2025-11-28T06:40:00Z", "where": "Depot Dortmund", "what": "Delayed: high volume"},
        ],
        "eta": "2025-12-01",
    }
    asks = [
        "Hi, where is my order 55120? It was supposed to arrive yesterday.",
        "So where is it now?? I need the boots for the weekend.",
        "I still don't get it. Where is my parcel, order 55120?",
        "Can you please just check again where order 55120 is?",
    ]
    replies = [
        "Your boots are at the DPD depot in Dortmund, delayed by high volume; the new delivery date is 1 December.",
        "They're still at the Dortmund depot. DPD now expects to deliver on Monday 1 December.",
        "The parcel is at DPD's Dortmund depot; it was delayed there and should reach you on 1 December.",
        "Checked again: still at the Dortmund depot, delivery expected Monday 1 December. I'm sorry for the wait.",
    ]
    for ask, reply in zip(asks, replies, strict=True):
        t.user(ask)
        t.call("get_order", {"order_id": "55120"}, order)
        t.call("track_shipment", {"carrier": "dpd", "tracking_number": "01905512034871"}, track)
        t.turn()
        t.text(reply)
        t.turn()
    # the same two lookups after each of the four messages, with the same results. Without the user's input
    # this would be a period-2 cycle (calls 3 and 4 stale, call 5 intercepted); but each user_message starts
    # a new epoch and clears the detectors' memory: "a lookup repeated because the customer asked again is
    # an answer" (docs/detectors.md, repeat). One text-only turn per message: no_action never counts past 1.
    return t.healthy("A customer asks four times where the order is; the agent looks it up again each time.")


@scenario
def healthy_conv_long_support_chat() -> Trace:
    t = Trace("healthy_conv_long_support_chat")
    t.user("Hi, my internet keeps dropping since this morning. It's really annoying, I work from home.")
    t.text("Sorry to hear that. Can you give me your account number, or the phone number on the account?")
    t.turn()
    t.user("Account 40018822.")
    t.call(
        "get_account",
        {"account_id": "40018822"},
        {"account_id": "40018822", "name": "Marta Lindqvist", "plan": "Fiber 250", "line_id": "LN-88120-A"},
    )
    t.call(
        "get_line_status",
        {"line_id": "LN-88120-A"},
        {"line_id": "LN-88120-A", "sync": "up", "drops_24h": 6, "last_drop": "2025-11-30T07:10:44Z", "snr_db": 11.2},
    )
    t.turn()
    t.call("check_outages", {"postcode": "11842"}, {"outages": [], "planned_works": []})
    t.turn()
    t.text(
        "I can see six drops since 07:10 and no outage in 11842. Could you restart the router and tell me when done?"
    )
    t.turn()
    t.user("Restarted it. Still dropped once already.")
    t.call(
        "get_line_status",
        {"line_id": "LN-88120-A"},
        {"line_id": "LN-88120-A", "sync": "up", "drops_24h": 7, "last_drop": "2025-11-30T09:52:03Z", "snr_db": 10.9},
    )
    t.call(
        "run_line_test",
        {"line_id": "LN-88120-A"},
        {"result": "fail", "finding": "high noise on the drop cable", "recommendation": "technician visit"},
    )
    t.turn()
    t.text(
        "The line test found noise on the cable into your building, which a router can't fix. I can send a technician."
    )
    t.turn()
    t.user("OK. What's the earliest slot?")
    t.call(
        "get_technician_slots",
        {"postcode": "11842", "from": "2025-12-01", "days": 5},
        [
            {"slot_id": "SL-4410", "day": "2025-12-02", "window": "08:00-12:00"},
            {"slot_id": "SL-4417", "day": "2025-12-03", "window": "13:00-17:00"},
        ],
    )
    t.turn()
    t.text("Tuesday 2 December 08:00-12:00 or Wednesday 3 December 13:00-17:00.")
    t.turn()
    t.user("Wednesday afternoon. Will that cost me anything?")
    t.call("search_kb", {"query": "technician visit charge"}, [])
    t.call(
        "search_kb",
        {"query": "engineer visit fee line fault"},
        [{"id": "kb-3310", "title": "When is a technician visit free?"}],
    )
    t.call("get_article", {"id": "kb-3310"}, "Visits are free when the fault is on our network or the drop cable.")
    t.turn()
    t.call(
        "book_technician",
        {"account_id": "40018822", "slot_id": "SL-4417", "reason": "line test: noise on drop cable"},
        {"booking_id": "TV-99812", "day": "2025-12-03", "window": "13:00-17:00"},
    )
    t.turn()
    t.text("Booked: Wednesday 3 December, 13:00-17:00 (TV-99812). It's free, because the fault is on the drop cable.")
    t.turn()
    t.user("Great. Also, my last bill was higher than usual.")
    t.call(
        "list_invoices",
        {"account_id": "40018822", "limit": 3},
        [{"id": "INV-1123", "month": "2025-11", "total": 64.0}, {"id": "INV-1011", "month": "2025-10", "total": 39.0}],
    )
    t.call(
        "get_invoice",
        {"invoice_id": "INV-1123"},
        {
            "id": "INV-1123",
            "lines": [{"what": "Fiber 250", "eur": 39.0}, {"what": "Router upgrade (one-off)", "eur": 25.0}],
        },
    )
    t.turn()
    t.text("November has a one-off EUR 25 router upgrade on top of the usual EUR 39.")
    t.turn()
    t.user("I never asked for a new router!")
    t.call(
        "get_order_history",
        {"account_id": "40018822", "since": "2025-10-01"},
        [{"order": "HW-5521", "item": "Router Pro 7", "channel": "web", "placed": "2025-11-12", "delivered": True}],
    )
    t.turn()
    t.text(
        "Our records show a web order for a Router Pro 7 on 12 November, delivered. Was that someone in your household?"
    )
    t.turn()
    t.user("No, that wasn't anyone here. Can you refund it?")
    t.text(
        "I can open a dispute for it. For that I need you to confirm you did not place order HW-5521. Do you confirm?"
    )
    t.turn()
    t.user("Yes, I confirm.")
    t.call(
        "create_dispute",
        {"account_id": "40018822", "order": "HW-5521", "amount_eur": 25.0, "reason": "order not placed by customer"},
        {"dispute_id": "D-30417", "decision_due": "2025-12-08"},
    )
    t.turn()
    t.text("Dispute D-30417 is open; you'll hear by 8 December and the EUR 25 comes back on the next bill if approved.")
    t.turn()
    t.user("And can I switch to the 500 Mbit plan at the same time?")
    t.call(
        "list_plans",
        {"technology": "fiber"},
        [{"plan": "Fiber 250", "eur": 39.0}, {"plan": "Fiber 500", "eur": 45.0}, {"plan": "Fiber 1000", "eur": 59.0}],
    )
    t.call(
        "check_eligibility", {"line_id": "LN-88120-A", "plan": "Fiber 500"}, {"eligible": True, "max_sync_mbit": 940}
    )
    t.turn()
    t.text("Yes, Fiber 500 is EUR 45 a month and your line supports it. Shall I switch you from 1 January?")
    t.turn()
    t.user("Yes, from January.")
    t.call(
        "change_plan",
        {"account_id": "40018822", "plan": "Fiber 500", "effective": "2026-01-01"},
        {"change_id": "PC-7781", "effective": "2026-01-01", "new_monthly_eur": 45.0},
    )
    t.turn()
    t.text("Done: Fiber 500 from 1 January, EUR 45 a month (change PC-7781).")
    t.turn()
    t.user("Will the dropping affect the new plan?")
    t.text("The drops come from the cable fault; once the technician fixes it on Wednesday both plans will be stable.")
    t.turn()
    t.user("Perfect, thanks for your help!")
    t.answer(
        "You're welcome, Marta. The technician comes Wednesday afternoon; the dispute answer is due by 8 December."
    )
    # 13 user messages, 17 calls, 13 text replies. Every text-only turn is followed by the user's input (at
    # most one idle turn in a row); get_line_status is called twice, after different user messages and with
    # different answers; the one empty search is followed by a hit. No call is stale in its epoch.
    return t.healthy("ISP support chat over 13 user messages: lookups, a line test, bookings, billing, text replies.")


@scenario
def conv_wrong_booking_id_twice() -> Trace:
    t = Trace("conv_wrong_booking_id_twice")
    t.user("I want to add a checked bag to my flight tomorrow. Booking ABC123.")
    nf = {
        "status": "not_found",
        "retryable": False,
        "next_action_hint": "Ask the passenger for the 6-character booking reference on the e-ticket.",
    }
    t.call("get_booking", {"record_locator": "ABC123"}, {**nf, "message": "No booking with record locator ABC123."})
    t.turn()
    t.text("I can't find a booking ABC123. Could you check the 6-character code in your confirmation email?")
    t.turn()
    t.user("Sorry, ABC132.")
    t.call("get_booking", {"record_locator": "ABC132"}, {**nf, "message": "No booking with record locator ABC132."})
    t.turn()
    t.text("Still no match for ABC132. The reference is printed top right on the e-ticket, next to 'Booking ref'.")
    t.turn()
    t.user("Found the email. It's QBC13Z.")
    t.call(
        "get_booking",
        {"record_locator": "QBC13Z"},
        {"record_locator": "QBC13Z", "passenger": "J. Moreau", "flight": "LX1583", "date": "2025-12-01", "bags": 0},
    )
    t.call(
        "get_baggage_options",
        {"record_locator": "QBC13Z", "flight": "LX1583"},
        [{"code": "BAG23", "kg": 23, "eur": 45.0}, {"code": "BAG32", "kg": 32, "eur": 80.0}],
    )
    t.turn()
    t.text("Found it: LX1583 tomorrow. A 23 kg bag is EUR 45, a 32 kg bag EUR 80. Which one?")
    t.turn()
    t.user("23 kg please.")
    t.call(
        "add_baggage",
        {"record_locator": "QBC13Z", "flight": "LX1583", "code": "BAG23"},
        {"ok": True, "emd": "7242100881234", "charged_eur": 45.0},
    )
    t.answer("Added one 23 kg bag to QBC13Z (EUR 45). Your updated e-ticket receipt is on its way.")
    # two not_found answers, retryable: false, each for a different reference the user gave: no identical
    # retry (Repeat), not_found is empty and not an error (ErrorRepeat), and the user's input clears Drift
    return t.healthy("The passenger gives a wrong booking reference twice (not found, not found), then the right one.")


@scenario
def conv_user_insists_same_wrong_id() -> Trace:
    t = Trace("conv_user_insists_same_wrong_id")
    t.user("My order ORD-5512 arrived with a cracked screen. I want a replacement.")
    nf = {
        "status": "not_found",
        "retryable": False,
        "message": "No order ORD-5512.",
        "next_action_hint": "Ask for the email address used for the order.",
    }
    t.call("get_order", {"order_id": "ORD-5512"}, nf)
    t.turn()
    t.text("I can't find ORD-5512. Could you double-check the number, or tell me the email you ordered with?")
    t.turn()
    t.user("It's definitely ORD-5512, it's right here on my receipt. Please check again.")
    t.call("get_order", {"order_id": "ORD-5512"}, nf)
    t.turn()
    # the identical lookup after a non-retryable not_found would be advised at once ("the first identical
    # retry of a non-retryable result"), but the user spoke in between: "calls before the user last spoke
    # do not count" and the user asked for exactly this
    t.text("Still nothing under ORD-5512. Order numbers here have 4 digits after ORD-; could it read ORD-5521?")
    t.turn()
    t.user("Oh, you're right, it's ORD-5521. Sorry!")
    t.call(
        "get_order",
        {"order_id": "ORD-5521"},
        {
            "order_id": "ORD-5521",
            "items": [{"sku": "TAB-10-64", "name": "Tablet 10in 64GB"}],
            "delivered": "2025-11-28",
        },
    )
    t.call(
        "create_replacement",
        {"order_id": "ORD-5521", "sku": "TAB-10-64", "reason": "damaged on arrival"},
        {"replacement_order": "ORD-5588", "return_label": "https://returns.example.com/l/5588"},
    )
    t.answer("No problem. Replacement ORD-5588 ships today; the return label for the broken one is in your email.")
    return t.healthy(
        "The user insists on the same wrong order id: the identical not_found lookup follows their message."
    )


@scenario
def conv_repeat_loop_between_messages() -> Trace:
    t = Trace("conv_repeat_loop_between_messages")
    t.user("Has my refund for the broken kettle gone through?")
    t.call("find_customer", {"email": "a.osei@example.org"}, {"customer_id": "cus_T81k", "name": "Ama Osei"})
    t.call(
        "list_refunds",
        {"customer_id": "cus_T81k"},
        [{"id": "re_3QxT", "amount": 4999, "currency": "eur", "created": "2025-11-26"}],
    )
    t.turn()
    t.text("Yes: EUR 49.99 was refunded on 26 November.")
    t.turn()
    t.user("My bank says nothing arrived. Can you check the refund details, please?")
    refund = {
        "id": "re_3QxT",
        "amount": 4999,
        "currency": "eur",
        "destination": "card ending 4242",
        "arn": "74638251234567891234567",
        "settled": "2025-11-27",
    }
    t.call("get_refund", {"refund_id": "re_3QxT"}, refund)
    t.turn()
    t.call("get_refund", {"refund_id": "re_3QxT"}, refund)
    t.turn()
    t.text("It went to the card ending 4242 on 27 November; your bank can trace it with ARN 74638251234567891234567.")
    t.turn()
    t.user("The card ending 4242 is my old card, it was cancelled! Where did the money go?")
    t.call("get_refund", {"refund_id": "re_3QxT"}, refund)  # 3rd in a row, but the 1st since the user spoke
    t.turn()
    onset = t.call("get_refund", {"refund_id": "re_3QxT"}, refund)
    t.turn()
    at = t.call("get_refund", {"refund_id": "re_3QxT"}, refund)
    t.turn()
    t.call(
        "search_kb",
        {"query": "refund to cancelled card"},
        [{"id": "kb-77", "title": "Refunds to closed or expired cards"}],
    )
    t.call("get_article", {"id": "kb-77"}, "Card networks forward refunds on closed cards to the replacement card.")
    t.answer("Refunds to a cancelled card are forwarded by your bank to the new card; ask them with the ARN.")
    # Calls before the user last spoke do not count: the 1st get_refund after the third message is not a
    # repeat although it is the 3rd identical call in a row. Then get_refund twice more with the same
    # answer, between messages, on its own: the 3rd since the user spoke is intercepted (Repeat)
    return t.loop(
        "repeat",
        at,
        onset,
        "Between user messages the agent fetches the same refund three times in a row; earlier fetches don't count.",
        latest=at + 1,
    )


@scenario
def conv_cycle_between_messages() -> Trace:
    t = Trace("conv_cycle_between_messages")
    inv = {
        "id": "INV-2025-1187",
        "period": "2025-11",
        "lines": [{"what": "Pro plan, 12 seats", "eur": 348.0}],
        "total_eur": 348.0,
        "paid": True,
    }
    pay = {
        "invoice_id": "INV-2025-1187",
        "charges": [
            {"id": "ch_3QaA1", "eur": 348.0, "card": "visa 1881", "on": "2025-11-01"},
            {"id": "ch_3QaB7", "eur": 348.0, "card": "visa 1881", "on": "2025-11-01", "refunded": False},
        ],
    }
    a, b = ("get_invoice", {"invoice_id": "INV-2025-1187"}, inv), ("get_payments", {"invoice_id": "INV-2025-1187"}, pay)
    t.user("Can you tell me what invoice INV-2025-1187 is for?")
    t.call(*a)
    t.call(*b)
    t.turn()
    t.text("It's the Pro plan for November, 12 seats, EUR 348, and it's paid.")
    t.turn()
    t.user("But I was charged twice for it! Look at the payments.")
    t.call(*a)  # a new epoch: new again
    t.call(*b)
    t.turn()
    onset = t.call(*a)
    t.call(*b)
    t.turn()
    at = t.call(*a)
    t.call(*b)
    t.turn()
    t.call(
        "refund_charge",
        {"charge_id": "ch_3QaB7", "reason": "duplicate"},
        {"refund_id": "re_9Lm2", "eur": 348.0},
    )
    t.answer("You're right, ch_3QaB7 was a duplicate. I've refunded EUR 348 (re_9Lm2); allow 5-10 days.")
    # After the second message: invoice, payments (new in the new epoch), invoice, payments (stale: the
    # whole second pass), then invoice again starts the third pass of a period-2 cycle -> intercepted. The
    # pair before the message does not count (otherwise the cycle would be caught two calls earlier).
    return t.loop(
        "cycle",
        at,
        onset,
        "After the user's follow-up, invoice / payments ping-pong with unchanged answers instead of acting.",
    )


@scenario
def conv_drift_restarts_after_user() -> Trace:
    t = Trace("conv_drift_restarts_after_user")
    t.user("How do I export my workout history?")
    for q, out in [
        ("export workout history", "0 results"),
        ("download activity data", "No matches found."),
        ("export data", "0 results"),
    ]:
        t.call("search_help", {"query": q, "locale": "en"}, out)
    t.turn()
    t.text("Is this in the phone app or on the website? And which phone?")
    t.turn()
    t.user("The Android app, version 8.2.")
    idx = []
    for q, out in [
        ("android export workouts", "0 results"),
        ("export activities android app", "No matches found."),
        ("android app data download", "0 results"),
        ("share workout file android", "No results found for 'share workout file android'"),
        ("gpx export android", "0 results"),
        ("backup workouts android", "0 results"),
        ("android settings export", "0 results"),
    ]:
        idx.append(t.call("search_help", {"query": q, "locale": "en"}, out))
        if len(idx) % 2 == 0:
            t.turn()
    t.turn()
    # the user's answer clears the detectors' memory: the three empty searches before it do not count.
    # After it: 5 empty searches (idx[0..4]) while nothing new comes back -> the 6th (idx[5]) is intercepted
    # (had the earlier three counted, it would have been idx[2])
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        "Help-center searches reworded after the user's answer, all empty; the count starts at the answer.",
        latest=idx[6],
    )


@scenario
def healthy_conv_text_only_replies() -> Trace:
    t = Trace("healthy_conv_text_only_replies")
    t.user("Can you help me tighten my cover letter? It's in my drive as 'cover_letter_datasci'.")
    t.call(
        "read_document",
        {"doc_id": "cover_letter_datasci"},
        "Dear Hiring Manager,\n\nI am writing to apply for the Data Scientist role. I have 4 years of experience in "
        "Python and SQL and I built a churn model that reduced churn by 12%. I am a team player and a fast "
        "learner.\n\nKind regards,\nLea Brandt",
    )
    t.turn()
    replies = [
        (
            "Start with the result: 'I built a churn model at Finto that cut churn by 12% in two quarters.' Then "
            "say what you'd bring to this team.",
            "Good idea. What should the second paragraph say?",
        ),
        (
            "Name the stack they list (Python, dbt, Airflow) and one project for each, in two sentences.",
            "I haven't used Airflow, only Prefect.",
        ),
        (
            "Say so plainly: 'I orchestrate pipelines in Prefect and am comfortable moving them to Airflow.'",
            "Should I keep 'team player'?",
        ),
        (
            "Drop it; show it instead, e.g. 'I ran the weekly model review with product and support.'",
            "And the closing?",
        ),
        (
            "Close with availability and a concrete next step: 'I'm available from January and happy to walk "
            "through the churn model.'",
            "Thanks, that's much better.",
        ),
    ]
    for reply, user_says in replies:
        t.text(reply)
        t.turn()  # text only, answering the user
        t.user(user_says)
    t.answer("You're welcome. Paste the new draft any time and I'll do a last pass.")
    # six text-only turns, each one answering a user message: the user's input starts the no_action count over
    return t.healthy("A writing coach: one read, then only text replies for six turns while the user keeps writing.")


@scenario
def healthy_conv_idle_turns_reset_by_user() -> Trace:
    t = Trace("healthy_conv_idle_turns_reset_by_user")
    t.user("Book a 30-minute call with Jonas next Tuesday afternoon.")
    t.call("get_contact", {"name": "Jonas Berg"}, {"email": "jonas.berg@example.com", "tz": "Europe/Oslo"})
    t.turn()
    t.call(
        "find_free_slots",
        {"attendees": ["me", "jonas.berg@example.com"], "date": "2025-12-02", "after": "12:00", "duration_min": 30},
        ["14:00-15:00", "16:00-16:30"],
    )
    t.turn()
    t.turn(error="invalid tool call: create_event is missing required argument 'end'")  # idle 1
    t.text("Jonas is free on Tuesday 2 December 14:00-15:00 and 16:00-16:30. Which do you prefer?")
    t.turn()  # idle 2, asking the user
    t.user("16:00.")
    t.text("To confirm: Tuesday 2 December, 16:00-16:30, with Jonas Berg, as a video call?")
    t.turn()  # idle 1
    t.user("Yes, video.")
    t.turn(error="invalid tool call: arguments are not valid JSON (Expecting ',' delimiter: line 1 column 77)")
    t.call(
        "create_event",
        {
            "title": "Call: Jonas / me",
            "start": "2025-12-02T16:00:00+01:00",
            "end": "2025-12-02T16:30:00+01:00",
            "attendees": ["jonas.berg@example.com"],
            "video": True,
        },
        {"event_id": "ev_8812", "meet_link": "https://meet.example.com/abc-defg-hij"},
    )
    t.turn()
    t.text("Booked for Tuesday 16:00 with a video link; Jonas got the invite.")
    t.turn()
    t.user("Also send him the agenda doc.")
    t.text("Which doc do you mean, 'Q1 roadmap' or 'Pricing review'?")
    t.turn()  # idle 1
    t.text("Both are in your Drive and were last edited this week.")
    t.turn()  # idle 2
    t.user("Pricing review.")
    t.call(
        "share_file",
        {"file": "Pricing review", "with": "jonas.berg@example.com", "role": "reader"},
        {"shared": True, "link": "https://drive.example.com/d/8812"},
    )
    t.answer("Shared 'Pricing review' with Jonas (read access) and linked it in the invite.")
    # at most two turns without a tool call before the user writes again (an invalid call plus a question,
    # or two messages): the 3rd idle turn in a row never comes
    return t.healthy("Calendar assistant with two idle turns in a row (invalid call, question), then the user answers.")


@scenario
def conv_no_action_announces_cancel() -> Trace:
    t = Trace("conv_no_action_announces_cancel")
    t.user("Please cancel order ORD-7731, I don't need it anymore, and refund me.")
    t.call(
        "get_order",
        {"order_id": "ORD-7731"},
        {"order_id": "ORD-7731", "total_eur": 64.9, "shipped": False, "cancellable": True, "payment": "visa 0314"},
    )
    t.turn()
    onset = t.calls
    for words in [
        "I'll cancel ORD-7731 and refund EUR 64.90 to your Visa now.",
        "Cancelling the order first, then I'll start the refund.",
        "I'll cancel ORD-7731 and refund EUR 64.90 to your Visa now.",
    ]:
        t.text(words)
        t.turn()
    at = t.calls
    t.call("cancel_order", {"order_id": "ORD-7731", "reason": "customer request"}, {"cancelled": True})
    t.call("refund_payment", {"order_id": "ORD-7731", "amount_eur": 64.9}, {"refund_id": "re_77Q1"})
    t.answer("ORD-7731 is cancelled and EUR 64.90 is on its way back to your Visa.")
    # after the lookup turn, three turns in a row with words and no call, and no user input in between: the
    # 3rd turn end is the no_action signal (reported at the last call so far, the lookup)
    return t.loop("no_action", at, onset, "The agent announces the cancellation three turns in a row without acting.")


@scenario
def conv_flight_rebooking_multistep() -> Trace:
    t = Trace("conv_flight_rebooking_multistep")
    t.user("My flight tomorrow morning got cancelled. I need another one to Lisbon.")
    t.text("I'm sorry about that. What's your booking reference?")
    t.turn()
    t.user("KX7P2M.")
    t.text("Thanks. And the last name on the booking?")
    t.turn()
    t.user("Okonkwo.")
    t.call(
        "get_booking",
        {"record_locator": "KX7P2M", "last_name": "Okonkwo"},
        {
            "record_locator": "KX7P2M",
            "segments": [{"flight": "TP1351", "date": "2025-12-01", "dep": "07:05", "state": "cancelled"}],
            "bags": 1,
            "fare": "Classic",
        },
    )
    t.call(
        "search_flights",
        {"origin": "LHR", "destination": "LIS", "date": "2025-12-01", "fare_family": "Classic"},
        [
            {"flight": "TP1363", "dep": "14:20", "arr": "17:00", "seats": 9},
            {"flight": "BA500", "dep": "09:55", "arr": "12:35", "seats": 0},
            {"flight": "TP1367", "dep": "19:35", "arr": "22:15", "seats": 23},
        ],
    )
    t.turn()
    t.text("I can move you to TP1363 at 14:20 (arrives 17:00) or TP1367 at 19:35, at no cost. Which one?")
    t.turn()
    t.user("The 14:20 please, aisle seat if possible.")
    t.call(
        "rebook",
        {"record_locator": "KX7P2M", "from_flight": "TP1351", "to_flight": "TP1363", "waiver": "CXL-ops"},
        {"ok": True, "ticket": "0472100993811"},
    )
    t.call("get_seat_map", {"flight": "TP1363", "date": "2025-12-01"}, {"free_aisle": ["14C", "21D", "23C"]})
    t.call("assign_seat", {"record_locator": "KX7P2M", "flight": "TP1363", "seat": "14C"}, {"ok": True})
    t.turn()
    t.text("Done: TP1363 tomorrow 14:20, seat 14C (aisle). Your new e-ticket is 0472100993811.")
    t.turn()
    t.user("Will my bag be transferred to the new flight?")
    t.call(
        "get_booking",
        {"record_locator": "KX7P2M", "last_name": "Okonkwo"},
        {
            "record_locator": "KX7P2M",
            "segments": [{"flight": "TP1363", "date": "2025-12-01", "dep": "14:20", "state": "confirmed"}],
            "bags": 1,
            "fare": "Classic",
        },
    )
    t.answer("Yes, your one checked bag moved with the booking; check it in at the TP desk as usual.")
    return t.healthy("Rebooking chat: two clarifying questions, lookup, options, rebook, seat, a follow-up lookup.")


@scenario
def after_advice_user_resets_ladder() -> Trace:
    t = Trace("after_advice_user_resets_ladder")
    t.user("Is the Sony WH-1000XM5 in stock in black?")
    args = {"sku": "WH1000XM5-B", "channel": "online"}
    out = {"sku": "WH1000XM5-B", "available": 0, "restock_date": None, "warehouse": "DE-2"}
    t.call("check_inventory", args, out)
    t.turn()
    onset = t.call("check_inventory", args, out)
    t.turn()
    at = t.call("check_inventory", args, out)  # 3rd identical call, same answer: advise
    t.turn()
    t.text("It's out of stock online and there's no restock date yet.")
    t.turn()
    t.user("Can you check again? The website showed one left a minute ago.")
    t.call("check_inventory", args, out)
    t.turn()
    t.call("check_inventory", args, out)
    t.turn()
    second = t.call("check_inventory", args, out)
    t.turn()
    t.call(
        "check_store_inventory",
        {"sku": "WH1000XM5-B", "city": "Hamburg"},
        [{"store": "Hamburg Mönckebergstr.", "available": 2}],
    )
    t.answer("Still 0 online (the last one sold), but the Hamburg Mönckebergstraße store has two.")
    # first intervention: Repeat, advise, at the 3rd identical stock check. After the user's message the
    # same loop comes back (check_inventory x3, 3rd since the user spoke): the user's input starts the
    # ladder over, so that second intervention is advise again, not block
    return t.loop(
        "repeat",
        at,
        onset,
        f"Stock check repeated; after the user asks again the same loop is advised again (call {second}), not blocked.",
        latest=at + 1,
    )


# -------------------------------------------------------------------------------------------------
# parallel tool calls in one model turn (``t.parallel``: all calls first, then all results)
# -------------------------------------------------------------------------------------------------


@scenario
def parallel_healthy_distinct_reads() -> Trace:
    t = Trace("parallel_healthy_distinct_reads")
    ed = "str_replace_based_edit_tool"
    files = {
        "/repo/src/queue/__init__.py": "from .broker import Broker\nfrom .worker import Worker\n",
        "/repo/src/queue/broker.py": "class Broker:\n    def __init__(self, url):\n        self.url = url\n",
        "/repo/src/queue/worker.py": "class Worker:\n    def __init__(self, broker, prefetch=1):\n        ...\n",
        "/repo/src/queue/retry.py": "MAX_ATTEMPTS = 5\n\n\ndef backoff(n):\n    return min(2**n, 60)\n",
        "/repo/tests/test_worker.py": "def test_prefetch_default():\n    assert Worker(None).prefetch == 1\n",
        "/repo/pyproject.toml": '[project]\nname = "queue"\nversion = "0.9.1"\n',
    }
    t.parallel([(ed, {"command": "view", "path": p}, cat_n(p, body)) for p, body in files.items()])
    t.turn()
    t.parallel(
        [
            ("bash", {"command": 'grep -rn "prefetch" src/ tests/'}, "src/queue/worker.py:2\ntests/test_worker.py:2\n"),
            ("bash", {"command": 'grep -rn "MAX_ATTEMPTS" src/'}, "src/queue/retry.py:1:MAX_ATTEMPTS = 5\n"),
            ("bash", {"command": "git log --oneline -5 -- src/queue"}, "a1f2e3d worker: ack late\n9c8b7a6 broker\n"),
            # the model asked for the same file twice in this message (never a third time)
            (
                ed,
                {"command": "view", "path": "/repo/src/queue/retry.py"},
                cat_n("/repo/src/queue/retry.py", files["/repo/src/queue/retry.py"]),
            ),
            ("bash", {"command": "python -m pytest -q tests/test_worker.py"}, ".\n1 passed in 0.05s"),
            (
                ed,
                {"command": "view", "path": "/repo/src/queue/retry.py"},
                cat_n("/repo/src/queue/retry.py", files["/repo/src/queue/retry.py"]),
            ),
        ]
    )
    t.turn()
    t.call(
        ed,
        {
            "command": "str_replace",
            "path": "/repo/src/queue/retry.py",
            "old_str": "    return min(2**n, 60)",
            "new_str": "    return min(2**n, 60) * (0.5 + random.random() / 2)",
        },
        "The file /repo/src/queue/retry.py has been edited.",
    )
    t.turn()
    t.parallel(
        [
            (
                ed,
                {"command": "view", "path": "/repo/src/queue/retry.py"},
                cat_n(
                    "/repo/src/queue/retry.py",
                    "MAX_ATTEMPTS = 5\n\n\ndef backoff(n):\n    return min(2**n, 60) * (0.5 + random.random() / 2)\n",
                ),
            ),
            (
                "bash",
                {"command": "python -m pytest -q"},
                "E\nNameError: name 'random' is not defined\n1 error in 0.04s",
            ),
        ]
    )
    t.turn()
    t.call(
        ed,
        {"command": "insert", "path": "/repo/src/queue/retry.py", "insert_line": 0, "new_str": "import random\n"},
        "The file /repo/src/queue/retry.py has been edited.",
    )
    t.call("bash", {"command": "python -m pytest -q"}, "......\n6 passed in 0.11s")
    t.answer("Backoff now has jitter; tests pass.")
    # bursts of distinct reads; the duplicate view of retry.py in the second burst is twice, not in a row
    # and never a third time; the re-view after the edit is in a new epoch
    return t.healthy("Coding agent reading files in parallel bursts (one file asked twice in a burst), edit, tests.")


@scenario
def parallel_identical_calls_repeat_loop() -> Trace:
    t = Trace("parallel_identical_calls_repeat_loop")
    t.call(
        "get_order",
        {"order_id": "ORD-7710"},
        {"order_id": "ORD-7710", "carrier": "ups", "tracking": "1Z999AA10123456784", "promised_by": "2025-11-28"},
    )
    t.turn()
    args = {"carrier": "ups", "tracking_number": "1Z999AA10123456784"}
    out = {
        "tracking_number": "1Z999AA10123456784",
        "last_event": {"at": "2025-11-27T21:14:00Z", "where": "Koeln, DE", "what": "Departed from facility"},
        "eta": None,
    }
    t.call("track_shipment", args, out)
    t.turn()
    onset = t.call("track_shipment", args, out)
    t.turn()
    burst = t.parallel([("track_shipment", args, out)] * 3)
    t.turn()
    t.call(
        "open_carrier_claim",
        {"carrier": "ups", "tracking_number": "1Z999AA10123456784", "type": "late_delivery"},
        {"claim_id": "UPS-CL-55102"},
    )
    t.answer("The parcel left Cologne on 27 Nov with no update since; I've opened a UPS trace (UPS-CL-55102).")
    # the docs' worked example (docs/escalation.md, turn 3): two identical tracking calls with the same
    # answer, then the model asks for the same call three times at once. The first of them is the 3rd
    # identical call in a row -> Repeat; all three calls of that turn share one step: advise, x3
    return t.loop(
        "repeat",
        burst[0],
        onset,
        f"Same tracking call twice, then three times in one parallel turn: calls {burst[0]}-{burst[2]} all advised.",
    )


@scenario
def parallel_identical_batch_then_again() -> Trace:
    t = Trace("parallel_identical_batch_then_again")
    t.call(
        "get_ticket",
        {"ticket_id": 61877},
        {"subject": "Can't enable SSO: 'domain not verified'", "org_id": 4410},
    )
    t.turn()
    args = {"article_id": "kb-sso-domain"}
    art = (
        "Verifying your domain. Add the TXT record shown under Settings > Security > Domains to your DNS, "
        "then press Verify. DNS changes can take up to 48 hours. SSO can be enabled once a domain is verified."
    )
    burst = t.parallel([("get_article", args, art)] * 3)
    t.turn()
    at = t.call("get_article", args, art)
    t.turn()
    t.call(
        "get_org_domains",
        {"org_id": 4410},
        [{"domain": "brightlane.example", "verified": False, "txt": "acme-verify=6f1d2c1e"}],
    )
    t.answer("The domain still needs its TXT record; I've sent the customer the exact value.")
    # three identical calls in one message: when each is checked, the earlier ones have not returned yet,
    # so "the previous 2 returned the same result" is not true for any of them (docs/detectors.md: detectors
    # are asked before the call runs). They then return the same article; asking for it a 4th time is the
    # 3rd identical call in a row after two identical results -> Repeat
    return t.loop(
        "repeat",
        at,
        burst[1],
        "The same KB article asked three times in one parallel turn, then once more in the next turn.",
    )


@scenario
def parallel_cycle_in_batches() -> Trace:
    t = Trace("parallel_cycle_in_batches")
    ed = "str_replace_based_edit_tool"
    t.call(
        "bash",
        {"command": "python -m pytest -q tests/test_invoice_pdf.py"},
        "F\nE   AssertionError: footer missing VAT id\n1 failed in 0.31s",
        error=True,
    )
    t.turn()
    pdf = cat_n(
        "/repo/billing/pdf.py",
        "def render(invoice):\n    doc = Doc()\n    doc.header(invoice.seller)\n    doc.lines(invoice.lines)\n"
        "    doc.footer(invoice.seller.address)\n    return doc.bytes()\n",
    )
    test = cat_n(
        "/repo/tests/test_invoice_pdf.py",
        "def test_footer_has_vat_id():\n    text = extract(render(sample()))\n    assert 'DE811907980' in text\n",
    )
    pair = [
        (ed, {"command": "view", "path": "/repo/billing/pdf.py"}, pdf),
        (ed, {"command": "view", "path": "/repo/tests/test_invoice_pdf.py"}, test),
    ]
    t.parallel(pair)
    t.turn()
    second = t.parallel(pair)
    t.turn()
    third = t.parallel(pair)
    t.turn()
    t.call(
        ed,
        {
            "command": "str_replace",
            "path": "/repo/billing/pdf.py",
            "old_str": "    doc.footer(invoice.seller.address)",
            "new_str": "    doc.footer(invoice.seller.address, vat_id=invoice.seller.vat_id)",
        },
        "The file /repo/billing/pdf.py has been edited.",
    )
    t.call("bash", {"command": "python -m pytest -q tests/test_invoice_pdf.py"}, ".\n1 passed in 0.29s")
    # the same two views asked in parallel three turns in a row: the second batch is a stale pass of a
    # period-2 cycle, so the first call of the third batch starts its third pass -> Cycle (and its twin in
    # the same turn gets the same advice)
    return t.loop("cycle", third[0], second[0], "Two files viewed in parallel, the same pair three turns in a row.")


@scenario
def parallel_drift_batches() -> Trace:
    t = Trace("parallel_drift_batches")
    t.call(
        "read_file",
        {"path": "notes/task.md"},
        "Find a peer-reviewed study measuring heat pump efficiency in Nordic apartment blocks built before 1970.",
    )
    t.turn()
    empty = {"papers": [], "total": 0}
    qs = [
        "heat pump efficiency nordic apartment blocks",
        "air source heat pump pre-1970 multifamily Sweden",
        "seasonal COP retrofit apartment Finland",
        "district heating vs heat pump old apartment buildings Norway",
        "exhaust air heat pump 1960s apartment measured",
        "heat pump retrofit million programme housing",
        "nordic multifamily heat pump field study",
        "ground source heat pump apartment retrofit Denmark",
    ]
    first = t.parallel([("search_papers", {"query": q, "peer_reviewed": True}, empty) for q in qs[:3]])
    t.turn()
    t.parallel([("search_papers", {"query": q, "peer_reviewed": True}, empty) for q in qs[3:6]])
    t.turn()
    third = t.parallel([("search_papers", {"query": q, "peer_reviewed": True}, empty) for q in qs[6:]])
    t.turn()
    # Drift counts calls that RETURNED nothing new: when the second batch is checked only the first
    # batch (3) has returned; when the third batch is checked, 6 empty searches have returned (>= 5) while
    # nothing new came back anywhere -> its first call is intercepted (a sequential run would have been
    # caught one call earlier, at the 6th search)
    return t.loop(
        "drift",
        third[0],
        first[1],
        "Reworded paper searches in parallel batches of three; every one comes back empty.",
    )


@scenario
def parallel_healthy_fanout_lookups() -> Trace:
    t = Trace("parallel_healthy_fanout_lookups")
    t.call(
        "list_orders",
        {"customer_id": "cus_5521", "since": "2025-10-01"},
        ["ORD-9001", "ORD-9017", "ORD-9040", "ORD-9066", "ORD-9102"],
    )
    t.turn()
    status = {
        "ORD-9001": "delivered",
        "ORD-9017": "delivered",
        "ORD-9040": "returned",
        "ORD-9066": "delivered",
        "ORD-9102": "delivered",
    }
    t.parallel(
        [
            ("get_order", {"order_id": o}, {"order_id": o, "state": s, "total_eur": 20 + 7 * i})
            for i, (o, s) in enumerate(status.items())
        ]
        + [("get_order", {"order_id": "ORD-9001"}, {"order_id": "ORD-9001", "state": "delivered", "total_eur": 20})]
    )
    t.turn()
    t.parallel(
        [
            (
                "get_shipment",
                {"order_id": o},
                {"order_id": o, "carrier": "gls", "delivered_on": f"2025-11-{10 + i:02d}"},
            )
            for i, o in enumerate(["ORD-9001", "ORD-9017", "ORD-9066", "ORD-9102"])
        ]
    )
    t.turn()
    t.call("get_return", {"order_id": "ORD-9040"}, {"rma": "RMA-4410", "refund_eur": 34.0, "received": "2025-11-20"})
    t.answer("Four orders delivered, one returned (RMA-4410, EUR 34 refunded).")
    # distinct lookups fanned out in parallel; ORD-9001 asked twice in the same message (not in a row, and
    # never again)
    return t.healthy("Support agent fanning out order and shipment lookups in parallel (one duplicate in a burst).")


# -------------------------------------------------------------------------------------------------
# productive work after advice: the later, unrelated signal is advised again, not blocked
# -------------------------------------------------------------------------------------------------


@scenario
def after_advice_repeat_then_drift() -> Trace:
    t = Trace("after_advice_repeat_then_drift")
    t.call(
        "get_ticket",
        {"ticket_id": 70112},
        {"subject": "Okta SCIM provisioning stopped creating users", "org_id": 2291, "priority": "high"},
    )
    t.call("search_kb", {"query": "okta scim provisioning"}, [{"id": "kb-812", "title": "Set up SCIM with Okta"}])
    t.turn()
    art = (
        "Set up SCIM with Okta. 1) Create an API token with the scim:write scope. 2) Paste the base URL "
        "https://api.example.com/scim/v2 in Okta. 3) Enable Create Users and Update User Attributes."
    )
    t.call("get_article", {"id": "kb-812"}, art)
    t.turn()
    onset = t.call("get_article", {"id": "kb-812"}, art)
    t.turn()
    at = t.call("get_article", {"id": "kb-812"}, art)  # 3rd identical call, same text: Repeat, advise
    t.turn()
    # productive work: four calls that each bring something new (cooldown is 3)
    t.call("get_org", {"org_id": 2291}, {"name": "Northwind", "plan": "enterprise", "scim_enabled": True})
    t.call(
        "list_api_tokens",
        {"org_id": 2291},
        [{"id": "tok_81", "scopes": ["scim:read"], "created": "2025-11-27"}, {"id": "tok_12", "scopes": ["admin"]}],
    )
    t.call(
        "get_audit_log",
        {"org_id": 2291, "action": "scim.user.create", "limit": 5},
        [{"at": "2025-11-27T10:02:11Z", "result": "403 missing scope scim:write"}],
    )
    t.turn()
    t.call(
        "update_ticket",
        {"ticket_id": 70112, "internal_note": "token tok_81 lacks scim:write since rotation on 27 Nov"},
        {"ok": True},
    )
    t.turn()
    # then an unrelated loop: reworded searches for a rotation guide, all empty, nothing new anywhere
    later = [
        t.call("search_kb", {"query": q}, "0 results")
        for q in [
            "rotate scim token",
            "scim token scopes rotation",
            "regenerate provisioning token okta",
            "scim write scope missing",
            "api token rotation scim",
            "replace okta scim token",
        ]
    ]
    t.turn()
    t.answer("Root cause: the rotated token tok_81 lacks scim:write. Asked the admin to add the scope.")
    # first intervention: Repeat at the 3rd identical get_article. Four new results (org, tokens, audit log,
    # the note) follow: cooldown reached, the loop is over. The empty searches then make a Drift loop (5
    # empty results, the 6th search, later[5]): another loop after new work -> advised again, not blocked
    return t.loop(
        "repeat",
        at,
        onset,
        f"KB article fetched three times (advised), then real progress; the later drift at call {later[5]} "
        "is advised too.",
    )


@scenario
def after_advice_cycle_then_flipflop() -> Trace:
    t = Trace("after_advice_cycle_then_flipflop")
    ed = "str_replace_editor"
    path = "/repo/app/rate_limit.py"
    src = "WINDOW_S = 60\nLIMIT = 100\n\n\ndef allowed(hits):\n    return len(hits) < LIMIT\n"
    view = {"command": "view", "path": path}
    test = {"command": "python -m pytest -q tests/test_rate_limit.py"}
    fail0 = "F.\nE   assert allowed([0] * 100) is True\n1 failed, 1 passed in 0.08s"
    t.call(ed, view, cat_n(path, src))
    t.call("bash", test, fail0, error=True)
    t.turn()
    onset = t.call(ed, view, cat_n(path, src))
    t.call("bash", test, fail0.replace("0.08s", "0.07s"), error=True)
    t.turn()
    at = t.call(ed, view, cat_n(path, src))  # the third pass of view / test: Cycle, advise
    t.turn()
    t.call(
        ed,
        {"command": "view", "path": "/repo/tests/test_rate_limit.py"},
        cat_n(
            "/repo/tests/test_rate_limit.py",
            "def test_limit_inclusive():\n    assert allowed([0] * 100) is True\n\n\ndef test_over():\n"
            "    assert allowed([0] * 101) is False\n",
        ),
    )
    lt, le = "    return len(hits) < LIMIT", "    return len(hits) <= LIMIT"
    fwd = {"command": "str_replace", "path": path, "old_str": lt, "new_str": le}
    back = {"command": "str_replace", "path": path, "old_str": le, "new_str": lt}
    fail1 = ".F\nE   assert allowed([0] * 101) is False\n1 failed, 1 passed in 0.08s"
    ok = "The file /repo/app/rate_limit.py has been edited."
    t.call(ed, fwd, ok)
    t.call("bash", {"command": "python -m pytest -q tests/test_rate_limit.py"}, fail1, error=True)
    t.turn()
    # three new since the advice (the test file, the edit, a new failure): the cycle is over
    t.call(ed, back, ok)  # a return, after a visit with news (the first run with `<=`)
    t.call("bash", test, fail0, error=True)  # what this state gave before: a fruitless visit
    t.turn()
    t.call(ed, fwd, ok)  # a return after a fruitless visit (1)
    t.call("bash", test, fail1, error=True)  # fruitless again
    t.turn()
    flip = t.call(ed, back, ok)  # the 2nd return after a fruitless visit: EditLoop
    t.call("bash", test, fail0, error=True)
    t.turn()
    t.call(
        ed,
        {"command": "view", "path": "/repo/tests/conftest.py"},
        cat_n("/repo/tests/conftest.py", "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef limit():\n    ...\n"),
    )
    t.answer("The two tests contradict each other: the limit can't be both inclusive and exclusive. Asking.")
    # first intervention: Cycle at the third view. After three new results the agent flips `<` / `<=`: the
    # 2nd return of rate_limit.py to an earlier content after a fruitless visit (call `flip`) is an EditLoop
    # signal about another loop after new work -> advise again, not block
    return t.loop(
        "cycle",
        at,
        onset,
        f"View/test ping-pong (advised), then new work, then a '<' vs '<=' flip-flop advised again at call {flip}.",
    )


@scenario
def after_advice_drift_then_repeat() -> Trace:
    t = Trace("after_advice_drift_then_repeat")
    t.call(
        "get_conversation",
        {"conversation_id": "cv_9031"},
        {"messages": [{"from": "customer", "text": "I ordered a standing desk in October, where is it?"}]},
    )
    t.turn()
    idx = [
        t.call("search_orders", q, [])
        for q in [
            {"customer_name": "Priya Raman", "month": "2025-10"},
            {"customer_name": "P. Raman"},
            {"product": "standing desk", "month": "2025-10"},
            {"email": "priya.raman@example.com"},
            {"phone": "+44 7700 900461"},
            {"customer_name": "Priya Raman"},
        ]
    ]
    t.turn()
    # idx[0..4]: 5 empty results while nothing new came back -> idx[5] is intercepted (Drift, advise)
    t.call("get_customer", {"conversation_id": "cv_9031"}, {"customer_id": "cus_7781", "email": "praman@example.co.uk"})
    t.call("list_orders", {"customer_id": "cus_7781"}, [{"order_id": "ORD-66120", "item": "Standing desk 160x80"}])
    t.call(
        "get_order",
        {"order_id": "ORD-66120"},
        {"order_id": "ORD-66120", "carrier": "dhl-freight", "tracking": "DHLF-88120-3"},
    )
    t.turn()
    args = {"carrier": "dhl-freight", "tracking_number": "DHLF-88120-3"}
    out = {"events": [{"at": "2025-11-21", "what": "Held at depot: delivery appointment needed"}]}
    t.call("track_shipment", args, out)
    t.turn()
    t.call("track_shipment", args, out)
    t.turn()
    later = t.call("track_shipment", args, out)
    t.turn()
    t.answer("Your desk is held at the DHL Freight depot waiting for a delivery appointment; here's the link to book.")
    # first intervention: Drift at idx[5]. Then four new results (customer, orders, order, first tracking
    # answer): the loop is over. The tracking call made three times in a row is Repeat on another loop ->
    # advise again (call `later`), not block
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        f"Order search by guesses (advised), then the right lookups; the later repeated tracking (call {later}) "
        "is advised too.",
    )


@scenario
def after_advice_one_new_read_then_cycle() -> Trace:
    t = Trace("after_advice_one_new_read_then_cycle")
    q = {"query": "EU battery regulation due diligence obligations date"}
    hits = [
        {"title": "Battery Regulation (EU) 2023/1542", "url": "https://example.eu/reg-2023-1542"},
        {"title": "Due diligence postponed to 2027", "url": "https://example.eu/dd-2027"},
    ]
    t.call("web_search", q, hits)
    t.turn()
    onset = t.call("web_search", q, hits)
    t.turn()
    at = t.call("web_search", q, hits)  # Repeat, advise
    t.turn()
    p1 = "Regulation (EU) 2023/1542, Article 48: due diligence policies for economic operators placing batteries."
    p2 = "The Omnibus IV proposal moves the due diligence obligations from 18 August 2025 to 18 August 2027."
    a = ("fetch_url", {"url": "https://example.eu/reg-2023-1542"}, p1)
    b = ("fetch_url", {"url": "https://example.eu/dd-2027"}, p2)
    t.call(*a)  # new
    t.call(*b)  # new
    t.turn()
    t.call(*a)  # stale
    t.call(*b)  # stale
    t.turn()
    later = t.call(*a)  # third pass: Cycle
    t.turn()
    t.answer("Due diligence obligations now apply from 18 August 2027 (moved from 18 August 2025).")
    # first intervention: Repeat at the 3rd identical search. Two new pages follow (fewer than the cooldown
    # of 3), then a period-2 re-read cycle over them: "a signal about another loop after new work" starts
    # again at advice (docs/escalation.md), so the cycle at call `later` is advised, not blocked
    return t.loop(
        "repeat",
        at,
        onset,
        f"Search repeated (advised), two new pages, then re-reading them: the cycle at call {later} is advised too.",
    )


# -------------------------------------------------------------------------------------------------
# status words in ordinary prose: not pending
# -------------------------------------------------------------------------------------------------


@scenario
def pending_prose_editor_view_cycle() -> Trace:
    t = Trace("pending_prose_editor_view_cycle")
    ed = "str_replace_based_edit_tool"
    t.call(
        "bash",
        {"command": "python -m pytest -q tests/test_proration.py"},
        "F\nE   assert prorate(3000, 15, 30) == 1500\nE    +  where 1450 = prorate(3000, 15, 30)\n1 failed in 0.12s",
        error=True,
    )
    t.turn()
    a = (
        ed,
        {"command": "view", "path": "/repo/billing/proration.py"},
        cat_n(
            "/repo/billing/proration.py",
            "def prorate(amount_cents, days_used, days_in_period):\n    share = (days_used - 1) / days_in_period\n"
            "    return round(amount_cents * (1 - share))\n",
        ),
    )
    b = (
        ed,
        {"command": "view", "path": "/repo/tests/test_proration.py"},
        cat_n(
            "/repo/tests/test_proration.py",
            "from billing.proration import prorate\n\n\ndef test_half_month():\n"
            "    assert prorate(3000, 15, 30) == 1500\n",
        ),
    )
    t.call(*a)
    t.call(*b)
    t.turn()
    onset = t.call(*a)
    t.call(*b)
    t.turn()
    at = t.call(*a)
    t.call(*b)
    t.turn()
    # "Here's the result of running `cat -n` on ..." is a status word inside other prose, not a pending
    # status (docs/detectors.md names this exact sentence): the re-views are stale, and the third pass of
    # the period-2 cycle is intercepted
    return t.loop("cycle", at, onset, "Editor view ping-pong; every output starts 'Here's the result of running'.")


@scenario
def pending_prose_log_running_cycle() -> Trace:
    t = Trace("pending_prose_log_running_cycle")
    t.call(
        "get_incident",
        {"id": "INC-5120"},
        {"title": "Deploy of api v2.41 rolled back automatically", "since": "2025-11-30T04:10:00Z"},
    )
    t.turn()
    logs = (
        "04:09:58 INFO deployer: finished running 14 migrations in 0.8s\n"
        "04:10:02 WARN hooks: post_deploy hook exited 1 after running for 31s\n"
        "04:10:03 INFO deployer: rollback to v2.40 started by health gate\n"
        "04:10:40 INFO deployer: rollback complete, 12/12 pods on v2.40\n"
    )
    three = [
        ("query_logs", {"service": "deployer", "window": "1h", "level": "INFO"}, logs),
        (
            "get_deploy",
            {"service": "api", "version": "v2.41"},
            {"version": "v2.41", "outcome": "rolled_back", "gate": "post_deploy hook"},
        ),
        (
            "read_file",
            {"path": "deploy/hooks/post_deploy.sh"},
            numbered("#!/bin/sh\nset -e\n./bin/warm-cache --all\ncurl -fsS http://localhost:8080/ready\n"),
        ),
    ]
    for tool, args, out in three:
        t.call(tool, args, out)
    t.turn()
    onset = t.calls + 1
    for _ in range(2):
        for tool, args, out in three:
            t.call(tool, args, out)
        t.turn()
    # "finished running 14 migrations", "after running for 31s": log prose, no stated status; the outcome
    # is rolled_back. The second pass is stale -> the third pass of the period-3 cycle is intercepted
    return t.loop(
        "cycle",
        onset + 3,
        onset,
        "Logs, deploy record and hook script re-read in a loop; the logs say 'running' in passing.",
    )


@scenario
def pending_prose_ls_pending_repeat() -> Trace:
    t = Trace("pending_prose_ls_pending_repeat")
    t.call(
        "bash",
        {"command": "cat README.md | head -5"},
        "# finance-exports\n\nMonthly refund exports land in exports/. See docs/layout.md.\n",
    )
    t.turn()
    ls = (
        "total 40\ndrwxr-xr-x 2 fin fin 4096 Nov 30 06:00 pending\n"
        "-rw-r--r-- 1 fin fin 8812 Nov 30 06:00 pending_refunds_2025-11.csv\n"
        "-rw-r--r-- 1 fin fin 7430 Oct 31 06:00 pending_refunds_2025-10.csv\n"
        "-rw-r--r-- 1 fin fin 1204 Nov 30 06:00 running_totals.xlsx\n"
    )
    cmd = {"command": "ls -la exports/"}
    t.call("bash", cmd, ls)
    t.turn()
    onset = t.call("bash", cmd, ls)
    t.turn()
    at = t.call("bash", cmd, ls)
    t.turn()
    t.call(
        "bash", {"command": "wc -l exports/pending_refunds_2025-11.csv"}, "141 exports/pending_refunds_2025-11.csv\n"
    )
    t.answer("141 refunds in the November export.")
    # 'pending' and 'running' are parts of file names in a listing, not a stated status: Repeat keeps its
    # threshold of 3 (not pending_threshold=12)
    return t.loop(
        "repeat", at, onset, "The same `ls` three times; the listing has files named pending_* and running_*."
    )


@scenario
def pending_prose_git_log_cycle() -> Trace:
    t = Trace("pending_prose_git_log_cycle")
    t.call("bash", {"command": "git status --short"}, " M worker/queue.py\n")
    t.turn()
    log = (
        "4e1a2b3 queue: drop jobs stuck in pending for more than an hour\n"
        "9f8e7d6 worker: log a warning while running hooks\n"
        "0c1d2e3 queue: retry pending acks on reconnect\n"
    )
    show = (
        "commit 4e1a2b3\nAuthor: R. Iyer\n\n    queue: drop jobs stuck in pending for more than an hour\n\n"
        "diff --git a/worker/queue.py b/worker/queue.py\n@@ -88,6 +88,9 @@\n+    if job.age > 3600:\n"
        "+        drop(job)\n"
    )
    a = ("bash", {"command": "git log --oneline -3 -- worker/queue.py"}, log)
    b = ("bash", {"command": "git show 4e1a2b3 -- worker/queue.py"}, show)
    t.call(*a)
    t.call(*b)
    t.turn()
    onset = t.call(*a)
    t.call(*b)
    t.turn()
    at = t.call(*a)
    t.call(*b)
    t.turn()
    # commit messages that mention 'pending' and 'running' are prose; the outputs are unchanged in the
    # epoch (git log / git show write nothing), so the second pass is stale -> third pass intercepted
    return t.loop(
        "cycle", at, onset, "git log / git show ping-pong over commits about 'pending' jobs and 'running' hooks."
    )


# -------------------------------------------------------------------------------------------------
# reworded empty searches: exploration while new files come in, drift while nothing new comes back
# -------------------------------------------------------------------------------------------------


@scenario
def healthy_reworded_grep_while_reading_files() -> Trace:
    t = Trace("healthy_reworded_grep_while_reading_files")
    t.call("bash", {"command": "ls src"}, "checkout\nflags\npayments\nweb\n")
    t.turn()
    steps: list[tuple[str, str]] = [
        ('grep -rn "new_checkout" src/', ""),
        ("cat config/flags.yaml", "flags:\n  checkout_redesign: {default: false, owner: web}\n  fast_refunds: true\n"),
        ('grep -rn "newCheckout" src/', ""),
        ('rg -n "new-checkout"', ""),
        (
            "cat src/flags/client.py",
            numbered("def is_on(name, user=None):\n    return _store.get(name, default=False)\n"),
        ),
        ('rg -n "NEW_CHECKOUT" --hidden', ""),
        ('grep -rn "checkout_v2" src/ tests/', ""),
        ('find . -name "*.flag"', ""),
        (
            "cat src/checkout/views.py",
            numbered(
                "from flags.client import is_on\n\n\ndef page(req):\n    if is_on('checkout_redesign', req.user):\n"
            ),
        ),
        ('grep -rn "redesign" tests/', ""),
        ("cat .env.example", "FLAG_STORE=redis://localhost:6379/3\nFLAG_OVERRIDES=checkout_redesign:on\n"),
    ]
    for cmd, out in steps:
        t.call("bash", {"command": cmd}, out)
        if cmd.startswith("cat"):
            t.turn()
    t.answer("The 'new checkout' is the flag checkout_redesign; it is overridden on in .env.example.")
    # up to 3 empty greps in a row, and every `cat` of a file not read before brings new content, which
    # starts every tool's Drift count over (bash included)
    return t.healthy("Shell agent hunting a feature flag: reworded greps come back empty while new files are read.")


@scenario
def healthy_reworded_kb_search_reading_tickets() -> Trace:
    t = Trace("healthy_reworded_kb_search_reading_tickets")
    t.call(
        "get_ticket",
        {"ticket_id": 88310},
        {"subject": "Webhook deliveries to our endpoint time out since Monday", "org_id": 7731},
    )
    t.turn()
    plan: list[tuple[str, Any, Any]] = [
        ("search_kb", {"query": "webhook timeout monday"}, "0 results"),
        ("search_kb", {"query": "webhook delivery timeout"}, "No matches found."),
        ("list_similar_tickets", {"ticket_id": 88310}, [{"id": 88107, "subject": "Webhooks slow after TLS change"}]),
        ("search_kb", {"query": "webhook TLS change"}, "0 results"),
        (
            "get_ticket",
            {"ticket_id": 88107},
            {"subject": "Webhooks slow after TLS change", "resolution": "see ENG-4410"},
        ),
        ("search_kb", {"query": "ENG-4410"}, "0 results"),
        ("search_kb", {"query": "webhook tls 1.3 endpoint"}, "No matches found."),
        ("get_issue", {"key": "ENG-4410"}, {"summary": "Webhook sender requires TLS 1.2+, SNI", "fix": "enable SNI"}),
        ("search_kb", {"query": "webhook SNI"}, "0 results"),
        ("get_org_webhooks", {"org_id": 7731}, [{"url": "https://hooks.client.example/in", "tls": "1.0"}]),
        (
            "search_kb",
            {"query": "minimum tls version webhooks"},
            [{"id": "kb-4410", "title": "Webhook TLS requirements"}],
        ),
    ]
    for tool, args, out in plan:
        t.call(tool, args, out)
        if tool != "search_kb":
            t.turn()
    t.answer("Their endpoint only offers TLS 1.0; since Monday we require TLS 1.2 with SNI (kb-4410).")
    # seven empty KB searches in all, never more than 2 in a row without a new result from another tool
    return t.healthy("Support agent rewording KB searches (mostly empty) while each step reads a new ticket or record.")


@scenario
def healthy_reworded_web_search_while_fetching() -> Trace:
    t = Trace("healthy_reworded_web_search_while_fetching")
    t.call("read_file", {"path": "brief.md"}, "Who maintains the 'tinyquant' library now, and is it still released?")
    t.turn()
    empty = {"results": [], "total_results": 0}
    for q in [
        "tinyquant maintainer",
        "tinyquant library new maintainer",
        "tinyquant python quantization repo",
        "tinyquant release 2025",
        "tinyquant github",
    ]:
        t.call("web_search", {"query": q}, empty)
    t.turn()
    # 5 empty searches: a 6th search would now be intercepted, but the agent reads a page first
    t.call(
        "fetch_url",
        {"url": "https://pypi.org/project/tinyquant/"},
        "tinyquant 0.9.4. Released: Oct 2, 2025. Maintainers: hsato, qdata-bot. Project links: Source (codeberg).",
    )
    t.turn()
    t.call("web_search", {"query": "tinyquant codeberg"}, empty)
    t.call("web_search", {"query": "hsato tinyquant"}, empty)
    t.call(
        "fetch_url",
        {"url": "https://codeberg.org/hsato/tinyquant"},
        "hsato/tinyquant: int4/int8 post-training quantization. 412 commits. Latest tag v0.9.4. "
        "Moved from GitHub in 2024.",
    )
    t.turn()
    t.call("web_search", {"query": "tinyquant moved from github 2024"}, empty)
    t.call(
        "fetch_url",
        {"url": "https://codeberg.org/hsato/tinyquant/releases"},
        "v0.9.4 (2025-10-02), v0.9.3 (2025-06-17), v0.9.2 (2025-02-01)",
    )
    t.answer("Maintained by hsato on Codeberg since 2024; releases continue (v0.9.4, Oct 2025).")
    # the new PyPI page comes back before a 6th search: any call that brings new content starts every
    # tool's count over, so the searches after it start from 0 (at most 2 in a row)
    return t.healthy("Research agent: five empty web searches, then new pages between the next reworded searches.")


@scenario
def drift_mcp_linear_search_json_text() -> Trace:
    t = Trace("drift_mcp_linear_search_json_text")
    t.call(
        "mcp__linear__get_issue",
        {"id": "ENG-2210"},
        '{"identifier": "ENG-2210", "title": "Export job drops rows with emoji in names", "team": "Data"}',
    )
    t.turn()
    qs = [
        "emoji export",
        "unicode csv export",
        "utf8mb4 export truncation",
        "export drops rows",
        "csv encoding emoji",
        "surrogate pairs export",
        "export unicode names",
    ]
    idx = []
    for i, q in enumerate(qs):
        idx.append(
            t.call(
                "mcp__linear__search_issues",
                {"query": q, "team": "Data", "includeArchived": True},
                '{"issues": [], "pageInfo": {"hasNextPage": false, "endCursor": null}}',
            )
        )
        if i % 2:
            t.turn()
    # MCP text content that is JSON is read as the JSON it contains: issues is "a collection field that is
    # empty" (pageInfo only says there is no next page) -> an empty result. Five empties after the issue
    # lookup, nothing new anywhere -> the 6th search
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        "MCP Linear search reworded seven times; each answer is JSON text with an empty issues list.",
    )


@scenario
def drift_two_search_tools_alternating() -> Trace:
    t = Trace("drift_two_search_tools_alternating")
    t.call(
        "get_conversation",
        {"conversation_id": "cv_4471"},
        {"messages": [{"from": "customer", "text": "Does the Halden desk lamp work with 110V? Moving to Canada."}]},
    )
    t.turn()
    pairs = [
        ("halden lamp 110v", "halden lamp voltage"),
        ("halden desk lamp voltage", "halden lamp 110 volt canada"),
        ("halden lamp power supply", "halden lamp adapter us"),
        ("desk lamp 110-240v", "halden transformer"),
        ("halden lamp specifications", "halden lamp input voltage"),
        ("halden LED driver", "halden lamp north america"),
    ]
    kb = []
    for qk, qw in pairs:
        kb.append(t.call("search_kb", {"query": qk}, "0 results"))
        t.call("search_product_docs", {"query": qw, "product": "Halden"}, {"documents": [], "total": 0})
        t.turn()
    # Drift counts per tool, while no call of the session brings anything new: search_kb's 6th call comes
    # after its own 5 empty results (search_product_docs has had only 5 calls then)
    return t.loop(
        "drift",
        kb[5],
        kb[1],
        "Two search tools alternated with reworded queries; both always empty.",
    )


@scenario
def drift_sql_reworded_empty_rows() -> Trace:
    t = Trace("drift_sql_reworded_empty_rows")
    desc = {"table": "subscriptions", "columns": ["id", "account_id", "plan", "status", "cancelled_at", "reason"]}
    t.call("describe_table", {"table": "subscriptions"}, desc)
    t.turn()
    sqls = [
        "SELECT id, reason FROM subscriptions WHERE reason = 'price' AND cancelled_at >= '2025-11-01'",
        "SELECT id FROM subscriptions WHERE reason ILIKE '%price%' AND cancelled_at >= '2025-11-01'",
        "SELECT id FROM subscriptions WHERE reason = 'too_expensive' AND cancelled_at >= '2025-11-01'",
        "SELECT id FROM subscriptions WHERE status = 'cancelled' AND reason = 'pricing'",
        "SELECT id FROM subscriptions WHERE lower(reason) LIKE 'cost%' AND cancelled_at >= '2025-11-01'",
        "SELECT id FROM subscriptions WHERE reason IN ('price','pricing','cost') AND cancelled_at > '2025-10-31'",
    ]
    idx = []
    for i, sql in enumerate(sqls):
        idx.append(t.call("run_sql", {"sql": sql}, {"rows": [], "rowcount": 0}))
        if i == 2:
            t.call("describe_table", {"table": "subscriptions"}, desc)  # the same columns again: stale
        t.turn()
    # rows is an empty collection field: empty. The re-described table is stale, not new, so nothing new
    # comes back anywhere: after 5 empty queries the 6th is intercepted
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        "Data agent rewording the same SQL question; every query returns no rows.",
    )


# -------------------------------------------------------------------------------------------------
# values a repr would hide, and markup that is content
# -------------------------------------------------------------------------------------------------


@scenario
def healthy_objects_long_array_middle_differs() -> Trace:
    t = Trace("healthy_objects_long_array_middle_differs")
    t.call(
        "list_cameras", {"site": "warehouse-3"}, [{"id": "dock-3", "res": [32, 64]}, {"id": "gate-1", "res": [32, 64]}]
    )
    t.turn()
    base = [(17 * i) % 251 for i in range(2048)]
    args = {"camera": "dock-3", "format": "grey8", "roi": "full"}
    for k in range(4):
        frame = list(base)
        for j in range(1016, 1032):  # something moves in the middle of the frame
            frame[j] = (frame[j] + 40 * (k + 1)) % 256
        t.call("read_sensor_frame", args, {"shape": [32, 64], "dtype": "uint8", "values": frame}, think=2.0)
        t.turn()
    t.answer("Motion in the centre of dock-3 (rows 15-16) across four frames; the rest of the frame is static.")
    # the same call four times; the results differ only at values[1016:1032], deep inside a 2048-long array.
    # Values compare in full (no repr, which elides the middle): the results are not equal, so nothing is a
    # repeat or stale ("results that change reset the count")
    return t.healthy("Four frames of the same camera: 2048-value arrays that differ only in the middle.")


@scenario
def healthy_objects_long_text_middle_differs() -> Trace:
    t = Trace("healthy_objects_long_text_middle_differs")
    t.call(
        "get_incident",
        {"id": "INC-2291"},
        {"title": "Card payments degraded", "status_page": "https://status.psp.example"},
    )
    t.turn()
    regions = ("eu-west", "eu-central", "eu-north", "us-east", "us-west", "ca-central", "ap-south", "ap-east")
    services = ("Card payments API", "Payouts", "Dashboard", "Webhooks", "Disputes", "Reporting", "Identity", "3DS")
    comps = [f"Region {r} / {svc}" for r in regions for svc in services]
    states = ["degraded performance", "partial outage", "degraded performance", "operational"]
    args = {"url": "https://status.psp.example/history?component=all"}
    for k, state in enumerate(states):
        rows = []
        for n, c in enumerate(comps):
            s = state if n == 24 else "operational"  # 'Region us-east / Card payments API', mid-page
            rows.append(f"<tr><td>{c}</td><td>{s}</td><td>99.9{n % 10}% uptime over 90 days</td></tr>")
        page = (
            f"<html><head><title>PSP status</title></head><body><p>Page generated 2025-11-30T09:{10 + 4 * k}:02Z</p>"
            "<table>" + "\n".join(rows) + "</table>"
            "<footer>Subscribe to updates. Times are UTC. Powered by statuskit.</footer></body></html>"
        )
        assert len(page) > 6000
        assert 2048 < page.index("us-east / Card") < len(page) - 2048
        t.call("fetch_url", args, page, think=30.0)
        t.turn()
    t.answer("us-east card payments went degraded, partial outage, degraded and are now operational again.")
    # a text over 4 KiB is scrubbed in its first and last 2 KiB and compared as it is in between: the row
    # that changes sits in the middle, so the four pages are four different results (never a repeat)
    return t.healthy("A status page fetched four times; the only change is one row in the middle of a 6 KiB page.")


@scenario
def objects_repr_address_repeat() -> Trace:
    t = Trace("objects_repr_address_repeat")
    t.call(
        "python",
        {"code": "import stripe\nprint(stripe.VERSION)"},
        "11.2.0",
    )
    t.turn()
    args = {"code": "sub = stripe.Subscription.retrieve('sub_1QbX9h')\nsub"}
    idx = []
    for addr in ["0x7f3a9c2e1d30", "0x7f3a9c2e4f10", "0x7f3a9c1b7a60"]:
        idx.append(t.call("python", args, f"<stripe.Subscription object at {addr}>"))
        t.turn()
    t.call(
        "python",
        {"code": "sub = stripe.Subscription.retrieve('sub_1QbX9h')\nprint(sub.status, sub.cancel_at_period_end)"},
        "past_due False",
    )
    t.answer("sub_1QbX9h is past_due and not set to cancel.")
    # the tool shows only a default repr: memory addresses are volatile and scrubbed, so the three outputs
    # are the same text (an unpaired <...> tag is content, not markup, so the text is not empty either); the
    # same call three times in a row with the same result -> Repeat
    return t.loop(
        "repeat",
        idx[2],
        idx[1],
        "A REPL tool printing `<stripe.Subscription object at 0x...>` three times for the same expression.",
    )


@scenario
def healthy_objects_unpaired_article_tags() -> Trace:
    t = Trace("healthy_objects_unpaired_article_tags")
    outs = [
        ("non-compete clause enforceability", "<article 1184>\n<article 2210>"),
        ("non-compete clause employee leaving", "<article 2210>\n<article 3307>"),
        ("restrictive covenant reasonableness", "<article 412>"),
        ("garden leave non-compete", "<article 3307>\n<article 5120>\n<article 5121>"),
        ("non-solicitation clients", "<article 877>"),
        ("non-compete compensation requirement", "<article 5121>\n<article 6002>"),
        ("non-compete duration limit", "<article 6002>\n<article 6013>"),
    ]
    for q, out in outs:
        t.call("search_archive", {"query": q, "collection": "employment-law"}, out)
    t.turn()
    for n in ["2210", "5121", "6002"]:
        t.call("get_article", {"id": int(n)}, f"Article {n}: summary of the ruling and the clause it concerns.")
    t.turn()
    t.answer("Three rulings (2210, 5121, 6002) set the limits; duration and compensation matter most.")
    # the archive answers with article references written as unpaired tags: "only paired tags and
    # self-closing tags are markup, an unpaired <article 0> is content". Each answer is content this tool
    # had not returned before: new, so seven searches in a row are not drift
    return t.healthy("Legal research: seven reworded archive searches answering with unpaired <article N> tags.")


@scenario
def drift_markup_empty_xml() -> Trace:
    t = Trace("drift_markup_empty_xml")
    t.call(
        "get_request",
        {"request_id": "ILL-3310"},
        {"patron": "p_1182", "wants": "Kjeldsen, 'Fjordbyer og handel 1600-1800', Bergen 1987"},
    )
    t.turn()
    qs = [
        'dc.title="Fjordbyer og handel"',
        'dc.title="Fjordbyer og handel 1600-1800"',
        'dc.creator="Kjeldsen" and dc.date=1987',
        'dc.title any "fjordbyer handel"',
        'dc.subject="Bergen handel" and dc.date=1987',
        'dc.creator="Kjeldsen, A." and dc.title any "fjordbyer"',
        'cql.serverChoice="fjordbyer"',
    ]
    empty = "<searchRetrieveResponse>\n  <records></records>\n  <diagnostics/>\n</searchRetrieveResponse>"
    idx = [t.call("sru_search", {"query": q, "maximumRecords": 10}, empty) for q in qs]
    t.turn()
    # paired tags and self-closing tags with nothing in them are markup only: an empty result. Five empty
    # catalogue searches while nothing new comes back -> the 6th is intercepted
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        "Library catalogue (SRU) queried seven ways; every answer is an XML envelope with no records.",
    )


@scenario
def drift_markup_returncode_greps() -> Trace:
    t = Trace("drift_markup_returncode_greps")
    t.call(
        "bash",
        {"command": "ls"},
        "<returncode>0</returncode>\n<output>\nMakefile\nREADME.md\nsrc\ntests\n</output>",
    )
    t.turn()
    pats = [
        "grep -rn 'max_connections' src/",
        "grep -rni 'maxconn' src/",
        "grep -rn 'pool_size' src/ tests/",
        "grep -rn 'POOL_MAX' .",
        "grep -rn 'connections=' src/",
        "grep -rn 'create_pool(' src/",
        "grep -rn 'asyncpg' src/",
    ]
    idx = [t.call("bash", {"command": p}, "<returncode>1</returncode>\n<output>\n</output>") for p in pats]
    t.turn()
    # "<returncode>1</returncode><output></output>": an exit code and markup, nothing else -> empty
    # (docs/detectors.md). Five empty greps after the listing -> the 6th is intercepted
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        "mini-swe-agent style shell: reworded greps, each answered '<returncode>1</returncode><output></output>'.",
    )


# -------------------------------------------------------------------------------------------------
# edit loops: flip-flops (a file brought back to an earlier content for the 3rd time)
# -------------------------------------------------------------------------------------------------


@scenario
def edit_flipflop_str_replace_timeout() -> Trace:
    t = Trace("edit_flipflop_str_replace_timeout")
    ed = "str_replace_based_edit_tool"
    path = "/repo/src/payments/client.py"
    t.call(
        ed,
        {"command": "view", "path": path},
        cat_n(path, "class PspClient:\n    def __init__(self, base, timeout=5):\n        self.timeout = timeout\n"),
    )
    test = {"command": "python -m pytest -q tests/test_client.py"}
    slow = (
        ".F\nFAILED tests/test_client.py::test_retry_on_timeout - AssertionError: assert 2 == 3\n1 failed, 1 passed "
        "in 5.31s"
    )
    hang = "F.\nFAILED tests/test_client.py::test_fast_fail - Failed: Timeout >10.0s\n1 failed, 1 passed in 10.42s"
    t.call("bash", test, slow, error=True)
    t.turn()
    a, b = "    def __init__(self, base, timeout=5):", "    def __init__(self, base, timeout=30):"
    fwd = {"command": "str_replace", "path": path, "old_str": a, "new_str": b}
    back = {"command": "str_replace", "path": path, "old_str": b, "new_str": a}
    done = f"The file {path} has been edited."
    t.call(ed, fwd, done)
    t.call("bash", test, hang, error=True)
    t.turn()
    t.call(ed, back, done)  # a return, after a visit that learned something (the first run at 30)
    t.call("bash", test, slow, error=True)  # at 5 again: what this state gave before (fruitless visit)
    t.turn()
    onset = t.call(ed, fwd, done)  # the redo: a return after a fruitless visit (1)
    t.call("bash", test, hang, error=True)  # at 30 again: the same failure as before in this state
    t.turn()
    at = t.call(ed, back, done)  # the 2nd return after a fruitless visit -> EditLoop
    t.call("bash", test, slow, error=True)
    t.turn()
    # Flip-flop (docs/detectors.md): an edit back to an earlier content, after a visit that brought nothing
    # not seen before in that state, for the 2nd time. Each edit starts an epoch (no test run is stale) and
    # the failures alternate (no same failure). (Labelled first with the older "3rd return" rule: the same
    # call.)
    return t.loop(
        "edit_loop",
        at,
        onset,
        "timeout=5 / timeout=30 flipped back and forth with str_replace, a test run after each.",
        latest=at + 2,
    )


@scenario
def edit_flipflop_undo_edit() -> Trace:
    t = Trace("edit_flipflop_undo_edit")
    ed = "str_replace_editor"
    path = "/repo/lib/money.py"
    old = "    return amount.quantize(CENT, rounding=ROUND_HALF_UP)"
    new = "    return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)"
    t.call(
        ed,
        {"command": "view", "path": path},
        cat_n(
            path,
            f"from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal\n\nCENT = Decimal('0.01')\n\n\ndef "
            f"round_money(amount):\n{old}\n",
        ),
    )
    test = {"command": "python -m pytest -q tests/test_money.py"}
    e_up = "F..\nE   assert round_money(Decimal('2.345')) == Decimal('2.34')\n1 failed, 2 passed in 0.03s"
    e_even = ".F.\nE   assert round_money(Decimal('0.125')) == Decimal('0.13')\n1 failed, 2 passed in 0.03s"
    t.call("bash", test, e_up, error=True)
    t.turn()
    swap = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
    undo = {"command": "undo_edit", "path": path}
    t.call(ed, swap, f"The file {path} has been edited.")
    t.call("bash", test, e_even, error=True)
    t.turn()
    t.call(ed, undo, f"Last edit to {path} undone successfully.")  # a return after a visit with news
    t.call("bash", test, e_up, error=True)  # the failure this state gave before: a fruitless visit
    t.turn()
    onset = t.call(ed, swap, f"The file {path} has been edited.")  # return after a fruitless visit (1)
    t.call("bash", test, e_even, error=True)  # fruitless again
    t.turn()
    at = t.call(ed, undo, f"Last edit to {path} undone successfully.")  # the 2nd such return -> EditLoop
    t.call("bash", test, e_up, error=True)
    t.turn()
    # undo_edit moves the file back to its state before the last edit: edit, undo, redo, undo, with the
    # same test giving the same answer in each state: the 2nd return after a fruitless visit is intercepted
    # (the older "3rd return" rule gave the same call)
    return t.loop(
        "edit_loop",
        at,
        onset,
        "ROUND_HALF_UP -> ROUND_HALF_EVEN, undo_edit, redo, undo_edit: the two tests want different rounding.",
        latest=at + 2,
    )


@scenario
def edit_flipflop_claude_edit() -> Trace:
    t = Trace("edit_flipflop_claude_edit")
    path = "/repo/web/src/lib/dates.ts"
    t.call(
        "Read",
        {"file_path": path},
        numbered("export function isoDay(d: Date): string {\n  return d.toISOString().slice(0, 10);\n}\n"),
    )
    t.call(
        "Bash",
        {"command": "npx vitest run src/lib/dates.test.ts", "description": "Run the date tests"},
        " FAIL  src/lib/dates.test.ts > isoDay > uses the local day\nAssertionError: expected '2025-11-29' to be "
        "'2025-11-30'\n Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)\n   Duration  412ms",
        error=True,
    )
    t.turn()
    utc = "  return d.toISOString().slice(0, 10);"
    local = "  return d.toLocaleDateString('en-CA');"
    fwd = {"file_path": path, "old_string": utc, "new_string": local}
    back = {"file_path": path, "old_string": local, "new_string": utc}
    fail_local = (
        " FAIL  src/lib/dates.test.ts > isoDay > is stable across locales\nAssertionError: expected '30.11.2025' to "
        "be '2025-11-30'\n Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)\n   Duration  398ms"
    )
    fail_utc = (
        " FAIL  src/lib/dates.test.ts > isoDay > uses the local day\nAssertionError: expected '2025-11-29' to be "
        "'2025-11-30'\n Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)\n   Duration  405ms"
    )
    run = {"command": "npx vitest run src/lib/dates.test.ts", "description": "Run the date tests"}
    t.call("Edit", fwd, cc_edited(path, "export function isoDay(d: Date): string {\n" + local + "\n}", 1))
    t.call("Bash", run, fail_local, error=True)
    t.turn()
    t.call(
        "Read",
        {"file_path": "/repo/web/src/lib/dates.test.ts"},
        numbered(
            "it('uses the local day', () => { process.env.TZ = 'Pacific/Auckland'; ... });\n"
            "it('is stable across locales', () => { setLocale('de-DE'); ... });\n"
        ),
    )
    t.call("Edit", back, cc_edited(path, "export function isoDay(d: Date): string {\n" + utc + "\n}", 1))  # return 1
    t.call("Bash", run, fail_utc, error=True)
    t.turn()
    onset = t.call("Edit", fwd, cc_edited(path, "export function isoDay(d: Date): string {\n" + local + "\n}", 1))
    t.call("Bash", run, fail_local, error=True)
    t.turn()
    at = t.call("Edit", back, cc_edited(path, "export function isoDay(d: Date): string {\n" + utc + "\n}", 1))
    t.call("Bash", run, fail_utc, error=True)
    t.turn()
    # Claude Code's Edit is a replacement (old_string -> new_string). The first swap back follows a visit
    # with news (the first run with toLocaleDateString, the test file read); from then on each state's
    # test run gives what it gave there before: the redo is a return after a fruitless visit (1), the next
    # swap back the 2nd -> intercepted (the older "3rd return" rule gave the same call)
    return t.loop(
        "edit_loop",
        at,
        onset,
        "Claude Code Edit flipping isoDay between toISOString and toLocaleDateString; each breaks the other test.",
        latest=at + 2,
    )


@scenario
def edit_flipflop_write_file_two_versions() -> Trace:
    t = Trace("edit_flipflop_write_file_two_versions")
    path = "/workspace/etl/schema.json"
    t.call(
        "read_text_file",
        {"path": path},
        '{"type": "object", "properties": {"amount": {"type": "number"}, "ts": {"type": "string"}}}',
    )
    t.turn()
    x = (
        '{"type": "object", "required": ["amount", "ts"], "properties": {"amount": {"type": "integer"}, "ts": '
        '{"type": "string", "format": "date-time"}}}'
    )
    y = (
        '{"type": "object", "required": ["amount", "ts"], "properties": {"amount": {"type": "number"}, "ts": '
        '{"type": "string", "format": "date-time"}}}'
    )
    check = {"command": "python -m etl.validate --sample data/sample_events.jsonl"}
    ex = "line 17: 12.5 is not of type 'integer' (properties.amount)\n1 invalid of 200"
    ey = "line 88: amount must be an integer number of cents for currency JPY\n1 invalid of 200"
    idx = []
    for content, err in [(x, ex), (y, ey), (x, ex), (y, ey), (x, ex)]:
        idx.append(t.call("write_file", {"path": path, "content": content}, f"Successfully wrote to {path}"))
        t.call("run_command", check, err, error=True)
        t.turn()
    # whole-content writes: x, y (new states), x again (a return after a visit with news: the first check
    # of y), y (a return after a fruitless visit: the check in x gave what it gave there before: 1), then
    # x would be the 2nd such return -> EditLoop at the 5th write. The content before the first write is
    # not known from any edit's arguments (reading it does not count). (The older "3rd return" rule gave
    # the same call.)
    return t.loop(
        "edit_loop",
        idx[4],
        idx[2],
        "MCP filesystem write_file alternating two versions of a JSON schema (integer vs number amounts).",
        latest=idx[4] + 2,
    )


def _nginx_upstreams() -> tuple[str, str, str, str]:
    """Two nginx configs (TCP vs unix socket upstream) and how each fails."""
    v1 = (
        "upstream app { server 127.0.0.1:8000; }\nserver {\n    listen 80;\n    location / {\n"
        "        proxy_pass http://app;\n        proxy_set_header Host $host;\n    }\n}\n"
    )
    v2 = (
        "upstream app { server unix:/run/app.sock; }\nserver {\n    listen 80;\n    location / {\n"
        "        proxy_pass http://app;\n        proxy_set_header Host $host;\n    }\n}\n"
    )
    e1 = (
        "curl: (22) The requested URL returned error: 502\n"
        "nginx error.log: connect() failed (111: Connection refused) while connecting to upstream 127.0.0.1:8000"
    )
    e2 = (
        "curl: (22) The requested URL returned error: 502\n"
        "nginx error.log: connect() to unix:/run/app.sock failed (13: Permission denied)"
    )
    return v1, v2, e1, e2


@scenario
def edit_flipflop_heredoc_config() -> Trace:
    t = Trace("edit_flipflop_heredoc_config")
    t.call(
        "bash",
        {"command": "cat deploy/nginx.conf"},
        "server {\n    listen 80;\n    location / { proxy_pass http://app; }\n}\n",
    )
    t.turn()
    v1, v2, e1, e2 = _nginx_upstreams()
    check = {"command": "nginx -c /srv/app/deploy/nginx.conf -s reload && curl -fsS http://localhost/healthz"}
    idx = []
    for body, err in [(v1, e1), (v2, e2), (v1, e1), (v2, e2), (v1, e1)]:
        idx.append(t.call("bash", {"command": f"cat > deploy/nginx.conf <<'EOF'\n{body}EOF"}, ""))
        t.call("bash", check, err, error=True)
        t.turn()
    # `cat > f <<'EOF'` gives the whole content. v1, v2 (new states), v1 again: a return, but after a visit
    # that learned something (the first check of v2), so not counted. In v1 the check gives what it gave
    # there before (a fruitless visit), then v2: the 1st counted return; the check in v2 repeats too, then
    # v1 would be the 2nd return after a fruitless visit (threshold 2) -> the 5th heredoc is intercepted.
    # (Labelled first with the older rule, "the 3rd return": the same call.)
    return t.loop(
        "edit_loop",
        idx[4],
        idx[2],
        "nginx upstream rewritten with heredocs, TCP vs unix socket, back and forth; each fails its own way.",
        latest=idx[4] + 2,
    )


@scenario
def edit_flipflop_heredoc_with_deploy_copy() -> Trace:
    t = Trace("edit_flipflop_heredoc_with_deploy_copy")
    t.call(
        "bash",
        {"command": "cat deploy/nginx.conf"},
        "server {\n    listen 80;\n    location / { proxy_pass http://app; }\n}\n",
    )
    t.turn()
    v1, v2, e1, e2 = _nginx_upstreams()
    check = {"command": "nginx -s reload && curl -fsS http://localhost/healthz"}
    idx = []
    for body, err in [(v1, e1), (v2, e2), (v1, e1), (v2, e2), (v1, e1)]:
        idx.append(t.call("bash", {"command": f"cat > deploy/nginx.conf <<'EOF'\n{body}EOF"}, ""))
        t.call("bash", {"command": "cp deploy/nginx.conf /etc/nginx/conf.d/app.conf"}, "")
        t.call("bash", check, err, error=True)
        t.turn()
    # The same flip-flop, but each heredoc is followed by a `cp` to the live config. By the docs (file
    # states): "other writes move the files to a state not seen before" -- a `cp` says nothing about what
    # the target holds, so after it the files are in a new state and the check's answer is never "what it
    # gave before in this same state": no visit is fruitless, and no return counts. The failures alternate
    # (no same failure) and each call follows a change (nothing stale). A real loop the documented rules do
    # not catch. (First labelled edit_loop at the 5th heredoc from the older "3rd return" rule; relabelled
    # after re-reading the flip-flop rule.)
    return t.loop(
        None,
        None,
        idx[2],
        "Heredoc flip-flop where each version is copied to the live config first: a documented blind spot.",
        latest=idx[4] + 3,
    )


@scenario
def edit_flipflop_three_values() -> Trace:
    t = Trace("edit_flipflop_three_values")
    ed = "str_replace_editor"
    path = "/repo/config/settings.py"
    t.call(ed, {"command": "view", "path": path}, cat_n(path, "DB_POOL_SIZE = 5\nDB_POOL_TIMEOUT_S = 10\n"))
    load = {"command": "locust -f loadtest.py --headless -u 200 -t 60s --only-summary"}
    outs = {
        "10": "Aggregated  p95 1900ms  failures 0.0%  rps 410\nFAIL: p95 above 800ms budget",
        "20": "Aggregated  p95 610ms  failures 4.1% (OperationalError: too many connections)\nFAIL: error budget",
        "5": "Aggregated  p95 2600ms  failures 0.0%  rps 300\nFAIL: p95 above 800ms budget",
    }
    t.call("bash", load, outs["5"], error=True)
    t.turn()
    seq = [("5", "10"), ("10", "20"), ("20", "5"), ("5", "10"), ("10", "20")]
    idx = []
    for old, new in seq:
        idx.append(
            t.call(
                ed,
                {
                    "command": "str_replace",
                    "path": path,
                    "old_str": f"DB_POOL_SIZE = {old}\n",
                    "new_str": f"DB_POOL_SIZE = {new}\n",
                },
                f"The file {path} has been edited.",
            )
        )
        t.call("bash", load, outs[new], error=True)
        t.turn()
    # contents: 5 (start), 10, 20, back to 5 (a return: str_replace needs a unique old_str, so the edits'
    # arguments say the file holds exactly what it held at the start; the visit before it had news), 10 (a
    # return after a fruitless visit: the load test at 5 gave what it gave there before), 20 (the 2nd such
    # return) -> the 5th edit is intercepted. "What a file holds is known from the edits' arguments"; the
    # guard only recognises a replacement reversed right after it, so a rotation of three values reads as
    # new states forever.
    return t.loop(
        "edit_loop",
        idx[4],
        idx[3],
        "Pool size rotated 5 -> 10 -> 20 -> 5 -> 10 -> 20 with a load test after each; none passes.",
        latest=idx[4] + 2,
    )


# -------------------------------------------------------------------------------------------------
# edit loops: the same check failing with the same error after 3 edit-then-check rounds
# -------------------------------------------------------------------------------------------------


@scenario
def edit_same_failure_pytest_str_replace() -> Trace:
    t = Trace("edit_same_failure_pytest_str_replace")
    ed = "str_replace_based_edit_tool"
    path = "/repo/src/tz/convert.py"
    test = {"command": "python -m pytest -q tests/test_dst.py"}

    def fail(s: str) -> str:
        return (
            "F...\n___________________ test_spring_forward ___________________\n    assert to_local(ts) == "
            "datetime(2025, 3, 30, 3, 0, tzinfo=BERLIN)\nE   AssertionError: assert datetime(2025, 3, 30, 2, 0, "
            f"tzinfo=BERLIN) == datetime(2025, 3, 30, 3, 0, tzinfo=BERLIN)\n\ntests/test_dst.py:41: AssertionError\n"
            f"1 failed, 3 passed in {s}"
        )

    t.call("bash", test, fail("0.21s"), error=True)
    t.call(
        ed,
        {"command": "view", "path": path},
        cat_n(
            path,
            "def to_local(ts, tz=BERLIN):\n    naive = ts.replace(tzinfo=None)\n    return naive.replace(tzinfo=tz)\n",
        ),
    )
    t.turn()
    edits = [
        ("    naive = ts.replace(tzinfo=None)", "    naive = ts.astimezone(UTC).replace(tzinfo=None)"),
        ("def to_local(ts, tz=BERLIN):", "def to_local(ts: datetime, tz: ZoneInfo = BERLIN) -> datetime:"),
        ("    return naive.replace(tzinfo=tz)", "    return naive.replace(tzinfo=tz, fold=0)"),
        ("    return naive.replace(tzinfo=tz, fold=0)", "    return (naive + tz.utcoffset(naive)).replace(tzinfo=tz)"),
        ("    return (naive + tz.utcoffset(naive)).replace(tzinfo=tz)", "    return naive.replace(tzinfo=tz)"),
        ("    naive = ts.astimezone(UTC).replace(tzinfo=None)", "    return ts.astimezone(tz)"),
    ]
    idx = []
    for n, (old, new) in enumerate(edits):
        idx.append(
            t.call(
                ed,
                {"command": "str_replace", "path": path, "old_str": old, "new_str": new},
                f"The file {path} has been edited.",
            )
        )
        out = fail(f"0.{22 + n}s") if n < 5 else "....\n4 passed in 0.19s"
        t.call("bash", test, out, error=n < 5)
        t.turn()
    # rounds 1-4 (edits idx[0..3], each followed by the same test failing the same way; only the duration
    # changes): the edit that starts round 5 (idx[4]) is intercepted. The first run, before any edit, is no
    # edit-then-check round.
    return t.loop(
        "edit_loop",
        idx[4],
        idx[1],
        "Edits to convert.py that never touch the DST bug: test_spring_forward fails the same way each round.",
        latest=idx[4] + 2,
    )


@scenario
def edit_same_failure_claude_edit_tsc() -> Trace:
    t = Trace("edit_same_failure_claude_edit_tsc")
    tsc = {"command": "npx tsc --noEmit -p .", "description": "Type-check the project"}
    err = (
        "src/api/client.ts(42,7): error TS2322: Type 'string | undefined' is not assignable to type 'string'.\n"
        "  Type 'undefined' is not assignable to type 'string'.\n\nFound 1 error in src/api/client.ts:42\n"
    )
    t.call("Bash", tsc, err, error=True)
    t.call(
        "Read",
        {"file_path": "/repo/src/api/client.ts", "offset": 30, "limit": 20},
        numbered(
            "export function makeClient(cfg: Config) {\n  const base = cfg.baseUrl ?? DEFAULT_BASE;\n"
            "  const token: string = process.env.API_TOKEN;\n  return new Client(base, token);\n}\n",
            40,
        ),
    )
    t.turn()
    edits = [
        ("/repo/src/api/config.ts", "  baseUrl?: string;", "  baseUrl: string;"),
        (
            "/repo/src/api/client.ts",
            "  const base = cfg.baseUrl ?? DEFAULT_BASE;",
            "  const base: string = cfg.baseUrl;",
        ),
        (
            "/repo/src/api/types.d.ts",
            "declare const DEFAULT_BASE: string;",
            "declare const DEFAULT_BASE: string | undefined;",
        ),
        ("/repo/src/env.d.ts", "    NODE_ENV: string;", "    NODE_ENV: string;\n    API_URL?: string;"),
        ("/repo/src/api/config.ts", "  baseUrl: string;", "  baseUrl: string;\n  timeoutMs?: number;"),
    ]
    idx = []
    for fp, old, new in edits:
        idx.append(t.call("Edit", {"file_path": fp, "old_string": old, "new_string": new}, cc_edited(fp, new, 3)))
        t.call("Bash", tsc, err, error=True)
        t.turn()
    t.call(
        "Edit",
        {
            "file_path": "/repo/src/api/client.ts",
            "old_string": "  const token: string = process.env.API_TOKEN;",
            "new_string": "  const token = process.env.API_TOKEN ?? '';",
        },
        cc_edited("/repo/src/api/client.ts", "  const token = process.env.API_TOKEN ?? '';", 42),
    )
    t.call("Bash", tsc, "")
    # the error is at client.ts line 42 (the token); the agent edits everything around it. Four Edit +
    # tsc rounds with the same TS2322 at the same place -> the 5th Edit (idx[4]) is intercepted
    return t.loop(
        "edit_loop",
        idx[4],
        idx[1],
        "Claude Code: five edits around a TS2322 error, the same tsc error after each, the real line untouched.",
        latest=idx[4] + 2,
    )


@scenario
def edit_same_failure_write_file_go() -> Trace:
    t = Trace("edit_same_failure_write_file_go")
    path = "internal/handler/users.go"
    test = {"command": "go test ./internal/handler/ -run TestCreateUser"}

    def fail(ms: str) -> str:
        return (
            f"--- FAIL: TestCreateUser ({ms}s)\n    users_test.go:48: status = 500, want 201\n    users_test.go:49: "
            'body = {"error":"insert user: pq: null value in column \\"org_id\\""}\nFAIL\n'
            f"FAIL\tgithub.com/acme/api/internal/handler\t0.{ms[-1]}31s\n"
        )

    t.call("bash", test, fail("0.01"), error=True)
    t.turn()
    bodies = [
        "package handler\n\n// CreateUser v2: validate email first\nfunc CreateUser(w http.ResponseWriter, r "
        "*http.Request) "
        "{ ... }\n",
        "package handler\n\n// CreateUser v3: return 400 on bad JSON\nfunc CreateUser(w http.ResponseWriter, r "
        "*http.Request) { ... }\n",
        "package handler\n\n// CreateUser v4: wrap the insert in a transaction\nfunc CreateUser("
        "w http.ResponseWriter, r "
        "*http.Request) { ... }\n",
        "package handler\n\n// CreateUser v5: log the request id\nfunc CreateUser(w http.ResponseWriter, r "
        "*http.Request) { ... }\n",
        "package handler\n\n// CreateUser v6: decode into a typed struct\nfunc CreateUser(w http.ResponseWriter, r "
        "*http.Request) { ... }\n",
    ]
    idx = []
    for n, body in enumerate(bodies):
        idx.append(t.call("write_file", {"path": path, "content": body}, f"Wrote {len(body)} bytes to {path}"))
        t.call("bash", test, fail(f"0.0{n + 2}"), error=True)
        t.turn()
    # five different whole-file rewrites (no content comes back); the same go test fails with the same
    # error after rounds 1-4 (durations differ only) -> the 5th write (idx[4]) is intercepted
    return t.loop(
        "edit_loop",
        idx[4],
        idx[1],
        "users.go rewritten five times; org_id is never set, the same test fails with the same 500 each round.",
        latest=idx[4] + 2,
    )


@scenario
def edit_same_failure_mcp_edit_file() -> Trace:
    t = Trace("edit_same_failure_mcp_edit_file")
    path = "/workspace/reports/export.py"
    check = {"path": "tests/test_export.py", "args": ["-q", "-x"]}
    err = (
        "FAILED tests/test_export.py::test_header_row - AssertionError: assert ['id', 'name', 'total'] == ['id', "
        "'name', 'total', 'currency']\n1 failed, 7 passed"
    )
    t.call("run_tests", check, err, error=True)
    t.call(
        "read_text_file",
        {"path": path},
        numbered("COLUMNS = ['id', 'name', 'total']\n\n\ndef header():\n    return COLUMNS\n"),
    )
    t.turn()
    edits = [
        ("def header():\n    return COLUMNS", "def header():\n    return list(COLUMNS)"),
        ("import csv", "import csv\nimport io"),
        ("    writer = csv.writer(fh)", "    writer = csv.writer(fh, lineterminator='\\n')"),
        ("    return list(COLUMNS)", "    return [c for c in COLUMNS]"),
        ("COLUMNS = ['id', 'name', 'total']", "COLUMNS = ('id', 'name', 'total')"),
    ]
    idx = []
    for old, new in edits:
        idx.append(
            t.call(
                "edit_file",
                {"path": path, "edits": [{"oldText": old, "newText": new}], "dryRun": False},
                f"```diff\n--- {path}\n+++ {path}\n-{old.splitlines()[-1]}\n+{new.splitlines()[-1]}\n```",
            )
        )
        t.call("run_tests", check, err, error=True)
        t.turn()
    # MCP filesystem edit_file (replacements); the check is the identical run_tests call, failing with the
    # same error after rounds 1-4 -> the 5th edit (idx[4]) is intercepted
    return t.loop(
        "edit_loop",
        idx[4],
        idx[1],
        "MCP edit_file rounds that never add the 'currency' column; the same header test fails each time.",
        latest=idx[4] + 2,
    )


@scenario
def edit_same_failure_sed_cargo() -> Trace:
    t = Trace("edit_same_failure_sed_cargo")
    test = {"command": "cargo test --quiet parse_duration"}

    def fail(s: str) -> str:
        return (
            ".F.\nfailures:\n---- parse::tests::parse_duration_hours stdout ----\nthread "
            "'parse::tests::parse_duration_hours' panicked at src/parse.rs:88:9:\nassertion `left == right` failed\n"
            '  left: Err(UnknownUnit("h"))\n right: Ok(3600s)\n\ntest result: FAILED. 2 passed; 1 failed; finished '
            f"in {s}\n"
        )

    t.call("bash", test, fail("0.02s"), error=True)
    t.call(
        "bash",
        {"command": "grep -n 'fn unit' -A8 src/parse.rs"},
        '41:fn unit(s: &str) -> Result<u64, Error> {\n42:    match s {\n43:        "s" => Ok(1),\n'
        '44:        "m" => Ok(60),\n',
    )
    t.turn()
    seds = [
        'sed -i \'s/"m" => Ok(60)/"m" | "min" => Ok(60)/\' src/parse.rs',
        'sed -i \'s/"s" => Ok(1)/"s" | "sec" => Ok(1)/\' src/parse.rs',
        "sed -i 's/s.trim()/s.trim().to_lowercase()/' src/parse.rs",
        'sed -i \'/"m" | "min"/a\\        "hr" => Ok(3600),\' src/parse.rs',
        "sed -i 's/Error::Unknown/Error::UnknownUnit/' src/parse.rs",
        'sed -i \'s/"hr" => Ok(3600)/"h" | "hr" => Ok(3600)/\' src/parse.rs',
    ]
    idx = []
    for n, cmd in enumerate(seds):
        idx.append(t.call("bash", {"command": cmd}, ""))
        out = fail(f"0.0{n + 3}s") if n < 5 else "...\ntest result: ok. 3 passed; 0 failed\n"
        t.call("bash", test, out, error=n < 5)
        t.turn()
    # `sed -i` is a write (a new epoch each time). Rounds 1-4 end in the same panic at the same place
    # (parse.rs:88:9, unit "h"): the 5th sed (idx[4]) is intercepted
    return t.loop(
        "edit_loop",
        idx[4],
        idx[1],
        "sed -i edits that add every unit but 'h'; cargo test fails with the same panic each round.",
        latest=idx[4] + 2,
    )


@scenario
def edit_same_failure_no_baseline_run() -> Trace:
    t = Trace("edit_same_failure_no_baseline_run")
    t.call(
        "mcp__github__get_issue",
        {"owner": "acme", "repo": "ledger", "issue_number": 912},
        '{"number": 912, "title": "Monthly statement off by one day for UTC-5 accounts", "labels": ["bug"]}',
    )
    t.call(
        "Read",
        {"file_path": "/repo/ledger/statements.py"},
        numbered(
            "def period(month, tz):\n    start = datetime(month.year, month.month, 1)\n"
            "    end = start + relativedelta(months=1)\n    return start, end\n"
        ),
    )
    t.turn()
    run = {"command": "python -m pytest -q tests/test_statements.py::test_period_utc_minus5"}

    def fail(s: str) -> str:
        return (
            "F\nE   AssertionError: assert (datetime(2025, 11, 1, 0, 0), datetime(2025, 12, 1, 0, 0)) == "
            "(datetime(2025, 11, 1, 5, 0), datetime(2025, 12, 1, 5, 0))\ntests/test_statements.py:30: "
            f"AssertionError\n1 failed in {s}"
        )

    t.call(
        "MultiEdit",
        {
            "file_path": "/repo/ledger/statements.py",
            "edits": [
                {"old_string": "def period(month, tz):", "new_string": "def period(month: date, tz: ZoneInfo):"},
                {"old_string": "    return start, end", "new_string": "    return (start, end)"},
            ],
        },
        "Applied 2 edits to /repo/ledger/statements.py",
    )
    t.call("Bash", run, fail("0.11s"), error=True)  # round 1 (no run before the first edit)
    t.turn()
    idx = []
    for n, (old, new) in enumerate(
        [
            ("    end = start + relativedelta(months=1)", "    end = start + relativedelta(months=+1)"),
            (
                "    start = datetime(month.year, month.month, 1)",
                "    start = datetime(month.year, month.month, 1, 0, 0)",
            ),
            ("    return (start, end)", "    return (start.replace(tzinfo=None), end.replace(tzinfo=None))"),
            ("    end = start + relativedelta(months=+1)", "    end = start + relativedelta(months=1, days=0)"),
        ]
    ):
        idx.append(
            t.call(
                "Edit",
                {"file_path": "/repo/ledger/statements.py", "old_string": old, "new_string": new},
                cc_edited("/repo/ledger/statements.py", new, 2 + n),
            )
        )
        t.call("Bash", run, fail(f"0.1{n + 2}s"), error=True)
        t.turn()
    t.call(
        "Edit",
        {
            "file_path": "/repo/ledger/statements.py",
            "old_string": "    start = datetime(month.year, month.month, 1, 0, 0)",
            "new_string": "    start = datetime(month.year, month.month, 1, tzinfo=tz).astimezone(UTC)",
        },
        cc_edited("/repo/ledger/statements.py", "    start = datetime(month.year, month.month, 1, tzinfo=tz)", 2),
    )
    t.call("Bash", run, ".\n1 passed in 0.10s")
    # the agent edits straight from the issue: the MultiEdit and the next three Edits are four
    # edit-then-check rounds, each ending in the same assertion (only the duration changes) -> the edit that
    # starts round 5 (idx[3]) is intercepted. Nothing failed before the first edit: that is not needed, the
    # rounds are (the first run of the check ends a round when an edit came before it).
    return t.loop(
        "edit_loop",
        idx[3],
        idx[0],
        "Claude Code fixes a timezone bug from the issue text; four edit-test rounds end in the same assertion.",
        latest=idx[3] + 2,
    )


@scenario
def edit_same_failure_after_different_baseline() -> Trace:
    t = Trace("edit_same_failure_after_different_baseline")
    ed = "str_replace_based_edit_tool"
    path = "/repo/app/models/invoice.rb"
    spec = {"command": "bundle exec rspec spec/models/invoice_spec.rb"}
    t.call(
        "bash",
        spec,
        "An error occurred while loading ./spec/models/invoice_spec.rb.\nNameError:\n  uninitialized constant "
        "Invoice::TaxRule\n0 examples, 0 failures, 1 error occurred outside of examples",
        error=True,
    )
    t.call(
        ed,
        {"command": "view", "path": path},
        cat_n(path, "class Invoice < ApplicationRecord\n  include TaxRule\n\n  def total\n    net + tax\n  end\nend\n"),
    )
    t.turn()

    def fail(s: str) -> str:
        return (
            "F..\n\nFailures:\n\n  1) Invoice#total includes reverse-charge VAT as zero\n     Failure/Error: "
            "expect(invoice.total).to eq(100.0)\n\n       expected: 100.0\n            got: 119.0\n"
            f"     # ./spec/models/invoice_spec.rb:14\n\nFinished in {s}\n3 examples, 1 failure"
        )

    edits = [
        ("  include TaxRule", "  include Billing::TaxRule"),  # fixes the load error; a new failure shows
        ("  def total\n    net + tax\n  end", "  def total\n    (net + tax).round(2)\n  end"),
        ("class Invoice < ApplicationRecord", "class Invoice < ApplicationRecord\n  belongs_to :customer"),
        ("  include Billing::TaxRule", "  include Billing::TaxRule\n  include Billing::Rounding"),
        ("  belongs_to :customer", "  belongs_to :customer, optional: false"),
        ("    (net + tax).round(2)", "    (net + (reverse_charge? ? 0 : tax)).round(2)"),
    ]
    idx = []
    for n, (old, new) in enumerate(edits):
        idx.append(
            t.call(
                ed,
                {"command": "str_replace", "path": path, "old_str": old, "new_str": new},
                f"The file {path} has been edited.",
            )
        )
        out = fail(f"0.0{n + 4} seconds") if n < 5 else "...\n\nFinished in 0.05 seconds\n3 examples, 0 failures"
        t.call("bash", spec, out, error=n < 5)
        t.turn()
    # before any edit the spec fails to load (another error); the first edit fixes that and the spec now
    # fails on reverse charge. Rounds 1-4 (idx[0..3]) all end in that same failure: the edit that starts
    # round 5 (idx[4]) is intercepted ("after each of the last 4 edit-then-check rounds in a row")
    return t.loop(
        "edit_loop",
        idx[4],
        idx[1],
        "Rails model: after the load error is fixed, four edit-spec rounds end in the same reverse-charge failure.",
        latest=idx[4] + 2,
    )


# -------------------------------------------------------------------------------------------------
# healthy edit-then-check rounds
# -------------------------------------------------------------------------------------------------


@scenario
def healthy_edit_rounds_failure_changes() -> Trace:
    t = Trace("healthy_edit_rounds_failure_changes")
    ed = "str_replace_based_edit_tool"
    path = "/repo/src/ics/parse.py"
    test = {"command": "python -m pytest -q tests/test_ics.py"}
    t.call("bash", test, "F\nE   KeyError: 'DTSTART'\ntests/test_ics.py:12: KeyError\n1 failed in 0.05s", error=True)
    t.call(
        ed,
        {"command": "view", "path": path},
        cat_n(
            path,
            "def parse_event(lines):\n    props = dict(l.split(':', 1) for l in lines)\n    return props['DTSTART']\n",
        ),
    )
    t.turn()
    rounds = [
        (
            "    props = dict(l.split(':', 1) for l in lines)",
            "    props = dict(l.split(':', 1) for l in unfold(lines))",
            "F\nE   NameError: name 'unfold' is not defined\nsrc/ics/parse.py:2: NameError\n1 failed in 0.04s",
        ),
        (
            "def parse_event(lines):",
            "def unfold(lines):\n    return [l for l in lines]\n\n\ndef parse_event(lines):",
            "F\nE   KeyError: 'DTSTART'\ntests/test_ics.py:12: KeyError\n"
            "E   (lines: ['DTSTART;TZID=Europe/Paris:20251201T090000'])\n"
            "1 failed in 0.05s",
        ),
        (
            "    props = dict(l.split(':', 1) for l in unfold(lines))",
            "    props = {k.split(';')[0]: v for k, v in (l.split(':', 1) for l in unfold(lines))}",
            "F\nE   AssertionError: assert '20251201T090000' == datetime(2025, 12, 1, 9, 0, tzinfo=PARIS)\n"
            "tests/test_ics.py:14: AssertionError\n1 failed in 0.05s",
        ),
        (
            "    return props['DTSTART']",
            "    return to_datetime(props['DTSTART'], tz=PARIS)",
            ".\n1 passed in 0.04s",
        ),
    ]
    for old, new, out in rounds:
        t.call(
            ed,
            {"command": "str_replace", "path": path, "old_str": old, "new_str": new},
            f"The file {path} has been edited.",
        )
        t.call("bash", test, out, error="failed" in out)
        t.turn()
    t.answer("DTSTART with a TZID parameter now parses to an aware datetime.")
    # every round's failure is a different error (NameError, a KeyError with new context, an assertion at
    # another line), so no same-failure run; no content comes back
    return t.healthy("Four str_replace + pytest rounds, the failure different each time, then the test passes.")


@scenario
def healthy_edit_rounds_same_failure_twice_then_pass() -> Trace:
    t = Trace("healthy_edit_rounds_same_failure_twice_then_pass")
    run = {"command": "npm test -- --run src/cart.test.ts", "description": "Run the cart tests"}

    def fail(ms: int) -> str:
        return (
            " FAIL  src/cart.test.ts > total > applies the voucher after tax\nAssertionError: expected 107.1 to be "
            f"107.19\n      Tests  1 failed | 11 passed (12)\n   Duration  {ms}ms"
        )

    t.call("Bash", run, fail(640), error=True)
    t.call(
        "Read",
        {"file_path": "/repo/src/cart.ts"},
        numbered(
            "export function total(c: Cart) {\n  const net = sum(c.lines);\n"
            "  return round1(applyVoucher(net, c.voucher) * TAX);\n}\n"
        ),
    )
    t.turn()
    edits = [
        (
            "/repo/src/cart.ts",
            "  const net = sum(c.lines);",
            "  const net = sum(c.lines.filter((l) => l.qty > 0));",
            fail(610),
        ),
        ("/repo/src/money.ts", "export const TAX = 1.19;", "export const TAX = 119 / 100;", fail(655)),
        (
            "/repo/src/cart.ts",
            "  return round1(applyVoucher(net, c.voucher) * TAX);",
            "  return round2(applyVoucher(net * TAX, c.voucher));",
            " ✓ src/cart.test.ts (12)\n      Tests  12 passed (12)\n   Duration  602ms",
        ),
    ]
    for fp, old, new, out in edits:
        t.call("Edit", {"file_path": fp, "old_string": old, "new_string": new}, cc_edited(fp, new, 2))
        t.call("Bash", run, out, error="FAIL" in out)
        t.turn()
    t.answer("The voucher now applies after tax, rounded to cents; all 12 cart tests pass.")
    # the first run (before any edit) is no round; rounds 1 and 2 end in the same failure, round 3 passes:
    # 2 same-failure rounds in a row at most (the threshold is 3)
    return t.healthy("Claude Code: the same test failure after two edit rounds, then the third edit fixes it.")


@scenario
def healthy_edit_rounds_revert_verify_reapply() -> Trace:
    t = Trace("healthy_edit_rounds_revert_verify_reapply")
    ed = "str_replace_editor"
    path = "/repo/src/auth/tokens.py"
    bad = "    return hmac.new(key, msg, 'sha256').hexdigest() == sig"
    good = "    return hmac.compare_digest(hmac.new(key, msg, 'sha256').hexdigest(), sig)"
    t.call(ed, {"command": "view", "path": path}, cat_n(path, f"import hmac\n\n\ndef verify(key, msg, sig):\n{bad}\n"))
    t.call(
        ed,
        {
            "command": "create",
            "path": "/repo/tests/test_tokens_timing.py",
            "file_text": "def test_uses_compare_digest(monkeypatch):\n    calls = []\n    ...\n    assert calls\n",
        },
        "File created successfully at: /repo/tests/test_tokens_timing.py",
    )
    t.turn()
    test = {"command": "python -m pytest -q tests/test_tokens_timing.py"}
    fix = {"command": "str_replace", "path": path, "old_str": bad, "new_str": good}
    revert = {"command": "str_replace", "path": path, "old_str": good, "new_str": bad}
    t.call(ed, fix, f"The file {path} has been edited.")
    t.call("bash", test, ".\n1 passed in 0.02s")
    t.turn()
    t.call(ed, revert, f"The file {path} has been edited.")  # return 1: does the new test catch the bug?
    t.call("bash", test, "F\nE   assert []\n1 failed in 0.02s", error=True)
    t.turn()
    t.call(ed, fix, f"The file {path} has been edited.")  # return 2: put the fix back
    t.call("bash", test, ".\n1 passed in 0.02s")
    t.call("bash", {"command": "python -m pytest -q"}, "..............................\n30 passed in 0.61s")
    t.answer("verify() uses hmac.compare_digest; the new test fails without the fix and passes with it.")
    # two returns (revert the fix to see the test fail, then reapply it): "ordinary work" (docs/detectors.md):
    # each comes after a visit that learned something (the first run with the fix, the first run without
    # it), so neither counts for the flip-flop rule
    return t.healthy("Fix, revert it to check the new test fails, reapply: two returns of tokens.py, no third.")


@scenario
def healthy_edit_rounds_rewrite_same_content() -> Trace:
    t = Trace("healthy_edit_rounds_rewrite_same_content")
    path = "src/report/totals.py"
    test = {"command": "python -m pytest -q tests/test_totals.py"}

    def fail(s: str) -> str:
        return (
            "F.\nE   assert totals(rows)['EUR'] == Decimal('10.30')\nE    +  where Decimal('10.3') ...\n"
            f"1 failed, 1 passed in {s}"
        )

    t.call("read_file", {"path": path}, numbered("def totals(rows):\n    out = {}\n    ...\n    return out\n"))
    t.call("bash", test, fail("0.09s"), error=True)
    t.turn()
    c1 = (
        "from decimal import Decimal\n\n\ndef totals(rows):\n    out = {}\n    for r in rows:\n"
        "        out[r.cur] = out.get(r.cur, 0) + Decimal(r.amount)\n    return out\n"
    )
    c2 = c1.replace("out.get(r.cur, 0)", "out.get(r.cur, Decimal(0))")
    c3 = c2.replace("    return out\n", "    return {k: v.quantize(Decimal('0.01')) for k, v in out.items()}\n")
    t.call("write_file", {"path": path, "content": c1}, f"Wrote {len(c1)} bytes to {path}")
    t.call("bash", test, fail("0.08s"), error=True)  # round 1
    t.turn()
    t.call("write_file", {"path": path, "content": c2}, f"Wrote {len(c2)} bytes to {path}")
    t.call("bash", test, fail("0.08s"), error=True)  # round 2
    t.turn()
    t.call("write_file", {"path": path, "content": c2}, f"Wrote {len(c2)} bytes to {path}")  # what it holds
    t.call("bash", test, fail("0.10s"), error=True)
    t.turn()
    t.call("read_file", {"path": path}, numbered(c2))
    t.call("write_file", {"path": path, "content": c3}, f"Wrote {len(c3)} bytes to {path}")
    t.call("bash", test, "..\n2 passed in 0.08s")
    t.answer("Totals are quantized to cents now; both tests pass.")
    # the third write_file gives the content the file already holds: "no state change (no new epoch)".
    # So it is no edit: the test run after it is the same check again in the same epoch (stale once, no
    # new round), and the real rounds ending in this failure are only two -> the next real edit is allowed
    return t.healthy(
        "Two edit rounds with the same failure, a rewrite of the same content and a re-run, then a real fix."
    )


@scenario
def healthy_edit_rounds_one_revert_new_approach() -> Trace:
    t = Trace("healthy_edit_rounds_one_revert_new_approach")
    path = "/repo/app/search.py"
    slow = "    hits = [d for d in DOCS if q.lower() in d.text.lower()]"
    regex = "    hits = [d for d in DOCS if re.search(q, d.text, re.I)]"
    index = "    hits = INDEX.lookup(q)"
    test = {"command": "python -m pytest -q tests/test_search.py --durations=1"}
    t.call("Read", {"file_path": path}, numbered(f"def search(q):\n{slow}\n    return hits[:20]\n"))
    t.call(
        "Bash",
        {"command": test["command"]},
        "F..\nE   Failed: test_search_speed took 2.41s > 0.5s budget\n1 failed, 2 passed",
        error=True,
    )
    t.turn()
    t.call("Edit", {"file_path": path, "old_string": slow, "new_string": regex}, cc_edited(path, regex, 2))
    t.call(
        "Bash",
        {"command": test["command"]},
        ".F.\nE   re.error: unterminated character set at position 0\n1 failed, 2 passed",
        error=True,
    )
    t.turn()
    t.call("Edit", {"file_path": path, "old_string": regex, "new_string": slow}, cc_edited(path, slow, 2))  # return 1
    t.call("Edit", {"file_path": path, "old_string": slow, "new_string": index}, cc_edited(path, index, 2))
    t.call(
        "Write",
        {
            "file_path": "/repo/app/index.py",
            "content": "class Index:\n    def lookup(self, q):\n        ...\n\n\nINDEX = Index()\n",
        },
        "File created successfully at: /repo/app/index.py",
    )
    t.call("Bash", {"command": test["command"]}, "...\n3 passed in 0.21s")
    t.answer("search() now uses an inverted index; the speed test passes.")
    # one return (the regex attempt reverted) then a new content: "one return is ordinary work"
    return t.healthy("Claude Code: a failed attempt reverted once, then a different approach that passes.")


# -------------------------------------------------------------------------------------------------
# machine-speed calls (a program around a tool): speed is evidence, not a verdict
# -------------------------------------------------------------------------------------------------


@scenario
def healthy_machine_speed_mcp_rows() -> Trace:
    t = Trace("healthy_machine_speed_mcp_rows")
    t.call("mcp__postgres__list_tables", {}, '["events", "users", "sessions", "invoices"]', think=3.0)
    t.turn()
    kinds = ["signup", "login", "purchase", "refund", "logout"]
    for page in range(40):
        rows = [
            {"id": 500 * page + k, "kind": kinds[(page + k) % 5], "user_id": 9000 + (37 * (page * 3 + k)) % 4100}
            for k in range(3)
        ]
        t.call(
            "mcp__postgres__query",
            {"sql": f"SELECT id, kind, user_id FROM events ORDER BY id LIMIT 500 OFFSET {500 * page}"},
            json.dumps([*rows, {"...": "497 more rows"}]),
            think=4.0 if page == 0 else 0.015,
            took=0.006,
        )
    t.turn()
    t.answer("Exported 20,000 events to the warehouse staging table.")
    # 40 pages at ~50 calls per second: the last 30 calls are machine speed from call 31 on, but every page
    # is new content, so rate gives a warning at most (a warning is not an intervention)
    return t.healthy("An export script paging an MCP Postgres tool at ~50 calls/s; every page brings new rows.")


@scenario
def rate_machine_speed_mixed_failures() -> Trace:
    t = Trace("rate_machine_speed_mixed_failures")
    t.call("get_catalog", {"category": "coffee-grinders"}, [f"SKU-{1000 + j}" for j in range(36)], think=3.0)
    t.turn()
    t.call("read_file", {"path": "jobs/reprice.yaml"}, "source: pricing-service\nmarkup: 1.18\nbatch: 36\n")
    t.turn()
    onset = t.calls + 1
    failures = 0
    for j in range(36):
        sku = f"SKU-{1000 + j}"
        think = 4.0 if j == 0 else 0.012
        if j % 3 == 2:
            t.call("get_price", {"sku": sku}, {"sku": sku, "cost_eur": round(40 + 3.7 * j, 2)}, think=think, took=0.003)
        else:
            failures += 1
            t.call(
                "get_price",
                {"sku": sku},
                f"ConnectionResetError: [Errno 104] Connection reset by peer (pricing-{failures}.internal:8443)",
                error=True,
                think=think,
                took=0.003,
            )
    # a retry loop around a flaky pricing service: 36 calls ~65 per second. The 30th burst call is the first
    # whose last 30 calls all lie in the burst (call onset-1 was seconds earlier); 20 of those 30 failed
    # (each naming another backend node: no error repeats, no identical call repeats), so at least half came
    # back with nothing -> Rate intervenes
    return t.loop(
        "rate",
        onset + 29,
        onset,
        "Machine-speed price fetches where two of every three calls fail (different nodes each time).",
    )


@scenario
def machine_speed_identical_not_found_repeat() -> Trace:
    t = Trace("machine_speed_identical_not_found_repeat")
    t.call(
        "create_export",
        {"dataset": "orders", "month": "2025-11", "format": "csv"},
        {"export_id": "exp_81", "ready": True},
        think=3.0,
    )
    t.turn()
    for i in range(40):
        t.call(
            "get_export",
            {"export_id": "exp_18"},  # the script has the id wrong
            "Export exp_18 not found",
            think=4.0 if i == 0 else 0.01,
            took=0.004,
        )
    # a `while not found` loop at ~70 calls per second; Repeat has priority over Rate and fires first: the
    # 3rd identical call in a row, the previous 2 returned the same "not found" (call 4)
    return t.loop(
        "repeat",
        4,
        3,
        "A script polls get_export with a mistyped id 40 times at machine speed; the same 'not found' each time.",
    )


@scenario
def machine_speed_distinct_empty_lookups_drift() -> Trace:
    t = Trace("machine_speed_distinct_empty_lookups_drift")
    gtins = [f"0400{3721000 + 17 * k:09d}" for k in range(40)]
    t.call(
        "load_feed",
        {"url": "sftp://feeds.example.com/supplier-7/products.csv"},
        {"rows": 40, "gtins": gtins},
        think=3.0,
    )
    t.turn()
    idx = []
    for k, g in enumerate(gtins):
        idx.append(
            t.call(
                "lookup_product",
                {"gtin": g, "catalog": "staging-eu"},
                {"status": "not_found", "message": "No product with this GTIN in catalog staging-eu."},
                think=4.0 if k == 0 else 0.01,
                took=0.004,
            )
        )
    # a sync script pointed at an empty staging catalog: 40 distinct lookups, all not_found. Drift comes
    # before Rate in priority and fires first: after 5 empty lookups while nothing new came back, the 6th
    return t.loop(
        "drift",
        idx[5],
        idx[1],
        "A feed sync looks up 40 GTINs at machine speed in an empty catalog; every answer is not_found.",
    )


@scenario
def healthy_machine_speed_contact_updates() -> Trace:
    t = Trace("healthy_machine_speed_contact_updates")
    ids = [f"c_{71000 + 13 * k}" for k in range(40)]
    t.call("export_segment", {"segment": "newsletter-optin-2025-11"}, {"contacts": ids}, think=3.0)
    t.turn()
    for k, c in enumerate(ids):
        t.call(
            "update_contact",
            {"contact_id": c, "fields": {"consent_email": True, "consent_source": "form-2025-11"}},
            {"contact_id": c, "updated": ["consent_email", "consent_source"]},
            think=4.0 if k == 0 else 0.012,
            took=0.005,
        )
    t.turn()
    t.answer("Consent recorded for all 40 contacts.")
    # 40 successful updates at ~60 per second: each is a state change (something new), so rate warns at most
    return t.healthy("A batch job updating 40 CRM contacts at machine speed; every update succeeds.")


# =================================================================================================
# Field shapes. Labels worked out by hand from docs/escalation.md ("When the guard halts", "One step per
# model turn"), docs/detectors.md, docs/guard.md ("Calls that did not run") and docs/trace-format.md
# (``message_id``, ``outcome``), in the comment next to each expectation. Replay is a what-if: the recorded
# run goes on after advice and blocks; ``halt`` is the call at which the run is halted (``None``: never).
#
# The ladder as these labels read it: the first intervention on a loop advises; if the loop goes on with
# nothing new since, the next step blocks; once more on that very loop, it halts. Weak evidence (the same
# error from calls on different targets, idle turns in different words, re-reads in a varying order)
# advises, then warns for ``patience`` (3) signals, then blocks, and never halts. A step is a model message
# (``message_id``), else a model turn (``turn_end``), else a call after a result (or the very call just
# intercepted). The user's words (and a refusal) start the ladder over.
# =================================================================================================


def message_ids(prefix: str) -> Callable[[], str]:
    """Deterministic model message ids (``msg_01...`` for Anthropic, ``resp_...`` for OpenAI responses)."""
    n = [0]

    def nxt() -> str:
        n[0] += 1
        return f"{prefix}{(n[0] * 7919) % 100000:05d}{n[0]:03d}"

    return nxt


CC_NOT_EXIST = "<tool_use_error>File does not exist.</tool_use_error>"
CC_NOT_READ = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
CC_SIBLING = "<tool_use_error>Sibling tool call errored</tool_use_error>"
CC_REFUSED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
    "to proceed."
)
WEBSHOP_INVALID = "Invalid action!"


def webshop_results(query: str, items: list[tuple[str, str, str]], page: int = 1) -> str:
    """A WebShop results page: the clickable ids are the ASINs, not the titles."""
    rows = " [SEP] ".join(f"{asin} [SEP] {title} [SEP] {price}" for asin, title, price in items)
    return (
        f"[Back to Search] [SEP] Page {page} (Total results: 50) [SEP] [Next >] [SEP] {rows}"
        if page == 1
        else f"[Back to Search] [SEP] Page {page} (Total results: 50) [SEP] [< Prev] [SEP] [Next >] [SEP] {rows}"
    ) + f" (query: {query})"


def webshop_item(title: str, price: str, options: dict[str, list[str]], chosen: tuple[str, ...] = ()) -> str:
    opts = " [SEP] ".join(
        f"{name} [SEP] " + " [SEP] ".join(f"{v} (selected)" if v in chosen else v for v in values)
        for name, values in options.items()
    )
    return (
        f"[Back to Search] [SEP] [< Prev] [SEP] {opts} [SEP] {title} [SEP] Price: {price} [SEP] Rating: N.A. "
        "[SEP] [Description] [SEP] [Features] [SEP] [Reviews] [SEP] [Buy Now]"
    )


def webshop_bought(asin: str, options: dict[str, str], score: float) -> str:
    return (
        "Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] (Paste it in your MTurk interface.) "
        f"[SEP] Purchased [SEP] asin [SEP] {asin} [SEP] options [SEP] {json.dumps(options)} [SEP] Reward [SEP] "
        f"Your score (min 0.0, max 1.0) [SEP] {score}"
    )


# -------------------------------------------------------------------------------------------------
# a web-shop agent's click tool: "Invalid action!" for wrong targets
# -------------------------------------------------------------------------------------------------


@scenario
def field_webshop_wrong_clicks_then_buy() -> Trace:
    t = Trace("field_webshop_wrong_clicks_then_buy")
    q = "men's slim fit chino pants navy 32w x 30l price lower than 40.00 dollars"
    items = [
        ("B09QKP7XQL", "Men's Slim Fit Stretch Chino Pants, Flat Front Casual Trousers", "$34.99"),
        ("B07JVVDJ6L", "Amazon Essentials Men's Slim-Fit Casual Stretch Khaki Pant", "$26.90"),
        ("B08Y8BRT3N", "Dockers Men's Slim Fit Signature Khaki Lux Cotton Stretch Pants", "$44.99"),
    ]
    t.call("search", {"keywords": q}, webshop_results(q, items))
    t.turn()
    for title in [
        "Men's Slim Fit Stretch Chino Pants, Flat Front Casual Trousers",
        "Men's Slim Fit Stretch Chino Pants",
        "Slim Fit Stretch Chino Pants Navy",
    ]:
        t.call("click", {"target": title}, WEBSHOP_INVALID, error=True)
        t.turn()
    opts = {"color": ["black", "khaki", "navy", "olive"], "size": ["30w x 30l", "32w x 30l", "32w x 32l"]}
    title, price = items[0][1], items[0][2]
    t.call("click", {"target": "B09QKP7XQL"}, webshop_item(title, price, opts))
    t.turn()
    t.call("click", {"target": "navy"}, webshop_item(title, price, opts, ("navy",)))
    t.turn()
    t.call("click", {"target": "32w x 30l"}, webshop_item(title, price, opts, ("navy", "32w x 30l")))
    t.turn()
    t.call("click", {"target": "Buy Now"}, webshop_bought("B09QKP7XQL", {"color": "navy", "size": "32w x 30l"}, 1.0))
    t.turn()
    # Three clicks on product titles, each answered "Invalid action!" (the clickable id is the ASIN): the same
    # error from calls on different targets (each click's only short argument) is exploration and counts
    # only at 5 with nothing else happening (docs/detectors.md, error_repeat). The 3rd failure is followed
    # by the ASIN click, which brings a new page and starts the count over; no call is repeated.
    return t.healthy("WebShop agent clicks three product titles (Invalid action!), then the ASIN, options, Buy Now.")


@scenario
def field_webshop_two_wrong_clicks_message_ids() -> Trace:
    t = Trace("field_webshop_two_wrong_clicks_message_ids", id_prefix="call_")
    m = message_ids("resp_0c1f")
    q = "waterproof bluetooth speaker with 20 hour battery under 50 dollars"
    p1 = [
        ("B07QK2SPP7", "Anker Soundcore 2 Portable Bluetooth Speaker, IPX7 Waterproof, 24H Playtime", "$39.99"),
        ("B01IOD6L7S", "Tribit XSound Go Bluetooth Speaker, 24H Playtime, IPX7", "$32.99"),
    ]
    p2 = [
        ("B08CZK1Y5M", "JBL Clip 4 Ultra-Portable Waterproof Speaker", "$49.95"),
        ("B09B2SBNDB", "Doss SoundBox Pro+ Wireless Bluetooth Speaker", "$45.99"),
    ]
    t.call("search", {"keywords": q}, webshop_results(q, p1), message=m())
    t.call("click", {"target": "Next >"}, webshop_results(q, p2, page=2), message=m())
    t.call(
        "click", {"target": "JBL Clip 4 Ultra-Portable Waterproof Speaker"}, WEBSHOP_INVALID, error=True, message=m()
    )
    t.call("click", {"target": "Next"}, WEBSHOP_INVALID, error=True, message=m())
    t.call("click", {"target": "< Prev"}, webshop_results(q, p1), message=m())
    opts = {"color": ["black", "blue", "red"]}
    t.call("click", {"target": "B07QK2SPP7"}, webshop_item(p1[0][1], p1[0][2], opts), message=m())
    t.call("click", {"target": "black"}, webshop_item(p1[0][1], p1[0][2], opts, ("black",)), message=m())
    t.call("click", {"target": "Buy Now"}, webshop_bought("B07QK2SPP7", {"color": "black"}, 1.0), message=m())
    # turns known by message ids only (one call per response). Two "Invalid action!" (a title, then "Next"
    # without its ">") on different targets, after the page-2 click brought something new: 2 of the 5 that
    # weak evidence needs. "< Prev" returns page 1, which the search tool had returned but click had not:
    # new for click. No call is repeated.
    return t.healthy("WebShop agent (message ids only) pages on, clicks a title and a bad label, then buys.")


@scenario
def field_webshop_four_wrong_actions_then_options() -> Trace:
    t = Trace("field_webshop_four_wrong_actions_then_options")
    q = "women's lightweight rain jacket with hood red size small"
    items = [
        ("B0BX4V2K7M", "Columbia Women's Switchback III Jacket, Red Lily", "$45.00"),
        ("B07PNM6ZJQ", "Outdoor Ventures Women's Rain Jacket Lightweight Waterproof Hooded", "$42.99"),
        ("B09NQ8S3CF", "Little Donkey Andy Women's Lightweight Rain Jacket Packable", "$59.99"),
    ]
    t.call("webshop", {"action": f"search[{q}]"}, webshop_results(q, items))
    t.turn()
    for wrong in [
        "click[Columbia Women's Switchback III Jacket, Red Lily]",
        "click[Columbia Women's Switchback III Jacket]",
        "click[Switchback III Jacket]",
        "click[Red Lily]",
    ]:
        t.call("webshop", {"action": wrong}, WEBSHOP_INVALID, error=True)
        t.turn()
    opts = {"color": ["black", "red lily", "collegiate navy"], "size": ["x-small", "small", "medium", "large"]}
    title, price = items[0][1], items[0][2]
    t.call("webshop", {"action": "click[B0BX4V2K7M]"}, webshop_item(title, price, opts))
    t.turn()
    t.call("webshop", {"action": "click[red lily]"}, webshop_item(title, price, opts, ("red lily",)))
    t.turn()
    t.call("webshop", {"action": "click[small]"}, webshop_item(title, price, opts, ("red lily", "small")))
    t.turn()
    t.call(
        "webshop",
        {"action": "click[Buy Now]"},
        webshop_bought("B0BX4V2K7M", {"color": "red lily", "size": "small"}, 1.0),
    )
    t.turn()
    # one tool for every action ({"action": "click[...]"}, a call's only short argument: its target). Four
    # wrong clicks in a row, each on another target, nothing new in between: 4 of the 5 that weak evidence
    # needs, so the 5th click (the right one) is not touched; it brings a new page and the count starts over
    return t.healthy("WebShop agent with one action tool: four wrong titles in a row, then the ASIN, options, buy.")


WRONG_TITLES = [
    "Hamilton Beach 2-Slice Extra-Wide Slot Toaster",
    "2-Slice Extra-Wide Slot Toaster with Shade Selector",
    "Cuisinart 2-Slice Compact Plastic Toaster",
    "Cuisinart CPT-122 Compact Toaster",
    "BLACK+DECKER 2-Slice Toaster, Extra Wide Slots",
    "Extra Wide Slots Toaster, White",
    "KitchenAid KMT2115 2-Slice Toaster",
    "Toaster 2 Slice Stainless Steel",
    "Amazon Basics 2 Slice Toaster",
    "Hamilton Beach Toaster",
    "Toaster with Bagel Function",
    "2 Slice Toaster",
]


@scenario
def field_webshop_wrong_clicks_forever() -> Trace:
    t = Trace("field_webshop_wrong_clicks_forever")
    q = "2 slice toaster with extra wide slots under 30 dollars"
    items = [
        ("B00EI7DPOO", "Hamilton Beach 2-Slice Extra-Wide Slot Toaster with Shade Selector", "$22.99"),
        ("B0026JLIDU", "Cuisinart CPT-122 2-Slice Compact Plastic Toaster", "$29.95"),
        ("B07CVWF46R", "BLACK+DECKER 2-Slice Toaster, Extra Wide Slots, White", "$19.99"),
    ]
    t.call("search", {"keywords": q}, webshop_results(q, items))
    t.turn()
    idx = []
    for title in WRONG_TITLES:
        idx.append(t.call("click", {"target": title}, WEBSHOP_INVALID, error=True))
        t.turn()
    # the docs' own example (docs/escalation.md, "When the guard halts"): the same terse error from clicks on
    # different targets, with nothing else happening. idx[0..4] fail 5 times -> the 6th click (idx[5]) is
    # advised (error_repeat, weak); the next three run with a warning (patience 3); the 10th click (idx[9])
    # is blocked and so is every further one; weak evidence never halts. Onset: the second failing click.
    return t.loop(
        "error_repeat",
        idx[5],
        idx[1],
        "WebShop agent clicks twelve wrong product titles in a row, every one answered Invalid action!.",
        halt=None,
    )


@scenario
def field_webshop_wrong_actions_message_ids() -> Trace:
    t = Trace("field_webshop_wrong_actions_message_ids", id_prefix="call_")
    m = message_ids("resp_7ad2")
    q = "gluten free dark chocolate bar pack of 12"
    items = [
        ("B07D4G9RZ3", "Alter Eco Dark Chocolate Bar, Deep Dark Sea Salt, 12 Pack", "$38.99"),
        ("B00B7KIZAI", "Endangered Species Chocolate Dark Chocolate Bar 72% Cocoa, 12 Count", "$29.88"),
    ]
    results = webshop_results(q, items)
    t.call("webshop", {"action": f"search[{q}]"}, results, message=m())
    opts = {"flavor": ["sea salt", "mint", "blackout"]}
    t.call("webshop", {"action": "click[B07D4G9RZ3]"}, webshop_item(items[0][1], items[0][2], opts), message=m())
    t.call("webshop", {"action": "click[< Prev]"}, results, message=m())
    idx = []
    for wrong in [
        "click[Endangered Species Chocolate Dark Chocolate Bar 72% Cocoa, 12 Count]",
        "click[Endangered Species Chocolate Dark Chocolate Bar]",
        "click[Dark Chocolate Bar 72% Cocoa]",
        "click[72% Cocoa]",
        "click[12 Count]",
        "click[Endangered Species]",
        "click[Dark Chocolate 12 Count]",
        "click[Chocolate Bar]",
        "click[Endangered Species Chocolate]",
        "click[72% Cocoa, 12 Count]",
    ]:
        idx.append(t.call("webshop", {"action": wrong}, WEBSHOP_INVALID, error=True, message=m()))
    # message ids only, one call per response. The product page (call 2) was the last new result; "< Prev"
    # returns page 1 again (nothing new). Then five wrong clicks on different targets fail with the same
    # error while nothing new comes back -> the 6th wrong click (idx[5]) is advised (weak); three warnings,
    # then blocks (idx[9]); never a halt
    return t.loop(
        "error_repeat",
        idx[5],
        idx[1],
        "WebShop agent (message ids only) goes back to the results and clicks ten wrong titles in a row.",
        halt=None,
    )


@scenario
def field_webshop_advised_then_right_click() -> Trace:
    t = Trace("field_webshop_advised_then_right_click")
    q = "led desk lamp with usb charging port dimmable"
    items = [
        ("B07VSF8XS6", "TaoTronics LED Desk Lamp with USB Charging Port, 5 Color Modes", "$35.99"),
        ("B08L8JGBPP", "Lepro LED Desk Lamp Dimmable, Eye-Caring Reading Lamp", "$21.99"),
        ("B0C2S7PX5W", "AFROG Multifunctional LED Desk Lamp with USB Charging Port", "$29.99"),
    ]
    t.call("search", {"keywords": q}, webshop_results(q, items))
    t.turn()
    idx = []
    for title in [
        "TaoTronics LED Desk Lamp with USB Charging Port, 5 Color Modes",
        "TaoTronics LED Desk Lamp",
        "LED Desk Lamp with USB Charging Port",
        "AFROG Multifunctional LED Desk Lamp",
        "Lepro LED Desk Lamp Dimmable",
        "TaoTronics Desk Lamp, 5 Color Modes",
    ]:
        idx.append(t.call("click", {"target": title}, WEBSHOP_INVALID, error=True))
        t.turn()
    opts = {"color": ["black", "white"]}
    right = t.call("click", {"target": "B07VSF8XS6"}, webshop_item(items[0][1], items[0][2], opts))
    t.turn()
    t.call("click", {"target": "black"}, webshop_item(items[0][1], items[0][2], opts, ("black",)))
    t.turn()
    t.call("click", {"target": "Buy Now"}, webshop_bought("B07VSF8XS6", {"color": "black"}, 1.0))
    t.turn()
    # five wrong titles (idx[0..4]) -> the 6th (idx[5]) is advised (weak error_repeat). The next click, on the
    # ASIN, is a call of the pattern's tool after the advice: it runs with a warning at most
    # ("Had the 7th click been the right one, it would have run"), brings the product page, and the run
    # ends with a purchase. Never halted.
    return t.loop(
        "error_repeat",
        idx[5],
        idx[1],
        f"WebShop agent advised after five wrong titles; its next click, the ASIN (call {right}), runs and it buys.",
        halt=None,
    )


# -------------------------------------------------------------------------------------------------
# not-found exploration: files that do not exist, edits refused before a read
# -------------------------------------------------------------------------------------------------


@scenario
def field_cc_read_missing_files_with_glob_grep() -> Trace:
    t = Trace("field_cc_read_missing_files_with_glob_grep")
    m = message_ids("msg_01Hq")
    t.user("The API crashes on startup when REDIS_URL is unset. Make it fall back to redis://localhost:6379.")
    for path in ["/repo/src/config.ts", "/repo/src/config/index.ts", "/repo/config/default.ts"]:
        t.call("Read", {"file_path": path}, CC_NOT_EXIST, error=True, message=m())
        t.turn()
    t.call(
        "Glob",
        {"pattern": "**/{config,env,settings}*.ts", "path": "/repo/packages"},
        "/repo/packages/api/src/env.ts\n/repo/packages/api/src/settings.ts\n/repo/packages/worker/src/env.ts",
        message=m(),
    )
    t.turn()
    env = (
        "import { z } from 'zod';\n\nconst schema = z.object({\n  PORT: z.coerce.number().default(8080),\n"
        "  REDIS_URL: z.string().url(),\n  DATABASE_URL: z.string().url(),\n});\n\n"
        "export const env = schema.parse(process.env);\n"
    )
    t.call("Read", {"file_path": "/repo/packages/api/src/env.ts"}, numbered(env), message=m())
    t.turn()
    for path in [
        "/repo/packages/api/src/env.test.ts",
        "/repo/packages/api/test/env.test.ts",
        "/repo/packages/api/src/__tests__/env.test.ts",
        "/repo/packages/api/tests/env.spec.ts",
    ]:
        t.call("Read", {"file_path": path}, CC_NOT_EXIST, error=True, message=m())
        t.turn()
    t.call(
        "Grep",
        {
            "pattern": "from '../src/env'|from './env'",
            "path": "/repo/packages/api",
            "output_mode": "files_with_matches",
        },
        "Found 2 files\n/repo/packages/api/src/server.ts\n/repo/packages/api/spec/env.spec.ts",
        message=m(),
    )
    t.turn()
    t.call(
        "Read",
        {"file_path": "/repo/packages/api/spec/env.spec.ts"},
        numbered(
            "import { env } from '../src/env';\n\ntest('parses PORT', () => {\n  expect(env.PORT).toBe(8080);\n});\n"
        ),
        message=m(),
    )
    t.turn()
    t.call(
        "Edit",
        {
            "file_path": "/repo/packages/api/src/env.ts",
            "old_string": "  REDIS_URL: z.string().url(),",
            "new_string": "  REDIS_URL: z.string().url().default('redis://localhost:6379'),",
        },
        cc_edited(
            "/repo/packages/api/src/env.ts", "  REDIS_URL: z.string().url().default('redis://localhost:6379'),", 5
        ),
        message=m(),
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "cd packages/api && npx vitest run spec/env.spec.ts", "description": "Run the env tests"},
        " ✓ spec/env.spec.ts (1 test) 4ms\n\n Test Files  1 passed (1)\n      Tests  1 passed (1)\n   Duration  611ms",
        message=m(),
    )
    t.answer("REDIS_URL now defaults to redis://localhost:6379 in packages/api/src/env.ts; the env test passes.")
    # Claude Code guessing paths: "File does not exist." for 3, then 4 different files, each run of failures
    # ended by a Glob / Grep that finds something (new content starts the weak count over). Different
    # targets (file_path), so the same error counts only at 5 in a row with nothing else happening: at most
    # 4 here. No call repeats.
    return t.healthy("Claude Code reads guessed paths that do not exist, between Glob and Grep calls that find files.")


@scenario
def field_cc_edit_before_read_then_reads() -> Trace:
    t = Trace("field_cc_edit_before_read_then_reads")
    m = message_ids("msg_01Rk")
    t.user("Rename the `retries` option to `maxRetries` everywhere in the http client package.")
    t.call(
        "Grep",
        {"pattern": "retries", "path": "/repo/packages/http/src", "output_mode": "files_with_matches"},
        "Found 4 files\n/repo/packages/http/src/client.ts\n/repo/packages/http/src/options.ts\n"
        "/repo/packages/http/src/retry.ts\n/repo/packages/http/src/index.ts",
        message=m(),
    )
    t.turn()
    files = {
        "/repo/packages/http/src/options.ts": ("  retries?: number;", "  maxRetries?: number;"),
        "/repo/packages/http/src/client.ts": (
            "    const retries = opts.retries ?? 3;",
            "    const retries = opts.maxRetries ?? 3;",
        ),
        "/repo/packages/http/src/retry.ts": (
            "export function withRetry(fn, { retries }) {",
            "export function withRetry(fn, { maxRetries: retries }) {",
        ),
        "/repo/packages/http/src/index.ts": (
            "export type { ClientOptions as Options } from './options'; // retries",
            "export type { ClientOptions as Options } from './options'; // maxRetries",
        ),
    }
    for path, (old, new) in files.items():
        t.call(
            "Edit",
            {"file_path": path, "old_string": old, "new_string": new},
            CC_NOT_READ,
            error=True,
            message=m(),
        )
        t.turn()
    bodies = {
        "/repo/packages/http/src/options.ts": "export interface ClientOptions {\n  baseUrl: string;\n"
        "  retries?: number;\n}",
        "/repo/packages/http/src/client.ts": "export class Client {\n  constructor(opts) {\n    const retries = opts."
        "retries ?? 3;\n    this.retry = withRetry(this.send, { retries });\n  }\n}",
        "/repo/packages/http/src/retry.ts": "export function withRetry(fn, { retries }) {\n  return async (...a) => "
        "{ /* ... */ };\n}",
        "/repo/packages/http/src/index.ts": "export { Client } from './client';\nexport type { ClientOptions as "
        "Options } from './options'; // retries",
    }
    t.parallel(
        [("Read", {"file_path": p}, numbered(b)) for p, b in bodies.items()],
        message=m(),
    )
    t.turn()
    msg = m()
    t.parallel(
        [
            ("Edit", {"file_path": p, "old_string": old, "new_string": new}, cc_edited(p, new, 3))
            for p, (old, new) in files.items()
        ],
        message=msg,
        interleaved=True,
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "npx tsc -p packages/http --noEmit && npx vitest run packages/http", "description": "Typecheck"},
        " Test Files  3 passed (3)\n      Tests  17 passed (17)\n   Duration  1.12s",
        message=m(),
    )
    t.answer("Renamed `retries` to `maxRetries` in the options, client, retry helper and index; tests pass.")
    # four Edits refused "File has not been read yet" for four different files (4 of the 5 that weak evidence
    # needs), then the four Reads (new content), then the same four Edits succeed: each identical to a
    # refused one, but an identical call that failed once is no loop (3 failures make one)
    return t.healthy("Claude Code edits four files before reading them (refused), reads them, then the edits succeed.")


@scenario
def field_editor_view_missing_paths_with_find() -> Trace:
    t = Trace("field_editor_view_missing_paths_with_find")
    ed = "str_replace_based_edit_tool"

    def missing(path: str) -> str:
        return f"The path {path} does not exist. Please provide a valid path."

    t.call(
        ed,
        {"command": "view", "path": "/testbed/django/db/models/lookup.py"},
        missing("/testbed/django/db/models/lookup.py"),
        error=True,
    )
    t.turn()
    t.call(
        ed,
        {"command": "view", "path": "/testbed/django/db/lookups.py"},
        missing("/testbed/django/db/lookups.py"),
        error=True,
    )
    t.turn()
    t.call(
        "bash",
        {"command": "find /testbed/django/db -name 'lookups.py'"},
        "/testbed/django/db/models/lookups.py\n/testbed/django/contrib/postgres/lookups.py",
    )
    t.turn()
    t.call(
        ed,
        {"command": "view", "path": "/testbed/django/db/models/lookups.py", "view_range": [350, 380]},
        cat_n(
            "/testbed/django/db/models/lookups.py",
            "class IExact(BuiltinLookup):\n    lookup_name = 'iexact'\n    prepare_rhs = False\n\n"
            "    def process_rhs(self, qn, connection):\n        rhs, params = super().process_rhs(qn, connection)\n"
            "        if params:\n            params[0] = connection.ops.prep_for_iexact_query(params[0])\n"
            "        return rhs, params\n",
            350,
        ),
    )
    t.turn()
    for path in [
        "/testbed/tests/lookups/test_iexact.py",
        "/testbed/tests/lookup/test_iexact.py",
        "/testbed/tests/lookup/tests_iexact.py",
    ]:
        t.call(ed, {"command": "view", "path": path}, missing(path), error=True)
        t.turn()
    t.call(
        "bash",
        {"command": "grep -rln 'iexact' /testbed/tests/lookup/ | head"},
        "/testbed/tests/lookup/tests.py\n/testbed/tests/lookup/models.py",
    )
    t.turn()
    t.call(
        "bash",
        {"command": "grep -n 'def test_iexact' /testbed/tests/lookup/tests.py"},
        "612:    def test_iexact_none(self):\n640:    def test_iexact_escaping(self):",
    )
    t.turn()
    t.call(
        ed,
        {
            "command": "str_replace",
            "path": "/testbed/django/db/models/lookups.py",
            "old_str": "        if params:\n            params[0] = connection.ops.prep_for_iexact_query(params[0])",
            "new_str": "        if params and params[0] is not None:\n            params[0] = "
            "connection.ops.prep_for_iexact_query(params[0])",
        },
        "The file /testbed/django/db/models/lookups.py has been edited.",
    )
    t.turn()
    t.call(
        "bash",
        {"command": "cd /testbed && python tests/runtests.py lookup -k iexact"},
        "Ran 4 tests in 0.031s\n\nOK",
    )
    t.answer("iexact no longer calls prep_for_iexact_query on None; the lookup tests pass.")
    # the editor's "does not exist" quotes the path back (the call's own argument: removed before errors are
    # compared), so it is the same error on different targets: 2, then 3 in a row, each run ended by a bash
    # find / grep that finds files. Never 5 in a row; no call repeats.
    return t.healthy("SWE agent views guessed paths that do not exist, between find and grep calls that find them.")


@scenario
def field_cc_parallel_reads_some_missing() -> Trace:
    t = Trace("field_cc_parallel_reads_some_missing")
    m = message_ids("msg_01Pz")
    t.user("Why does `make docs` fail on CI? Fix it.")
    t.call(
        "Bash",
        {"command": "make docs 2>&1 | tail -5", "description": "Reproduce the docs build"},
        "sphinx-build -W -b html docs docs/_build\nWarning, treated as error:\ndocs/api.rst:14:autodoc: failed to "
        "import module 'ingest.sources'; the following exception was raised:\nNo module named 'ingest.sources'\n"
        "make: *** [Makefile:31: docs] Error 2",
        error=True,
        message=m(),
    )
    t.turn()
    t.parallel(
        [
            (
                "Read",
                {"file_path": "/repo/docs/conf.py"},
                numbered(
                    "import os, sys\nsys.path.insert(0, os.path.abspath('../src'))\n"
                    "extensions = ['sphinx.ext.autodoc']\n"
                ),
            ),
            ("Read", {"file_path": "/repo/src/ingest/sources.py"}, CC_NOT_EXIST),
            ("Read", {"file_path": "/repo/src/ingest/sources/__init__.py"}, CC_NOT_EXIST),
            (
                "Read",
                {"file_path": "/repo/docs/api.rst"},
                numbered(
                    "API\n===\n\n.. automodule:: ingest.pipeline\n   :members:\n\n"
                    ".. automodule:: ingest.sources\n   :members:\n"
                ),
            ),
        ],
        message=m(),
        errors=[False, True, True, False],
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "git log --oneline -3 --stat -- src/ingest", "description": "Recent changes to ingest"},
        "4be91d0 ingest: split sources into connectors\n src/ingest/connectors/__init__.py | 41 +++\n "
        "src/ingest/sources.py | 41 ---\n",
        message=m(),
    )
    t.turn()
    t.call(
        "Edit",
        {
            "file_path": "/repo/docs/api.rst",
            "old_string": ".. automodule:: ingest.sources",
            "new_string": ".. automodule:: ingest.connectors",
        },
        cc_edited("/repo/docs/api.rst", ".. automodule:: ingest.connectors\n   :members:", 7),
        message=m(),
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "make docs 2>&1 | tail -2", "description": "Rebuild the docs"},
        "build succeeded.\n\nThe HTML pages are in docs/_build.",
        message=m(),
    )
    t.answer("docs/api.rst still pointed at ingest.sources, which 4be91d0 renamed to ingest.connectors; fixed.")
    # one message reads four files at once, two of them missing (same error, different targets: 2, and the
    # two successful reads in the same batch bring new content); then git log, the fix, and the build passes
    return t.healthy("Claude Code reads four files in one message, two do not exist; git log shows the rename; fix.")


@scenario
def field_cc_read_missing_six_in_a_row() -> Trace:
    t = Trace("field_cc_read_missing_six_in_a_row")
    m = message_ids("msg_01Wd")
    t.user("Add a `--dry-run` flag to the migrate command.")
    t.call(
        "Bash",
        {"command": "ls", "description": "List the repository"},
        "Makefile\nREADME.md\ncmd\ngo.mod\ngo.sum\ninternal\n",
        message=m(),
    )
    t.turn()
    idx = []
    for path in [
        "/repo/cmd/migrate.go",
        "/repo/cmd/migrate/main.go",
        "/repo/cmd/cli/migrate.go",
        "/repo/internal/cli/migrate.go",
        "/repo/internal/commands/migrate.go",
        "/repo/internal/migrate/cmd.go",
        "/repo/cmd/app/migrate.go",
    ]:
        idx.append(t.call("Read", {"file_path": path}, CC_NOT_EXIST, error=True, message=m()))
        t.turn()
    t.call(
        "Glob",
        {"pattern": "**/*migrat*.go"},
        "/repo/cmd/tool/commands/db_migrate.go\n/repo/internal/db/migrator.go",
        message=m(),
    )
    t.turn()
    t.call(
        "Read",
        {"file_path": "/repo/cmd/tool/commands/db_migrate.go"},
        numbered(
            'var migrateCmd = &cobra.Command{\n\tUse:   "migrate",\n\tShort: "Apply pending migrations",\n'
            "\tRunE: func(cmd *cobra.Command, args []string) error {\n\t\treturn db.NewMigrator(cfg).Up(cmd.Context())"
            "\n\t},\n}\n"
        ),
        message=m(),
    )
    t.answer("Found the command in cmd/tool/commands/db_migrate.go; adding the flag next.")
    # seven guessed paths in a row, all "File does not exist." and nothing else in between: different
    # targets, so weak evidence that counts at 5 -> the 6th Read (idx[5]) is advised; the 7th runs with a
    # warning; then Glob finds the file. Never halted.
    return t.loop(
        "error_repeat",
        idx[5],
        idx[1],
        "Claude Code guesses seven paths for a Go command in a row, all missing, before it runs Glob.",
        halt=None,
    )


@scenario
def field_cc_six_edits_before_read_one_message() -> Trace:
    t = Trace("field_cc_six_edits_before_read_one_message")
    m = message_ids("msg_01Tv")
    t.user("Replace every `console.log` in src/handlers with our logger.")
    t.call(
        "Grep",
        {"pattern": "console\\.log", "path": "/repo/src/handlers", "output_mode": "files_with_matches"},
        "Found 6 files\n"
        + "\n".join(
            f"/repo/src/handlers/{n}.ts" for n in ["orders", "users", "payments", "refunds", "webhooks", "auth"]
        ),
        message=m(),
    )
    t.turn()
    names = ["orders", "users", "payments", "refunds", "webhooks", "auth"]
    edits = [
        (
            "Edit",
            {
                "file_path": f"/repo/src/handlers/{n}.ts",
                "old_string": f"  console.log('{n} handler', req.id);",
                "new_string": f"  logger.debug({{ reqId: req.id }}, '{n} handler');",
            },
            CC_NOT_READ,
        )
        for n in names
    ]
    batch = t.parallel(edits, message=m(), errors=[True] * 6, interleaved=True)
    t.turn()
    t.parallel(
        [
            (
                "Read",
                {"file_path": f"/repo/src/handlers/{n}.ts"},
                numbered(f"export async function {n}Handler(req, res) {{\n  console.log('{n} handler', req.id);\n}}"),
            )
            for n in names
        ],
        message=m(),
    )
    t.turn()
    t.parallel(
        [(tool, args, cc_edited(args["file_path"], args["new_string"], 2)) for tool, args, _ in edits],
        message=m(),
        interleaved=True,
    )
    t.answer("All six handlers now log through `logger.debug`.")
    # one message with six Edits of six files not read yet, run one by one: after 5 refusals of the same
    # kind on different targets with nothing else happening, the 6th Edit (batch[5]) is advised (weak).
    # The ladder's first rung, in the same step as the others. Then the Reads and the Edits run: no halt.
    return t.loop(
        "error_repeat",
        batch[5],
        batch[1],
        "Claude Code sends six Edits of unread files in one message; five are refused, the sixth is advised.",
        halt=None,
    )


# -------------------------------------------------------------------------------------------------
# calls that did not run: sibling cancellations and permission refusals
# -------------------------------------------------------------------------------------------------


@scenario
def field_cc_sibling_edits_cancelled_then_fixed() -> Trace:
    t = Trace("field_cc_sibling_edits_cancelled_then_fixed")
    m = message_ids("msg_01Sb")
    t.user("Make the Button, Input and Select components accept a `size` prop ('sm' | 'md' | 'lg').")
    base = "/repo/web/src/components"
    bodies = {
        f"{base}/Button.tsx": "type Props = { variant?: 'primary' | 'ghost' };\nexport function Button(p: Props) {}",
        f"{base}/Input.tsx": "type Props = { invalid?: boolean };\nexport function Input(p: Props) {}",
        f"{base}/Select.tsx": "type Props = { options: string[] };\nexport function Select(p: Props) {}",
    }
    t.parallel([("Read", {"file_path": p}, numbered(b)) for p, b in bodies.items()], message=m())
    t.turn()
    size = " size?: 'sm' | 'md' | 'lg';"

    def edit(path: str, old: str) -> dict[str, str]:
        return {"file_path": path, "old_string": old, "new_string": old.replace(" };", ";" + size + " };")}

    wrong = edit(f"{base}/button.tsx", "type Props = { variant?: 'primary' | 'ghost' };")  # lower-case file name
    e_input = edit(f"{base}/Input.tsx", "type Props = { invalid?: boolean };")
    e_select = edit(f"{base}/Select.tsx", "type Props = { options: string[] };")
    t.parallel(
        [("Edit", wrong, CC_NOT_EXIST), ("Edit", e_input, CC_SIBLING), ("Edit", e_select, CC_SIBLING)],
        message=m(),
        errors=[True, True, True],
        outcomes=[None, "cancelled", "cancelled"],
        interleaved=True,
    )
    t.turn()
    right = edit(f"{base}/Button.tsx", "type Props = { variant?: 'primary' | 'ghost' };")
    t.parallel(
        [
            ("Edit", right, cc_edited(right["file_path"], right["new_string"], 1)),
            ("Edit", e_input, cc_edited(e_input["file_path"], e_input["new_string"], 1)),
            ("Edit", e_select, cc_edited(e_select["file_path"], e_select["new_string"], 1)),
        ],
        message=m(),
        interleaved=True,
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "cd web && npx tsc --noEmit", "description": "Typecheck the web app"},
        "",
        message=m(),
    )
    t.answer("Button, Input and Select now take size?: 'sm' | 'md' | 'lg'; the app typechecks.")
    # the first Edit of the batch names button.tsx (the file is Button.tsx) and fails; Claude Code cancels
    # the two others ("Sibling tool call errored", outcome cancelled: no history entry, no detector counts
    # them). The next message fixes the path and sends the same two Edits again: not repeats of anything.
    return t.healthy(
        "Claude Code batch of three Edits: a wrong file name fails, two siblings cancelled, then all pass."
    )


@scenario
def field_cc_sibling_bash_cancelled_twice() -> Trace:
    t = Trace("field_cc_sibling_bash_cancelled_twice")
    m = message_ids("msg_01Bc")
    t.user("CI is red on the billing service. Get build, lint and tests green.")
    build = {"command": "cd services/billing && npm run build", "description": "Build billing"}
    lint = {"command": "cd services/billing && npm run lint", "description": "Lint billing"}
    status = {"command": "git status --short", "description": "Show changed files"}
    t.parallel(
        [
            (
                "Bash",
                build,
                "src/invoice.ts(42,7): error TS2322: Type 'string | undefined' is not assignable to type 'string'.\n"
                "Found 1 error in src/invoice.ts:42",
            ),
            ("Bash", lint, CC_SIBLING),
            ("Bash", status, CC_SIBLING),
        ],
        message=m(),
        errors=[True, True, True],
        outcomes=[None, "cancelled", "cancelled"],
        interleaved=True,
    )
    t.turn()
    t.call(
        "Edit",
        {
            "file_path": "/repo/services/billing/src/invoice.ts",
            "old_string": "  const currency: string = customer.currency;",
            "new_string": "  const currency: string = customer.currency ?? 'EUR';",
        },
        cc_edited(
            "/repo/services/billing/src/invoice.ts", "  const currency: string = customer.currency ?? 'EUR';", 42
        ),
        message=m(),
    )
    t.turn()
    t.parallel(
        [
            (
                "Bash",
                build,
                "src/tax.ts(17,24): error TS2339: Property 'rate' does not exist on type 'TaxRule'.\n"
                "Found 1 error in src/tax.ts:17",
            ),
            ("Bash", lint, CC_SIBLING),
            ("Bash", status, CC_SIBLING),
        ],
        message=m(),
        errors=[True, True, True],
        outcomes=[None, "cancelled", "cancelled"],
        interleaved=True,
    )
    t.turn()
    t.call(
        "Edit",
        {
            "file_path": "/repo/services/billing/src/tax.ts",
            "old_string": "  return amount * rule.rate;",
            "new_string": "  return amount * rule.percentage / 100;",
        },
        cc_edited("/repo/services/billing/src/tax.ts", "  return amount * rule.percentage / 100;", 17),
        message=m(),
    )
    t.turn()
    t.parallel(
        [
            ("Bash", build, "> billing@2.4.0 build\n> tsc -p tsconfig.build.json\n"),
            ("Bash", lint, "> billing@2.4.0 lint\n> eslint src --max-warnings 0\n"),
            ("Bash", status, " M services/billing/src/invoice.ts\n M services/billing/src/tax.ts\n"),
        ],
        message=m(),
        interleaved=True,
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "cd services/billing && npm test -- --silent", "description": "Run billing tests"},
        "Test Suites: 14 passed, 14 total\nTests:       121 passed, 121 total\nTime:        6.204 s",
        message=m(),
    )
    t.answer("Fixed the two type errors (invoice.ts, tax.ts); build, lint and the 121 tests pass.")
    # build fails, lint and git status are cancelled as siblings; after an edit the same three calls: build
    # fails with another error, the two others cancelled again; after a second edit all three run. The
    # identical lint / status calls cancelled twice count for nothing (no history entry); the build re-runs
    # follow edits (new epochs) and fail differently
    return t.healthy("Claude Code: build fails twice with lint and git status cancelled as siblings; edits fix it.")


@scenario
def field_cc_sibling_multiedit_not_unique() -> Trace:
    t = Trace("field_cc_sibling_multiedit_not_unique")
    m = message_ids("msg_01Mu")
    t.user("Move the rate limit numbers into settings: 100 requests per minute, burst 20.")
    path = "/repo/app/middleware/ratelimit.py"
    src = (
        "from app.limiter import TokenBucket\n\n\ndef make_api_limiter():\n    return TokenBucket(rate=100, per=60, "
        "burst=20)\n\n\ndef make_login_limiter():\n    return TokenBucket(rate=100, per=60, burst=20)\n"
    )
    t.parallel(
        [
            ("Read", {"file_path": path}, numbered(src)),
            (
                "Read",
                {"file_path": "/repo/app/settings.py"},
                numbered("DEBUG = False\nDATABASE_URL = env('DATABASE_URL')\n"),
            ),
        ],
        message=m(),
    )
    t.turn()
    multi = {
        "file_path": path,
        "edits": [
            {
                "old_string": "    return TokenBucket(rate=100, per=60, burst=20)",
                "new_string": "    return TokenBucket(rate=settings.RATE_LIMIT, per=60, burst=settings.RATE_BURST)",
            }
        ],
    }
    add = {
        "file_path": "/repo/app/settings.py",
        "old_string": "DEBUG = False\n",
        "new_string": "DEBUG = False\nRATE_LIMIT = 100  # requests per minute\nRATE_BURST = 20\n",
    }
    imp = {
        "file_path": path,
        "old_string": "from app.limiter import TokenBucket\n",
        "new_string": "from app import settings\nfrom app.limiter import TokenBucket\n",
    }
    t.parallel(
        [
            (
                "MultiEdit",
                multi,
                "<tool_use_error>Found 2 matches of the string to replace, but replace_all is false. To replace all "
                "occurrences, set replace_all to true. To replace only one occurrence, please provide more context "
                "to uniquely identify the instance.\nString:     return TokenBucket(rate=100, per=60, burst=20)"
                "</tool_use_error>",
            ),
            ("Edit", add, CC_SIBLING),
            ("Edit", imp, CC_SIBLING),
        ],
        message=m(),
        errors=[True, True, True],
        outcomes=[None, "cancelled", "cancelled"],
        interleaved=True,
    )
    t.turn()
    fixed = {**multi, "edits": [{**multi["edits"][0], "replace_all": True}]}
    t.parallel(
        [
            (
                "MultiEdit",
                fixed,
                f"Applied 1 edit to {path}:\n"
                '1. Replaced "    return TokenBucket(rate=100, per=60, burst=20)" (2 occurrences)',
            ),
            ("Edit", add, cc_edited("/repo/app/settings.py", add["new_string"], 1)),
            ("Edit", imp, cc_edited(path, imp["new_string"], 1)),
        ],
        message=m(),
        interleaved=True,
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "python -m pytest -q tests/test_ratelimit.py", "description": "Run rate limit tests"},
        "....\n4 passed in 0.38s",
        message=m(),
    )
    t.answer("Both limiters now read RATE_LIMIT and RATE_BURST from app/settings.py; tests pass.")
    # MultiEdit fails (two matches), the two sibling Edits are cancelled; the next message sets replace_all
    # and sends the same two Edits again, which run. Cancelled calls count for no detector.
    return t.healthy(
        "Claude Code: a MultiEdit fails on a non-unique string, two sibling Edits cancelled, then all pass."
    )


@scenario
def field_cc_edit_refused_twice_then_accepted() -> Trace:
    t = Trace("field_cc_edit_refused_twice_then_accepted")
    m = message_ids("msg_01Ux")
    path = "/repo/src/worker/fetch.py"
    t.user("The fetch worker gives up too early on slow feeds. Can you make it more patient?")
    t.call(
        "Read",
        {"file_path": path},
        numbered(
            "import httpx\n\nTIMEOUT = 10\n\n\ndef fetch(url):\n    return httpx.get(url, timeout=TIMEOUT).text\n"
        ),
        message=m(),
    )
    t.turn()
    t.call(
        "Edit",
        {"file_path": path, "old_string": "TIMEOUT = 10", "new_string": "TIMEOUT = 120"},
        CC_REFUSED,
        error=True,
        outcome="refused",
        message=m(),
    )
    t.turn()
    t.user("No, not a two minute timeout. Retry instead.")
    t.call(
        "Edit",
        {
            "file_path": path,
            "old_string": "    return httpx.get(url, timeout=TIMEOUT).text",
            "new_string": "    for attempt in range(10):\n        try:\n"
            "            return httpx.get(url, timeout=TIMEOUT).text\n"
            "        except httpx.TimeoutException:\n            continue\n    raise TimeoutError(url)",
        },
        CC_REFUSED,
        error=True,
        outcome="refused",
        message=m(),
    )
    t.turn()
    t.user("Use tenacity, we already depend on it. 3 attempts with exponential backoff.")
    t.call(
        "Edit",
        {
            "file_path": path,
            "old_string": "def fetch(url):",
            "new_string": "@retry(stop=stop_after_attempt(3), wait=wait_exponential(multiplier=1, max=20),\n"
            "       retry=retry_if_exception_type(httpx.TimeoutException))\ndef fetch(url):",
        },
        cc_edited(path, "@retry(stop=stop_after_attempt(3), wait=wait_exponential(multiplier=1, max=20),", 6),
        message=m(),
    )
    t.call(
        "Edit",
        {
            "file_path": path,
            "old_string": "import httpx\n",
            "new_string": "import httpx\nfrom tenacity import retry, retry_if_exception_type, stop_after_attempt, "
            "wait_exponential\n",
        },
        cc_edited(path, "from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential", 2),
        message=m(),
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "python -m pytest -q tests/test_fetch.py", "description": "Run fetch tests"},
        "......\n6 passed in 0.92s",
        message=m(),
    )
    t.answer("fetch() now retries timeouts 3 times with exponential backoff (tenacity); tests pass.")
    # two Edits refused in the permission prompt (outcome refused: no history, and the user's say like a
    # user_message), the user explains, the third approach is accepted
    return t.healthy(
        "Claude Code: the user refuses two different Edits in the permission prompt, then accepts a third."
    )


@scenario
def field_cc_same_push_refused_three_times() -> Trace:
    t = Trace("field_cc_same_push_refused_three_times")
    m = message_ids("msg_01Gp")
    push = {"command": "git push -u origin fix/rate-limit-headers", "description": "Push the branch"}
    t.user("Fix the missing Retry-After header on 429 responses and push a branch.")
    t.call(
        "Edit",
        {
            "file_path": "/repo/app/middleware/ratelimit.py",
            "old_string": "        return JSONResponse({'error': 'rate limited'}, status_code=429)",
            "new_string": "        return JSONResponse({'error': 'rate limited'}, status_code=429,\n"
            "                            headers={'Retry-After': str(bucket.retry_after())})",
        },
        cc_edited("/repo/app/middleware/ratelimit.py", "                            headers={'Retry-After': ...})", 31),
        message=m(),
    )
    t.call(
        "Bash",
        {"command": "git checkout -b fix/rate-limit-headers && git commit -am 'ratelimit: send Retry-After'"},
        "Switched to a new branch 'fix/rate-limit-headers'\n[fix/rate-limit-headers 3c1d0e2] ratelimit: send "
        "Retry-After\n 1 file changed, 2 insertions(+), 1 deletion(-)",
        message=m(),
    )
    t.turn()
    t.call("Bash", push, CC_REFUSED, error=True, outcome="refused", message=m())
    t.turn()
    t.text("Pushing again so the branch is on the remote.")
    t.call("Bash", push, CC_REFUSED, error=True, outcome="refused", message=m())
    t.turn()
    t.user("Run the tests first.")
    t.call(
        "Bash",
        {"command": "python -m pytest -q tests/test_ratelimit.py", "description": "Run rate limit tests"},
        ".....\n5 passed in 0.41s",
        message=m(),
    )
    t.turn()
    t.call("Bash", push, CC_REFUSED, error=True, outcome="refused", message=m())
    t.turn()
    t.user("I'll push it myself after review. Just summarise.")
    t.answer("Branch fix/rate-limit-headers (3c1d0e2) adds Retry-After to 429 responses; 5 tests pass. Not pushed.")
    # the identical git push refused three times (twice in a row, then after the tests): refused calls leave
    # no history entry and count for no detector, and each refusal is the user's input
    return t.healthy("Claude Code asks three times to push the same branch; the user refuses each time.")


@scenario
def field_codex_commands_rejected_by_user() -> Trace:
    t = Trace("field_codex_commands_rejected_by_user", id_prefix="call_")
    m = message_ids("resp_68c1")
    t.user("The release build of the CLI fails on my machine. Figure out why.")

    def sh(cmd: str) -> dict[str, Any]:
        return {"command": ["bash", "-lc", cmd], "workdir": "/home/dev/acme-cli", "timeout_ms": 120000}

    t.call(
        "shell",
        sh("cargo build --release 2>&1 | tail -4"),
        "error: linker `cc` not found\n  |\n  = note: No such "
        'file or directory (os error 2)\n\nerror: could not compile `acme-cli` (bin "acme") due to 1 previous error',
        error=True,
        message=m(),
    )
    t.call(
        "shell",
        sh("rm -rf target && cargo build --release"),
        "exec command rejected by user",
        error=True,
        outcome="refused",
        message=m(),
    )
    t.call(
        "shell",
        sh("sudo apt-get install -y build-essential"),
        "exec command rejected by user",
        error=True,
        outcome="refused",
        message=m(),
    )
    t.user("Don't install anything system-wide. We have a nix shell for this.")
    t.call(
        "shell",
        sh("cat shell.nix"),
        "{ pkgs ? import <nixpkgs> {} }:\npkgs.mkShell {\n  buildInputs = "
        "[ pkgs.rustc pkgs.cargo pkgs.gcc pkgs.openssl pkgs.pkg-config ];\n}\n",
        message=m(),
    )
    t.call(
        "shell",
        sh("nix-shell --run 'cargo build --release 2>&1 | tail -2'"),
        "   Compiling acme-cli v0.14.2 (/home/dev/acme-cli)\n    Finished `release` profile [optimized] target(s) "
        "in 41.07s",
        message=m(),
    )
    t.answer("The system has no C linker; inside `nix-shell` (gcc from shell.nix) the release build succeeds.")
    # Codex CLI, one call per response (message ids, no turns). Two different commands rejected by the user
    # (outcome refused: not run, no history), then the user's words; no call repeats
    return t.healthy("Codex CLI: a build fails, the user rejects two commands, points to the nix shell; it builds.")


# -------------------------------------------------------------------------------------------------
# several calls of one message failing together (run one by one), then a fix
# -------------------------------------------------------------------------------------------------


@scenario
def field_anthropic_bash_batch_fails_then_fix() -> Trace:
    t = Trace("field_anthropic_bash_batch_fails_then_fix")
    m = message_ids("msg_01Ab")
    t.call(
        "bash",
        {"command": "cat package.json | head -20"},
        '{\n  "name": "@acme/api",\n  "workspaces": '
        '["packages/*"],\n  "dependencies": { "@acme/shared": "workspace:*" }\n}',
        message=m(),
    )
    t.turn()
    batch = t.parallel(
        [
            (
                "bash",
                {"command": "npm test -w @acme/api 2>&1 | tail -3"},
                "FAIL src/routes/orders.test.ts\n  ● Test suite failed to run\n    Cannot find module '@acme/shared' "
                "from 'src/routes/orders.ts'",
            ),
            (
                "bash",
                {"command": "npx tsc -p packages/api --noEmit"},
                "packages/api/src/routes/orders.ts(3,29): error TS2307: Cannot find module '@acme/shared' or its "
                "corresponding type declarations.",
            ),
            (
                "bash",
                {"command": "npx eslint packages/api/src"},
                "packages/api/src/routes/orders.ts\n  3:29  error  Unable to resolve path to module '@acme/shared'  "
                "import/no-unresolved\n\n✖ 1 problem (1 error, 0 warnings)",
            ),
            (
                "bash",
                {"command": "node -e \"require('@acme/shared')\""},
                "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '@acme/shared'\n"
                "Require stack:\n- /repo/[eval]",
            ),
        ],
        message=m(),
        errors=[True, True, True, True],
        interleaved=True,
    )
    t.turn()
    t.call("bash", {"command": "ls packages/shared"}, "package.json\nsrc\ntsconfig.json", message=m())
    t.turn()
    t.call(
        "bash",
        {"command": "npm run build -w @acme/shared && ls packages/shared/dist"},
        "> @acme/shared@1.3.0 build\n> tsc -p tsconfig.build.json\n\nindex.d.ts\nindex.js",
        message=m(),
    )
    t.turn()
    t.parallel(
        [
            (
                "bash",
                {"command": "npm test -w @acme/api 2>&1 | tail -3"},
                "Test Suites: 9 passed, 9 total\nTests:       64 passed, 64 total\nTime:        4.81 s",
            ),
            ("bash", {"command": "npx tsc -p packages/api --noEmit"}, ""),
            ("bash", {"command": "npx eslint packages/api/src"}, ""),
        ],
        message=m(),
        interleaved=True,
    )
    t.answer("@acme/shared had never been built (no dist/); after building it, tests, types and lint pass.")
    # one message, four commands run one by one, four failures, each with its own error (four programs, four
    # texts): no identical call failed twice, no error came back twice; the calls share one step anyway.
    # Then the workspace is built and the same checks pass. Nothing repeats.
    return t.healthy(
        f"Agent runs four checks in one message (calls {batch[0]}-{batch[-1]}), all fail differently; "
        "it builds the shared package and they pass."
    )


@scenario
def field_codex_shell_batch_fails_then_fix() -> Trace:
    t = Trace("field_codex_shell_batch_fails_then_fix", id_prefix="call_")
    m = message_ids("resp_68d4")

    def sh(cmd: str) -> dict[str, Any]:
        return {"command": ["bash", "-lc", cmd], "workdir": "/work/feedparse"}

    t.user("Run the test suite and the type checker and fix whatever is broken.")
    t.parallel(
        [
            (
                "shell",
                sh("pytest -q tests/test_parser.py"),
                "ImportError while importing test module '/work/feedparse/tests/test_parser.py'.\nE   "
                "ModuleNotFoundError: No module named 'yaml'",
            ),
            (
                "shell",
                sh("mypy src/feedparse"),
                'src/feedparse/config.py:3: error: Library stubs not installed for "yaml"  [import-untyped]\n'
                "Found 1 error in 1 file (checked 9 source files)",
            ),
            (
                "shell",
                sh("python scripts/gen_schema.py --check"),
                'Traceback (most recent call last):\n  File "/work/feedparse/scripts/gen_schema.py", line 4, in '
                '<module>\n    from feedparse.config import load\n  File "/work/feedparse/src/feedparse/config.py", '
                "line 3, in <module>\n    import yaml\nModuleNotFoundError: No module named 'yaml'",
            ),
        ],
        message=m(),
        errors=[True, True, True],
        interleaved=True,
    )
    t.call("shell", sh("grep -n yaml pyproject.toml"), "", error=True, message=m())
    t.call(
        "apply_patch",
        {
            "input": '*** Begin Patch\n*** Update File: pyproject.toml\n@@\n dependencies = [\n     "httpx>=0.27",\n'
            '+    "pyyaml>=6.0",\n ]\n*** End Patch'
        },
        "Success. Updated the following files:\nM pyproject.toml",
        message=m(),
    )
    t.call(
        "shell",
        sh("pip install -e '.[dev]' types-PyYAML -q"),
        "Successfully installed PyYAML-6.0.2 feedparse-0.3.0 types-PyYAML-6.0.12.20240917",
        message=m(),
    )
    t.parallel(
        [
            ("shell", sh("pytest -q tests/test_parser.py"), "...........\n11 passed in 0.22s"),
            ("shell", sh("mypy src/feedparse"), "Success: no issues found in 9 source files"),
            ("shell", sh("python scripts/gen_schema.py --check"), "schema up to date"),
        ],
        message=m(),
        interleaved=True,
    )
    t.answer("PyYAML was imported but not declared; added it to pyproject.toml and installed it. All green.")
    # Codex runs one response's three commands one by one: three failures, three programs (pytest, mypy,
    # python), three texts (two end with the same ModuleNotFoundError line, but the whole texts differ).
    # grep finds nothing (exit 1, empty), then the patch and the install, then the same three pass.
    return t.healthy("Codex: tests, mypy and a script fail in one response (missing PyYAML); patch, install, all pass.")


@scenario
def field_sql_batch_fails_then_fix() -> Trace:
    t = Trace("field_sql_batch_fails_then_fix", id_prefix="call_")
    m = message_ids("chatcmpl-BXq")
    t.user("How many orders did new customers place per week in October? Split by country.")
    t.parallel(
        [
            (
                "run_sql",
                {"sql": "SELECT count(*) FROM analytics.orders_daily WHERE day >= '2025-10-01'"},
                'ERROR:  relation "analytics.orders_daily" does not exist\nLINE 1: SELECT count(*) FROM '
                "analytics.orders_daily WHERE day >= '2025-...\n                             ^",
            ),
            (
                "run_sql",
                {"sql": "SELECT country, count(*) FROM analytics.customers WHERE signup_dt >= '2025-10-01' GROUP BY 1"},
                'ERROR:  column "signup_dt" does not exist\nLINE 1: ...y, count(*) FROM analytics.customers WHERE '
                "signup_dt >= '...\n                                                             ^\nHINT:  Perhaps "
                'you meant to reference the column "customers.signup_date".',
            ),
            (
                "run_sql",
                {"sql": "SELECT date_trunc('week', created) AS wk, count(*) FROM analytics.orders GROUP BY 1"},
                "ERROR:  function date_trunc(unknown, text) does not exist\nLINE 1: SELECT date_trunc('week', created) "
                "AS wk, count(*) FROM analytics...\n               ^\nHINT:  No function matches the given name and "
                "argument types. You might need to add explicit type casts.",
            ),
        ],
        message=m(),
        errors=[True, True, True],
        interleaved=True,
    )
    t.turn()
    t.call(
        "describe_table",
        {"table": "analytics.orders"},
        "id bigint, customer_id bigint, created text (ISO 8601), total_eur numeric(10,2), status text",
        message=m(),
    )
    t.turn()
    t.call(
        "run_sql",
        {
            "sql": "SELECT c.country, date_trunc('week', o.created::timestamptz) AS wk, count(*) "
            "FROM analytics.orders o "
            "JOIN analytics.customers c ON c.id = o.customer_id WHERE c.signup_date >= '2025-10-01' AND "
            "o.created::timestamptz < '2025-11-01' GROUP BY 1, 2 ORDER BY 2, 1"
        },
        json.dumps(
            [
                ["DE", "2025-09-29", 118],
                ["FR", "2025-09-29", 64],
                ["DE", "2025-10-06", 201],
                ["FR", "2025-10-06", 97],
                ["DE", "2025-10-13", 188],
            ]
        ),
        message=m(),
    )
    t.answer("New customers' orders per week in October, by country: DE 118/201/188..., FR 64/97/... (table above).")
    # one response asks for three queries; the agent runs them one by one and each fails with its own
    # Postgres error (no target: the same error would count at 3, but no two texts are the same). Then the
    # schema, then one query that works.
    return t.healthy("Data agent: three SQL queries in one response fail with three different errors; then it works.")


# -------------------------------------------------------------------------------------------------
# idle stalls: turns without a tool call
# -------------------------------------------------------------------------------------------------


@scenario
def field_idle_three_thoughts_then_fix() -> Trace:
    t = Trace("field_idle_three_thoughts_then_fix")
    ed = "str_replace_based_edit_tool"
    t.call(
        "bash",
        {"command": "python -m pytest -q tests/test_slugify.py"},
        "F.\nE   AssertionError: assert 'creme-brulee' == 'crème-brûlée'\n1 failed, 1 passed in 0.05s",
        error=True,
    )
    t.turn()
    t.call(
        ed,
        {"command": "view", "path": "/repo/src/text/slugify.py"},
        cat_n(
            "/repo/src/text/slugify.py",
            "import re\nimport unicodedata\n\n\ndef slugify(s):\n    s = unicodedata.normalize('NFKD', s)\n"
            "    s = s.encode('ascii', 'ignore').decode()\n"
            "    return re.sub(r'[^a-z0-9]+', '-', s.lower()).strip('-')\n",
        ),
    )
    t.turn()
    onset = t.calls
    for words in [
        "The test expects accents to be kept, but slugify strips them through the ASCII encode.",
        "Either the test is wrong or the function should keep Unicode letters; the docstring of the test says "
        "'slugs keep non-ASCII letters for the French site'.",
        "So the fix is in slugify: drop the ASCII step and let the regex accept Unicode word characters.",
    ]:
        t.text(words)
        t.turn()
    at = t.calls
    t.call(
        ed,
        {
            "command": "str_replace",
            "path": "/repo/src/text/slugify.py",
            "old_str": "    s = s.encode('ascii', 'ignore').decode()\n"
            "    return re.sub(r'[^a-z0-9]+', '-', s.lower()).strip('-')",
            "new_str": "    s = unicodedata.normalize('NFC', s)\n"
            "    return re.sub(r'[^\\w]+', '-', s.lower()).strip('-')",
        },
        "The file /repo/src/text/slugify.py has been edited.",
    )
    t.turn()
    t.call("bash", {"command": "python -m pytest -q tests/test_slugify.py"}, "..\n2 passed in 0.04s")
    t.answer("slugify keeps non-ASCII letters now; both tests pass.")
    # three text-only turns in a row with no user input: the 3rd turn end is a no_action signal (given at the
    # last call so far). Three different texts: weak evidence -> advise, never a halt; the next turn edits
    return t.loop(
        "no_action",
        at,
        onset,
        "Coding agent thinks aloud for three turns in different words, then writes the fix.",
        halt=None,
    )


@scenario
def field_idle_five_thoughts_then_query() -> Trace:
    t = Trace("field_idle_five_thoughts_then_query")
    t.call(
        "list_tables",
        {"schema": "sales"},
        ["orders", "order_items", "customers", "products", "refunds"],
        think=3.0,
    )
    t.turn()
    t.call(
        "describe_table",
        {"table": "sales.refunds"},
        "id bigint, order_id bigint, amount_eur numeric, reason text, created_at timestamptz",
    )
    t.turn()
    onset = t.calls
    for words in [
        "Net revenue is gross order value minus refunds, but refunds can come in a later month than the order.",
        "If I attribute refunds to the refund month, October looks worse than it was.",
        "The finance team's definition in the README attributes refunds to the order month.",
        "Then I need to join refunds to orders and group by the order's month, not the refund's.",
        "I also have to exclude test orders; customers with an @acme.test email are internal.",
    ]:
        t.text(words)
        t.turn()
    at = onset  # the advice comes at the 3rd idle turn end, at the last call so far
    t.call(
        "run_sql",
        {
            "sql": "SELECT date_trunc('month', o.created_at) AS m, sum(o.total_eur) - coalesce(sum(r.amount_eur), 0) "
            "FROM sales.orders o LEFT JOIN sales.refunds r ON r.order_id = o.id JOIN sales.customers c ON c.id = "
            "o.customer_id WHERE c.email NOT LIKE '%@acme.test' GROUP BY 1 ORDER BY 1"
        },
        json.dumps([["2025-09-01", 412880.15], ["2025-10-01", 398104.62], ["2025-11-01", 120930.4]]),
    )
    t.answer("Net revenue by order month: Sep 412,880, Oct 398,105, Nov (partial) 120,930 EUR.")
    # five text-only turns in different words: advice at the 3rd (weak), warnings at the 4th and 5th
    # (patience 3), then a query: never halted
    return t.loop(
        "no_action",
        at,
        onset,
        "Analytics agent reasons for five text-only turns in different words, then runs the query.",
        halt=None,
    )


@scenario
def field_idle_invalid_calls_and_text_recover() -> Trace:
    t = Trace("field_idle_invalid_calls_and_text_recover")
    t.user("Book me a table for 2 at Nopa tomorrow at 19:30.")
    t.call(
        "search_restaurants",
        {"name": "Nopa", "city": "San Francisco"},
        [{"restaurant_id": "rst_4471", "name": "Nopa", "address": "560 Divisadero St"}],
    )
    t.turn()
    t.call(
        "check_availability",
        {"restaurant_id": "rst_4471", "date": "2025-12-01", "time": "19:30", "party_size": 2},
        {"available": True, "slots": ["19:15", "19:30", "20:00"]},
    )
    t.turn()
    onset = t.calls
    t.turn(error="invalid tool call: create_booking is missing required argument 'party_size'")
    t.text("The slot is free; I need to pass the party size and the contact name.")
    t.turn()
    t.turn(error="invalid tool call: arguments are not valid JSON (Expecting ',' delimiter: line 1 column 64)")
    t.text("Retrying the booking with all fields.")
    t.turn()
    at = onset
    t.call(
        "create_booking",
        {"restaurant_id": "rst_4471", "date": "2025-12-01", "time": "19:30", "party_size": 2, "name": "Sam Ortiz"},
        {"booking_id": "bk_99120", "status": "confirmed"},
    )
    t.turn()
    t.answer("Booked: Nopa, tomorrow 19:30, 2 people (bk_99120).")
    # four turns in a row without a valid call and without the user writing: an invalid call, words, another
    # (different) invalid call, words. The 3rd is a no_action signal; they differ, so weak: advise, then a
    # warning at the 4th; the next turn books. Never halted.
    return t.loop(
        "no_action",
        at,
        onset,
        "Booking agent: two different invalid calls and two text turns in a row, then a valid booking.",
        halt=None,
    )


@scenario
def field_idle_same_words_every_turn() -> Trace:
    t = Trace("field_idle_same_words_every_turn")
    t.call("read_file", {"path": "migrations/0042_add_index.sql"}, "CREATE INDEX idx_events_ts ON events (ts);")
    t.call("query_db", {"sql": "SELECT count(*) FROM events"}, "[[418220931]]")
    t.turn()
    onset = t.calls
    for _ in range(7):
        t.text("I'll rewrite the migration to use CREATE INDEX CONCURRENTLY so the table is not locked.")
        t.turn()
    # the same words every turn, no call, no user: the 3rd idle turn is advised (strong: the three said the
    # same), the 4th blocked (nothing new since), the 5th halts (the same loop after its block). Turn-level
    # verdicts carry the last call's index (call 2) -> advice and halt both at call 2.
    return t.loop(
        "no_action",
        onset,
        onset,
        "The agent writes the same sentence for seven turns and never calls a tool.",
        halt=onset,
    )


@scenario
def field_idle_same_invalid_call_every_turn() -> Trace:
    t = Trace("field_idle_same_invalid_call_every_turn", id_prefix="call_")
    t.call(
        "get_ticket",
        {"ticket_id": 88213},
        {"ticket_id": 88213, "subject": "Refund not received", "order_id": "ORD-66120", "status": "open"},
    )
    t.turn()
    t.call(
        "get_order",
        {"order_id": "ORD-66120"},
        {"order_id": "ORD-66120", "refund": {"id": "re_5Tq1", "state": "succeeded", "on": "2025-11-21"}},
    )
    t.turn()
    onset = t.calls
    for _ in range(6):
        t.turn(error="unknown tool 'reply_to_ticket' (available: get_ticket, get_order, send_reply, close_ticket)")
    # the same invalid call every turn: strong evidence. 3rd turn advised, 4th blocked, 5th halted (the
    # verdicts of turn ends carry the last call's index, 2)
    return t.loop(
        "no_action",
        onset,
        onset,
        "Support agent calls a tool that does not exist, the same way, six turns in a row.",
        halt=onset,
    )


@scenario
def field_idle_empty_replies() -> Trace:
    t = Trace("field_idle_empty_replies")
    t.call(
        "web_search",
        {"query": "Postgres 17 release date incremental backup"},
        [
            {
                "title": "PostgreSQL 17 Released!",
                "url": "https://www.postgresql.org/about/news/postgresql-17-released-2936/",
            }
        ],
    )
    t.turn()
    t.call(
        "fetch_url",
        {"url": "https://www.postgresql.org/about/news/postgresql-17-released-2936/"},
        "PostgreSQL 17 Released! Posted on 2024-09-26. ... pg_basebackup now supports incremental backup ...",
    )
    t.turn()
    onset = t.calls
    for _ in range(5):
        t.turn(tokens=(5200, 0))  # the model returned nothing: no words, no call
    # empty replies: "the same reply three times in a row (... an empty reply) is the loop itself": the 3rd
    # advised, the 4th blocked, the 5th halts
    return t.loop(
        "no_action",
        onset,
        onset,
        "Research agent gets five empty model replies in a row after fetching its source.",
        halt=onset,
    )


# -------------------------------------------------------------------------------------------------
# re-read stalls: ranges already seen, in a varying order, then new work
# -------------------------------------------------------------------------------------------------


@scenario
def field_reread_ranges_varying_order_then_edit() -> Trace:
    t = Trace("field_reread_ranges_varying_order_then_edit")
    ed = "str_replace_based_edit_tool"
    p = "/repo/sched/planner.py"
    parts = {
        "a": (p, [1, 60], "class Planner:\n    def __init__(self, slots):\n        self.slots = slots\n", 1),
        "b": (p, [60, 140], "    def assign(self, job):\n        slot = self._first_free(job)\n", 60),
        "c": ("/repo/sched/slots.py", None, "def overlaps(a, b):\n    return a.start < b.end and b.start < a.end\n", 1),
        "d": ("/repo/tests/test_planner.py", [1, 50], "def test_back_to_back_jobs():\n    ...\n", 1),
        "e": ("/repo/sched/jobs.py", None, "@dataclass\nclass Job:\n    start: int\n    end: int\n", 1),
    }
    calls = {}
    for k, (path, rng, body, start) in parts.items():
        args: dict[str, Any] = {"command": "view", "path": path}
        if rng:
            args["view_range"] = rng
        calls[k] = (ed, args, cat_n(path, body, start))
    for k in "abcde":
        t.call(*calls[k])
        t.turn()
    onset = t.calls + 1
    stale = []
    for k in "cadb":
        stale.append(t.call(*calls[k]))
        t.turn()
    at = t.call(*calls["e"])
    t.turn()
    t.call(*calls["a"])
    t.turn()
    t.call(
        ed,
        {
            "command": "str_replace",
            "path": "/repo/sched/slots.py",
            "old_str": "    return a.start < b.end and b.start < a.end",
            "new_str": "    return a.start < b.end and b.start < a.end and a.end != b.start",
        },
        "The file /repo/sched/slots.py has been edited.",
    )
    t.turn()
    t.call("bash", {"command": "python -m pytest -q tests/test_planner.py"}, "......\n6 passed in 0.09s")
    t.answer("Back-to-back jobs no longer count as overlapping; planner tests pass.")
    # five new views (calls 1-5), then the same five again in another order: c, a, d, b are stale (4 in a
    # row), e would be the 5th stale call in a row -> Cycle (call 10). Not a short cycle (no A,B,A,B or
    # A,B,C,A,B,C) and not one cycle repeated exactly (c at 6 does not repeat a at 1): weak evidence ->
    # advise; call 11 runs with a warning; the edit and the test are new work. Never halted.
    return t.loop(
        "cycle",
        at,
        onset,
        "Agent re-views five file ranges it has seen, in another order, then edits and tests.",
        halt=None,
    )


@scenario
def field_cc_reread_parallel_ranges_then_edit() -> Trace:
    t = Trace("field_cc_reread_parallel_ranges_then_edit")
    m = message_ids("msg_01Rr")
    t.user("The exporter drops the last row of every CSV. Find out why and fix it.")
    exp = "/repo/exporter/csv_writer.go"
    a = (
        "Read",
        {"file_path": exp, "offset": 1, "limit": 120},
        numbered("package exporter\n\nfunc (w *Writer) Flush() {\n\tfor i := 0; i < len(w.rows)-1; i++ {\n"),
    )
    b = ("Read", {"file_path": "/repo/exporter/rows.go"}, numbered("package exporter\n\ntype Row []string\n"))
    g = (
        "Grep",
        {"pattern": "Flush\\(", "path": "/repo/exporter", "output_mode": "content", "-n": True},
        "/repo/exporter/csv_writer.go:3:func (w *Writer) Flush() {\n/repo/exporter/export.go:58:\tw.Flush()",
    )
    a2 = ("Read", {"file_path": exp, "offset": 120, "limit": 80}, numbered("\tw.buf.Flush()\n}\n", 120))
    c = (
        "Read",
        {"file_path": "/repo/exporter/export.go", "offset": 40, "limit": 40},
        numbered("\tfor _, r := range rows {\n\t\tw.Add(r)\n\t}\n\tw.Flush()\n", 40),
    )
    t.parallel([a, b], message=m())
    t.turn()
    t.call(*g, message=m())
    t.turn()
    t.call(*a2, message=m())
    t.turn()
    t.call(*c, message=m())
    t.turn()
    onset = t.calls + 1
    t.parallel([b, a], message=m())  # stale 1, 2
    t.turn()
    t.call(*c, message=m())  # stale 3
    t.turn()
    t.call(*a2, message=m())  # stale 4
    t.turn()
    at = t.call(*b, message=m())  # would be the 5th stale call in a row
    t.turn()
    t.call(
        "Edit",
        {
            "file_path": exp,
            "old_string": "\tfor i := 0; i < len(w.rows)-1; i++ {",
            "new_string": "\tfor i := 0; i < len(w.rows); i++ {",
        },
        cc_edited(exp, "\tfor i := 0; i < len(w.rows); i++ {", 4),
        message=m(),
    )
    t.turn()
    t.call(
        "Bash",
        {"command": "go test ./exporter/...", "description": "Run exporter tests"},
        "ok  \tgithub.com/acme/exporter\t0.214s",
        message=m(),
    )
    t.answer("Flush looped to len(rows)-1; it now writes every row. Tests pass.")
    # calls 1-5 new (Read, Read, Grep, Read, Read). Then re-reads of what was seen, in a varying order (one
    # parallel pair, then one per message): b, a, c, a2 stale (4 in a row), and b (call 10) would be the 5th
    # -> Cycle. No period-2 or period-3 cycle, not one cycle repeated exactly (b at 6 repeats b at 2, but a
    # at 7 is not g at 3): weak evidence, advice. The next message edits. Never halted.
    # (Label fixed after the first replay: the first version sent a2 and b as one parallel pair, so a2 had
    # not returned when b was checked; a call is stale when its result came back the same, so b was not the
    # 5th stale call in a row; the last re-reads were meant to come one per message.)
    return t.loop(
        "cycle",
        at,
        onset,
        "Claude Code re-reads file ranges it has seen, in a varying order, then fixes the loop bound.",
        halt=None,
    )


@scenario
def field_reread_stall_warned_blocked_then_recovers() -> Trace:
    t = Trace("field_reread_stall_warned_blocked_then_recovers")
    ed = "str_replace_editor"
    test_fail = (
        "F\nE   AssertionError: expected 3 retries, got 4\n\ntests/test_backoff.py:22: AssertionError\n"
        "1 failed in 0.12s"
    )
    t.call("bash", {"command": "python -m pytest -q tests/test_backoff.py"}, test_fail, error=True)
    t.turn()

    def view(path: str, rng: list[int] | None, body: str, start: int = 1) -> tuple[str, Any, str]:
        args: dict[str, Any] = {"command": "view", "path": path}
        if rng:
            args["view_range"] = rng
        return (ed, args, cat_n(path, body, start))

    f1 = view("/repo/netutil/backoff.py", None, "def backoff(attempt):\n    return min(2 ** attempt, 30)\n")
    f2 = view("/repo/netutil/client.py", None, "class Client:\n    max_retries = 3\n")
    f3a = view("/repo/netutil/retry.py", [1, 50], "def call_with_retry(fn, max_retries):\n    attempt = 0\n")
    f3b = view("/repo/netutil/retry.py", [50, 110], "    while attempt <= max_retries:\n        attempt += 1\n", 50)
    for v in (f1, f2, f3a, f3b):
        t.call(*v)
        t.turn()
    onset = t.calls + 1
    for v in (f2, f3a, f1, f3b):  # stale 1-4
        t.call(*v)
        t.turn()
    at = t.call(*f3a)  # would be the 5th stale call in a row
    t.turn()
    for v in (f2, f1, f3b, f1, f2):  # warnings, then blocks: the weak loop goes on
        t.call(*v)
        t.turn()
    t.call(
        ed,
        {
            "command": "str_replace",
            "path": "/repo/netutil/retry.py",
            "old_str": "    while attempt <= max_retries:",
            "new_str": "    while attempt < max_retries:",
        },
        "The file /repo/netutil/retry.py has been edited.",
    )
    t.turn()
    t.call("bash", {"command": "python -m pytest -q tests/test_backoff.py"}, ".\n1 passed in 0.11s")
    t.answer("Off-by-one in call_with_retry (<= instead of <): fixed; the backoff test passes.")
    # calls 2-5 new views; then f2, f3a, f1, f3b (stale 1-4) and f3a (call 10) would be the 5th stale call in
    # a row -> Cycle, advise. Order varies (not a 2- or 3-call cycle, not one cycle repeated exactly): weak.
    # Calls 11-13 run with a warning (patience 3), calls 14-15 are blocked; then the edit and the test pass.
    # Weak evidence never halts. (Drift does not count these re-reads: the same view again with the same result
    # is a repeat, not a reworded search.)
    return t.loop(
        "cycle",
        at,
        onset,
        "Agent re-views four ranges in a varying order for ten calls (advised, warned, blocked), then fixes it.",
        halt=None,
    )


@scenario
def field_support_reread_kb_stall_then_reply() -> Trace:
    t = Trace("field_support_reread_kb_stall_then_reply", id_prefix="call_")
    ticket = (
        "get_ticket",
        {"ticket_id": 51207},
        {"subject": "2FA codes not arriving by SMS", "customer_id": "cus_8812", "priority": "high", "channel": "email"},
    )
    kb1 = (
        "get_article",
        {"article_id": "kb-2fa-sms"},
        "SMS codes can be delayed by carriers. Ask the customer to "
        "switch to an authenticator app under Settings > Security > Two-factor.",
    )
    kb2 = (
        "get_article",
        {"article_id": "kb-2fa-backup"},
        "Backup codes: each account has 10 one-time backup codes "
        "shown when 2FA was enabled. Support can reset 2FA after identity verification (form ID-VER-2).",
    )
    cust = (
        "get_customer",
        {"customer_id": "cus_8812"},
        {"name": "Ines Duarte", "phone_country": "PT", "twofa": "sms", "verified_identity": False},
    )
    logs = (
        "get_sms_logs",
        {"customer_id": "cus_8812", "days": 7},
        [{"at": "2025-11-29T10:02:11Z", "carrier": "MEO", "state": "undelivered"}],
    )
    for c in (ticket, kb1, kb2, cust, logs):
        t.call(*c)
        t.turn()
    onset = t.calls + 1
    for c in (kb2, ticket, kb1, cust):  # stale 1-4, order varies
        t.call(*c)
        t.turn()
    at = t.call(*kb2)  # would be the 5th stale call in a row
    t.turn()
    t.call(
        "send_reply",
        {
            "ticket_id": 51207,
            "body": "Hi Ines, MEO has not delivered our last SMS codes. Please sign in with one of your backup codes "
            "and switch to an authenticator app; if you have none, reply and we'll verify your identity.",
        },
        {"sent": True, "message_id": "m_77120"},
    )
    t.call("set_ticket_status", {"ticket_id": 51207, "status": "pending"}, {"ok": True})
    t.answer("Replied with the backup-code route and set the ticket to pending.")
    # ticket, two articles, customer, SMS logs (all new); then four of them again in another order (stale
    # 1-4) and kb-2fa-backup once more (call 10): the 5th stale call in a row -> Cycle, weak (the order
    # varies: kb2 at 6 does not repeat the ticket at 1 one period back). The reply is sent next. No halt.
    return t.loop(
        "cycle",
        at,
        onset,
        "Support agent re-reads the ticket, KB articles and customer in another order, then replies.",
        halt=None,
    )


# -------------------------------------------------------------------------------------------------
# no model turns: a program calling a tool in a loop, an MCP client through the proxy
# -------------------------------------------------------------------------------------------------


@scenario
def field_script_loop_same_rates() -> Trace:
    t = Trace("field_script_loop_same_rates", with_ids=False)
    t.call("load_config", {"path": "jobs/fx_sync.yaml"}, {"base": "EUR", "symbols": ["USD", "GBP", "JPY"]}, think=0.3)
    rates = {
        "base": "EUR",
        "date": "2025-11-28",
        "rates": {"USD": 1.0563, "GBP": 0.8342, "JPY": 161.87},
        "timestamp": 1764374399,
    }
    idx = [
        t.call("fetch_rates", {"base": "EUR", "symbols": "USD,GBP,JPY"}, rates, think=0.002, took=0.001)
        for _ in range(40)
    ]
    # a `while rates == last: fetch again` loop with no model, no turn_end, no message ids, ~330 calls per
    # second. Each call follows a result: a new step. Repeat: the 3rd identical call (idx[2]) is advised,
    # the 4th is blocked (nothing new since), the 5th halts (the loop blocked just before).
    return t.loop(
        "repeat",
        idx[2],
        idx[1],
        "A sync script fetches the same exchange rates 40 times in a tight loop; the weekend rates never change.",
        halt=idx[4],
    )


@scenario
def field_script_retry_same_error() -> Trace:
    t = Trace("field_script_retry_same_error", with_ids=False)
    args = {
        "url": "https://hooks.partner.example/v1/acme/events",
        "event": "invoice.paid",
        "payload_ref": "evt_1QxZ8",
    }
    err = "HTTP 410 Gone: this endpoint was removed on 2025-10-01; use /v2/events"
    idx = [t.call("send_webhook", args, err, error=True, think=0.002, took=0.001) for _ in range(30)]
    # a retry decorator without a limit: the identical failing call. Repeat (first in priority) at the 3rd
    # identical call whose 2 predecessors returned the same result; ErrorRepeat would wait for the 4th.
    # Block at the 4th, halt at the 5th.
    return t.loop(
        "repeat",
        idx[2],
        idx[1],
        "A webhook sender retries the same POST 30 times in milliseconds; every answer is the same 410 Gone.",
        halt=idx[4],
    )


@scenario
def field_script_crawler_next_link_loop() -> Trace:
    t = Trace("field_script_crawler_next_link_loop")
    base = "https://shop.example.com/c/desk-lamps?page="
    names = [
        ["Arc floor lamp", "Banker's lamp", "Clip-on LED"],
        ["Drafting lamp", "Edison bulb lamp", "Flexible neck lamp"],
        ["Glass dome lamp", "Halogen desk lamp", "Industrial lamp"],
        ["Japanese paper lamp", "Kids' desk lamp", "Linen shade lamp"],
    ]
    for page in range(1, 4):
        t.call(
            "fetch_url",
            {"url": f"{base}{page}"},
            {"products": names[page - 1], "next": f"{base}{page + 1}"},
            think=0.004 if page > 1 else 1.0,
            took=0.08,
        )
    idx = [
        t.call(
            "fetch_url",
            {"url": f"{base}4"},
            {"products": names[3], "next": f"{base}4"},  # the last page links to itself
            think=0.004,
            took=0.08,
        )
        for _ in range(12)
    ]
    # a crawler following "next": three new pages, then page 4, whose "next" is page 4 again. Plain loop,
    # no turns, no message ids: the 3rd identical fetch of page 4 (idx[2]) is advised, idx[3] blocked,
    # idx[4] halts
    return t.loop(
        "repeat",
        idx[2],
        idx[1],
        "A crawler follows next links; the last page links to itself and it fetches it again and again.",
        halt=idx[4],
    )


@scenario
def field_mcp_proxy_back_to_back_identical() -> Trace:
    t = Trace("field_mcp_proxy_back_to_back_identical", id_prefix="rpc-")
    t.call(
        "list_issues",
        {"team": "ENG", "state": "Todo", "assignee": "me"},
        json.dumps({"issues": [{"id": "ENG-4411", "title": "Webhook retries ignore Retry-After"}]}),
        think=2.0,
        took=0.2,
    )
    issue = json.dumps(
        {
            "id": "ENG-4411",
            "title": "Webhook retries ignore Retry-After",
            "state": "Todo",
            "description": "Partners return 429 with Retry-After; we retry after 1s regardless.",
            "comments": 3,
        }
    )
    idx = [t.call("get_issue", {"issue_id": "ENG-4411"}, issue, think=0.004, took=0.012) for _ in range(8)]
    # an MCP client sending the same call back to back through the proxy: no turns, no message ids. Each
    # call follows the previous one's result (a new step, however fast). 3rd identical -> advise (idx[2]),
    # the next blocked, the one after halts. (Label fixed after the first replay: the first version had the
    # issue "In Progress", a stated status that reads as pending, docs/detectors.md "Pending means a stated
    # status" ("state = running"), so Repeat waits for pending_threshold; see the next scenario.)
    return t.loop(
        "repeat",
        idx[2],
        idx[1],
        "An MCP client asks the proxy for the same Linear issue eight times, a few milliseconds apart.",
        halt=idx[4],
    )


@scenario
def field_mcp_proxy_back_to_back_in_progress_issue() -> Trace:
    t = Trace("field_mcp_proxy_back_to_back_in_progress_issue", id_prefix="rpc-")
    t.call(
        "list_issues",
        {"team": "ENG", "state": "In Progress", "assignee": "me"},
        json.dumps({"issues": [{"id": "ENG-4419", "title": "Dedupe webhook deliveries"}]}),
        think=2.0,
        took=0.2,
    )
    issue = json.dumps(
        {
            "id": "ENG-4419",
            "title": "Dedupe webhook deliveries",
            "state": "In Progress",
            "description": "Partners receive invoice.paid twice when the first delivery times out.",
            "comments": 5,
        }
    )
    idx = [t.call("get_issue", {"issue_id": "ENG-4419"}, issue, think=0.004, took=0.012) for _ in range(16)]
    # the same back-to-back calls, but the issue's state is "In Progress": a stated status that says the
    # work is still going (docs/detectors.md, "Pending means a stated status"), so Repeat waits for
    # pending_threshold: the 12th identical call (idx[11]) is advised, the 13th blocked, the 14th halts
    return t.loop(
        "repeat",
        idx[11],
        idx[1],
        "An MCP client asks the proxy 16 times for the same issue, whose state In Progress reads as pending.",
        halt=idx[13],
    )


@scenario
def field_mcp_proxy_identical_parallel_batches() -> Trace:
    t = Trace("field_mcp_proxy_identical_parallel_batches", id_prefix="rpc-")
    args = {"owner": "acme", "repo": "api", "path": "src/server.ts"}
    body = json.dumps(
        {
            "name": "server.ts",
            "sha": "9f1c2a7e44b0",
            "content": "import express from 'express';\nconst app = express();\n",
        }
    )
    batches = [t.parallel([("get_file_contents", args, body)] * 3, think=2.5, gap=0.003, took=0.15) for _ in range(3)]
    # three identical calls sent together, three times, through the proxy (no turns, no message ids).
    # Batch 1: no call had returned when each was checked: nothing. Batch 2: its first call is the 3rd
    # identical call after two identical results -> advise. "Without message ids or turns, identical calls
    # of one parallel batch cannot be told from a program calling the same tool in a loop: they climb the
    # ladder one after another" (docs/escalation.md): the 2nd call of batch 2 is blocked, the 3rd halts.
    return t.loop(
        "repeat",
        batches[1][0],
        batches[0][1],
        "An MCP client sends the same get_file_contents three at a time, three times; no message ids, no turns.",
        halt=batches[1][2],
    )


# -------------------------------------------------------------------------------------------------
# turns known by message ids only (an OpenAI Agents run: no turn_end)
# -------------------------------------------------------------------------------------------------


@scenario
def field_openai_agents_same_call_each_response() -> Trace:
    t = Trace("field_openai_agents_same_call_each_response", id_prefix="call_")
    m = message_ids("resp_67f")
    t.call(
        "search_tickets",
        {"query": "export to csv timeout", "status": "open"},
        [{"ticket_id": "SUP-2291", "subject": "CSV export of 50k rows times out"}],
        message=m(),
    )
    ticket = {
        "ticket_id": "SUP-2291",
        "subject": "CSV export of 50k rows times out",
        "customer": "Brightlane GmbH",
        "messages": 4,
        "last_reply": "We're looking into it.",
    }
    idx = [t.call("fetch_ticket", {"ticket_id": "SUP-2291"}, ticket, message=m()) for _ in range(6)]
    # no turn_end events (the run's usage never counted model requests); each response has its own message
    # id and asks for the same call. Steps by message: the 3rd identical call is advised, the 4th (the next
    # response) blocked, the 5th halts.
    return t.loop(
        "repeat",
        idx[2],
        idx[1],
        "OpenAI Agents run (message ids only): every response fetches the same ticket again.",
        halt=idx[4],
    )


@scenario
def field_openai_agents_duplicate_calls_per_response() -> Trace:
    t = Trace("field_openai_agents_duplicate_calls_per_response", id_prefix="call_")
    m = message_ids("resp_68b")
    t.call(
        "get_customer",
        {"email": "lena.kraus@example.de"},
        {"customer_id": "cus_3391", "plan": "pro"},
        message=m(),
    )
    args = {"customer_id": "cus_3391", "status": "open"}
    out = {"invoices": [{"id": "in_88A1", "amount_eur": 49.0, "due": "2025-12-05"}]}
    pairs = [t.parallel([("list_invoices", args, out)] * 2, message=m()) for _ in range(4)]
    # each response asks for the same call twice (a model emitting duplicate tool calls). Response 2:
    # neither call sees two returned predecessors. Response 3: its first call is the 3rd identical call after
    # two identical results -> advise, and its twin in the same message gets the same advice (one step per
    # message). Response 4: both blocked. Response 5: its first call halts.
    return t.loop(
        "repeat",
        pairs[1][0],
        pairs[0][1],
        "OpenAI Agents run (message ids only): every response lists the same invoices twice in parallel.",
        halt=pairs[3][0],
    )


@scenario
def field_openai_agents_message_ids_healthy() -> Trace:
    t = Trace("field_openai_agents_message_ids_healthy", id_prefix="call_")
    m = message_ids("resp_69a")
    t.call("get_customer", {"email": "o.bello@example.ng"}, {"customer_id": "cus_7720", "plan": "team"}, message=m())
    t.parallel(
        [
            ("list_invoices", {"customer_id": "cus_7720", "status": "open"}, {"invoices": []}),
            ("list_subscriptions", {"customer_id": "cus_7720"}, [{"id": "sub_91", "seats": 8, "renews": "2026-01-03"}]),
            ("list_payment_methods", {"customer_id": "cus_7720"}, [{"id": "pm_55", "brand": "visa", "last4": "0031"}]),
        ],
        message=m(),
    )
    t.call(
        "get_subscription", {"subscription_id": "sub_91"}, {"id": "sub_91", "seats": 8, "price_eur": 96.0}, message=m()
    )
    t.parallel(
        [
            (
                "preview_change",
                {"subscription_id": "sub_91", "seats": 12},
                {"prorated_eur": 12.8, "new_price_eur": 144.0},
            ),
            (
                "preview_change",
                {"subscription_id": "sub_91", "seats": 12},
                {"prorated_eur": 12.8, "new_price_eur": 144.0},
            ),
        ],
        message=m(),
    )
    t.call(
        "update_subscription", {"subscription_id": "sub_91", "seats": 12}, {"id": "sub_91", "seats": 12}, message=m()
    )
    t.call(
        "get_subscription",
        {"subscription_id": "sub_91"},
        {"id": "sub_91", "seats": 12, "price_eur": 144.0},
        message=m(),
    )
    # message ids only. Distinct lookups, one response with the same preview twice (twice, never a third
    # time), an update (a new epoch), and the subscription read again after it: nothing repeats
    return t.healthy("OpenAI Agents run (message ids only) upgrades seats: parallel lookups, a duplicate preview.")


# -------------------------------------------------------------------------------------------------
# identical failures while the user writes in between
# -------------------------------------------------------------------------------------------------


@scenario
def field_airline_same_flight_change_user_insists() -> Trace:
    t = Trace("field_airline_same_flight_change_user_insists")
    t.user("Hi, I'm mia_li_3668. I need to move reservation NO6JO3 to the afternoon flight on May 22.")
    t.call(
        "get_user_details",
        {"user_id": "mia_li_3668"},
        {"name": "Mia Li", "membership": "gold", "payment_methods": {"credit_card_4421859": {"last4": "7447"}}},
    )
    t.call(
        "get_reservation_details",
        {"reservation_id": "NO6JO3"},
        {
            "reservation_id": "NO6JO3",
            "origin": "JFK",
            "destination": "SEA",
            "cabin": "economy",
            "flights": [{"flight_number": "HAT136", "date": "2024-05-22", "price": 186}],
        },
    )
    t.call(
        "search_direct_flight",
        {"origin": "JFK", "destination": "SEA", "date": "2024-05-22"},
        [
            {"flight_number": "HAT136", "dep": "07:00"},
            {"flight_number": "HAT170", "dep": "15:00", "available_seats": {"economy": 0, "business": 4}},
        ],
    )
    t.turn()
    t.text("HAT170 departs 15:00. Shall I move you to it, paying any difference with the card ending 7447?")
    t.turn()
    t.user("Yes please.")
    change = {
        "reservation_id": "NO6JO3",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT170", "date": "2024-05-22"}],
        "payment_id": "credit_card_4421859",
    }
    err = "Error: not enough seats on flight HAT170"
    t.call("update_reservation_flights", change, err)
    t.turn()
    t.text("I'm sorry, the change failed: there are no economy seats left on HAT170.")
    t.turn()
    t.user("That can't be right, the app shows seats. Please try again.")
    onset = t.call("update_reservation_flights", change, err)
    t.turn()
    t.text("I tried again and got the same answer: no economy seats on HAT170.")
    t.turn()
    t.user("I feel like we might be going in circles. Can you try one more time?")
    at = t.call("update_reservation_flights", change, err)
    t.turn()
    t.text("It fails the same way. The seats you see in the app are business class.")
    t.turn()
    t.user("Ugh. Try it once more, please.")
    again = t.call("update_reservation_flights", change, err)
    t.turn()
    t.text("Same result. I can move you to business on HAT170, or economy on the 07:00 flight the next day.")
    t.turn()
    t.user("Business then, same card.")
    t.call(
        "update_reservation_flights",
        {**change, "cabin": "business"},
        {"reservation_id": "NO6JO3", "cabin": "business", "flights": [{"flight_number": "HAT170"}], "charged": 412},
    )
    t.answer("Done: NO6JO3 is on HAT170 at 15:00 on May 22 in business; USD 412 charged to the card ending 7447.")
    # tau-bench output: "Error: ..." with no is_error flag ("a short text result that starts by saying it
    # failed counts as an error"). The same change fails the same way twice; the user asks again: "failures
    # count across the user's words" -> Repeat at the 3rd identical call (the previous 2 returned the same
    # error) -> advise. The user writes again before the 4th: the user's input starts the ladder over ->
    # advised again (call {again}), not blocked. The user keeps writing: never halted.
    return t.loop(
        "repeat",
        at,
        onset,
        f"Airline agent re-submits the same flight change after each user message; advised at {at} and {again}.",
        halt=None,
    )


@scenario
def field_airline_book_gift_card_error_lookups_between() -> Trace:
    t = Trace("field_airline_book_gift_card_error_lookups_between")
    t.user("I'm omar_davis_3817. Book me one-way economy ORD to LAX on May 17, HAT034, with my gift card.")
    user_details = {
        "name": "Omar Davis",
        "payment_methods": {
            "gift_card_3481935": {"source": "gift_card", "amount": 68},
            "credit_card_2929732": {"source": "credit_card", "last4": "5016"},
        },
        "membership": "regular",
    }
    t.call("get_user_details", {"user_id": "omar_davis_3817"}, user_details)
    t.call(
        "search_direct_flight",
        {"origin": "ORD", "destination": "LAX", "date": "2024-05-17"},
        [{"flight_number": "HAT034", "dep": "11:10", "prices": {"economy": 142}}],
    )
    t.turn()
    book = {
        "user_id": "omar_davis_3817",
        "origin": "ORD",
        "destination": "LAX",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT034", "date": "2024-05-17"}],
        "passengers": [{"first_name": "Omar", "last_name": "Davis", "dob": "1982-03-11"}],
        "payment_methods": [{"payment_id": "gift_card_3481935", "amount": 142}],
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": "no",
    }
    err = "Error: gift card balance is not enough"
    idx = [t.call("book_reservation", book, err)]
    t.turn()
    for ask in [
        "There's definitely money on that card. Try again.",
        "I topped it up last week! Please book it.",
        "Just try it one more time, please.",
    ]:
        t.text("The booking was declined: the gift card balance does not cover USD 142.")
        t.turn()
        t.user(ask)
        t.call("get_user_details", {"user_id": "omar_davis_3817"}, user_details)  # re-checks the balance
        idx.append(t.call("book_reservation", book, err))
        t.turn()
    t.text("The card has USD 68. I can put 68 on the gift card and 74 on your credit card ending 5016.")
    t.turn()
    t.user("Fine, do that.")
    t.call(
        "book_reservation",
        {
            **book,
            "payment_methods": [
                {"payment_id": "gift_card_3481935", "amount": 68},
                {"payment_id": "credit_card_2929732", "amount": 74},
            ],
        },
        {"reservation_id": "K7QZ2P", "status": "confirmed"},
    )
    t.answer("Booked: HAT034 on May 17, reservation K7QZ2P; USD 68 from the gift card, 74 from the card.")
    # the identical booking fails with the same payment error (idx[0], idx[1], idx[2]); a balance lookup and
    # the user's words come between each (not "in a row", so not Repeat). "The identical call failing again
    # (3 times): strong evidence. The user's words do not wash it away" -> ErrorRepeat at the 4th identical
    # booking (idx[3]), advise. The user wrote just before: the ladder had started over. Never halted.
    return t.loop(
        "error_repeat",
        idx[3],
        idx[1],
        "Airline agent re-checks the balance and re-submits the same gift-card booking after each user message.",
        halt=None,
    )


@scenario
def field_retail_exchange_error_user_stops_writing() -> Trace:
    t = Trace("field_retail_exchange_error_user_stops_writing")
    t.user("Hi, I want to exchange the hiking boots from order #W2378156 for size 10.")
    t.call(
        "find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}, "yusuf_rossi_9620"
    )
    t.call(
        "get_order_details",
        {"order_id": "#W2378156"},
        {
            "order_id": "#W2378156",
            "status": "delivered",
            "items": [{"item_id": "4602305039", "name": "Hiking Boots", "options": {"size": "9"}, "price": 239.62}],
        },
    )
    t.call(
        "get_product_details",
        {"product_id": "7363354090"},
        {"name": "Hiking Boots", "variants": {"1615379700": {"size": "10", "available": True, "price": 253.89}}},
    )
    t.turn()
    t.text("Size 10 is 253.89, 14.27 more. Pay the difference with your gift card gift_card_7245904?")
    t.turn()
    t.user("Yes.")
    x = {
        "order_id": "#W2378156",
        "item_ids": ["4602305039"],
        "new_item_ids": ["1615379700"],
        "payment_method_id": "gift_card_7245904",
    }
    err = "Error: insufficient gift card balance to pay for the price difference"
    t.call("exchange_delivered_order_items", x, err)
    t.turn()
    t.text("The exchange failed: the gift card can't cover the 14.27 difference.")
    t.turn()
    t.user("Odd. Try again?")
    onset = t.call("exchange_delivered_order_items", x, err)
    t.turn()
    t.text("Same error, I'm afraid.")
    t.turn()
    t.user("Please try one more time.")
    at = t.call("exchange_delivered_order_items", x, err)
    t.turn()
    block = t.call("exchange_delivered_order_items", x, err)
    t.turn()
    halt = t.call("exchange_delivered_order_items", x, err)
    t.turn()
    t.call("exchange_delivered_order_items", x, err)
    t.turn()
    # the same exchange fails twice with the same error, the user writes between; after the user's last
    # words the 3rd identical call (failures count across the user's words) is advised. Then the agent
    # retries on its own: blocked (nothing new since the advice), and once more: halted (the loop blocked
    # just before). The user stopped writing, so nothing starts the ladder over.
    return t.loop(
        "repeat",
        at,
        onset,
        f"Retail agent retries the same exchange; advised after the user's last message, blocked at {block}.",
        halt=halt,
    )


# -------------------------------------------------------------------------------------------------
# the user asks for the same lookup again; conversations with parallel calls
# -------------------------------------------------------------------------------------------------


@scenario
def field_bank_transfer_status_user_asks_again() -> Trace:
    t = Trace("field_bank_transfer_status_user_asks_again", id_prefix="call_")
    m = message_ids("chatcmpl-Cw")
    transfer = {
        "transfer_id": "TRF-20251128-0091",
        "to": "Anna Weber, DE89 3704 0044 0532 0130 00",
        "amount_eur": 1250.0,
        "state": "executed",
        "executed_at": "2025-11-28T09:14:03Z",
        "expected_credit": "2025-12-01",
    }
    t.user("Did my transfer to Anna go out? 1250 euros on Friday.")
    t.parallel(
        [
            (
                "list_transfers",
                {"account_id": "acc_55120", "since": "2025-11-27"},
                [{"transfer_id": "TRF-20251128-0091"}],
            ),
            ("get_balance", {"account_id": "acc_55120"}, {"available_eur": 3310.42}),
        ],
        message=m(),
    )
    t.call("get_transfer", {"transfer_id": "TRF-20251128-0091"}, transfer, message=m())
    t.turn()
    t.text("Yes, it was executed on Friday 28 November; Anna's bank should credit it on Monday 1 December.")
    t.turn()
    for ask, reply in [
        (
            "She says nothing has arrived. Can you check again?",
            "It's still executed on our side, credit expected Monday 1 December; "
            "SEPA transfers don't land at weekends.",
        ),
        (
            "Could you look one more time? She's worried.",
            "Checked again: executed, nothing returned, expected credit Monday. If it hasn't arrived Tuesday, I can "
            "start a trace.",
        ),
    ]:
        t.user(ask)
        t.call("get_transfer", {"transfer_id": "TRF-20251128-0091"}, transfer, message=m())
        t.turn()
        t.text(reply)
        t.turn()
    t.user("OK, thanks.")
    t.answer("You're welcome. I'll be here if it hasn't arrived by Tuesday.")
    # the same lookup three times, each after the user asked for it: "calls before the user last spoke do
    # not count" -> never a repeat; one text turn per user message
    return t.healthy("Bank assistant checks the same transfer three times because the customer asks each time.")


@scenario
def field_helpdesk_ticket_status_user_asks_again() -> Trace:
    t = Trace("field_helpdesk_ticket_status_user_asks_again")
    status = {
        "ticket": "INC0081234",
        "short_description": "Laptop screen flickering",
        "state": "Awaiting parts",
        "assigned_to": "Deskside Support Berlin",
        "eta": "2025-12-03",
    }
    t.user("Hi, any news on my laptop repair ticket?")
    t.call("find_tickets", {"caller": "j.nakamura", "active": True}, [{"ticket": "INC0081234"}])
    t.call("get_ticket", {"ticket": "INC0081234"}, status)
    t.turn()
    t.text("INC0081234 is awaiting parts; the ETA is 3 December.")
    t.turn()
    t.user("Can you double-check? I was told it would be done today.")
    t.call("get_ticket", {"ticket": "INC0081234"}, status)
    t.turn()
    t.text("Still awaiting parts, ETA 3 December. I can ask Deskside for a loaner.")
    t.turn()
    t.user("Please check once more, then yes, a loaner.")
    t.call("get_ticket", {"ticket": "INC0081234"}, status)
    t.call(
        "create_request",
        {"item": "loaner_laptop", "for": "j.nakamura", "ref": "INC0081234"},
        {"request": "RITM0049911", "state": "submitted"},
    )
    t.turn()
    t.answer("No change (awaiting parts, ETA 3 Dec). Loaner requested: RITM0049911.")
    # the same get_ticket three times in a row, each after a user message: the user's words make each a new
    # answer ("a lookup repeated because the customer asked again is an answer")
    return t.healthy("IT helpdesk bot re-checks the same ticket twice because the user asks; then orders a loaner.")


@scenario
def field_retail_conversation_parallel_calls() -> Trace:
    t = Trace("field_retail_conversation_parallel_calls", id_prefix="call_")
    m = message_ids("chatcmpl-Rt")
    t.user("Hi, I'm Sofia Ahmed, zip 60615. I want to return everything from my last two orders except the lamp.")
    t.call(
        "find_user_id_by_name_zip",
        {"first_name": "Sofia", "last_name": "Ahmed", "zip": "60615"},
        "sofia_ahmed_4471",
        message=m(),
    )
    t.call(
        "get_user_details",
        {"user_id": "sofia_ahmed_4471"},
        {"orders": ["#W8113024", "#W5920411", "#W1021887"], "payment_methods": {"paypal_3318": {}}},
        message=m(),
    )
    t.turn()
    t.parallel(
        [
            (
                "get_order_details",
                {"order_id": "#W8113024"},
                {
                    "status": "delivered",
                    "items": [
                        {"item_id": "6017636844", "name": "Desk Lamp", "price": 66.1},
                        {"item_id": "2882812427", "name": "Water Bottle", "price": 21.4},
                    ],
                },
            ),
            (
                "get_order_details",
                {"order_id": "#W5920411"},
                {"status": "delivered", "items": [{"item_id": "9370300555", "name": "Yoga Mat", "price": 38.0}]},
            ),
            (
                "get_order_details",
                {"order_id": "#W1021887"},
                {"status": "pending", "items": [{"item_id": "5209614018", "name": "Backpack", "price": 79.9}]},
            ),
        ],
        message=m(),
    )
    t.turn()
    t.text(
        "Your last two delivered orders: #W8113024 (lamp, water bottle) and #W5920411 (yoga mat). Return the "
        "water bottle and the yoga mat, refunded to PayPal?"
    )
    t.turn()
    t.user("Yes. And is the backpack order still cancellable?")
    t.parallel(
        [
            (
                "return_delivered_order_items",
                {"order_id": "#W8113024", "item_ids": ["2882812427"], "payment_method_id": "paypal_3318"},
                {"status": "return requested", "refund": 21.4},
            ),
            (
                "return_delivered_order_items",
                {"order_id": "#W5920411", "item_ids": ["9370300555"], "payment_method_id": "paypal_3318"},
                {"status": "return requested", "refund": 38.0},
            ),
            (
                "get_order_details",
                {"order_id": "#W1021887"},
                {"status": "pending", "items": [{"item_id": "5209614018", "name": "Backpack", "price": 79.9}]},
            ),
        ],
        message=m(),
    )
    t.turn()
    t.text("Both returns are requested (21.40 and 38.00 to PayPal). The backpack order is pending, so yes.")
    t.turn()
    t.user("Cancel it please, I ordered it by mistake.")
    t.call(
        "cancel_pending_order",
        {"order_id": "#W1021887", "reason": "ordered by mistake"},
        {"status": "cancelled", "refund": 79.9},
        message=m(),
    )
    t.answer("Cancelled #W1021887; 79.90 goes back to your original payment method.")
    # a conversation with three user messages and parallel calls in most turns: distinct lookups, two
    # returns in one message, the pending order looked up again after the user asked about it (a new epoch
    # since the user's words, and the returns changed state). Nothing repeats.
    return t.healthy("Retail support chat: parallel order lookups, two returns in one message, then a cancellation.")


@scenario
def field_telecom_conversation_parallel_diagnostics() -> Trace:
    t = Trace("field_telecom_conversation_parallel_diagnostics", id_prefix="call_")
    m = message_ids("chatcmpl-Tc")
    t.user("My mobile data stopped working this morning. Number 0176 5531 2290.")
    t.call(
        "get_customer_by_phone",
        {"phone_number": "+4917655312290"},
        {"customer_id": "C-30021", "line_id": "L-7781"},
        message=m(),
    )
    t.turn()
    diag = [
        ("get_line_details", {"line_id": "L-7781"}, {"status": "active", "data_roaming": False, "plan": "M 20GB"}),
        ("get_data_usage", {"line_id": "L-7781"}, {"used_gb": 20.0, "limit_gb": 20.0, "throttled": True}),
        ("get_network_status", {"postcode": "10245"}, {"outages": []}),
    ]
    t.parallel(diag, message=m())
    t.turn()
    t.text("You've used all 20 GB, so data is throttled. I can add 5 GB for 4.99 or upgrade you to 40 GB.")
    t.turn()
    t.user("Add the 5 GB. But it was working fine yesterday, are you sure there's no outage?")
    t.parallel(
        [
            ("add_data_pack", {"line_id": "L-7781", "pack": "5GB"}, {"ok": True, "charged_eur": 4.99}),
            ("get_network_status", {"postcode": "10245"}, {"outages": []}),
        ],
        message=m(),
    )
    t.turn()
    t.text("5 GB added (4.99). No outage near 10245. Please toggle airplane mode once.")
    t.turn()
    t.user("Done, still nothing.")
    t.parallel(
        [
            ("get_line_details", {"line_id": "L-7781"}, {"status": "active", "data_roaming": False, "plan": "M 20GB"}),
            ("get_data_usage", {"line_id": "L-7781"}, {"used_gb": 20.0, "limit_gb": 25.0, "throttled": True}),
            ("get_apn_settings", {"line_id": "L-7781"}, {"provisioned_apn": "internet.example", "sync": "pending"}),
        ],
        message=m(),
    )
    t.turn()
    t.call("reset_throttle", {"line_id": "L-7781"}, {"ok": True, "throttled": False}, message=m())
    t.turn()
    t.text("The throttle flag hadn't cleared after the top-up; I've reset it. Data should work within a minute.")
    t.turn()
    t.user("It works now, thanks!")
    t.answer("Great. You have 5 GB left until your plan renews on 12 December.")
    # three user messages, parallel diagnostics; the same network status and line details asked again after
    # the user's words (the user asked about an outage; the user says it still fails): new epochs. Nothing
    # repeats within one stretch of the agent's own work.
    return t.healthy("Telecom support chat: parallel line, usage and outage checks, a top-up, re-checks, a reset.")


# -------------------------------------------------------------------------------------------------
# fast, turnless and healthy
# -------------------------------------------------------------------------------------------------


@scenario
def field_script_distinct_lookups_fast() -> Trace:
    t = Trace("field_script_distinct_lookups_fast", with_ids=False)
    skus = [f"SKU-{4100 + 7 * k}" for k in range(14)]
    t.call("list_skus", {"category": "espresso-machines"}, skus, think=0.5)
    for k, s in enumerate(skus):
        t.call(
            "get_stock",
            {"sku": s, "warehouse": "DE-2"},
            {"sku": s, "on_hand": (k * 13) % 40, "reserved": k % 3},
            think=0.002,
            took=0.001,
        )
    # a script looping over 14 SKUs at machine speed, no turns, no message ids: every call distinct and
    # every answer new; fewer than 30 calls for rate
    return t.healthy("A stock script reads 14 different SKUs in a tight loop; every answer is new.")


@scenario
def field_mcp_proxy_distinct_calls_back_to_back() -> Trace:
    t = Trace("field_mcp_proxy_distinct_calls_back_to_back", id_prefix="rpc-")
    t.call(
        "list_directory",
        {"path": "/srv/app/config"},
        "[FILE] app.yaml\n[FILE] db.yaml\n[FILE] queues.yaml",
        think=1.5,
        took=0.02,
    )
    for name in ["app.yaml", "db.yaml", "queues.yaml"]:
        t.call(
            "read_file",
            {"path": f"/srv/app/config/{name}"},
            f"# {name}\nkey: value-{name[:2]}\n",
            think=0.005,
            took=0.01,
        )
    t.call("read_file", {"path": "/srv/app/config/db.yaml"}, "# db.yaml\nkey: value-db\n", think=0.005, took=0.01)
    t.call("search_files", {"path": "/srv/app", "pattern": "*.env"}, "/srv/app/.env.example", think=0.005, took=0.03)
    t.call(
        "read_file", {"path": "/srv/app/.env.example"}, "DATABASE_URL=postgres://app@db/app\n", think=0.005, took=0.01
    )
    # an MCP client through the proxy, calls a few ms apart, no turns: distinct reads, and db.yaml read a
    # second time (twice, not in a row three times; the second read is stale but one stale call is no cycle)
    return t.healthy("An MCP client reads a config directory through the proxy, calls milliseconds apart.")


def main() -> int:
    names = [fn.__name__ for fn in SCENARIOS]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate scenario names")
    for fn in SCENARIOS:
        trace = fn()
        if trace.name != fn.__name__:
            raise SystemExit(f"{fn.__name__}: trace named {trace.name}")
        trace.dump(HERE)
    print(f"wrote {len(SCENARIOS)} scenarios to {HERE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
