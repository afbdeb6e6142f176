"""Session state: everything a guard remembers about one session, as compact, bounded, versioned plain data.

The state holds digests, counters and small windows, never payloads (a short preview of recent distinct
calls is kept for the summaries the model reads; ``GuardConfig(previews=False)`` turns that off). It is
separate from the configuration, so any process that has the configuration can load a saved state and go on.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from looptrap.core.printable import one_line

if TYPE_CHECKING:
    from looptrap.core.types import Call, Verdict

__all__ = ["STATE_VERSION", "Entry", "Flag", "Intervention", "SessionState", "StateVersionError"]

STATE_VERSION = 1

# Bounds: a session's state never grows past these, whatever the number of calls.
HISTORY = 64
SEEN = 1024
PREVIEWS = 48
TOOLS = 256
PENDING = 64
LOOPS = 8  # loop keys remembered by the escalation ladder
FILES = 64  # files whose content states are followed (edit loops)
VERDICTS = 32  # interventions remembered (the dashboard's verdict column)
_NAME_CHARS = 64  # of a verdict's kind and reason (detector names: a custom one may be anything)


class StateVersionError(ValueError):
    """A saved state was written by an incompatible version of looptrap."""


class Flag:
    """Bit flags of a history entry (the first six mirror :class:`looptrap.reading.results.ResultFacts`)."""

    ERROR: Final = 1
    EMPTY: Final = 2
    ACK: Final = 4
    PENDING: Final = 8
    NON_RETRYABLE: Final = 16
    RETRYABLE: Final = 32
    STALE: Final = 64  # same call, same result, already seen since the last state change
    MUTATED: Final = 128  # a successful mutating call: starts a new epoch
    NOVEL: Final = 256  # a result this tool had not returned since the last state change
    LONG: Final = 512  # a result longer than a short status line
    WRITE_ATTEMPT: Final = 1024  # a mutating call, whether or not it succeeded
    BATCHED: Final = 2048  # arrived while other calls were still running (parallel tool calls of one turn)
    NOOP: Final = 4096  # a write that changed nothing (its result says so, or it wrote what was already there)
    REVERT: Final = 8192  # a write that brought a file back to a content it already had in this task
    OPAQUE: Final = 16384  # a result with no faithful canonical form: never equal to anything
    NEWS: Final = 32768  # the call brought something new: a successful state change, or new content that is not an
    # error, not empty and not stale (set by the engine: the one definition drift, repeated text and the
    # escalation ladder use)
    NOT_RUN: Final = 65536  # the call did not run (cancelled, refused, interrupted): never in the history


class Entry(NamedTuple):
    """One completed call in the history window (``family``: the tool, or ``bash:pytest`` for a shell tool;
    ``target``: for a failed call, a digest of what it acted on, see :func:`looptrap.reading.calls.call_target`,
    0 when not known)."""

    digest: int
    tool: str
    result: int
    flags: int
    call_index: int
    family: str = ""
    target: int = 0


_tuple_new = tuple.__new__


def new_entry(digest: int, tool: str, result: int, flags: int, call_index: int, family: str, target: int = 0) -> Entry:
    """``Entry(...)`` with every field given, built without the named tuple's generated ``__new__`` (a Python
    function, which costs more than the rest of recording a call's entry)."""
    return _tuple_new(Entry, (digest, tool, result, flags, call_index, family, target))


class Intervention(NamedTuple):
    """A call's verdict other than ``allow`` (``warn``, ``advise``, ``block``, ``halt``), as the session keeps it."""

    call_index: int
    action: str
    kind: str
    reason: str
    digest: int
    tool: str


def _name(text: str | None) -> str:
    """A detector's kind or reason as kept: one printable line of at most ``_NAME_CHARS``."""
    if not text:
        return ""
    return text if len(text) <= _NAME_CHARS and text.isprintable() else one_line(text, _NAME_CHARS)


def _bounded_put(d: dict[Any, Any], key: Any, value: Any, cap: int) -> None:
    if key in d:
        del d[key]  # move to the end: dicts keep insertion order, so the oldest entry is first
    elif len(d) >= cap:
        del d[next(iter(d))]
    d[key] = value


@dataclass(slots=True)
class SessionState:
    """The memory of one session. Engines update it in place; stores save and load it with ``to_dict``."""

    run_id: str = ""
    task: int = 0
    turn: int = 0
    calls: int = 0
    turn_calls: int = 0
    open_calls: int = 0
    # checked calls awaiting their result, oldest first: (digest, index, arrival time, batched)
    pending: list[tuple[int, int, float | None, bool]] = field(default_factory=list)
    epoch: int = 0
    # the escalation ladder: rungs climbed, calls that brought something new since the last intervention,
    # the loops intervened on (key -> [interventions, highest rung given; -1: warnings only]), the model
    # step of the last intervention and the rung it got (-1: a warning)
    level: int = 0
    clean: int = 0
    loops: dict[int, list[int]] = field(default_factory=dict)
    step: int = 0
    rung_step: int = -1
    rung: int = 0
    stepped: bool = True  # a result arrived since the last check (without end_turn, the next check is a new step)
    step_calls: int = 0  # calls checked in this step
    refused_at: float | None = None  # when the last check was intercepted (None: it was not)
    refused: list[int] = field(default_factory=list)  # digests of the calls intercepted in this step
    message: int = 0  # digest of the model message the last call came from (0: not known)
    heard: int = -1  # state.calls when the user last spoke (-1: never in this task)
    stale_run: int = 0
    history: deque[Entry] = field(default_factory=lambda: deque(maxlen=HISTORY))
    seen: dict[int, int] = field(default_factory=dict)
    results: dict[int, int] = field(default_factory=dict)
    previews: dict[int, str] = field(default_factory=dict)
    files: dict[int, list[Any]] = field(default_factory=dict)
    visit: list[Any] = field(default_factory=lambda: [0, False, False])  # see core.edits
    visits: dict[int, dict[int, None]] = field(default_factory=dict)  # outcomes per state: ordered sets
    per_tool: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    cost: float = 0.0
    started: float | None = None
    slots: dict[str, Any] = field(default_factory=dict)
    halted: dict[str, Any] | None = None
    needed: list[str] = field(default_factory=list)
    warned: list[str] = field(default_factory=list)
    # Kept across tasks and the user's words (forget_repetition and heard_user leave them): they are what
    # happened to this session, which a reader of the dashboard looks for after a new task too; bounded.
    verdicts: deque[Intervention] = field(default_factory=lambda: deque(maxlen=VERDICTS))
    version: int = STATE_VERSION

    # -- helpers used by the engine ---------------------------------------------------------------
    def remember(self, d: dict[Any, Any], key: Any, value: Any, cap: int = SEEN) -> None:
        """Insert into one of the bounded maps, evicting the oldest entry."""
        _bounded_put(d, key, value, cap)

    def note_verdict(self, call: Call, verdict: Verdict) -> None:
        """Remember a call's verdict when it is not ``allow`` (the last ``VERDICTS`` of them)."""
        if verdict.action != "allow":
            kind, reason = _name(verdict.kind), _name(verdict.reason)
            self.verdicts.append(Intervention(call.index, verdict.action, kind, reason, call.digest, call.tool))

    def new_epoch(self) -> None:
        """A state change: nothing seen before it is stale any more."""
        self.epoch += 1
        self.seen.clear()
        self.results.clear()
        self.stale_run = 0

    def new_step(self) -> None:
        """The next calls belong to another model step (turn)."""
        self.step += 1
        self.step_calls = 0
        self.refused.clear()

    def heard_user(self) -> None:
        """The user said something: a new step, a new epoch, and the ladder starts over."""
        self.new_step()
        self.heard = self.calls
        self.level = 0
        self.clean = 0
        self.loops.clear()
        self.new_epoch()

    def forget_repetition(self) -> None:
        """Start a new task: repetition memory starts over, budgets do not."""
        self.task += 1
        self.turn_calls = 0
        self.open_calls = 0
        self.pending.clear()
        self.refused.clear()
        self.level = 0
        self.clean = 0
        self.loops.clear()
        self.rung_step = -1
        self.heard = -1
        self.history.clear()
        self.previews.clear()
        self.files.clear()
        self.visit[:] = [0, False, False]
        self.visits.clear()
        self.slots.clear()
        self.new_epoch()
        if self.halted is not None and not str(self.halted.get("reason", "")).startswith("budget_"):
            self.halted = None

    # -- persistence ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (int keys become pairs, so it survives JSON round trips)."""
        return {
            "version": self.version,
            "run_id": self.run_id,
            "task": self.task,
            "turn": self.turn,
            "calls": self.calls,
            "turn_calls": self.turn_calls,
            "open_calls": self.open_calls,
            "pending": [list(p) for p in self.pending],
            "epoch": self.epoch,
            "level": self.level,
            "clean": self.clean,
            "loops": [[k, *v] for k, v in self.loops.items()],
            "step": self.step,
            "rung_step": self.rung_step,
            "rung": self.rung,
            "stepped": self.stepped,
            "step_calls": self.step_calls,
            "refused_at": self.refused_at,
            "refused": self.refused,
            "message": self.message,
            "heard": self.heard,
            "stale_run": self.stale_run,
            "history": [list(e) for e in self.history],
            "seen": list(self.seen.items()),
            "results": list(self.results.items()),
            "previews": list(self.previews.items()),
            "files": list(self.files.items()),
            "visit": self.visit,
            "visits": [(k, list(v)) for k, v in self.visits.items()],
            "per_tool": self.per_tool,
            "tokens": self.tokens,
            "cost": self.cost,
            "started": self.started,
            "slots": self.slots,
            "halted": self.halted,
            "needed": self.needed,
            "warned": self.warned,
            "verdicts": [list(v) for v in self.verdicts],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionState:
        """Load a state saved by ``to_dict``; raises :class:`StateVersionError` for an unknown version."""
        version = data.get("version")
        if version != STATE_VERSION:
            raise StateVersionError(
                f"session state has format version {version!r}; this looptrap reads version {STATE_VERSION}"
                " (reset the session, or use the looptrap release that wrote it)"
            )
        s = cls()
        for name in (
            "run_id",
            "task",
            "turn",
            "calls",
            "turn_calls",
            "open_calls",
            "epoch",
            "level",
            "clean",
            "stale_run",
        ):
            setattr(s, name, data[name])
        s.pending = [(int(d), int(i), at, bool(b)) for d, i, at, b in data.get("pending", ())]
        s.history.extend(Entry(*e) for e in data["history"])
        s.seen = {int(k): int(v) for k, v in data["seen"]}
        s.results = {int(k): int(v) for k, v in data["results"]}
        s.previews = {int(k): str(v) for k, v in data["previews"]}
        # Fields added within format version 1: a state saved before them loads with their defaults.
        for item in data.get("loops", ()):  # [key, interventions, highest rung]; a bare key before these
            if isinstance(item, list):
                s.loops[int(item[0])] = [int(item[1]), int(item[2])]
            else:
                s.loops[int(item)] = [1, 0]
        s.refused = [int(d) for d in data.get("refused", ())]
        for name in ("step", "rung_step", "rung", "heard", "step_calls", "message"):
            if name in data:
                setattr(s, name, int(data[name]))
        s.stepped = bool(data.get("stepped", True))
        refused = data.get("refused_at")
        s.refused_at = None if refused is None else float(refused)
        s.files = {int(k): list(v) for k, v in data.get("files", ())}
        visit = data.get("visit")
        if isinstance(visit, list) and len(visit) == 3:
            s.visit = [int(visit[0]), bool(visit[1]), bool(visit[2])]
        s.visits = {int(k): dict.fromkeys(int(x) for x in v) for k, v in data.get("visits", ())}
        s.per_tool = dict(data["per_tool"])
        s.tokens = int(data["tokens"])
        s.cost = float(data["cost"])
        s.started = data["started"]
        s.slots = dict(data["slots"])
        s.halted = data["halted"]
        s.needed = list(data["needed"])
        s.warned = list(data["warned"])
        s.verdicts.extend(  # added within format version 1 too
            Intervention(int(i), str(a), str(k), str(r), int(d), str(t))
            for i, a, k, r, d, t in data.get("verdicts", ())
        )
        return s
