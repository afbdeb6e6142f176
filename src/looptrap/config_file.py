"""One configuration for the hooks, the MCP proxy and the CLI: ``looptrap.toml``, or ``[tool.looptrap]`` in
``pyproject.toml``.

Where it comes from, and how far each source is trusted (docs/configuration.md#who-may-set-what):

* a file named by ``--config`` or ``$LOOPTRAP_CONFIG``: the whole configuration, as written;
* otherwise the user's own file (``$XDG_CONFIG_HOME/looptrap/looptrap.toml``, by default
  ``~/.config/looptrap/looptrap.toml``), then the project's, found from the working directory upward (the
  first folder with a ``looptrap.toml``, or a ``pyproject.toml`` with a ``[tool.looptrap]`` table). The
  project is often the repository an agent works in: its file may only *tighten* guarding (lower
  thresholds, add budgets, a stricter ladder...). What would loosen or redirect guarding there (turning it
  off, removing detectors, raising thresholds, exempting tools, another store, keeping previews, logging
  arguments) is ignored, and named in :attr:`ConfigFile.ignored`.

It sets the store, the guard's options, the escalation ladder, the budgets, the detectors (which ones, their
thresholds and settings, warn-only) and the tool policies. Unknown keys and bad values are
:class:`ConfigError`\\ s that name the file and the line. See docs/configuration.md for every key.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from looptrap.core.locations import absolute_store, user_config_path
from looptrap.core.policy import ToolPolicy
from looptrap.detectors import default_detectors
from looptrap.engine.config import GuardConfig
from looptrap.policies.budgets import Budgets
from looptrap.policies.escalation import Escalation

__all__ = ["ConfigError", "ConfigFile", "dump", "find", "load", "protection_warnings", "resolve", "user_config"]

ENV = "LOOPTRAP_CONFIG"
_MAX_DEPTH = 12  # nested tables deeper than this are no configuration (and would cost recursion)
_GUARD_KEYS = {"enabled": bool, "fail_closed": bool, "log_args": bool, "previews": bool}
_BUDGET_KEYS = (
    "max_turns",
    "max_tool_calls",
    "max_calls_per_tool",
    "max_tokens",
    "max_cost_usd",
    "max_seconds",
    "soft",
)
_POLICY_KEYS = ("exempt", "mutating", "polling", "keys", "fold_whitespace", "fold_case", "disable", "limits")
_ACTIONS = ("warn", "advise", "block", "halt")
_ALERT_KEYS = {
    "enabled": bool,
    "calls": int,
    "repeat_window": int,
    "repeat_share": float,
    "expected_seconds": float,
    "overtime_factor": float,
    "stale_steps": int,
    "warn_only": bool,
}
_METRICS_KEYS = {"prometheus": bool, "otel": bool, "max_tools": int}


class ConfigError(ValueError):
    """A configuration file that cannot be used: ``where`` is ``file:line``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class ConfigFile:
    """A configuration read: the guard configuration it gives, the store it names (``None``: the caller's
    default) and where it came from (``path``: the file that decided last, ``None``: the defaults).
    ``sources`` names the file of every setting that is not a default (``"escalation.ladder"`` ->
    ``"project looptrap.toml"``), ``ignored`` what a project file said that would loosen or redirect
    guarding, and was not applied."""

    guard: GuardConfig = field(default_factory=GuardConfig)
    store: str | None = None
    path: Path | None = None
    metrics: dict[str, Any] = field(default_factory=dict)  # the [metrics] table as read
    sources: dict[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()


def find(start: Path | None = None) -> Path | None:
    """The configuration file that applies in ``start`` (default: the working directory): the nearest
    ``looptrap.toml``, or ``pyproject.toml`` with a ``[tool.looptrap]`` table, from there upward."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / "looptrap.toml"
        if own.is_file():
            return own
        project = folder / "pyproject.toml"
        if project.is_file() and _has_table(project):
            return project
    return None


def user_config() -> Path | None:
    """The user's own configuration file, if there is one: ``$XDG_CONFIG_HOME/looptrap/looptrap.toml`` (by
    default ``~/.config/looptrap/looptrap.toml``)."""
    path = Path(user_config_path())
    return path if path.is_file() else None


def resolve(
    explicit: str | None = None, *, start: Path | None = None, project: Path | None = None, find_project: bool = True
) -> ConfigFile:
    """The configuration in effect: the file named by ``explicit`` (``--config``) or ``$LOOPTRAP_CONFIG``, as
    written; else the user's own file, tightened by the project's (``project``, else found from ``start``
    upward unless ``find_project`` is false); the defaults when there is none."""
    named = explicit or os.environ.get(ENV) or None
    if named:
        path = Path(named).expanduser()
        return load(path, f"{'--config' if explicit else '$' + ENV} {path}")
    user = user_config()
    base_data, base = ({}, ConfigFile()) if user is None else (_data(user), load(user, f"user {user}"))
    found = project or (find(start) if find_project else None)
    if found is None or (user is not None and found.resolve() == user.resolve()):
        return base
    load(found)  # every error of the project's file, with its line, as if it stood alone
    kept, ignored = _tightening(_data(found), base)
    if not kept:
        return dataclasses.replace(base, path=found, ignored=tuple(ignored))
    merged = _merged(base_data, kept)
    try:
        config = _Reader(found, "", ()).read(merged)
    except ConfigError as exc:  # a combination of two files that each stand alone: name both
        raise ConfigError(str(found), f"{exc.reason} (with {user})") from None
    sources = {**base.sources, **{key: f"project {found}" for key in _keys(kept)}}
    return dataclasses.replace(config, sources=sources, ignored=tuple(ignored))


def load(path: Path, source: str | None = None) -> ConfigFile:
    """Read one configuration file, as written; raises :class:`ConfigError` (with ``file:line``) when it is
    not usable. ``source`` names it in :attr:`ConfigFile.sources` (default: the path)."""
    data, text, prefix = _parse(path)
    config = _Reader(path, text, prefix).read(data)
    return dataclasses.replace(config, sources=dict.fromkeys(_keys(data), source or str(path)))


def _data(path: Path) -> dict[str, Any]:
    return _parse(path)[0]


def _parse(path: Path) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    """A file's looptrap table, its text and the table's key prefix (``tool.looptrap`` in pyproject.toml)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "not UTF-8 text") from None
    tomllib = _toml()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or _line_of_message(str(exc))
        if line is None and "end of document" in str(exc):
            line = max(1, len(text.splitlines()))
        raise ConfigError(f"{path}:{line}" if line else str(path), f"not valid TOML ({_first_clause(exc)})") from None
    if path.name == "pyproject.toml":
        data = (data.get("tool") or {}).get("looptrap")
        if not isinstance(data, dict):
            raise ConfigError(str(path), "no [tool.looptrap] table")
        prefix: tuple[str, ...] = ("tool", "looptrap")
    else:
        prefix = ()
    if _depth(data) > _MAX_DEPTH:
        raise ConfigError(str(path), f"tables nested more than {_MAX_DEPTH} deep: not a looptrap configuration")
    return data, text, prefix


def _depth(value: Any) -> int:
    """How deep tables and lists nest in a value (without recursion: a file may nest a thousand deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v)
    return deepest


def _keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of the settings in a file's table (``escalation.ladder``)."""
    out = []
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and k not in ("limits", "max_calls_per_tool"):
            out += _keys(v, name + ".")
        else:
            out.append(name)
    return out


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# -- a project's file may only tighten ------------------------------------------------------------------------
_RANK = {"warn": 0, "advise": 1, "block": 2, "halt": 3}
#: Detector settings where a larger number intervenes more (for the rest, a smaller one does).
_LARGER_IS_STRICTER = frozenset({"short_period", "max_gap"})


def _tightening(data: dict[str, Any], base: ConfigFile) -> tuple[dict[str, Any], list[str]]:
    """What of a project's (validated) table tightens ``base``, and what it said that was not applied."""
    kept: dict[str, Any] = {}
    ignored: list[str] = []
    g = base.guard

    def keep(where: dict[str, Any], key: str, value: Any, ok: bool, name: str, why: str) -> None:
        if ok:
            where[key] = value
        else:
            ignored.append(f"{name} = {_toml_value(_plain(value))} ({why})")

    for key, value in data.items():
        if key == "enabled":
            keep(kept, key, value, value is True, key, "turns guarding off")
        elif key == "fail_closed":
            keep(kept, key, value, value is True or not g.fail_closed, key, "fails open")
        elif key in ("log_args", "previews"):
            keep(kept, key, value, value is False, key, "keeps arguments")
        elif key == "report_tool":
            kept[key] = value
        elif key in ("store", "metrics"):
            ignored.append(f"{key} (sends the sessions elsewhere)" if key == "store" else f"[{key}] (exports)")
        elif key == "alerts":
            has_alerts = any(_is_alert(d) for d in g.detectors)
            keep(kept, key, value, not has_alerts, key, "replaces the alert rules already set")
        elif key == "escalation":
            kept[key] = _tighter_escalation(value, g.escalation, ignored, keep)
        elif key == "budgets":
            kept[key] = _tighter_budgets(value, g.budgets, ignored, keep)
        elif key == "detectors":
            kept[key] = _tighter_detectors(value, g.detectors, ignored, keep)
        elif key == "tools":
            kept[key] = _tighter_tools(value, g.detectors, ignored, keep)
    return {k: v for k, v in kept.items() if v != {}}, ignored


def _is_alert(detector: Any) -> bool:
    from looptrap.observe.alerts import is_alert

    return bool(is_alert(detector))


def _tighter_escalation(data: dict[str, Any], e: Escalation, ignored: list[str], keep: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"escalation.{key}"
        if key == "ladder":
            n = max(len(value), len(e.ladder))
            stricter = all(
                _RANK[value[min(i, len(value) - 1)]] >= _RANK[e.ladder[min(i, len(e.ladder) - 1)]] for i in range(n)
            )
            keep(out, key, value, stricter, name, "a milder ladder")
        elif key == "cooldown":
            keep(out, key, value, value >= e.cooldown, name, "ends loops sooner")
        elif key == "patience":
            keep(out, key, value, value <= e.patience, name, "waits longer")
        elif key == "warn_only":
            keep(out, key, value, value is False, name, "only warns")
    return out


def _tighter_budgets(data: dict[str, Any], b: Budgets, ignored: list[str], keep: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        now = getattr(b, key, None)
        name = f"budgets.{key}"
        if isinstance(value, dict) or isinstance(now, dict):
            keep(out, key, value, now is None, name, "replaces a per-tool budget")
        else:
            keep(out, key, value, now is None or value <= now, name, "a larger budget")
    return out


def _tighter_detectors(
    data: dict[str, Any], detectors: tuple[Any, ...], ignored: list[str], keep: Any
) -> dict[str, Any]:
    by_name = {d.name: d for d in detectors}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "enabled":
            keep(out, key, value, set(by_name) <= set(value), "detectors.enabled", "leaves detectors out")
            continue
        current = by_name.get(key)
        table: dict[str, Any] = {}
        for setting, v in value.items():
            name = f"detectors.{key}.{setting}"
            if setting == "enabled" or setting == "warn_only":
                keep(table, setting, v, v is (setting == "enabled"), name, "turns the detector off or to warnings")
            elif current is None:
                table[setting] = v  # a detector the base does not run: whatever the project sets, it adds one
            else:
                now = getattr(current, setting)
                stricter = v >= now if setting in _LARGER_IS_STRICTER else v <= now
                keep(table, setting, v, stricter, name, "intervenes later")
        if table:
            out[key] = table
    return out


def _tighter_tools(data: dict[str, Any], detectors: tuple[Any, ...], ignored: list[str], keep: Any) -> dict[str, Any]:
    thresholds = {d.name: d.threshold for d in detectors}
    out: dict[str, Any] = {}
    for pattern, settings in data.items():
        table: dict[str, Any] = {}
        for key, value in settings.items():
            name = f"tools.{_toml_key(pattern)}.{key}"
            if key in ("keys", "fold_whitespace", "fold_case"):
                table[key] = value  # fewer differences between calls: more of them are repeats
            elif key in ("exempt", "mutating", "polling"):
                keep(table, key, value, value is False, name, "guards the tool less")
            elif key == "disable":
                keep(table, key, value, not value, name, "turns detectors off for the tool")
            elif key == "limits":
                limits: dict[str, Any] = {}
                for det, n in value.items():
                    keep(limits, det, n, n <= thresholds.get(det, n), f"{name}.{det}", "intervenes later")
                if limits:
                    table[key] = limits
        if table:
            out[pattern] = table
    return out


def protection_warnings(config: ConfigFile) -> list[str]:
    """What in a configuration turns protection off or weakens it (``config check`` prints these, and
    fails with ``--strict``), then what a project's file said that was not applied."""
    from looptrap.observe.alerts import is_alert

    g, e = config.guard, config.guard.escalation
    out = []
    if not g.enabled:
        out.append("enabled = false: every call is allowed and nothing is recorded")
    detectors = [d for d in g.detectors if not is_alert(d)]
    if not detectors:
        out.append("no detector runs: only budgets can stop a loop")
    elif all(d.warn_only for d in detectors):
        out.append("every detector is warn_only: loops are reported, never stopped")
    if e.warn_only:
        out.append("escalation.warn_only = true: loops are reported, never stopped")
    elif not any(_RANK[a] >= _RANK["block"] for a in e.ladder):
        out.append(f"escalation.ladder = {_toml_value(list(e.ladder))} never blocks or halts")
    elif any(_RANK[b] < _RANK[a] for a, b in zip(e.ladder, e.ladder[1:], strict=False)):
        out.append(f"escalation.ladder = {_toml_value(list(e.ladder))} gets milder as a loop goes on")
    for pattern, policy in g.tools.items():
        if policy.exempt and pattern.strip("*") == "":
            out.append(f"tools.{_toml_key(pattern)}.exempt = true: no tool is guarded")
        elif policy.disable and {d.name for d in detectors} <= set(policy.disable) and pattern.strip("*") == "":
            out.append(f"tools.{_toml_key(pattern)}.disable turns every detector off for every tool")
    out += [f"not applied (a project's file may only tighten): {one}" for one in config.ignored]
    return out


def dump(config: ConfigFile) -> str:
    """The effective configuration as a configuration file (TOML) that gives the same guard, each setting
    that is not a default followed by the file it came from; what a project's file said that was not
    applied at the end. A password in the store URL is shown as ``***``."""
    out: list[str] = []
    table = ""
    for line in _dump_lines(config):
        if line.startswith("["):
            table = line.strip("[]")
        elif " = " in line and not line.startswith("#"):
            key = line.split(" = ", 1)[0]
            source = config.sources.get(f"{table}.{key}" if table else key)
            if source is None and table.startswith("detectors."):
                source = config.sources.get(table)  # a detector's table named as a whole
            if source and len(line) + len(source) + 4 <= _WIDTH:
                line = f"{line}  # {source}"
            elif source:
                out.append(f"# from {source}")
        out += _folded(line)
    if config.ignored:
        out += [
            "",
            "# not applied: a project's file may only tighten guarding",
            "# (looptrap docs configuration#who-may-set-what)",
        ]
        out += [f"#   {one}" for one in config.ignored]
    return "\n".join(out) + "\n"


_WIDTH = 80  # columns of `config show`


def _folded(line: str) -> list[str]:
    """A ``key = [a, b, ...]`` line too long for the width, as a TOML array over several lines."""
    key, eq, value = line.partition(" = [")
    if len(line) <= _WIDTH or not eq or not value.endswith("]") or "#" in value:
        return [line]
    items, row = [], "   "
    for item in re.findall(r'"(?:[^"\\]|\\.)*"|[^,\s][^,]*', value[:-1]):
        if len(row) + len(item) + 2 > _WIDTH:
            items.append(row.rstrip())
            row = "   "
        row += f" {item.strip()},"
    items.append(row.rstrip())
    return [f"{key} = [", *items, "]"]


def _dump_lines(config: ConfigFile) -> list[str]:
    from looptrap.stores.url import redact

    g = config.guard
    lines = [f"# effective configuration{f' (from {config.path})' if config.path else ' (defaults)'}"]
    if config.store is not None:
        lines.append(f"store = {_toml_value(redact(config.store))}")
    for key in _GUARD_KEYS:
        lines.append(f"{key} = {_toml_value(getattr(g, key))}")
    lines.append(f"report_tool = {_toml_value(g.report_tool if g.report_tool is not None else False)}")
    e = g.escalation
    lines += ["", "[escalation]", f"ladder = {_toml_value(list(e.ladder))}", f"cooldown = {e.cooldown}"]
    lines.append(f"patience = {e.patience}")
    lines.append(f"warn_only = {_toml_value(e.warn_only)}")
    b = g.budgets
    set_budgets = [(k, getattr(b, k)) for k in _BUDGET_KEYS if getattr(b, k) is not None]
    if set_budgets:
        lines += ["", "[budgets]", *(f"{k} = {_toml_value(v)}" for k, v in set_budgets)]
    from looptrap.observe.alerts import is_alert

    alerts = [d for d in g.detectors if is_alert(d)]
    detectors = [d for d in g.detectors if not is_alert(d)]
    lines += ["", "[detectors]", f"enabled = {_toml_value([d.name for d in detectors])}"]
    for d in detectors:
        fields = [f for f in dataclasses.fields(d) if f.init]  # type: ignore[arg-type]
        lines += ["", f"[detectors.{d.name}]", *(f"{f.name} = {_toml_value(getattr(d, f.name))}" for f in fields)]
    for pattern, pol in g.tools.items():
        lines += ["", f"[tools.{_toml_key(pattern)}]"]
        for key in _POLICY_KEYS:
            value = _plain(getattr(pol, key))
            if value is not None and value != _plain(getattr(_DEFAULT_POLICY, key)):
                lines.append(f"{key} = {_toml_value(value)}")
    if alerts:
        lines += ["", "[alerts]", *(f"{k} = {_toml_value(v)}" for k, v in _alert_settings(alerts).items())]
    if config.metrics:
        lines += ["", "[metrics]", *(f"{k} = {_toml_value(v)}" for k, v in config.metrics.items())]
    return lines


def _alert_settings(alerts: list[Any]) -> dict[str, Any]:
    """The ``[alerts]`` keys that give these alert rules."""
    by = {d.name: d for d in alerts}
    out: dict[str, Any] = {}
    if "calls_per_session" in by:
        out["calls"] = by["calls_per_session"].threshold
    if "repeat_share" in by:
        out["repeat_window"] = by["repeat_share"].threshold
        out["repeat_share"] = by["repeat_share"].share
    if "overtime" in by:
        out["expected_seconds"] = by["overtime"].expected_seconds
        out["overtime_factor"] = by["overtime"].factor
    if "nothing_new" in by:
        out["stale_steps"] = by["nothing_new"].threshold
    out["warn_only"] = all(d.warn_only for d in alerts)
    return out


# -- reading ----------------------------------------------------------------------------------------------
class _Reader:
    """Turns the parsed tables into a :class:`ConfigFile`, with ``file:line`` in every error."""

    def __init__(self, path: Path, text: str, prefix: tuple[str, ...]) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.prefix = prefix

    def fail(self, keys: tuple[str, ...], reason: str) -> ConfigError:
        line = _locate(self.lines, (*self.prefix, *keys))
        where = f"{self.path}:{line}" if line else str(self.path)
        return ConfigError(where, f"{'.'.join(keys)}: {reason}" if keys else reason)

    def read(self, data: dict[str, Any]) -> ConfigFile:
        known = {
            "store",
            "report_tool",
            "escalation",
            "budgets",
            "detectors",
            "tools",
            "alerts",
            "metrics",
            *_GUARD_KEYS,
        }
        self.unknown(data, (), known)
        options: dict[str, Any] = {}
        for key, kind in _GUARD_KEYS.items():
            if key in data:
                options[key] = self.typed(data[key], (key,), kind)
        if "report_tool" in data:
            value = data["report_tool"]
            if value is False:
                options["report_tool"] = None
            elif isinstance(value, str) and value.strip():
                options["report_tool"] = value
            else:
                raise self.fail(("report_tool",), "a tool name, or false for none")
        store = data.get("store")
        if store is not None:
            store = self.store(store)
        escalation = self.escalation(self.table(data, "escalation"))
        budgets = self.budgets(self.table(data, "budgets"))
        detectors = self.detectors(self.table(data, "detectors"))
        tools = self.tools(self.table(data, "tools"))
        if "alerts" in data:
            detectors = (*detectors, *self.alerts(self.table(data, "alerts")))
        metrics = self.settings(self.table(data, "metrics"), "metrics", _METRICS_KEYS)
        observers = self.observers(metrics)
        try:
            guard = GuardConfig(
                detectors=detectors, budgets=budgets, escalation=escalation, tools=tools, observers=observers, **options
            )
        except (TypeError, ValueError) as exc:
            raise self.fail((), str(exc)) from None
        return ConfigFile(guard=guard, store=store, path=self.path, metrics=metrics)

    def store(self, url: Any) -> str:
        """A store URL checked as the commands that open it do (without connecting or creating a file), a
        relative SQLite path made absolute in the file's folder."""
        if not isinstance(url, str) or not url.strip():
            raise self.fail(("store",), "a store URL (sqlite:///path.db, redis://host:port/0, memory://)")
        from looptrap.stores import open_store

        try:
            open_store(url, create=False).close()
        except ImportError:  # the redis extra is missing: `config check` says so; other commands fail when they open it
            pass
        except (ValueError, TypeError) as exc:
            raise self.fail(("store",), str(exc)) from None
        return absolute_store(url, str(self.path.parent))

    def settings(self, data: dict[str, Any], table: str, keys: dict[str, type]) -> dict[str, Any]:
        """A table of plain settings, each of its type (numbers above 0, shares below 1)."""
        self.unknown(data, (table,), tuple(keys))
        out = {}
        for key, kind in keys.items():
            if key in data:
                where = (table, key)
                out[key] = self.typed(data[key], where, kind) if kind is bool else self.positive(data[key], where, kind)
        return out

    def alerts(self, data: dict[str, Any]) -> tuple[Any, ...]:
        from looptrap.observe.alerts import default_alerts

        got = self.settings(data, "alerts", _ALERT_KEYS)
        if not got.pop("enabled", True):
            return ()
        if not got.get("repeat_share", 0.5) < 1:
            raise self.fail(("alerts", "repeat_share"), f"a fraction between 0 and 1, got {got['repeat_share']}")
        return default_alerts(**got)

    def observers(self, metrics: dict[str, Any]) -> tuple[Any, ...]:
        """The process's shared metrics observers that ``[metrics]`` turns on."""
        out: list[Any] = []
        max_tools = metrics.get("max_tools", 50)
        for key, extra, module in (
            ("prometheus", "prometheus", "prometheus_client"),
            ("otel", "otel", "opentelemetry"),
        ):
            if not metrics.get(key):
                continue
            import importlib.util

            if importlib.util.find_spec(module) is None:
                raise self.fail(("metrics", key), f"needs the {extra} extra: pip install 'looptrap[{extra}]'")
            from looptrap.observe import shared

            out.append(shared.prometheus(max_tools) if key == "prometheus" else shared.otel(max_tools))
        return tuple(out)

    def table(self, data: dict[str, Any], key: str) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail((key,), f"a table ([{key}]), got {_kind(value)}")
        return value

    def unknown(self, data: Mapping[str, Any], keys: tuple[str, ...], known: set[str] | tuple[str, ...]) -> None:
        for key in data:
            if key not in known:
                hint = f" (known: {', '.join(sorted(known))})"
                raise self.fail((*keys, key), f"unknown key{hint}")

    def typed(self, value: Any, keys: tuple[str, ...], kind: type) -> Any:
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise self.fail(keys, "a finite number")
            return float(value)
        wanted = {bool: "true or false", int: "a whole number", float: "a number"}.get(kind, kind.__name__)
        raise self.fail(keys, f"{wanted}, got {_kind(value)}")

    def positive(self, value: Any, keys: tuple[str, ...], kind: type) -> Any:
        got = self.typed(value, keys, kind)
        if got <= 0:
            raise self.fail(keys, f"must be above 0, got {got}")
        return got

    def escalation(self, data: dict[str, Any]) -> Escalation:
        self.unknown(data, ("escalation",), ("ladder", "cooldown", "patience", "warn_only"))
        changes: dict[str, Any] = {}
        if "ladder" in data:
            ladder = data["ladder"]
            if not isinstance(ladder, list) or not ladder or any(a not in _ACTIONS for a in ladder):
                raise self.fail(("escalation", "ladder"), f"a non-empty list of {', '.join(_ACTIONS)}")
            changes["ladder"] = tuple(ladder)
        if "cooldown" in data:
            changes["cooldown"] = self.positive(data["cooldown"], ("escalation", "cooldown"), int)
        if "patience" in data:
            patience = self.typed(data["patience"], ("escalation", "patience"), int)
            if patience < 0:
                raise self.fail(("escalation", "patience"), f"must be 0 or more, got {patience}")
            changes["patience"] = patience
        if "warn_only" in data:
            changes["warn_only"] = self.typed(data["warn_only"], ("escalation", "warn_only"), bool)
        return Escalation(**changes)

    def budgets(self, data: dict[str, Any]) -> Budgets:
        self.unknown(data, ("budgets",), _BUDGET_KEYS)
        changes: dict[str, Any] = {}
        for key in ("max_turns", "max_tool_calls", "max_tokens"):
            if key in data:
                changes[key] = self.positive(data[key], ("budgets", key), int)
        for key in ("max_cost_usd", "max_seconds"):
            if key in data:
                changes[key] = self.positive(data[key], ("budgets", key), float)
        if "soft" in data:
            soft = self.typed(data["soft"], ("budgets", "soft"), float)
            if not 0 < soft < 1:
                raise self.fail(("budgets", "soft"), f"a fraction between 0 and 1, got {soft}")
            changes["soft"] = soft
        if "max_calls_per_tool" in data:
            value = data["max_calls_per_tool"]
            if isinstance(value, dict):
                changes["max_calls_per_tool"] = {
                    str(k): self.positive(v, ("budgets", "max_calls_per_tool", k), int) for k, v in value.items()
                }
            else:
                changes["max_calls_per_tool"] = self.positive(value, ("budgets", "max_calls_per_tool"), int)
        return Budgets(**changes)

    def detectors(self, data: dict[str, Any]) -> tuple[Any, ...]:
        defaults = {d.name: d for d in default_detectors()}
        tables = {k: v for k, v in data.items() if k != "enabled"}
        self.unknown(tables, ("detectors",), tuple(defaults))
        names = list(defaults)
        if "enabled" in data:
            enabled = data["enabled"]
            if not isinstance(enabled, list) or any(n not in defaults for n in enabled):
                raise self.fail(("detectors", "enabled"), f"a list of detector names: {', '.join(defaults)}")
            if len(set(enabled)) != len(enabled):
                raise self.fail(("detectors", "enabled"), "each detector may appear once")
            names = list(enabled)
        out = []
        for name in names:
            settings = tables.get(name, {})
            if not isinstance(settings, dict):
                raise self.fail(("detectors", name), f"a table ([detectors.{name}]), got {_kind(settings)}")
            detector = defaults[name]
            fields = {f.name: f for f in dataclasses.fields(detector) if f.init}  # type: ignore[arg-type]
            self.unknown(settings, ("detectors", name), (*fields, "enabled"))
            if settings.get("enabled") is False:
                continue
            if "enabled" in settings:
                self.typed(settings["enabled"], ("detectors", name, "enabled"), bool)
            changes = {}
            for key, value in settings.items():
                if key == "enabled":
                    continue
                kind = type(getattr(detector, key))
                keys = ("detectors", name, key)
                changes[key] = self.typed(value, keys, kind) if kind is bool else self.positive(value, keys, kind)
            out.append(dataclasses.replace(detector, **changes))  # type: ignore[type-var]
        return tuple(out)

    def tools(self, data: dict[str, Any]) -> dict[str, ToolPolicy]:
        policies = {}
        for pattern, settings in data.items():
            keys = ("tools", pattern)
            if not isinstance(settings, dict):
                raise self.fail(keys, f"a table ([tools.{_toml_key(pattern)}]), got {_kind(settings)}")
            self.unknown(settings, keys, _POLICY_KEYS)
            changes: dict[str, Any] = {}
            for key in ("exempt", "fold_whitespace", "fold_case"):
                if key in settings:
                    changes[key] = self.typed(settings[key], (*keys, key), bool)
            for key in ("mutating", "polling"):
                if key in settings:
                    changes[key] = self.typed(settings[key], (*keys, key), bool)
            for key in ("keys", "disable"):
                if key in settings:
                    value = settings[key]
                    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                        raise self.fail((*keys, key), "a list of strings")
                    changes[key] = tuple(value) if key == "keys" else frozenset(value)
            if "disable" in changes:
                unknown = sorted(changes["disable"] - {d.name for d in default_detectors()})
                if unknown:
                    raise self.fail((*keys, "disable"), f"unknown detector {unknown[0]!r}")
            if "limits" in settings:
                limits = settings["limits"]
                if not isinstance(limits, dict):
                    raise self.fail((*keys, "limits"), "a table of detector = threshold")
                self.unknown(limits, (*keys, "limits"), tuple(d.name for d in default_detectors()))
                changes["limits"] = {k: self.positive(v, (*keys, "limits", k), int) for k, v in limits.items()}
            policies[pattern] = ToolPolicy(**changes)
        return policies


# -- helpers ----------------------------------------------------------------------------------------------
_DEFAULT_POLICY = ToolPolicy()


def _plain(value: Any) -> Any:
    """A policy field as a TOML value (sets sorted, tuples as lists, mappings as dicts)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    return tomllib


def _has_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r"^\s*\[\s*tool\s*\.\s*looptrap\s*[\].]", text, re.MULTILINE) is not None


def _locate(lines: list[str], keys: tuple[str, ...]) -> int | None:
    """The 1-based line where a key is set (best effort: its table's header, then the key in it)."""
    if not keys:
        return None
    best: int | None = None
    table: tuple[str, ...] = ()
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        header = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?$", line)
        if header:
            table = tuple(_unquote(p) for p in _split_key(header.group(1)))
            if table == keys[: len(table)] and len(table) == len(keys):
                return n
            if table == keys[: len(table)] and best is None:
                best = n
            continue
        assign = re.match(r"^([^=]+?)\s*=", line)
        if assign:
            full = (*table, *(_unquote(p) for p in _split_key(assign.group(1))))
            if full == keys[: len(full)]:
                return n
    return best


def _split_key(text: str) -> list[str]:
    return [p for p in re.findall(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^.\s]+', text)]


def _unquote(part: str) -> str:
    if len(part) >= 2 and part[0] == part[-1] and part[0] in "\"'":
        return part[1:-1]
    return part


def _line_of_message(message: str) -> int | None:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else None


def _first_clause(exc: Exception) -> str:
    return re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)).strip()


def _kind(value: Any) -> str:
    return {
        bool: "true/false",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return _toml_value(str(value))
