"""What a call does: whether it changes state (mutating), which family it belongs to (``bash:pytest``),
and whether it waits for something to happen (polling), from its tool name, sub-command and shell command line.

Every heuristic here can be overridden per tool through :class:`looptrap.ToolPolicy`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ARG_KEYS",
    "NO_WRITE",
    "WRITES",
    "WRITES_ANYWAY",
    "call_family",
    "call_target",
    "call_traits",
    "is_mutating",
    "is_polling",
    "mutation",
    "polls_by_args",
    "polls_by_name",
    "shell_command_effect",
    "shell_command_mutates",
    "shell_line",
    "shell_polls",
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
    # (each pattern is searched only in a line that holds what it needs: its scan stops at every character)
    targets = _REDIRECT.findall(plain) if ">" in plain else []
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
            or (head.startswith("python") and (("pip" in words[1:3] and "install" in words) or _py_writes(body)))
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


def _shell_waits(line: str) -> bool:
    return ("sleep" in line or "watch" in line or "tail" in line) and _SHELL_WAITS.search(line) is not None


def _py_writes(body: str) -> bool:
    """Whether Python code in a command line writes files (``open(..., "w")``, ``.write_text(``...)."""
    return ("open(" in body or ".write" in body or "shutil." in body or "os." in body) and (
        _PY_WRITE.search(body) is not None
    )


def shell_polls(tool: str, args: Any) -> bool:
    """Whether a shell command waits for something: ``sleep 30 && ...``, ``watch ...``, ``tail -f``."""
    line = _shell_line(tool, args)
    return line is not None and _shell_waits(line)


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
    return _effect(body, plain, segments), _family(tool, segments), _shell_waits(line)


#: Argument keys that name what a call acts on (a file, a page, an element, a record), not how.
_TARGET_KEYS = frozenset(
    [
        "path", "file", "filepath", "file_path", "filename", "file_name", "notebook_path", "dir", "directory",
        "folder", "url", "uri", "href", "link", "selector", "element", "ref", "target", "xpath", "locator",
        "button", "option", "item", "product", "id", "uuid",
    ]
)  # fmt: skip
#: Argument keys that carry what a call says or does (a query, a program, a text): never its target.
_CONTENT_KEYS = frozenset(
    [
        "q", "query", "sql", "command", "cmd", "commands", "code", "script", "content", "text", "body", "message",
        "prompt", "pattern", "payload", "data", "input", "old_str", "new_str", "old_string", "new_string",
        "patch", "diff", "instructions",
    ]
)  # fmt: skip
_TARGET_CHARS = 300


def _short_line(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= _TARGET_CHARS and "\n" not in v


def call_target(args: Any) -> str | None:
    """What a call acts on, when its arguments say so: the value of a key such as ``path``, ``file_path``,
    ``url``, ``selector`` or ``*_id``; the value of a call's only argument when it is one short line and not a
    query, a program or a text (``click("Buy Now")``, ``{"action": "click[Blue dress]"}``); else ``None``.
    The same error from calls on different targets is exploration before it is a loop (``error_repeat``)."""
    if _short_line(args):
        return str(args)
    if not isinstance(args, Mapping) or not args:
        return None
    for k, v in args.items():
        if not isinstance(k, str) or isinstance(v, (dict, list, tuple, bool)) or v is None:
            continue
        low = k.lower()
        if low in _TARGET_KEYS or low.endswith(("_id", "_path", "_url", "_file")) or k.endswith("Id"):
            return f"{low}={v}"[: _TARGET_CHARS + 32]
    if len(args) == 1:
        ((k, v),) = args.items()
        if isinstance(k, str) and k.lower() not in _CONTENT_KEYS and _short_line(v):
            return str(v)
    return None


def is_mutating(tool: str, args: Any) -> bool:
    """Default guess: does a successful call of ``tool`` with ``args`` change state?

    Shell tools are judged by their command line; tools with a sub-command argument (an editor's
    ``command="view"``, an HTTP ``method``) by that word; everything else by the words in its name.
    """
    return mutation(tool, args) != NO_WRITE
