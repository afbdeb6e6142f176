"""OpenTelemetry GenAI spans exported as OTLP JSON: one ``{"resourceSpans": [...]}`` export request, or JSON
Lines of them (the collector's file exporter).

A tool call is a span whose ``gen_ai.operation.name`` is ``execute_tool`` (or, from older instrumentations,
whose name starts with ``execute_tool``): ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, and when content
capture is on ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``; a span status of ``ERROR``
(code 2) or an ``error.type`` attribute marks a failed call. Model calls (``chat``, ``text_completion``,
``generate_content``) end model turns and carry ``gen_ai.usage.input_tokens`` / ``output_tokens``. The
session is ``gen_ai.conversation.id`` (or ``session.id``), else the trace id; spans are ordered by their
start time within it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from looptrap.analysis.analyze.importers.common import (
    ImportOptions,
    Problems,
    Record,
    each,
    json_document,
    json_lines,
    looks_like_lines,
    maybe_json,
    obj,
)
from looptrap.analysis.analyze.importers.conversation import Builder

__all__ = ["any_value", "read_otlp"]

_MODEL_OPS = {"chat", "text_completion", "generate_content"}


def any_value(v: Any) -> Any:
    """An OTLP JSON ``AnyValue`` as a plain value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values"))
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP JSON ``attributes`` (a list of ``{key, value}``) as a mapping."""
    out: dict[str, Any] = {}
    for kv in items or []:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = any_value(kv.get("value"))
    return out


def _nanos(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def read_otlp(stream: IO[bytes], name: str, problems: Problems, options: ImportOptions) -> Iterator[Record]:
    """Trace events from OTLP JSON spans."""
    head = stream.peek(1 << 16)[: 1 << 16] if hasattr(stream, "peek") else b""
    docs: list[tuple[int, Any]]
    if looks_like_lines(head):
        docs = list(json_lines(stream, name, problems))
    else:
        doc = json_document(stream, name, problems)
        docs = [] if doc is None else [(1, doc)]
    spans: list[tuple[str, int, int, int, dict[str, Any], dict[str, Any]]] = []

    def collect(n: int, doc: Any) -> list[Record]:
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
            problems.add(f"{name}:{n}", "not an OTLP JSON export (no 'resourceSpans' list)")
            return []
        for rs in doc["resourceSpans"]:
            if not isinstance(rs, dict):
                continue
            resource = attributes(obj(rs.get("resource")).get("attributes"))
            for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
                for span in obj(ss).get("spans") or []:
                    if not isinstance(span, dict):
                        problems.add(f"{name}:{n}", "a span must be a JSON object")
                        continue
                    attrs = attributes(span.get("attributes"))
                    start = _nanos(span.get("startTimeUnixNano"))
                    if start is None:
                        problems.add(f"{name}:{n}", f"span {span.get('spanId')!r} has no startTimeUnixNano")
                        continue
                    session = attrs.get("gen_ai.conversation.id") or attrs.get("session.id")
                    session = session or resource.get("session.id") or span.get("traceId") or options.session or name
                    end = _nanos(span.get("endTimeUnixNano")) or start
                    spans.append((str(session), start, end, n, span, attrs))
        return []

    for _ in each(docs, name, problems, collect):
        pass
    spans.sort(key=lambda t: (t[0], t[1], t[2]))
    builders: dict[str, Builder] = {}

    def one(n: int, item: tuple[str, int, int, int, dict[str, Any], dict[str, Any]]) -> list[Record]:
        session, start, end, _, span, attrs = item
        b = builders.get(session) or builders.setdefault(session, Builder(session))
        op = attrs.get("gen_ai.operation.name")
        sname = str(span.get("name") or "")
        out: list[Record] = []
        if op == "execute_tool" or (op is None and sname.startswith("execute_tool")):
            tool = attrs.get("gen_ai.tool.name") or sname.removeprefix("execute_tool").strip() or "(unnamed)"
            call_id = attrs.get("gen_ai.tool.call.id") or span.get("spanId")
            args = maybe_json(attrs.get("gen_ai.tool.call.arguments"))
            status = obj(span.get("status"))
            code = status.get("code")
            failed = code in (2, "STATUS_CODE_ERROR") or "error.type" in attrs
            result = maybe_json(attrs.get("gen_ai.tool.call.result"))
            if result is None and failed:
                result = status.get("message") or attrs.get("error.type")
            out += b.model(n, start / 1e9, "", [(str(call_id), str(tool), args)])
            out += b.result(n, end / 1e9, str(call_id), result, failed)
        elif op in _MODEL_OPS:
            out += b.model(n, start / 1e9, "", [])
            b.add_usage(
                {
                    "input_tokens": attrs.get("gen_ai.usage.input_tokens"),
                    "output_tokens": attrs.get("gen_ai.usage.output_tokens"),
                }
            )
            b.fed = True  # the model call's answer leads to what follows: the next model call is a new turn
        return out

    yield from each(((item[3], item) for item in spans), name, problems, one)
    for b in builders.values():
        yield from b.close()
