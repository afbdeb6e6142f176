"""Several processes on one input: one reader deals each line to the process that keeps its session.

A session's events must reach one process, in file order (its verdicts depend on all of them), so the work
is split by session. The parent process reads the input once (decompressing it once; stdin and pipes too),
reads each line's session without parsing the line where that is certain (see
:func:`~looptrap.analysis.trace.routed_session`), and sends the line to the worker its session hashes to,
in batches over a pipe. A line whose session cannot be read so is parsed here to find it; a line that is
no event at all goes to the first worker, which reports it as the one-process reader would. Workers are
forked (they inherit the job, nothing is pickled but the lines and their results).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import IO, Any, Generic, TypeVar

import orjson
import xxhash

from looptrap.analysis.trace import (
    Event,
    SessionRouter,
    TraceError,
    lines_of,
    open_trace,
    parse_event,
    read_errors,
    session_of,
)

__all__ = ["Batch", "Dealt", "deal", "dealt_events", "shard_of"]

T = TypeVar("T")

#: What a worker is sent: the index of the input, the lines' numbers in it, and the lines.
Batch = tuple[int, list[int], list[bytes]]
Lines = Callable[[Iterable[bytes], IO[bytes]], Iterable[bytes]]

_BATCH = 1024  # lines per message: enough that a message costs little per line, few enough to stay small


def shard_of(session: str, *, jobs: int) -> int:
    """The worker (of ``jobs``) that keeps ``session``: a hash of its name, the same in every process."""
    return xxhash.xxh3_64_intdigest(session.encode("utf-8", "surrogatepass")) % jobs


class Dealt(Generic[T]):
    """What :func:`deal` gives back: each worker's result, in worker order, and the inputs' read errors (a
    file that could not be read to its end: ``file:line: cannot read on from here``), in input order."""

    __slots__ = ("read_errors", "results")

    def __init__(self, results: list[T], read_errors: list[TraceError]) -> None:
        self.results = results
        self.read_errors = read_errors


def deal(
    inputs: list[tuple[str, str]],
    jobs: int,
    work: Callable[[int, Iterator[Batch]], T],
    *,
    lines: Lines | None = None,
) -> Dealt[T]:
    """Run ``work(worker, batches)`` in ``jobs`` forked processes, each fed the lines of ``inputs`` (``(path,
    name)`` pairs; ``-`` is stdin) whose session is its own, and return their results. Blank lines are
    dropped. ``lines(stream, raw)`` wraps the lines read (a progress bar). A worker that returns before its
    input ends has the rest drained for it; one that fails makes this raise (its exception, when it can be
    sent back). Raises ``OSError`` when an input cannot be opened."""
    ctx = multiprocessing.get_context("fork")
    feeds = [ctx.Pipe(duplex=False) for _ in range(jobs)]  # (worker's end, parent's end)
    answers = [ctx.Pipe(duplex=False) for _ in range(jobs)]
    ends = [c for pair in (*feeds, *answers) for c in pair]
    workers = []
    for k in range(jobs):
        mine = (feeds[k][0], answers[k][1])
        others = [c for c in ends if c not in mine]  # a worker dying must close its pipes: nobody else holds them
        workers.append(ctx.Process(target=_worker, args=(k, *mine, work, others), daemon=True))
    for w in workers:
        w.start()
    for k in range(jobs):
        feeds[k][0].close()
        answers[k][1].close()
    sends = [f[1] for f in feeds]
    problems: list[TraceError] = []
    try:
        router = SessionRouter(partial(shard_of, jobs=jobs))
        for index, (path, name) in enumerate(inputs):
            err = _deal_one(index, path, name, router, sends, lines)
            if err is not None:
                problems.append(err)
        for s in sends:
            s.send(None)
    except BrokenPipeError:
        pass  # a worker is gone: its answer says why
    except BaseException:
        _close(sends)  # the workers see their input end, answer and exit
        for receive, _ in answers:
            receive.close()
        for w in workers:
            w.join()
        raise
    _close(sends)
    results: list[T] = []
    failures: list[BaseException] = []
    for k, (receive, _) in enumerate(answers):
        try:
            kind, value = receive.recv()
        except EOFError:  # killed, or out of memory: the others then saw their input end early
            kind, value = "died", RuntimeError(f"worker {k + 1} of {jobs} ended without an answer")
        receive.close()
        if kind == "ok":
            results.append(value)
        elif kind == "died":
            failures.insert(0, value)  # the cause comes first
        else:
            failures.append(value if isinstance(value, BaseException) else RuntimeError(str(value)))
    for w in workers:
        w.join()
    if failures:
        raise failures[0]
    return Dealt(results, problems)


def _deal_one(
    index: int, path: str, name: str, router: SessionRouter, sends: list[Any], wrap: Lines | None
) -> TraceError | None:
    """Deal one input's lines out; the error that cut it short, if any."""
    jobs = len(sends)
    numbers: list[list[int]] = [[] for _ in range(jobs)]
    held: list[list[bytes]] = [[] for _ in range(jobs)]
    n = 0
    error = None
    with open_trace(path) as (stream, raw):
        source: Iterable[bytes] = wrap(lines_of(stream), raw) if wrap is not None else lines_of(stream)
        try:
            for n, line in enumerate(source, 1):
                if not line or line.isspace():
                    continue
                k = router.route(line)
                if k < 0:
                    k = _parsed_shard(line, jobs)
                numbers[k].append(n)
                held[k].append(line)
                if len(held[k]) >= _BATCH:
                    sends[k].send((index, numbers[k], held[k]))
                    numbers[k], held[k] = [], []
        except read_errors() as exc:
            why = str(exc) or type(exc).__name__
            error = TraceError(f"{name}:{n + 1}", f"cannot read on from here ({why})")
    for k in range(jobs):
        if held[k]:
            sends[k].send((index, numbers[k], held[k]))
    return error


def _close(connections: list[Any]) -> None:
    for c in connections:
        c.close()


def _parsed_shard(line: bytes, jobs: int) -> int:
    """The shard of a line whose session could not be read unparsed; the first for one that is no event."""
    try:
        session = session_of(orjson.loads(line))
    except orjson.JSONDecodeError:
        return 0
    return 0 if session is None else shard_of(session, jobs=jobs)


def _batches(feed: Any) -> Iterator[Batch]:
    while True:
        got = feed.recv()
        if got is None:
            return
        yield got


def _worker(k: int, feed: Any, answer: Any, work: Callable[[int, Iterator[Batch]], Any], others: list[Any]) -> None:
    for c in others:
        c.close()

    stream = _batches(feed)
    try:
        reply: tuple[str, Any] = ("ok", work(k, stream))
    except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
        reply = ("error", exc)
    try:
        for _ in stream:  # the parent sends to the end: take it, or it waits forever on a full pipe
            pass
    except EOFError:
        pass
    try:
        answer.send(reply)
    except Exception as exc:  # noqa: BLE001 - a result or an exception that cannot be pickled
        answer.send(("error", f"worker {k}: {type(exc).__name__}: {exc}"))


def dealt_events(
    batches: Iterable[Batch], names: list[str], *, skip_invalid: bool, errors: list[TraceError] | None = None
) -> Iterator[tuple[int, Event]]:
    """A worker's events, parsed as :func:`~looptrap.analysis.trace.iter_events` parses them, each with the
    index of its input (``names``: the inputs' names, for ``file:line`` in errors). Malformed lines raise
    :class:`TraceError`, or with ``skip_invalid`` are appended to ``errors`` and skipped."""
    for index, numbers, lines in batches:
        name = names[index]
        for n, raw in zip(numbers, lines, strict=True):
            try:
                ev = parse_event(raw, f"{name}:{n}", n)
            except TraceError as exc:
                if not skip_invalid:
                    raise
                if errors is not None:
                    errors.append(exc)
                continue
            yield index, ev
