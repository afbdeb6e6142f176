"""One configuration file for the hooks, the MCP proxy and the CLI: ``looptrap.toml``, or ``[tool.looptrap]`` in
``pyproject.toml``.

Found from the working directory upward (the first folder with a ``looptrap.toml``, or a ``pyproject.toml``
with a ``[tool.looptrap]`` table), or named by ``--config`` / ``$LOOPTRAP_CONFIG``. It sets the store, the
guard's options, the escalation ladder, the budgets, the detectors (which ones, their thresholds and
settings, warn-only) and the tool policies. Unknown keys and bad values are :class:`ConfigError`\\ s that
name the file and the line. See docs/configuration.md for every key.
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

from looptrap.core.policy import ToolPolicy
from looptrap.detectors import default_detectors
from looptrap.engine.config import GuardConfig
from looptrap.policies.budgets import Budgets
from looptrap.policies.escalation import Escalation

__all__ = ["ConfigError", "ConfigFile", "dump", "find", "load", "resolve"]

ENV = "LOOPTRAP_CONFIG"
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
    """A configuration file read: the guard configuration it gives, the store it names (``None``: the
    caller's default) and where it came from (``None``: no file, the defaults)."""

    guard: GuardConfig = field(default_factory=GuardConfig)
    store: str | None = None
    path: Path | None = None
    metrics: dict[str, Any] = field(default_factory=dict)  # the [metrics] table as read


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


def resolve(explicit: str | None = None, *, start: Path | None = None) -> ConfigFile:
    """The configuration in effect: the file named by ``explicit`` (``--config``), else by
    ``$LOOPTRAP_CONFIG``, else found from ``start`` upward; the defaults when there is none."""
    named = explicit or os.environ.get(ENV) or None
    if named:
        return load(Path(named).expanduser())
    path = find(start)
    return load(path) if path is not None else ConfigFile()


def load(path: Path) -> ConfigFile:
    """Read one configuration file; raises :class:`ConfigError` (with ``file:line``) when it is not usable."""
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
    return _Reader(path, text, prefix).read(data)


def dump(config: ConfigFile) -> str:
    """The effective configuration as a configuration file (TOML) that gives the same guard."""
    g = config.guard
    lines = [f"# effective configuration{f' (from {config.path})' if config.path else ' (defaults)'}"]
    if config.store is not None:
        lines.append(f"store = {_toml_value(config.store)}")
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
    return "\n".join(lines) + "\n"


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
        if store is not None and (not isinstance(store, str) or not store.strip()):
            raise self.fail(("store",), "a store URL (sqlite:///path.db, redis://host:port/0, memory://)")
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
        raise self.fail(keys, f"{'true or false' if kind is bool else f'a {kind.__name__}'}, got {_kind(value)}")

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
