"""Heuristics: which calls change state (mutating) and what a result says (empty, acknowledgement, pending).

Every heuristic here can be overridden per tool through :class:`looptrap.ToolPolicy`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ARG_KEYS",
    "NO_WRITE",
    "WRITES",
    "WRITES_ANYWAY",
    "ResultFacts",
    "call_family",
    "call_traits",
    "is_mutating",
    "is_polling",
    "mutation",
    "polls_by_args",
    "polls_by_name",
    "result_facts",
    "shell_command_effect",
    "shell_command_mutates",
    "shell_line",
    "shell_polls",
    "wrote_nothing",
]

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

#: Name tokens (of a tool, or of an editor/HTTP sub-command) that change state when they succeed.
MUTATING_WORDS = frozenset(
    [
        "write",
        "edit",
        "patch",
        "create",
        "delete",
        "del",
        "remove",
        "rm",
        "move",
        "mv",
        "rename",
        "commit",
        "send",
        "post",
        "put",
        "update",
        "insert",
        "upload",
        "save",
        "set",
        "apply",
        "append",
        "replace",
        "str_replace",
        "undo_edit",
        "deploy",
        "publish",
        "merge",
        "push",
        "modify",
        "add",
        "mkdir",
        "touch",
        "install",
        "uninstall",
        "submit",
        "store",
        "drop",
        "truncate",
        "reset",
        "revert",
        "restore",
        "approve",
        "reject",
        "cancel",
        "assign",
        "book",
        "pay",
        "transfer",
        "archive",
        "enable",
        "disable",
        "start",
        "stop",
        "restart",
        "kill",
        "upsert",
        "overwrite",
        "copy",
        "cp",
        "rollback",
        "migrate",
        "notify",
        "reply",
        "comment",
        "invite",
        "grant",
        "revoke",
        "register",
        "charge",
        "refund",
        "purchase",
        "schedule",
        "mark",
        "label",
        "resolve",
        "close",
        "lock",
        "unlock",
        "import",
        "sync",
        "increment",
        "decrement",
    ]
)
#: Sub-command words that only read (checked before the tool name's own tokens).
READ_WORDS = frozenset(
    [
        "view",
        "read",
        "get",
        "list",
        "show",
        "search",
        "find",
        "cat",
        "open",
        "head",
        "tail",
        "grep",
        "ls",
        "query",
        "fetch",
        "describe",
        "inspect",
        "status",
    ]
)
_SHELL_TOOLS = frozenset(
    [
        "bash",
        "sh",
        "zsh",
        "shell",
        "terminal",
        "run_command",
        "execute_command",
        "run_shell_command",
        "exec",
        "execute",
        "run_terminal_cmd",
        "shell_exec",
        "run_bash",
        "bash_command",
        "command",
        "cmd",
        "powershell",
        "run_in_terminal",
        "local_shell",
    ]
)
_COMMAND_KEYS = ("command", "cmd", "script", "commands")
_SUBCOMMAND_KEYS = ("command", "action", "operation", "op", "mode", "method", "subcommand")
#: Argument keys whose values can change the mutating verdict of a call (checked per call).
ARG_KEYS = frozenset(_COMMAND_KEYS + _SUBCOMMAND_KEYS)

_SHELL_WRITERS = frozenset(
    [
        "rm",
        "rmdir",
        "mv",
        "cp",
        "mkdir",
        "touch",
        "tee",
        "patch",
        "ln",
        "chmod",
        "chown",
        "truncate",
        "dd",
        "install",
        "unzip",
        "ed",
        "ex",
        "rsync",
        "shred",
    ]
)
_GIT_WRITERS = frozenset(
    [
        "commit",
        "apply",
        "checkout",
        "reset",
        "add",
        "mv",
        "rm",
        "stash",
        "merge",
        "rebase",
        "cherry-pick",
        "am",
        "restore",
        "switch",
        "pull",
        "push",
        "clean",
        "init",
        "clone",
        "tag",
        "revert",
    ]
)
_PKG_TOOLS = frozenset(
    ["pip", "pip3", "npm", "pnpm", "yarn", "uv", "poetry", "apt", "apt-get", "conda", "brew", "cargo", "gem", "go"]
)
_PKG_WRITERS = frozenset(["install", "uninstall", "add", "remove", "update", "upgrade", "sync", "get"])
NO_WRITE, WRITES, WRITES_ANYWAY = 0, 1, 2
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_SEGMENTS = re.compile(r"&&|\|\||[;|\n&]")
_REDIRECT = re.compile(r"(?<![<&0-9])(?:[0-9]?>>?|&>>?)\s*(?!&)(?!\s*/dev/(?:null|stdout|stderr)\b)([^\s;&|]+)")
#: Capturing a command's output in a log file is not a change of the state being worked on.
_LOG_FILE = re.compile(r"(?:\.(?:log|out)|(?:^|/)logs?/[^/]*)$", re.IGNORECASE)
_PY_WRITE = re.compile(
    r"open\([^)]*['\"][wax]b?\+?['\"]|\.write_(?:text|bytes)\(|\.write\(|shutil\.|os\.(?:remove|unlink|rename|makedirs|mkdir)"
)
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
_WRAPPERS = frozenset(["sudo", "timeout", "env", "nohup", "time", "nice", "xargs"])


def _tokens(name: str) -> list[str]:
    return [t.lower() for t in _WORD_SPLIT.split(name) if t]


def _words_mutate(name: str) -> bool | None:
    low = name.lower()
    if low in MUTATING_WORDS:
        return True
    if low in READ_WORDS:
        return False
    # Tool names read verb first ("get_deploy_diff", "github_create_issue"): the first known word decides.
    for t in _tokens(name):
        if t in MUTATING_WORDS:
            return True
        if t in READ_WORDS:
            return False
    return None


#: Name words of tools that wait for something to happen (a poll of the same call is expected to repeat).
POLLING_WORDS = frozenset(
    ["poll", "wait", "await", "receive", "watch", "tail", "listen", "consume", "subscribe", "sleep", "long_poll"]
)
#: Argument keys that make a call a long-poll (full name, case-insensitive; ``timeout`` alone does not).
WAIT_KEYS = frozenset(
    [
        "wait",
        "wait_s",
        "wait_ms",
        "wait_seconds",
        "wait_time",
        "wait_time_seconds",
        "waittimeseconds",
        "poll_interval",
        "poll_interval_s",
        "long_poll",
        "block_ms",
    ]
)


def is_polling(tool: str, args: Any) -> bool:
    """Does this call wait for something to happen (a poll, a long-poll, a watch)? Its results then count as
    pending: it may repeat with the same answer until the thing it waits for happens."""
    return polls_by_name(tool) or polls_by_args(args)


def polls_by_name(tool: str) -> bool:
    """The tool's name says it waits (``poll_job``, ``wait_for_run``, ``receive_messages``)."""
    return any(t in POLLING_WORDS for t in _tokens(tool))


def polls_by_args(args: Any) -> bool:
    """The call has a wait argument (``wait_s``, ``WaitTimeSeconds``...)."""
    if not isinstance(args, Mapping):
        return False
    return any(isinstance(k, str) and k.lower().replace("-", "_") in WAIT_KEYS for k in args)


def _strip_heredocs(cmd: str) -> str:
    m = _HEREDOC.search(cmd)
    if not m:
        return cmd
    head_end = cmd.find("\n", m.end())
    if head_end < 0:
        return cmd
    marker = m.group(2)
    end = re.search(rf"^\s*{re.escape(marker)}\s*$", cmd[head_end + 1 :], re.MULTILINE)
    rest = cmd[head_end + 1 + end.end() :] if end else ""
    return cmd[:head_end] + "\n" + _strip_heredocs(rest)


def shell_command_effect(cmd: str) -> int:
    """How a shell command line changes state: ``NO_WRITE``, ``WRITES`` (a redirect to a file, or a writing
    command in any segment) or ``WRITES_ANYWAY`` (a write in a chain of several commands: the write has
    happened even when a later command makes the whole line fail)."""
    return _effect(*_parse_shell(cmd))


def _parse_shell(cmd: str) -> tuple[str, str, list[list[str]]]:
    """A command line without its here-documents, that text with quoted strings emptied, and the words of
    each of its commands."""
    body = _strip_heredocs(cmd)
    plain = _QUOTED.sub("''", body)
    return body, plain, [words for words in (seg.split() for seg in _SEGMENTS.split(plain)) if words]


def _effect(body: str, plain: str, segments: list[list[str]]) -> int:
    py_write = _PY_WRITE.search(body) is not None
    targets = _REDIRECT.findall(plain)
    effect = WRITES if any(not _LOG_FILE.search(t) for t in targets) else NO_WRITE
    for words in segments:
        if effect:
            break
        while words and (_ENV_ASSIGN.match(words[0]) or words[0] in _WRAPPERS or words[0].isdigit()):
            words = words[1:]
        if not words:
            continue
        head = words[0].rsplit("/", 1)[-1]
        if head == "tee":
            files = [w for w in words[1:] if not w.startswith("-")]
            if files and all(_LOG_FILE.search(f) for f in files):
                continue
        if (
            head in _SHELL_WRITERS
            or (head in ("sed", "perl") and any(w.startswith("-i") or w == "--in-place" for w in words[1:]))
            or (head == "git" and any(w in _GIT_WRITERS for w in words[1:3]))
            or (head in _PKG_TOOLS and any(w in _PKG_WRITERS for w in words[1:3]))
            or (head.startswith("python") and (("pip" in words[1:3] and "install" in words) or py_write))
        ):
            effect = WRITES
    if effect and len(segments) > 1:
        return WRITES_ANYWAY
    return effect


def shell_command_mutates(cmd: str) -> bool:
    """Whether a shell command line writes (see :func:`shell_command_effect`)."""
    return shell_command_effect(cmd) != NO_WRITE


def _shell_line(tool: str, args: Any) -> str | None:
    if type(args) is not dict:
        if isinstance(args, str):
            return args if tool.lower() in _SHELL_TOOLS else None
        if not isinstance(args, Mapping):
            return None
    low = tool.lower()
    for key in _COMMAND_KEYS:
        cmd = args.get(key)
        if isinstance(cmd, str) and (low in _SHELL_TOOLS or (" " in cmd.strip() and not _words_mutate(tool))):
            # A command line, unless the tool's own name says it writes: apply_patch {"command": "*** Begin..."}
            return cmd
        if isinstance(cmd, list) and low in _SHELL_TOOLS and all(isinstance(c, str) for c in cmd):
            return " ".join(cmd)
    return None


def shell_line(tool: str, args: Any) -> str | None:
    """The command line a call runs, when it is a shell call (``bash {"command": ...}``), else ``None``."""
    return _shell_line(tool, args)


_SKIP_PROGRAMS = frozenset(["cd", "export", "set", "source", ".", "pushd", "popd", "true", "echo"])


def call_family(tool: str, args: Any) -> str:
    """The tool, or for a shell tool the tool and the program its command runs (``bash:pytest``): errors and
    fruitless searches are counted per family, so a failing ``pytest`` says nothing about a later ``cat``."""
    line = _shell_line(tool, args)
    return tool if line is None else _family(tool, _parse_shell(line)[2])


def _family(tool: str, segments: list[list[str]]) -> str:
    for words in segments:
        while words and (_ENV_ASSIGN.match(words[0]) or words[0] in _WRAPPERS or words[0].isdigit()):
            words = words[1:]
        if words and words[0] not in _SKIP_PROGRAMS:
            return f"{tool}:{words[0].rsplit('/', 1)[-1][:64]}"  # stored in the state: bounded
    return tool


_SHELL_WAITS = re.compile(r"(?:^|[;&|]\s*)(?:sleep|watch)\b|\btail\s+(?:-\w*\s+)*(?:-[fF]\b|--follow)")


def shell_polls(tool: str, args: Any) -> bool:
    """Whether a shell command waits for something: ``sleep 30 && ...``, ``watch ...``, ``tail -f``."""
    line = _shell_line(tool, args)
    return line is not None and _SHELL_WAITS.search(line) is not None


def mutation(tool: str, args: Any) -> int:
    """Like :func:`is_mutating`, as ``NO_WRITE``, ``WRITES`` or ``WRITES_ANYWAY`` (shell chains)."""
    line = _shell_line(tool, args)
    if line is not None:
        return shell_command_effect(line)
    return _named_mutation(tool, args)


def _named_mutation(tool: str, args: Any) -> int:
    if isinstance(args, Mapping):
        for key in _SUBCOMMAND_KEYS:
            sub = args.get(key)
            if isinstance(sub, str) and sub and " " not in sub:
                verdict = _words_mutate(sub)
                if verdict is not None:
                    return WRITES if verdict else NO_WRITE
    return WRITES if _words_mutate(tool) else NO_WRITE


def call_traits(tool: str, args: Any) -> tuple[int, str, bool]:
    """:func:`mutation`, :func:`call_family` and :func:`shell_polls` of one call, reading a shell command
    line once."""
    line = _shell_line(tool, args)
    if line is None:
        return _named_mutation(tool, args), tool, False
    body, plain, segments = _parse_shell(line)
    return _effect(body, plain, segments), _family(tool, segments), _SHELL_WAITS.search(line) is not None


def is_mutating(tool: str, args: Any) -> bool:
    """Default guess: does a successful call of ``tool`` with ``args`` change state?

    Shell tools are judged by their command line; tools with a sub-command argument (an editor's
    ``command="view"``, an HTTP ``method``) by that word; everything else by the words in its name.
    """
    return mutation(tool, args) != NO_WRITE


_EMPTY_TEXT = re.compile(
    r"""^\W*(?:
        (?:no|0|zero)\s+(?:results?|matches|match|items?|records?|entries|documents?|files?|hits|data|rows|orders?
            |users?)\b
      | nothing\s+(?:found|matched|to\s+show)\b
      | (?:none|null|nil|empty|n/a|\[\]|\{\})\W*$
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_EMPTY_ANYWHERE = re.compile(
    r"\bnot\s+found\b|\b(?:did\s+not|didn't)\s+match\s+any\b"
    r"|\b(?:returned|found|yielded)\s+(?:no|0|zero)\s+(?:results?|matches|items?|records?|hits|rows)\b",
    re.IGNORECASE,
)
_EMPTY_ANYWHERE_WORDS = ("found", "match", "returned", "yielded")
_PENDING_WORDS = (
    "pending",
    "running",
    "progress",
    "queued",
    "processing",
    "ready",
    "waiting",
    "starting",
    "initializing",
    "scheduled",
    "building",
    "deploying",
    "provisioning",
    "processed",
    "finished",
    "completed",
    "started",
    "yet",
)
#: A short text result that reports a failure in its first words (tools that return errors as text).
_ERROR_TEXT = re.compile(
    r"^\W{0,3}(?:error|fatal|exception)\b\s*[:\-!]|^traceback \(most recent call last\)"
    r"|^(?:failed|unable|cannot|could not)\b|^no replacement was performed"
    r"|^an error occurred while running the tool\b",
    re.IGNORECASE,
)
#: A write that changed nothing: not a state change.
_NOOP_TEXT = re.compile(
    r"\b(?:0|zero|no)\s+(?:rows?|records?|items?|documents?|files?|lines?|changes?)\s+"
    r"(?:were\s+)?(?:inserted|updated|affected|changed|modified|deleted|written|upserted)\b"
    r"|\bno changes?\b(?:\s+(?:made|to\s+(?:apply|commit|save)))?|\bnothing to (?:commit|update|change|do)\b"
    r"|\balready up[- ]to[- ]date\b|\bunchanged\b|\bno-op\b",
    re.IGNORECASE,
)
_ACK_TEXT = re.compile(
    r"^\W*(?:ok(?:ay)?|done|sent|success(?:ful(?:ly)?)?|succeeded|created|saved|updated|deleted|written|"
    r"accepted|true|ack(?:nowledged)?|completed?|applied|added|removed|posted|stored)"
    r"(?:\s+(?:successfully|ok))?\W*$",
    re.IGNORECASE,
)
_PENDING_TEXT = re.compile(  # letters-only boundaries, so UPDATE_IN_PROGRESS and job_running match
    r"(?<![a-z])(?:pending|running|in[ _-]progress|queued|processing|not\s+(?:yet\s+)?ready|waiting|starting|"
    r"initializing|scheduled|building|deploying|provisioning)(?![a-z])",
    re.IGNORECASE,
)
_STATUS_WORDS = (
    r"(?:pending|running|in[ _-]progress|queued|processing|waiting|starting|initializing|scheduled|building|"
    r"deploying|provisioning|not\s+(?:yet\s+)?ready)"
)
#: A text that *states* a status: a status line ("Running...", "Queued (3 ahead)", "Build #42 in progress"),
#: a status field ("Status: queued", "state = running"), a sentence saying so ("the job is still running",
#: "is being processed", "has not finished yet"), or a status enum (``CREATE_IN_PROGRESS``). A status word
#: inside other prose ("the result of running `cat -n`") is not one.
_PENDING_STATEMENT = re.compile(
    # a status line: "Running...", "Queued (3 ahead)", "Build #42 in progress", "Job 8812 queued"
    rf"^[\W_]*(?:still\s+)?{_STATUS_WORDS}(?!\w)"
    rf"|^[^\S\n]*[\w#.-]+(?:[^\S\n]+[\w#.-]+){{0,3}}[^\S\n]+(?:is[^\S\n]+)?(?:still[^\S\n]+)?{_STATUS_WORDS}"
    r"[^\S\n]*(?:\([^\n)]{0,40}\))?[^\S\n.!:]*[.!:\u2026]*[^\S\n]*$"
    # a status field: "Status: queued", "state = running", "job state is pending"
    rf"|\b(?:status|state|phase|stage)\b[\"']?\s*(?:[:=-]|\bis\b)\s*[\"']?(?:still\s+)?(?:[a-z]+_)*{_STATUS_WORDS}"
    # a sentence: "the job is still running", "is being processed", "has not finished yet"
    rf"|\b(?:is|are|remains?|still|currently)\s+(?:still\s+|currently\s+|now\s+)?(?:being\s+processed\b|{_STATUS_WORDS}"
    r"(?!\w))"
    r"|\b(?:has|have)\s+not\s+(?:yet\s+)?(?:finished|completed|started)\b|\bnot\s+(?:finished|complete|done)\s+yet\b"
    r"|\bnot\s+(?:yet\s+)?ready\b",
    re.IGNORECASE | re.MULTILINE,
)
_PENDING_ENUM = re.compile(r"\b[A-Z][A-Z_]*_(?:IN_PROGRESS|PENDING|RUNNING|QUEUED|PROVISIONING|STARTING)\b")
#: Paired wrapper tags (``<output>...</output>``, ``<returncode>0</returncode>``) and self-closing ones: markup.
#: An unpaired ``<article 0>`` is content.
_CLOSING_TAG = re.compile(r"</([A-Za-z][\w:.-]{0,30})\s*>")
_OPENING_TAG = re.compile(r"<([A-Za-z][\w:.-]{0,30})(?:\s[^<>]{0,40})?(/?)>")


def _without_markup(text: str) -> str:
    """The text with paired and self-closing tags taken out (their content kept)."""
    closed = set(_CLOSING_TAG.findall(text))
    if closed:
        text = _CLOSING_TAG.sub("", text)
    return _OPENING_TAG.sub(lambda m: "" if m.group(2) or m.group(1) in closed else m.group(0), text)


_EXIT_META = re.compile(
    r"<(returncode|exit_?code|exit_?status|return_?code|status_?code)>\s*-?\d+\s*</\1>"
    r"|\b(?:exit|return)[ _]?(?:code|status)\s*[:=]?\s*-?\d+",
    re.IGNORECASE,
)
_CONTENT = re.compile(r"[^\W_]")
_COLLECTION_KEYS = ("results", "items", "data", "hits", "documents", "matches", "records", "entries", "rows")
_WRITE_COUNT_KEYS = frozenset(
    [
        "inserted",
        "updated",
        "deleted",
        "modified",
        "affected",
        "rows_affected",
        "rowcount",
        "upserted",
        "changed",
        "written",
        "modified_count",
        "inserted_count",
        "updated_count",
        "deleted_count",
        "upserted_count",
    ]
)
_STATUS_KEY = re.compile(r"status|state|phase", re.IGNORECASE)
_COUNT_KEYS = ("count", "total", "total_count", "num_results", "hits")
_SHORT = 300
_SHORT_MESSAGE = 160  # "not found" inside a longer text does not make it an empty result


class ResultFacts:
    """What a result says, as bit flags (cheap to store in history entries)."""

    ERROR = 1
    EMPTY = 2
    ACK = 4
    PENDING = 8
    NON_RETRYABLE = 16
    RETRYABLE = 32


_STATUS_ERROR = frozenset({"error", "failed", "failure"})
_STATUS_EMPTY = frozenset({"not_found", "empty", "no_results"})
_OUTCOME_STATUSES = _STATUS_ERROR | _STATUS_EMPTY | {"success", "partial"}


def result_facts(result: Any, is_error: bool) -> int:
    """Flags for a tool result: error, empty ("nothing found"), acknowledgement, pending, retryability.

    A result that follows the outcome protocol (a mapping with ``status`` and optionally ``retryable``) is
    read first; plain text and collections fall back to the heuristics above.
    """
    f = ResultFacts.ERROR if is_error else 0
    if result is None:
        return f | ResultFacts.EMPTY
    t = type(result)
    if t is str:
        return f | _text_facts(result)
    if t is dict or isinstance(result, Mapping):
        status = result.get("status")
        if isinstance(status, str) and ("retryable" in result or status.lower() in _OUTCOME_STATUSES):
            return f | _outcome_facts(result, status)
        return f | _mapping_facts(result)
    if isinstance(result, str):
        return f | _text_facts(str(result))
    if isinstance(result, (list, tuple, set, frozenset)):
        return f | (ResultFacts.EMPTY if len(result) == 0 else 0)
    status = getattr(result, "status", None)
    if isinstance(status, str) and hasattr(result, "retryable"):
        return f | _outcome_facts(
            {"status": status, "retryable": getattr(result, "retryable", None), "data": getattr(result, "data", None)},
            status,
        )
    return f


def _text_facts(text: str) -> int:
    if len(text) > _SHORT:
        return 0
    low = text.lower()
    if ("code" in low or "status" in low) and _EXIT_META.search(text):
        text = _EXIT_META.sub("", text)
    if not _CONTENT.search(_without_markup(text) if "<" in text else text):  # only an exit code and markup
        return ResultFacts.EMPTY
    empty = _EMPTY_TEXT.match(text) or (
        len(text) <= _SHORT_MESSAGE
        and any(map(low.__contains__, _EMPTY_ANYWHERE_WORDS))
        and _EMPTY_ANYWHERE.search(text)
    )
    if _ERROR_TEXT.match(text):  # "Error: old string not found" failed: a write that says so changed nothing
        return ResultFacts.ERROR | (ResultFacts.EMPTY if empty else 0)
    if empty:
        return ResultFacts.EMPTY
    if len(text) <= 64 and _ACK_TEXT.match(text):
        return ResultFacts.ACK
    if any(map(low.__contains__, _PENDING_WORDS)) and (_PENDING_STATEMENT.search(text) or _PENDING_ENUM.search(text)):
        return ResultFacts.PENDING
    return 0


def wrote_nothing(result: Any) -> bool:
    """Whether a write's result says it changed nothing: "0 rows affected", "no changes", "already up to
    date", ``{"inserted": 0, "updated": 0}`` (asked only of mutating calls)."""
    if isinstance(result, str):
        return len(result) <= _SHORT and _NOOP_TEXT.search(result) is not None
    if isinstance(result, Mapping):
        written = [v for k, v in result.items() if isinstance(k, str) and k.lower() in _WRITE_COUNT_KEYS]
        return bool(written) and all(type(v) is int and v == 0 for v in written)
    return False


def _outcome_facts(result: Mapping[str, Any], status: str) -> int:
    f = 0
    status = status.lower()
    if status in _STATUS_ERROR:
        f |= ResultFacts.ERROR
    elif status in _STATUS_EMPTY:
        f |= ResultFacts.EMPTY
    elif status == "success" and result.get("data") in (None, "", [], {}):
        f |= ResultFacts.ACK
    elif status in ("pending", "running", "in_progress"):
        f |= ResultFacts.PENDING
    retry = result.get("retryable")
    if retry is False:
        f |= ResultFacts.NON_RETRYABLE
    elif retry is True:
        f |= ResultFacts.RETRYABLE
    return f


def _mapping_facts(result: Mapping[str, Any], depth: int = 0) -> int:
    if not result:
        return ResultFacts.EMPTY
    if result.get("ok") is False or result.get("error") not in (None, False, "", [], {}):
        return ResultFacts.ERROR
    # One pass over the fields: collections (and whether any has content), nested mappings with content,
    # scalars that are neither empty nor an exit/status code.
    lists = full_lists = full_maps = meta_maps = other_content = strings = 0
    for key, v in itertools.islice(result.items(), 64):
        tv = type(v)
        if tv is list or tv is tuple:
            lists += 1
            strings += 1
            full_lists += 1 if v else 0
        elif tv is dict or isinstance(v, Mapping):
            strings += 1
            if v and not (depth < 3 and _mapping_facts(v, depth + 1) & ResultFacts.EMPTY):
                if all(not x and (x is None or type(x) in (bool, int, float, str)) for x in v.values()):
                    meta_maps += 1  # {"hasNextPage": false, "endCursor": null}: about the result, not content
                else:
                    full_maps += 1
        elif tv is str:
            strings += 1
            other_content += 1 if v else 0
        elif v and not (tv is int and isinstance(key, str) and ("code" in key.lower() or "status" in key.lower())):
            other_content += 1
    if lists and not full_lists and not full_maps and not _positive_count(result):
        return ResultFacts.EMPTY  # {"results": [], "total": 0, "query": "x"}: every collection is empty
    counts = [result[k] for k in _COUNT_KEYS if type(result.get(k)) is int]
    if counts and all(c == 0 for c in counts) and not any(result.get(k) for k in _COLLECTION_KEYS):
        return ResultFacts.EMPTY
    if strings and not full_lists and not full_maps and not meta_maps and not other_content:
        return ResultFacts.EMPTY  # {"stdout": "", "stderr": "", "exit_code": 1}: only an exit code
    status = result.get("status")
    if len(result) <= 2 and (result.get("ok") is True or (isinstance(status, str) and _ACK_TEXT.match(status))):
        return ResultFacts.ACK
    for key, value in itertools.islice(result.items(), 32):  # "status", "StackStatus", "job_state"...
        if isinstance(value, str) and isinstance(key, str) and _STATUS_KEY.search(key) and _PENDING_TEXT.search(value):
            return ResultFacts.PENDING
    return 0


def _positive_count(result: Mapping[str, Any]) -> bool:
    return any(type(result.get(k)) is int and result[k] > 0 for k in _COUNT_KEYS)
