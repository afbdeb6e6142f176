"""File states: what an agent's edits do to the files it works on.

A write's arguments say what the file holds afterwards: a whole new content (``write_file``, an editor's
``create``, ``cat > f <<EOF``), or a replacement of one snippet by another (``str_replace``, Claude Code's
``Edit``, ``sed -i 's/old/new/' f``), or an undo of the last edit (``undo_edit``). From them each file
gets a *content state*, a digest: the state after a whole write is the digest of the content; the state
after a replacement comes from the snippets replaced since the last whole write (each snippet's original
text and its text now), so replacing ``5`` by ``10``, ``10`` by ``20`` and ``20`` by ``5`` gives the
state before back. So the guard knows, without reading any file, when a write

* changes nothing (it writes what the file already holds: no state change, no new epoch), or
* brings a file back to a content it already had in this task (the agent undoes its own edit, or redoes
  an edit it had undone).

The files together have a combined state (the digests of their states, combined); the outcomes of the
calls that changed nothing (a test run, a re-read) are remembered per combined state, so a *visit* (the
calls between two changes) is *fruitless* when it brought nothing that had not been seen in that same
state before: the agent is back where it was and learns nothing new there. A return after a fruitless
visit is the mark of a flip-flop; a return after checks that brought something new (reverting a fix to see
a different test fail without it) is not.

The memory is plain data in the session state (bounded): ``files`` holds per file ``[state, states it has
had, replaced snippets (original, now), fruitless returns, base content, undo stack]``; ``visit`` the combined
state and whether the current visit checked anything and found something new; ``visits`` the outcomes
seen per combined state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import xxhash

from looptrap.core.state import FILES, SessionState
from looptrap.reading.signature import digest_text

__all__ = ["NEW", "RETURN", "SAME", "Edit", "apply_edit", "changed_unknown", "edit_of", "predict_edit", "saw_outcome"]

#: An edit: the digest of the file's path and the operations, in order: ``("w", content)`` a whole
#: content, ``("r", old, new)`` a replacement, ``("u",)`` an undo, ``("x", change)`` another change
#: (an insertion) that leads to a new state.
Edit = tuple[int, tuple[tuple[Any, ...], ...]]

SAME, NEW, RETURN = 0, 1, 2  # what an edit does: nothing, a state not seen yet, a state the file already had

PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file", "absolute_path", "notebook_path")
_CONTENT_KEYS = ("content", "file_text", "contents", "new_content", "text", "code")
_OLD_KEYS = ("old_str", "old_string", "old_text", "old", "search")
_NEW_KEYS = ("new_str", "new_string", "new_text", "new", "replace", "replacement")
_STATES = 16  # states remembered per file (and edits that can be undone)
_SNIPPETS = 32  # replaced snippets followed per file
_VISITED = 16  # states of the files whose outcomes are remembered
_OUTCOMES = 32  # outcomes remembered per state of the files
#: ``sed -i [-e] 'SCRIPT' FILE``: one script, one file, nothing else on the line.
_SED_INPLACE = re.compile(
    r"""\A\s*sed\s+(?:-i\S*|--in-place(?:=\S*)?)\s+(?:-e\s+)?(?P<q>['"])(?P<script>.*?)(?P=q)\s+"""
    r"""(?P<path>[^\s;&|<>'"]+)\s*\Z""",
    re.DOTALL,
)
#: A substitution script: an optional line address, ``s``, a delimiter, the pattern, the replacement, flags.
_SED_SUBSTITUTE = re.compile(
    r"\A(?P<addr>[0-9,$]*)s(?P<d>[^\w\s\\])(?P<pat>(?:\\.|(?!(?P=d)).)*)(?P=d)"
    r"(?P<rep>(?:\\.|(?!(?P=d)).)*)(?P=d)(?P<flags>[gIp0-9]*)\Z",
    re.DOTALL,
)
_SED_ESCAPE = re.compile(r"\\(.)")
_HEREDOC_WRITE = re.compile(
    r"\A\s*(?:cat|tee)\b[^\n<>|;&]*?(?:>\s*(?P<a>[^\s;&|<>]+)\s*)?<<-?\s*(?P<q>['\"]?)(?P<m>\w+)(?P=q)"
    r"[ \t]*(?:>\s*(?P<b>[^\s;&|<>]+))?[ \t]*\n(?P<body>.*?)\n[ \t]*(?P=m)[ \t]*\Z",
    re.DOTALL,
)


def _mix(*parts: int) -> int:
    return xxhash.xxh3_64_intdigest(b"".join(p.to_bytes(8, "little") for p in parts))


def _path_key(path: str) -> int:
    p = path.strip()
    while p.startswith("./"):
        p = p[2:]
    return digest_text(p)


def _content(text: str) -> int:
    return digest_text(text.rstrip())  # trailing blank lines and spaces change nothing that matters


def _first_str(args: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = args.get(k)
        if isinstance(v, str):
            return v
    return None


def edit_of(args: Any, shell_line: str | None = None) -> Edit | None:
    """The edit a (mutating) call makes, read from its arguments or its shell command line; ``None`` when
    the arguments do not say what the file holds afterwards."""
    if shell_line is not None:
        return _shell_edit(shell_line)
    if not isinstance(args, Mapping):
        return None
    path = _first_str(args, PATH_KEYS)
    if not path:
        return None
    command = args.get("command")
    if command == "undo_edit":
        return _path_key(path), (("u",),)
    edits = args.get("edits")
    if isinstance(edits, list) and edits:  # MultiEdit: replacements applied in order
        ops: list[tuple[Any, ...]] = []
        for e in edits[:64]:
            if not isinstance(e, Mapping):
                return None
            old, new = _first_str(e, _OLD_KEYS), _first_str(e, _NEW_KEYS)
            if old is None or new is None:
                return None
            ops.append(("r", digest_text(old), digest_text(new)))
        return _path_key(path), tuple(ops)
    old, new = _first_str(args, _OLD_KEYS), _first_str(args, _NEW_KEYS)
    if old is not None and new is not None:
        return _path_key(path), (("r", digest_text(old), digest_text(new)),)
    if command == "insert" and new is not None:
        return _path_key(path), (("x", _mix(digest_text(new), _int(args.get("insert_line")))),)
    content = _first_str(args, _CONTENT_KEYS)
    if content is not None:
        return _path_key(path), (("w", _content(content)),)
    return None


def _shell_edit(line: str) -> Edit | None:
    """A shell command that only writes one file: ``cat > f <<EOF`` (a whole content) or ``sed -i`` (a
    substitution, which the same substitution reversed undoes; any other script is some other change)."""
    m = _HEREDOC_WRITE.match(line)
    if m is not None:
        target = m.group("a") or m.group("b")
        return (_path_key(target), (("w", _content(m.group("body"))),)) if target else None
    m = _SED_INPLACE.match(line)
    if m is None:
        return None
    script, path = m.group("script"), _path_key(m.group("path"))
    sub = _SED_SUBSTITUTE.match(script)
    if sub is None:
        return path, (("x", digest_text(script)),)
    addr = sub.group("addr")
    old = addr + "\x00" + _SED_ESCAPE.sub(r"\1", sub.group("pat"))
    new = addr + "\x00" + _SED_ESCAPE.sub(r"\1", sub.group("rep"))
    return path, (("r", digest_text(old), digest_text(new)),)


def _int(v: Any) -> int:
    return v & 0xFFFFFFFF if type(v) is int else 0


def _token(base: int, regions: list[list[int]]) -> int:
    """A file's content state: its base content, and the snippets replaced since, by what they are now."""
    if not regions:
        return base
    return _mix(base, *(d for pair in sorted(regions) for d in pair))


def _walk(record: list[Any] | None, path: int, ops: tuple[tuple[Any, ...], ...]) -> tuple[int, int, list[Any]]:
    """The file's state before the edit, its state after it, and its new ``[base, regions, undo]``.

    A replacement of ``old`` by ``new`` continues the snippet whose text is now ``old`` (a snippet that comes
    back to its original text is no change any more), or starts a new one; a whole write sets a new base; an
    undo restores the state before the last edit."""
    if record is None:
        base, regions, undo = _mix(path), [], []  # a file not written yet: "as found"
    else:
        base, regions, undo = record[4], [list(r) for r in record[2]], list(record[5])
    start = _token(base, regions)
    for op in ops:
        kind = op[0]
        if kind == "u":
            if undo:
                base, regions = undo.pop()
                regions = [list(r) for r in regions]
            else:  # undoing an edit this guard never saw: some other content
                base, regions = _mix(_token(base, regions), 1), []
            continue
        before = [base, [list(r) for r in regions]]
        if kind == "w":
            base, regions = op[1], []
        elif kind == "r":
            old, new = op[1], op[2]
            if old == new:
                continue
            snippet = next((r for r in regions if r[1] == old), None)
            if snippet is None:
                regions.append([old, new])
            elif snippet[0] == new:
                regions.remove(snippet)  # back to its original text
            else:
                snippet[1] = new
            del regions[:-_SNIPPETS]
        else:
            base, regions = _mix(_token(base, regions), op[1]), []
        undo.append(before)
        del undo[:-_STATES]
    return start, _token(base, regions), [base, regions, undo]


def predict_edit(state: SessionState, edit: Edit) -> tuple[int, int, bool]:
    """What ``edit`` would do (``SAME``, ``NEW`` or ``RETURN``), how many fruitless returns its file has
    made in this task, and whether the calls since the last change brought nothing that had not been seen
    in this same state of the files before (a *fruitless visit*). The state is not changed."""
    path, ops = edit
    record = state.files.get(path)
    start, end, _ = _walk(record, path, ops)
    returns = record[3] if record is not None else 0
    fruitless = _fruitless(state)
    if end == start:
        return SAME, returns, fruitless
    seen = record[1] if record is not None else [start]
    return (RETURN if end in seen else NEW), returns, fruitless


def apply_edit(state: SessionState, edit: Edit) -> int:
    """Apply a successful edit to the file states; returns ``SAME``, ``NEW`` or ``RETURN``. A return made
    after a fruitless visit is counted for its file."""
    files = state.files
    path, ops = edit
    record = files.pop(path, None)  # re-inserted last: the least recently edited file is evicted first
    start, end, (base, regions, undo) = _walk(record, path, ops)
    if record is None:
        record = [start, [start], [], 0, base, []]
    if len(files) >= FILES:
        del files[next(iter(files))]
    files[path] = record
    if end == start:
        return SAME
    seen: list[int] = record[1]
    outcome = RETURN if end in seen else NEW
    if outcome == RETURN:
        if _fruitless(state):
            record[3] += 1
    else:
        seen.append(end)
        del seen[:-_STATES]
    record[0], record[2], record[4], record[5] = end, regions, base, undo
    _moved(state, state.visit[0] ^ start ^ end)  # the files' combined state: one file's part swapped
    return outcome


def changed_unknown(state: SessionState, salt: int) -> None:
    """A state change whose effect on the files is not known (a shell write, an API call): the files are in
    a state not seen before."""
    _moved(state, _mix(state.visit[0], salt))


def saw_outcome(state: SessionState, key: int) -> None:
    """A call that changed nothing came back with ``key`` (its digest and its result's) in the current state
    of the files: remember it for that state, and whether it was new there."""
    visit = state.visit
    outcomes = state.visits.get(visit[0])
    if outcomes is None:
        if len(state.visits) >= _VISITED:
            del state.visits[next(iter(state.visits))]
        outcomes = state.visits[visit[0]] = {}
    visit[1] = True
    if key not in outcomes:
        visit[2] = True
        outcomes[key] = None
        if len(outcomes) > _OUTCOMES:
            del outcomes[next(iter(outcomes))]


def _fruitless(state: SessionState) -> bool:
    checked, novel = state.visit[1], state.visit[2]
    return bool(checked and not novel)


def _moved(state: SessionState, ws: int) -> None:
    state.visit[:] = [ws, False, False]
