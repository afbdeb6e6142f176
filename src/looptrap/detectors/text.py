"""repeated_text: the model's own words repeating themselves ("chanting"), while streaming or across turns."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import xxhash

from looptrap.core.compiled import mypyc_attr
from looptrap.core.printable import one_line
from looptrap.core.state import Entry, Flag, SessionState
from looptrap.core.types import Signal
from looptrap.detectors.base import Detector

__all__ = ["RepeatedText"]

_FENCE = re.compile(r"^\s*(```|~~~)")
# Structure, not prose: table rows and borders, headings, list items, quotes, dividers.
_STRUCTURE = re.compile(r"^\s*(?:\||\+[-=+]|#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|>|[-=_*]{3,}\s*$)")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_WINDOW = 256  # prose units remembered
_CARRY = 4096  # characters of an unfinished line kept between chunks


@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True, repr=False)
class RepeatedText(Detector):
    """Intervene when one sentence of the model's prose comes back ``threshold`` times, close together
    (each repeat at most ``max_gap`` sentences after the last) and at a steady rhythm (at most two distinct
    gaps): the same words over and over instead of acting.

    Text is fed with ``Guard.feed_text`` (streamed chunks) or ``end_turn(text=...)``. Only prose counts:
    code blocks, tables, lists, headings, quotes and dividers reset the count, so generated code and
    structured output never trip it. Sentences shorter than ``min_chars`` are ignored ("OK.", "Done.").
    Repeats count only across turns that bring nothing new: a call that returns new content, a state change
    or the user's input starts over, so a per-turn preamble ("Let me look at the next part of the file")
    during productive work is not chanting.
    """

    name: str = field(default="repeated_text", init=False, repr=False, compare=False)
    reason: str = field(default="loop_text", init=False, repr=False, compare=False)
    threshold: int = 10
    max_gap: int = 4
    min_chars: int = 12
    warn_only: bool = False

    def observe(self, entry: Entry, state: SessionState, now: float | None) -> None:
        if entry.flags & Flag.NEWS:
            slot = state.slots.get(self.name)
            if slot and slot["units"]:
                slot["units"] = []  # productive work in between: what was said before does not count

    def text(self, chunk: str, state: SessionState, call_index: int, *, final: bool = False) -> Signal | None:
        """Read more of the model's text (``final``: the turn's text is complete)."""
        slot: dict[str, Any] = state.slots.setdefault(self.name, {"carry": "", "units": [], "fence": False, "kind": ""})
        text = slot["carry"] + chunk
        carry, kind, fence = "", slot["kind"], slot["fence"]
        units: list[int] = slot["units"]
        fired: Signal | None = None
        pos, end = 0, len(text)
        while pos < end:  # line by line, by position: slicing off each line would copy the rest every time
            nl = text.find("\n", pos)
            line = text[pos:] if nl < 0 else text[pos:nl]
            if not kind:  # at the start of a line: what kind of line is it?
                if nl < 0 and not final and len(line.strip()) < 4:
                    carry = line  # too little to tell yet
                    break
                if _FENCE.match(line):
                    fence = not fence
                    kind = "skip"
                else:
                    kind = "skip" if fence or _STRUCTURE.match(line) else "prose"
                if kind == "skip":  # code, tables and lists break any run of repeated prose
                    units = []
            rest = ""
            if kind == "prose":
                pieces = _SENTENCE_END.split(line)
                if nl < 0 and not final:
                    rest = pieces.pop()  # the sentence being written
                for sentence in pieces:
                    fired = self._unit(sentence, units, call_index) or fired
            if nl < 0:
                carry = rest[-_CARRY:]
                break
            pos = nl + 1
            kind = ""
        if final:
            carry, kind = "", ""
        slot["carry"], slot["kind"], slot["fence"], slot["units"] = carry, kind, fence, units
        return fired

    def _unit(self, sentence: str, units: list[int], call_index: int) -> Signal | None:
        norm = " ".join(sentence.lower().split()).strip(" .!?…,;:\"'")
        if len(norm) < self.min_chars:
            return None
        h = xxhash.xxh3_64_intdigest(norm.encode("utf-8", "surrogatepass"))
        units.append(h)
        if len(units) > _WINDOW:
            del units[:-_WINDOW]
        if units.count(h) < self.threshold:  # the common case, at C speed
            return None
        positions = [i for i, u in enumerate(units) if u == h][-self.threshold :]
        if len(positions) < self.threshold:
            return None
        gaps = [b - a for a, b in pairwise(positions)]
        if max(gaps) > self.max_gap or len(set(gaps)) > 2:
            return None
        quoted = one_line(sentence, 100)
        return self.signal(
            f'You have written the same sentence {len(positions)} times: "{quoted}". Repeating it will not move '
            f"the task on. Stop repeating yourself: make one concrete tool call, or give your final answer.",
            count=len(positions),
            evidence=(call_index,),
            details={"sentence": quoted},
            loop=h,
        )
