"""Generator for the labelled scenario corpus in ``tests/scenarios/`` (trace format v1, one session per file).

Run it from the repository root to rewrite the generated ``*.jsonl`` files (``hand_*.jsonl`` are written by
hand and are never touched)::

    .venv/bin/python tests/scenarios/_make.py

Each scenario function below is written by hand: tool names, arguments and outputs are the realistic part.
The builder only adds call ids, timestamps, the ``tool_result`` events and ``turn_end`` events. The FIRST
event line of every file carries the label (unknown fields are ignored by the trace reader)::

    "expect": {"first_intervention": {"kind": K, "action": "advise", "call_index": N} | null,
               "onset": M | null, "label": "loop" | "healthy", "description": "...",
               "known_issue": "..."}   # optional, see below

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

    def _call_event(self, tool: str, args: Any) -> dict[str, Any]:
        self.calls += 1
        ev: dict[str, Any] = {"type": "tool_call", "tool": tool, "args": args}
        if self.with_ids:
            ev["call_id"] = f"{self.id_prefix}{self.calls:04d}"
        ev["ts"] = round(self.now, 4)
        return ev

    def _result_event(self, index: int, tool: str, output: Any, error: bool) -> dict[str, Any]:
        ev: dict[str, Any] = {"type": "tool_result", "tool": tool}
        if self.with_ids:
            ev["call_id"] = f"{self.id_prefix}{index:04d}"
        ev["output"] = output
        ev["is_error"] = error
        if self.result_ts:
            ev["ts"] = round(self.now, 4)
        return ev

    def call(
        self, tool: str, args: Any, output: Any, *, error: bool = False, think: float = 4.0, took: float = 0.6
    ) -> int:
        """One tool call and its result; returns the call's 1-based index."""
        self.now += think
        ev = self._call_event(tool, args)
        self._emit(ev)
        self.now += took
        self._emit(self._result_event(self.calls, tool, output, error))
        return self.calls

    def parallel(
        self, items: list[tuple[str, Any, Any]], *, think: float = 3.0, gap: float = 0.004, took: float = 0.4
    ) -> list[int]:
        """Parallel tool calls in one model message: all calls first, then all results."""
        self.now += think
        first = self.calls + 1
        for i, (tool, args, _) in enumerate(items):
            if i:
                self.now += gap
            self._emit(self._call_event(tool, args))
        self.now += took
        for i, (tool, _, output) in enumerate(items):
            self.now += 0.01
            self._emit(self._result_event(first + i, tool, output, False))
        return list(range(first, self.calls + 1))

    def text(self, text: str) -> None:
        self._emit({"type": "text", "text": text})

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
    def loop(self, kind: str | None, at: int | None, onset: int, description: str, *, known_issue: str = "") -> Trace:
        first = None if kind is None else {"kind": kind, "action": "advise", "call_index": at}
        self.expect = {"first_intervention": first, "onset": onset, "label": "loop", "description": description}
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
    # The pytest command has now failed 3 times in this epoch (durations are scrubbed). Errors count per
    # program of a shell tool, so the re-cat (call 9) is not intercepted; the identical test call after it
    # is (ErrorRepeat, 3 failures). Cycle would fire on it too (stale run 4), but ErrorRepeat comes first.
    t.call("bash", cat, tax)
    at = t.call("bash", test, fail, error=True)
    return t.loop("error_repeat", at, onset, "Failing test re-run, file re-read, no edit in between.")


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
    t.call("str_replace_editor", edit, err, error=True)
    t.turn()
    # the tool returned the same error 3 times -> its next call (the view) is intercepted; Cycle fires too
    # (the 5th stale call) but ErrorRepeat comes first in the default priority order
    at = t.call("str_replace_editor", view, src)
    t.call("str_replace_editor", edit, err, error=True)
    return t.loop(
        "error_repeat",
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
    # stale: onset .. onset+3 (4 calls); the next call would be the 5th stale call in a row.
    # Drift per tool: 2 non-new results each, far below 5.
    at = t.call("search_docs", s, hits)
    t.call("open_doc", o, doc)
    assert at == onset + 4
    return t.loop("cycle", at, onset, "Two-tool ping-pong: the same search and the same article, over and over.")


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
    # stale from onset; the 5th stale call = onset+4
    return t.loop(
        "cycle",
        onset + 4,
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
    # pass 2 is stale from onset; the 5th stale call in a row (onset+4) is intercepted
    return t.loop("cycle", onset + 4, onset, "Health, logs, PSP status, again and again while nothing changes.")


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
    return t.loop(
        "cycle",
        onset + 4,
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
    return t.loop(
        "cycle",
        onset + 4,
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
    # volatile keys/timestamps differ each time: results still equal, so the calls are stale
    return t.loop(
        "cycle", onset + 4, onset, "get_ticket / list_comments ping-pong; only fetch times and request ids change."
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
    # short identical outputs are neutral for Drift; Cycle counts the stale calls
    return t.loop("cycle", onset + 4, onset, "bash ping-pong of `grep -c` and `wc -l` with nothing edited.")


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
    # the 5th stale call (onset+4) is intercepted by Cycle; Drift (one tool, long outputs it already
    # returned) would only fire on the call after 5 nothing-new results (onset+5)
    return t.loop(
        "cycle", onset + 4, onset, "bash re-running the same grep / cat / sed over unchanged files (long outputs)."
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
    # "a 2-call ping-pong at its 7th call": onset is the ping-pong's 3rd call, so onset+4. Drift would
    # need 5 nothing-new read_file results first (onset+5).
    return t.loop("cycle", onset + 4, onset, "read_file ping-pong between two config files that never change.")


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
def drift_code_search_interleaved_reads() -> Trace:
    t = Trace("drift_code_search_interleaved_reads")
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
    # search_code's last 5 results were empty (reads of new files in between don't reset another tool)
    return t.loop("drift", idx[5], idx[1], "Code search for a DLQ reworded 5 times, new files read in between.")


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
    # resets the epoch: calls 2-3 are new, 4-7 are stale (stale run 4), and call 8 would be the 5th stale call
    # in a row -> Cycle advises at 8.
    return t.loop(
        "cycle",
        8,
        4,
        "make test | tee build.log, then tail, six times with no edit: writing the log is not a change, so "
        "the second pass is stale.",
    )


# =================================================================================================
# rate: a call that makes the last 30 calls arrive faster than 10 per second
# =================================================================================================


@scenario
def rate_quote_loop() -> Trace:
    t = Trace("rate_quote_loop")
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
    # calls 1..30 arrive 0.01 s apart: the 30th makes 30 calls within 0.29 s
    return t.loop("rate", 30, 1, "A code loop fetching quotes for 40 symbols, ~70 calls per second.")


@scenario
def rate_metrics_after_slow_prefix() -> Trace:
    t = Trace("rate_metrics_after_slow_prefix")
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
    # the burst starts at `onset`; the 30th call of the burst is the first whose last-30 window lies
    # entirely within it (earlier windows include a 5+ s gap)
    return t.loop("rate", onset + 29, onset, "After 6 thoughtful calls, a script polls 40 hosts at machine speed.")


@scenario
def rate_page_scrape_storm() -> Trace:
    t = Trace("rate_page_scrape_storm")
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
    return t.loop("rate", onset + 29, onset, "Scraper loop: 45 pages fetched 50 per second.")


@scenario
def rate_ts_on_calls_only() -> Trace:
    t = Trace("rate_ts_on_calls_only", result_ts=False)
    for i in range(36):
        t.call(
            "get_invoice",
            {"invoice_id": f"in_2025_{1000 + i}"},
            {"id": f"in_2025_{1000 + i}", "total": 1000 + 37 * i, "status": "paid" if i % 4 else "open"},
            think=2.0 if i == 0 else 0.01,
            took=0.003,
        )
    # only the tool_call events carry ts; the rate rule is about calls arriving: the 30th call
    return t.loop(
        "rate",
        30,
        1,
        "Invoice fetch loop at ~75 calls/s; the trace timestamps only the calls.",
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
