"""The configuration file: looptrap.toml or [tool.looptrap] in pyproject.toml (docs/configuration.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from looptrap import Guard
from looptrap.config_file import ConfigError, ConfigFile, dump, find, load, resolve
from looptrap.testing import step

FULL = """\
store = "sqlite:///sessions.db"
report_tool = false
log_args = true

[escalation]
ladder = ["advise", "advise", "block", "halt"]
cooldown = 4
patience = 5

[budgets]
max_tool_calls = 200
max_seconds = 600
max_calls_per_tool = { search_docs = 20, "*" = 50 }

[detectors]
enabled = ["repeat", "cycle", "drift", "edit_loop", "rate", "no_action"]

[detectors.repeat]
threshold = 4

[detectors.rate]
warn_only = true

[tools."debug_*"]
exempt = true

[tools.run_sql]
keys = ["query"]
limits = { repeat = 6 }
disable = ["drift"]

[tools.deploy]
mutating = true

[tools.health]
polling = true
"""


def write(folder: Path, text: str, name: str = "looptrap.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_section_is_read(tmp_path: Path) -> None:
    config = load(write(tmp_path, FULL))
    g = config.guard
    assert config.store == "sqlite:///sessions.db"
    assert g.report_tool is None
    assert g.log_args is True
    assert g.escalation.ladder == ("advise", "advise", "block", "halt")
    assert g.escalation.cooldown == 4
    assert g.escalation.patience == 5
    assert g.budgets.max_tool_calls == 200
    assert g.budgets.max_seconds == 600.0
    assert g.budgets.max_calls_per_tool == {"search_docs": 20, "*": 50}
    assert [d.name for d in g.detectors] == ["repeat", "cycle", "drift", "edit_loop", "rate", "no_action"]
    assert g.detectors[0].threshold == 4
    assert g.detectors[4].warn_only is True
    assert g.policy("debug_step").exempt
    assert g.policy("run_sql").keys == ("query",)
    assert g.policy("run_sql").limits == {"repeat": 6}
    assert g.policy("run_sql").disable == frozenset({"drift"})
    assert g.policy("deploy").mutating is True
    assert g.policy("health").polling is True


def test_the_file_changes_what_the_guard_does(tmp_path: Path) -> None:
    config = load(write(tmp_path, "[detectors.repeat]\nthreshold = 5\n"))
    guard = Guard(config.guard, clock=None)
    actions = [step(guard, "search", {"q": "x"}, "0 results").action for _ in range(5)]
    assert actions == ["allow", "allow", "allow", "allow", "advise"]


def test_a_detector_can_be_turned_off_and_made_warn_only(tmp_path: Path) -> None:
    config = load(write(tmp_path, "[detectors.repeat]\nenabled = false\n\n[detectors.cycle]\nwarn_only = true\n"))
    names = [d.name for d in config.guard.detectors]
    assert "repeat" not in names
    assert next(d for d in config.guard.detectors if d.name == "cycle").warn_only


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("retries = 3\n", 1, "retries: unknown key"),
        ("\n[detectors.repeat]\nthreshhold = 4\n", 3, "detectors.repeat.threshhold: unknown key"),
        ("[detectors.repeat]\nthreshold = 0\n", 2, "detectors.repeat.threshold: must be above 0"),
        ('[detectors.repeat]\nthreshold = "4"\n', 2, "detectors.repeat.threshold: a whole number, got a string"),
        ("[detectors.nope]\n", 1, "detectors.nope: unknown key"),
        ("[escalation]\nladder = []\n", 2, "escalation.ladder: a non-empty list of"),
        ('[escalation]\nladder = ["advise", "explode"]\n', 2, "escalation.ladder"),
        ("[budgets]\nmax_seconds = nan\n", 2, "budgets.max_seconds: a finite number"),
        ("[budgets]\nmax_seconds = inf\n", 2, "budgets.max_seconds: a finite number"),
        ("[budgets]\nmax_turns = -1\n", 2, "budgets.max_turns: must be above 0"),
        ("[escalation]\npatience = -1\n", 2, "escalation.patience: must be 0 or more"),
        ("[budgets]\nsoft = 1.5\n", 2, "budgets.soft: a fraction between 0 and 1"),
        ('[tools.x]\nexempt = "yes"\n', 2, "tools.x.exempt: true or false"),
        ('[tools."debug_*"]\nlimits = { nope = 3 }\n', 2, "tools.debug_*.limits.nope: unknown key"),
        ('[tools.x]\ndisable = ["nope"]\n', 2, "tools.x.disable: unknown detector 'nope'"),
        ("store = 3\n", 1, "store: a store URL"),
        ('[detectors]\nenabled = ["repeat", "repeat"]\n', 2, "detectors.enabled: each detector may appear once"),
        ("x = [\n", 1, "not valid TOML"),
    ],
)
def test_unknown_keys_and_bad_values_name_the_file_and_line(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert err.value.where == f"{path}:{line}"
    assert reason in err.value.reason


def test_pyproject_table_and_discovery_from_the_working_directory_upward(tmp_path: Path) -> None:
    project = tmp_path / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    write(project, '[project]\nname = "x"\n\n[tool.looptrap.detectors.repeat]\nthreshold = 2\n', "pyproject.toml")
    found = find(deep)
    assert found == project / "pyproject.toml"
    assert resolve(start=deep).guard.detectors[0].threshold == 2
    write(project / "src", "[detectors.repeat]\nthreshold = 1\n")  # nearer, and a looptrap.toml first
    assert resolve(start=deep).guard.detectors[0].threshold == 1
    plain = tmp_path / "other"
    plain.mkdir()
    write(plain, '[project]\nname = "y"\n', "pyproject.toml")  # no [tool.looptrap]: not a configuration
    assert find(plain) is None or find(plain) != plain / "pyproject.toml"


def test_an_explicit_file_or_the_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = write(tmp_path, "[detectors.repeat]\nthreshold = 6\n", "custom.toml")
    monkeypatch.setenv("LOOPTRAP_CONFIG", str(named))
    assert resolve(start=tmp_path).path == named
    other = write(tmp_path, "[detectors.repeat]\nthreshold = 8\n", "other.toml")
    assert resolve(str(other)).guard.detectors[0].threshold == 8
    monkeypatch.setenv("LOOPTRAP_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="cannot read it"):
        resolve()


def test_no_file_means_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPTRAP_CONFIG", raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    config = resolve(start=empty)
    if config.path is None:  # (a file above the temporary folder would be found, as documented)
        assert config == ConfigFile()


def test_show_prints_a_file_that_gives_the_same_guard(tmp_path: Path) -> None:
    config = load(write(tmp_path, FULL))
    again = load(write(tmp_path, dump(config), "shown.toml"))
    assert again.guard.detectors == config.guard.detectors
    assert again.guard.tools == config.guard.tools
    assert again.guard.escalation == config.guard.escalation
    assert again.guard.budgets == config.guard.budgets
    assert again.store == config.store
    assert (again.guard.report_tool, again.guard.log_args) == (None, True)


def looptrap(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LOOPTRAP_CONFIG"}
    cmd = [sys.executable, "-m", "looptrap", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def test_config_check_and_show_on_the_command_line(tmp_path: Path) -> None:
    write(tmp_path, FULL)
    ok = looptrap("config", "check", "looptrap.toml", cwd=tmp_path)
    assert (ok.returncode, ok.stdout.strip(), ok.stderr) == (0, "ok: looptrap.toml", "")
    found = looptrap("config", "check", cwd=tmp_path)  # found, not named: a project's file, that may only tighten
    assert (found.returncode, found.stdout.strip()) == (0, f"ok: {tmp_path / 'looptrap.toml'} (12 warnings)")
    assert "not applied (a project's file may only tighten): store (sends the sessions elsewhere)" in found.stderr
    shown = looptrap("config", "show", "--config", "looptrap.toml", cwd=tmp_path)
    assert shown.returncode == 0
    again = load(write(tmp_path, shown.stdout, "shown.toml"))
    assert again.guard.detectors == load(tmp_path / "looptrap.toml").guard.detectors
    write(tmp_path, "[escalation]\nladder = []\n", "bad.toml")
    bad = looptrap("config", "check", "bad.toml", cwd=tmp_path)
    assert bad.returncode == 2
    assert (
        bad.stderr.strip() == "looptrap: bad.toml:2: escalation.ladder: a non-empty list of warn, advise, block, halt"
    )
    named = looptrap("config", "show", "--config", "bad.toml", cwd=tmp_path)
    assert named.returncode == 2
    assert "Traceback" not in named.stderr


def test_the_hook_takes_a_config_option(tmp_path: Path) -> None:
    write(tmp_path, "[detectors.repeat]\nthreshold = 2\n", "strict.toml")
    pre = (Path(__file__).parent / "data" / "hooks" / "claude-code" / "pre_grep_empty.json").read_bytes()
    post = (Path(__file__).parent / "data" / "hooks" / "claude-code" / "post_grep_empty.json").read_bytes()
    store = f"sqlite:///{tmp_path}/s.db"
    cmd = [sys.executable, "-m", "looptrap", "hook", "claude-code", "--store", store, "--config", "strict.toml"]
    outs = []
    for payload in (pre, post, pre):
        proc = subprocess.run(cmd, input=payload, capture_output=True, cwd=tmp_path, timeout=60)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[:2] == [b"", b""]
    assert b"deny" in outs[2]  # the 2nd identical call, as the named file says


def test_replay_reads_the_configuration_file(tmp_path: Path) -> None:
    rows = [
        {"session": "s", "type": "tool_call", "tool": "search", "args": {"q": "x"}},
        {"session": "s", "type": "tool_result", "tool": "search", "output": "0 results"},
        {"session": "s", "type": "turn_end"},
    ] * 3
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    default = looptrap("replay", "t.jsonl", "--json", cwd=tmp_path)
    assert json.loads(default.stdout)["first_intervention"]["call_index"] == 3
    write(tmp_path, "[detectors.repeat]\nthreshold = 2\n")  # found in the working directory: tightens
    strict = looptrap("replay", "t.jsonl", "--json", cwd=tmp_path)
    assert json.loads(strict.stdout)["first_intervention"]["call_index"] == 2
    write(tmp_path, "[detectors.repeat]\nthreshold = 4\n", "relaxed.toml")  # named: applies as written
    relaxed = looptrap("replay", "t.jsonl", "--json", "--config", "relaxed.toml", cwd=tmp_path)
    assert json.loads(relaxed.stdout)["first_intervention"] is None


# -- who may set what (docs/configuration.md#who-may-set-what) ------------------------------------------------
def user_file(text: str) -> Path:
    """The user's own configuration file (the tests' $XDG_CONFIG_HOME is an empty folder of their own)."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "looptrap"
    folder.mkdir(parents=True, exist_ok=True)
    return write(folder, text)


def test_a_project_file_cannot_turn_guarding_off_or_send_sessions_elsewhere(tmp_path: Path) -> None:
    write(
        tmp_path,
        '[project]\nname = "victim"\n\n[tool.looptrap]\nenabled = false\nstore = "redis://evil.example:6379/0"\n'
        'log_args = true\n\n[tool.looptrap.detectors]\nenabled = []\n\n[tool.looptrap.tools."*"]\nexempt = true\n'
        "\n[tool.looptrap.metrics]\nprometheus = true\n",
        "pyproject.toml",
    )
    config = resolve(start=tmp_path)
    assert config.guard.enabled is True
    assert config.store is None
    assert config.guard.log_args is False
    assert config.guard.policy("Bash").exempt is False
    assert [d.name for d in config.guard.detectors] == [d.name for d in Guard().config.detectors]
    assert config.metrics == {}
    said = " | ".join(config.ignored)
    for part in ("enabled = false", "store", "log_args = true", "detectors.enabled = []", 'tools."*".exempt'):
        assert part in said


def test_a_project_file_may_tighten(tmp_path: Path) -> None:
    write(
        tmp_path,
        "[detectors.repeat]\nthreshold = 2\n\n[budgets]\nmax_tool_calls = 100\n\n"
        '[escalation]\nladder = ["block", "halt"]\n\n[tools.deploy]\nlimits = { repeat = 1 }\n',
    )
    config = resolve(start=tmp_path)
    assert config.ignored == ()
    assert config.guard.detectors[0].threshold == 2
    assert config.guard.budgets.max_tool_calls == 100
    assert config.guard.escalation.ladder == ("block", "halt")
    assert config.guard.policy("deploy").limits == {"repeat": 1}
    assert config.sources["detectors.repeat.threshold"] == f"project {tmp_path / 'looptrap.toml'}"


@pytest.mark.parametrize(
    ("text", "ignored"),
    [
        ("[detectors.repeat]\nthreshold = 9\n", "detectors.repeat.threshold = 9 (intervenes later)"),
        ("[detectors.cycle]\nwarn_only = true\n", "detectors.cycle.warn_only = true"),
        ("[detectors.drift]\nenabled = false\n", "detectors.drift.enabled = false"),
        ('[escalation]\nladder = ["warn"]\n', 'escalation.ladder = ["warn"] (a milder ladder)'),
        ("[escalation]\nwarn_only = true\n", "escalation.warn_only = true (only warns)"),
        ("[escalation]\npatience = 9\n", "escalation.patience = 9 (waits longer)"),
        ("fail_closed = false\n", None),  # the default already: nothing loosened
        ("previews = true\n", "previews = true (keeps arguments)"),
        ('[tools.x]\ndisable = ["repeat"]\n', 'tools.x.disable = ["repeat"]'),
        ("[tools.x]\npolling = true\n", "tools.x.polling = true"),
        ("[tools.x]\nlimits = { repeat = 8 }\n", "tools.x.limits.repeat = 8"),
    ],
)
def test_what_a_project_file_says_that_would_loosen_is_named_and_not_applied(
    tmp_path: Path, text: str, ignored: str | None
) -> None:
    write(tmp_path, text)
    config = resolve(start=tmp_path)
    if ignored is None:
        assert config.ignored == ()
        return
    assert any(ignored in one for one in config.ignored), config.ignored
    defaults = ConfigFile().guard
    assert (config.guard.detectors, config.guard.escalation) == (defaults.detectors, defaults.escalation)
    assert (config.guard.previews, config.guard.policy("x")) == (defaults.previews, defaults.policy("x"))


def test_the_users_own_file_and_a_named_file_may_loosen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    write(project, "[detectors.repeat]\nthreshold = 9\n")
    user = user_file('store = "sqlite:///mine.db"\n\n[detectors.repeat]\nthreshold = 6\n')
    config = resolve(start=project)
    assert config.store == "sqlite:///mine.db"  # the user's store
    assert config.guard.detectors[0].threshold == 6  # the user's loosening stands; the project's 9 does not
    assert config.sources == {"store": f"user {user}", "detectors.repeat.threshold": f"user {user}"}
    assert config.ignored == ("detectors.repeat.threshold = 9 (intervenes later)",)
    write(project, "[detectors.repeat]\nthreshold = 4\n")  # tighter than the user's 6: applied
    assert resolve(start=project).guard.detectors[0].threshold == 4
    named = write(tmp_path, "enabled = false\n", "off.toml")
    assert resolve(str(named), start=project).guard.enabled is False  # named on the command line: as written
    monkeypatch.setenv("LOOPTRAP_CONFIG", str(named))
    assert resolve(start=project).guard.enabled is False


def test_show_names_the_source_of_each_setting_and_what_was_not_applied(tmp_path: Path) -> None:
    user = user_file('store = "redis://looptrap:s3cret-pw@cache.internal:6379/0?password=other-secret"\n')
    write(tmp_path, "enabled = false\n\n[detectors.repeat]\nthreshold = 2\n")
    shown = looptrap("config", "show", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "s3cret-pw" not in out
    assert "other-secret" not in out
    assert f'# from user {user}\nstore = "redis://looptrap:***@cache.internal:6379/0?password=***"\n' in out
    project = tmp_path / "looptrap.toml"
    assert f"threshold = 2  # project {project}" in out or f"# from project {project}\nthreshold = 2\n" in out
    assert "enabled = true\n" in out
    assert "#   enabled = false (turns guarding off)" in out


def test_a_deeply_nested_file_is_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path, "x = " + "[" * 400 + "]" * 400 + "\n")
    with pytest.raises(ConfigError, match="nested more than"):
        load(path)
    bad = looptrap("config", "check", str(path), cwd=tmp_path)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert "nested more than" in bad.stderr


def test_the_hook_ignores_a_project_that_turns_it_off(tmp_path: Path) -> None:
    """The repository the agent works in cannot switch its guard off (a subprocess, as Claude Code runs it)."""
    write(tmp_path, '[project]\nname = "x"\n\n[tool.looptrap]\nenabled = false\n', "pyproject.toml")
    pre = (Path(__file__).parent / "data" / "hooks" / "claude-code" / "pre_grep_empty.json").read_bytes()
    post = (Path(__file__).parent / "data" / "hooks" / "claude-code" / "post_grep_empty.json").read_bytes()
    cmd = [sys.executable, "-m", "looptrap", "hook", "claude-code", "--store", f"sqlite:///{tmp_path}/s.db"]
    outs = []
    for payload in (pre, post) * 3:
        proc = subprocess.run(cmd, input=payload, capture_output=True, cwd=tmp_path, timeout=60)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[4] != b""  # the third identical call gets the guard's answer


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        ("enabled = false\n", "enabled = false: every call is allowed and nothing is recorded"),
        ("[detectors]\nenabled = []\n", "no detector runs: only budgets can stop a loop"),
        ('[escalation]\nladder = ["halt", "advise"]\n', 'escalation.ladder = ["halt", "advise"] gets milder'),
        ('[escalation]\nladder = ["warn", "advise"]\n', "never blocks or halts"),
        ("[escalation]\nwarn_only = true\n", "escalation.warn_only = true: loops are reported, never stopped"),
        ('[tools."*"]\nexempt = true\n', 'tools."*".exempt = true: no tool is guarded'),
    ],
)
def test_config_check_warns_when_protection_is_off_and_strict_fails(tmp_path: Path, text: str, warning: str) -> None:
    write(tmp_path, text, "mine.toml")
    said = looptrap("config", "check", "mine.toml", cwd=tmp_path)
    assert (said.returncode, said.stdout.strip()) == (0, "ok: mine.toml (1 warning)")
    assert said.stderr.startswith("looptrap: warning: ")
    assert warning in said.stderr
    strict = looptrap("config", "check", "--strict", "mine.toml", cwd=tmp_path)
    assert strict.returncode == 1


@pytest.mark.parametrize(
    ("store", "reason"),
    [
        ('"redis://localhost:6379/0?bogus=1"', "unknown option 'bogus'"),
        ('"sqlite:///x.db?ttl=soon"', "ttl must be a number of seconds"),
        ('"ftp://x"', "unknown store URL scheme 'ftp'"),
        ('"redis://u:hunter2@localhost:6379/0?timeout=x"', "redis://u:***@localhost"),
    ],
)
def test_config_check_rejects_a_store_url_the_commands_reject(tmp_path: Path, store: str, reason: str) -> None:
    write(tmp_path, f"store = {store}\n", "mine.toml")
    said = looptrap("config", "check", "mine.toml", cwd=tmp_path)
    assert said.returncode == 2
    assert said.stderr.startswith("looptrap: mine.toml:1: store: ")
    assert reason in said.stderr
    assert "hunter2" not in said.stderr
    hook = subprocess.run(  # what the same URL does to a hook: it fails open, with the same reason
        [sys.executable, "-m", "looptrap", "hook", "claude-code", "--config", "mine.toml"],
        input=(Path(__file__).parent / "data" / "hooks" / "claude-code" / "pre_grep_empty.json").read_bytes(),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert hook.returncode == 0
    assert reason.encode() in hook.stderr


def test_config_check_checks_the_store_of_the_environment(tmp_path: Path) -> None:
    env = {**os.environ, "LOOPTRAP_STORE": "sqlite:///x.db?timeout=-1"}
    said = subprocess.run(
        [sys.executable, "-m", "looptrap", "config", "check"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert said.returncode == 2
    assert said.stderr.startswith("looptrap: $LOOPTRAP_STORE: ")


def test_a_relative_sqlite_store_in_a_file_is_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    config = load(write(tmp_path / "conf", 'store = "sqlite://sessions.db?ttl=60"\n'))
    assert config.store == f"sqlite://{tmp_path / 'conf' / 'sessions.db'}?ttl=60"
    plain = load(write(tmp_path / "conf", 'store = "data/s.db"\n'))
    assert plain.store == str(tmp_path / "conf" / "data" / "s.db")
    for unchanged in ("sqlite:///abs/s.db", "memory://", "redis://localhost:6379/0"):
        assert load(write(tmp_path / "conf", f'store = "{unchanged}"\n')).store == unchanged
