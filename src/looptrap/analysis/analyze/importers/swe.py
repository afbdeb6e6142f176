"""SWE-agent ``.traj`` and mini-swe-agent ``.traj.json`` trajectories (one run each; the session is the file's
name without its extensions).

* SWE-agent: ``{"trajectory": [{"action", "observation", "thought", "response", "execution_time", ...}],
  "info": {"exit_status", "model_stats": {"instance_cost", "tokens_sent", "tokens_received"}}}``. Each step
  is one call of the agent's shell, ``bash`` with ``{"command": action}``, and one model turn; an empty
  action is a turn without a valid call. The trajectory records only the run's total cost and tokens:
  they are spread evenly over its steps.
* mini-swe-agent: ``{"info": {...}, "messages": [...], "trajectory_format": "mini-swe-agent-1..."}``, OpenAI
  chat messages. An assistant message runs the command in its ``extra.actions`` (format 1.1) or in its
  one fenced ``bash`` block (format 1); the next user message is the output (``<returncode>``,
  ``<output>``); ``extra.cost`` and ``extra.timestamp`` are kept. An assistant message with no command is
  a turn without a valid call. Tool-calling models' messages (``tool_calls``, role ``tool``) are read as
  OpenAI chat messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from looptrap.analysis.analyze.importers.common import (
    ImportOptions,
    Problems,
    Record,
    content_text,
    each,
    json_document,
    obj,
    seconds,
)
from looptrap.analysis.analyze.importers.conversation import Builder, feed_message

__all__ = ["read_mini_swe_agent", "read_swe_agent"]

_FENCE = re.compile(r"```(?:bash|sh|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def read_swe_agent(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from a SWE-agent trajectory."""
    doc = json_document(stream, name, problems)
    if doc is None:
        return
    steps = doc.get("trajectory") if isinstance(doc, dict) else None
    if not isinstance(steps, list):
        problems.add(f"{name}:1", "a SWE-agent trajectory is a JSON object with a 'trajectory' list")
        return
    session = options.session or name
    info = obj(doc.get("info"))
    stats = obj(info.get("model_stats"))
    share = max(len(steps), 1)
    cost = stats.get("instance_cost")
    usage: dict[str, float] = {
        "input_tokens": _number(stats.get("tokens_sent")) // share,
        "output_tokens": _number(stats.get("tokens_received")) // share,
    }
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        usage["cost_usd"] = cost / share
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            problems.add(f"{name}:step {i}", "a trajectory step must be a JSON object")
            continue
        action = step.get("action")
        base: Record = {"session": session, "seq": i}
        if isinstance(step.get("thought"), str) and step["thought"].strip():
            yield {**base, "type": "text", "text": step["thought"]}
        if not isinstance(action, str) or not action.strip():
            yield {**base, "type": "turn_end", "usage": usage, "error": "no valid tool call"}
            continue
        cid = f"step-{i}"
        call: Record = {"type": "tool_call", "tool": "bash", "args": {"command": action.strip()}, "call_id": cid}
        yield {**base, **call, "message_id": cid}  # one action per step: each step is its own model message
        obs = step.get("observation")
        yield {**base, "type": "tool_result", "tool": "bash", "call_id": cid, "output": obs if obs is not None else ""}
        yield {**base, "type": "turn_end", "usage": usage}


def _number(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 1e18 else 0


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def read_mini_swe_agent(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from a mini-swe-agent trajectory."""
    doc = json_document(stream, name, problems)
    if doc is None:
        return
    messages = doc.get("messages") if isinstance(doc, dict) else doc if isinstance(doc, list) else None
    if not isinstance(messages, list):
        problems.add(f"{name}:1", "a mini-swe-agent trajectory is a JSON object with a 'messages' list")
        return
    session = options.session or name
    b = Builder(session)
    info = obj(doc.get("info")) if isinstance(doc, dict) else {}
    b.add_usage(None, obj(obj(info.get("config")).get("model")).get("model_name"))
    # format 1.1 keeps the run's cost in info.model_stats only: spread over the model's messages
    total = obj(info.get("model_stats")).get("instance_cost")
    spoken = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    per_message = None
    costed = any(isinstance(obj(m.get("extra")).get("cost"), (int, float)) for m in messages if isinstance(m, dict))
    if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0 and spoken and not costed:
        per_message = total / spoken
    open_call: str | None = None
    calls = 0

    def one(i: int, m: Any) -> list[Record]:
        nonlocal open_call, calls
        if not isinstance(m, dict):
            problems.add(f"{name}:message {i}", "a message must be a JSON object")
            return []
        extra = obj(m.get("extra"))
        ts = seconds(extra.get("timestamp"))
        role = m.get("role")
        if m.get("tool_calls") or role == "tool":
            return feed_message(b, m, i, ts)
        text = content_text(m.get("content"))
        out: list[Record] = []
        if role == "assistant":
            actions = [a.get("command") for a in _list(extra.get("actions")) if isinstance(a, dict)]
            if not actions:
                actions = _FENCE.findall(text)
            commands = [a for a in actions if isinstance(a, str) and a.strip()]
            if len(commands) != 1 and "actions" not in extra:
                commands = []  # format 1 runs exactly one block; anything else is a format error
            out += b.model(i, ts, text, [])
            if isinstance(extra.get("cost"), (int, float)):
                b.add_usage({"cost_usd": extra["cost"]})
            elif per_message is not None:
                b.add_usage({"cost_usd": per_message})
            if not commands:
                b.fed = True
                out.append({"session": session, "type": "turn_end", "seq": i, "error": "no valid tool call"})
                b.turn_open = False
                return out
            for cmd in commands:
                calls += 1
                open_call = f"call-{calls}"
                out.append(
                    {
                        "session": session,
                        "type": "tool_call",
                        "seq": i,
                        "tool": "bash",
                        "args": {"command": cmd.strip()},
                        "call_id": open_call,
                        "message_id": f"message-{i}",  # the assistant message that ran it
                        **({"ts": ts} if ts is not None else {}),
                    }
                )
        elif role == "user" and open_call is not None:
            code = extra.get("returncode")
            if code is None:
                found = _RETURNCODE.search(text)
                code = int(found.group(1)) if found else None
            rec: Record = {
                "session": session,
                "type": "tool_result",
                "seq": i,
                "tool": "bash",
                "call_id": open_call,
                "output": text,
            }
            if isinstance(code, int) and code != 0:
                rec["is_error"] = True
            if ts is not None:
                rec["ts"] = ts
            open_call = None
            b.fed = True
            out.append(rec)
        return out

    yield from each(enumerate(messages, 1), f"{name}:message", problems, one)
    yield from b.close()
