"""The repeated_text ("chanting") detector: the model's own words repeating, streamed or across turns."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from looptrap import Guard, RepeatedText, Verdict
from looptrap.engine.config import GuardConfig

SENTENCE = "I will try the search again with the same query. "


def chunks(text: str, seed: int = 0) -> list[str]:
    """The text as a model streams it: pieces of 1 to 7 characters."""
    rnd = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        n = rnd.randint(1, 7)
        out.append(text[i : i + n])
        i += n
    return out


def first_fire(guard: Guard, pieces: list[str]) -> tuple[int, Verdict] | None:
    """How many times the sentence had been written when the guard first spoke, and what it said."""
    text = ""
    for piece in pieces:
        text += piece
        v = guard.feed_text(piece)
        if v.action != "allow":
            return text.count(SENTENCE.strip()), v
    return None


def test_a_sentence_streamed_ten_times_fires_at_the_tenth() -> None:
    guard = Guard(clock=None)
    assert first_fire(guard, chunks(SENTENCE * 9, seed=1)) is None  # 9 times: not yet
    guard = Guard(clock=None)
    fired = first_fire(guard, chunks(SENTENCE * 12, seed=2))
    assert fired is not None
    count, v = fired
    assert count == 10
    assert v.kind == "repeated_text"
    assert v.reason == "loop_text"


def test_the_advice_quotes_the_sentence() -> None:
    guard = Guard(clock=None)
    verdicts = [guard.feed_text(SENTENCE) for _ in range(10)]
    assert [v.action for v in verdicts[:9]] == ["allow"] * 9
    assert verdicts[9].action == "advise"
    assert 'written the same sentence 10 times: "I will try the search again with the same query."' in (
        verdicts[9].message
    )


def test_across_turns_that_bring_nothing_new() -> None:
    guard = Guard(clock=None, detectors=[RepeatedText()])
    actions = []
    for i in range(10):  # each turn fetches a status page that says nothing new, and says the same words
        args = {"url": f"https://status.example.com/?try={i}"}
        assert guard.check("fetch", args).allowed
        guard.record("fetch", args, "All systems operational.")
        actions.append(guard.end_turn(text="Let me look at the configuration once more.").action)
    assert actions[:9] == ["allow"] * 9
    assert actions[9] == "advise"


def test_the_same_preamble_during_productive_work_is_not_chanting() -> None:
    guard = Guard(clock=None)
    actions = []
    for i in range(30):  # each turn reads the next part of a file: new content every time
        args = {"path": "src/big.py", "offset": 100 * i}
        assert guard.check("read_file", args).allowed
        guard.record("read_file", args, f"{100 * i:>6}\tdef part_{i}(): ...")
        actions.append(guard.end_turn(text="Let me look at the next part of the file.").action)
    assert set(actions) == {"allow"}


def test_repetition_with_other_sentences_in_a_steady_rhythm_fires() -> None:
    guard = Guard(clock=None)
    cycle = "Checking the logs now. The logs show nothing new at all. "
    actions = [guard.feed_text(cycle).action for _ in range(12)]
    assert "advise" in actions


def test_code_blocks_do_not_fire() -> None:
    guard = Guard(clock=None)
    body = "Here is the script:\n```python\n" + "    total = total + compute_the_value(item)\n" * 50 + "```\n"
    assert all(guard.feed_text(p).action == "allow" for p in chunks(body, seed=3))


def test_long_lists_with_a_shared_prefix_do_not_fire() -> None:
    guard = Guard(clock=None)
    items = "".join(f"- The file src/module_{i}.py needs the same small change.\n" for i in range(60))
    items += "".join(f"{i}. The file src/module_{i}.py needs the same small change.\n" for i in range(60))
    assert all(guard.feed_text(p).action == "allow" for p in chunks(items, seed=4))


def test_table_borders_and_dividers_do_not_fire() -> None:
    guard = Guard(clock=None)
    table = "| name | value |\n|------|-------|\n" + "| retry count limit | 3 |\n+------+-------+\n" * 30
    table += "----------\n" * 20 + "# Heading repeated many times\n" * 20
    assert all(guard.feed_text(p).action == "allow" for p in chunks(table, seed=5))


def test_short_sentences_and_varied_prose_do_not_fire() -> None:
    guard = Guard(clock=None)
    assert all(guard.feed_text("OK. Done. ").action == "allow" for _ in range(40))
    prose = " ".join(f"Step {i} reads file number {i * 7} and finds {i % 5} matches." for i in range(200))
    assert all(guard.feed_text(p).action == "allow" for p in chunks(prose, seed=6))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghij .,!?\n", min_size=0, max_size=60), max_size=80))
def test_random_text_never_fires_and_never_raises(pieces: list[str]) -> None:
    guard = Guard(clock=None)
    for p in pieces:
        assert guard.feed_text(p).action in ("allow", "advise", "block", "halt")


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.sampled_from(["alpha beta gamma delta", "one two three four five", "the quick brown fox"]),
        min_size=1,
        max_size=200,
    ),
    st.integers(0, 1000),
)
def test_random_order_of_a_few_sentences_is_not_a_steady_rhythm_unless_it_is(words: list[str], seed: int) -> None:
    guard = Guard(clock=None)
    rnd = random.Random(seed)
    text = " ".join(f"{w} number {rnd.randint(0, 10**6)}." for w in words)  # every sentence distinct
    assert all(guard.feed_text(p).action == "allow" for p in chunks(text, seed=seed))


def test_a_write_starts_over() -> None:
    guard = Guard(clock=None)
    for _ in range(8):
        guard.feed_text(SENTENCE)
    assert guard.check("write_file", {"path": "a.txt", "content": "x"}).allowed
    guard.record("write_file", {"path": "a.txt", "content": "x"}, "ok")
    assert all(guard.feed_text(SENTENCE).action == "allow" for _ in range(9))


def test_configurable_and_removable() -> None:
    guard = Guard(GuardConfig(detectors=(RepeatedText(threshold=3),)), clock=None)
    assert [guard.feed_text(SENTENCE).action for _ in range(3)] == ["allow", "allow", "advise"]
    off = Guard(GuardConfig(detectors=()), clock=None)
    assert all(off.feed_text(SENTENCE).action == "allow" for _ in range(20))


def test_replay_reports_chanting_from_text_events(tmp_path: Path) -> None:
    trace = tmp_path / "chant.jsonl"
    events = [
        {"session": "s1", "type": "tool_call", "tool": "search_docs", "args": {"q": "x"}, "call_id": "c1"},
        {"session": "s1", "type": "tool_result", "tool": "search_docs", "call_id": "c1", "output": "ok"},
    ]
    events += [{"session": "s1", "type": "text", "text": piece} for piece in chunks(SENTENCE * 11, seed=7)]
    events.append({"session": "s1", "type": "turn_end"})
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = subprocess.run(
        [sys.executable, "-m", "looptrap.cli.main", "replay", "--json", str(trace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    report = json.loads(out)
    assert report["first_intervention"]["kind"] == "repeated_text"
    assert report["first_intervention"]["action"] == "advise"
