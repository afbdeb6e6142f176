"""The cheap tests in front of patterns only save time: with and without them, every result text gets the
same facts (reading/results.py) and every command line the same effect (reading/calls.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from looptrap.reading import calls as c
from looptrap.reading import results as r
from looptrap.reading.results import ResultFacts


def ungated(text: str) -> int:
    """``_text_facts`` with every gate taken off: each pattern is tried on every text."""
    if len(text) > r.READ_CHARS:
        return 0
    if r._EXIT_META.search(text):
        text = r._EXIT_META.sub("", text)
    if not r._CONTENT.search(r._without_markup(text) if "<" in text else text):
        return ResultFacts.EMPTY
    empty = r._EMPTY_TEXT.match(text) or (len(text) <= r._SHORT_MESSAGE and r._EMPTY_ANYWHERE.search(text))
    if r._ERROR_TEXT.match(text):
        return ResultFacts.ERROR | (ResultFacts.EMPTY if empty else 0)
    if empty:
        return ResultFacts.EMPTY
    if len(text) <= 64 and r._ACK_TEXT.match(text):
        return ResultFacts.ACK
    if r._PENDING_STATEMENT.search(text) or r._PENDING_ENUM.search(text):
        return ResultFacts.PENDING
    return 0


# The words the anchored patterns start with, read off the patterns (not the gates' sets), and some others.
FIRST = [
    *("no", "0", "zero", "nothing", "none", "null", "nil", "empty", "n", "nope", "nulls"),
    *("error", "errors", "fatal", "exception", "traceback", "failed", "unable", "cannot", "could", "an", "a"),
    *("ok", "okay", "done", "sent", "success", "successful", "successfully", "succeeded", "created", "saved"),
    *("updated", "deleted", "written", "accepted", "true", "ack", "acknowledged", "complete", "completed"),
    *("applied", "added", "removed", "posted", "stored", "store", "oks"),
    *("still", "status", "job", "build", "results", "running", "pending"),
]
WORDS = [
    *FIRST,
    *("pending", "running", "in progress", "in_progress", "queued", "processing", "not ready", "not yet ready"),
    *("waiting", "starting", "initializing", "scheduled", "building", "deploying", "provisioning"),
    *("being processed", "has not finished", "have not yet completed", "has not started", "not finished yet"),
    *("not complete yet", "not done yet", "done yet", "is still", "currently"),
    *("did not match any", "didn't match any", "returned no results", "found 0 matches", "yielded zero rows"),
    "results",
    "matches",
    "items",
    "not found",
    "found",
    "to show",
    "n/a",
    "[]",
    "{}",
    "not",
    "replacement was performed",
    "error occurred while running the tool",
    "(most recent call last)",
    "in progress",
    "IN_PROGRESS",
    "JOB_RUNNING",
    "status:",
    "state =",
    "is",
    "not yet",
    "being processed",
    "has not",
    "exit code 1",
    "exit_code: 0",
    "<returncode>0</returncode>",
    "<status_code>2</status_code>",
    "<StatusCode>0</StatusCode>",
    "<exitcode>0</exitcode>",
    "return code",
    "<output>",
    "</output>",
    "successfully",
    "İ",
    "ſ",
    "\u212a",
    "é",
]
LEADS = ["", " ", "- ", "** ", "[", '"', "\n", "...", "_", "é "]
SEPARATORS = [" ", "", ": ", "\n", ". ", "!", "-", "_", "  ", "\t", "...", "'", '"', "(3)", "#42"]


def cased(words: list[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(words).flatmap(lambda w: st.sampled_from([w, w.upper(), w.title()]))


# A text as result texts start: maybe some punctuation, a first word (often one a pattern starts with), then
# words and separators, some of them random.
TEXTS = st.builds(
    lambda lead, first, rest: lead + first + "".join(rest),
    st.sampled_from(LEADS),
    cased(FIRST) | st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", max_size=6),
    st.lists(
        st.tuples(st.sampled_from(SEPARATORS), cased(WORDS) | st.text(alphabet="abcxyz0123 _-:.!<>/", max_size=6)).map(
            "".join
        ),
        max_size=6,
    ),
)


@given(TEXTS)
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_gates_never_change_the_facts(text: str) -> None:
    assert r._text_facts(text) == ungated(text), text


def test_gates_never_change_the_facts_of_two_word_texts() -> None:
    # every first word beside every second word: the pairs the anchored patterns look for
    for lead in ("", "- ", '"'):
        for first in FIRST:
            for case in (first, first.upper()):
                for sep in (" ", ": ", ""):
                    for second in WORDS:
                        for end in ("", " x"):
                            text = f"{lead}{case}{sep}{second}{end}"
                            assert r._text_facts(text) == ungated(text), text


def test_each_fact_survives_its_gate() -> None:
    cases = {
        "0 results": ResultFacts.EMPTY,
        "Nothing found.": ResultFacts.EMPTY,
        "Error: old string not found": ResultFacts.ERROR | ResultFacts.EMPTY,
        "Traceback (most recent call last):": ResultFacts.ERROR,
        "Done.": ResultFacts.ACK,
        "Status: queued": ResultFacts.PENDING,
        "CREATE_IN_PROGRESS": ResultFacts.PENDING,
        "<returncode>0</returncode>": ResultFacts.EMPTY,
        "exit code 0": ResultFacts.EMPTY,
        "FAİLED to connect": ungated("FAİLED to connect"),  # not ASCII: the patterns decide
    }
    for text, facts in cases.items():
        assert r._text_facts(text) == facts == ungated(text), text


# -- command lines ----------------------------------------------------------------------------------------

COMMAND_PARTS = [
    *("sleep 30", "watch -n 5 kubectl get pods", "tail -f app.log", "tail -n 5 -F out", "tail --follow x"),
    *('python -c \'open("f", "w").write("x")\'', "python3 -c 'import shutil; shutil.rmtree(\"b\")'"),
    *("python -c 'import os; os.remove(\"f\")'", "python -c 'p.write_text(\"x\")'", "python -c 'print(1)'"),
    *("echo x > f", "ls 2>/dev/null", "cmd &> out.log", "cmd >> notes.md", "cat a", "grep -r x .", "cd /src"),
    *("pytest -q", "git status", "sleepy", "mytail", "watcher", "os.py", "reopen(x)"),
    'python -c \'f = open("out", "wb")\'',
]
JOINS = [" && ", "; ", " | ", "\n", " || ", " & ", " "]


@given(
    st.lists(st.sampled_from(COMMAND_PARTS), min_size=1, max_size=4),
    st.lists(st.sampled_from(JOINS), min_size=3, max_size=3),
)
@settings(max_examples=400, deadline=None)
def test_gates_never_change_what_a_command_line_does(parts: list[str], joins: list[str]) -> None:
    line = parts[0] + "".join(j + p for j, p in zip(joins, parts[1:], strict=False))
    assert c._shell_waits(line) == (c._SHELL_WAITS.search(line) is not None), line
    assert c._py_writes(line) == (c._PY_WRITE.search(line) is not None), line


@given(st.text(alphabet=st.characters(blacklist_characters=">"), max_size=60))
@settings(max_examples=300, deadline=None)
def test_a_redirect_needs_a_greater_than_sign(line: str) -> None:
    assert c._REDIRECT.findall(line) == []


# -- the pending statement, taken apart ----------------------------------------------------------------

STATUS_WORDS = [
    *("pending", "running", "in progress", "in_progress", "in-progress", "queued", "processing", "waiting"),
    *("starting", "initializing", "scheduled", "building", "deploying", "provisioning", "ready", "yet"),
    *("not", "being", "processed", "has", "have", "finished", "completed", "complete", "started", "done"),
    *("is", "are", "remains", "remain", "still", "currently", "now", "status", "state", "phase", "stage"),
    *("Status:", "state =", "STATE", "Running", "QUEUED", "xrunning", "runningx", "statusx", "xstatus", "haS"),
    *("isn't", "thisis", "job", "build", "x", "_", "-", ":", "=", "'", '"', "(3 ahead)", "...", "#42", "…"),
    *("é", "İs", "ſtill", "\u212aeep"),
]
STATUS_SEPARATORS = [" ", "", "\n", ": ", ". ", "  ", "\t", "_", "-", "\n  ", " \n", "!", "("]


@given(st.lists(st.tuples(st.sampled_from(STATUS_SEPARATORS), cased(STATUS_WORDS)).map("".join), max_size=8))
@settings(max_examples=3000, deadline=None)
def test_the_pending_statement_taken_apart_matches_as_the_pattern_does(parts: list[str]) -> None:
    text = "".join(parts)
    for t in (text, text.strip()):
        assert r._states_pending(t, t.lower()) == (r._PENDING_STATEMENT.search(t) is not None), t
        assert r._names_a_status(t.lower()) or r._PENDING_STATEMENT.search(t) is None, t
