"""deploy/: the Prometheus alerting rules (promtool check and unit tests) and the Grafana dashboard (loaded,
its panels in order, every query valid PromQL over metrics looptrap really exports)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import need
from looptrap import Guard
from looptrap.core.types import Signal, Verdict

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
RULES = DEPLOY / "prometheus" / "looptrap-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "looptrap-dashboard.json"
_FUNCS = {"max", "sum", "min", "rate", "increase", "histogram_quantile", "by", "le"}


def promtool() -> str:
    found = shutil.which("promtool")
    need("promtool (apt-get install prometheus)", found is not None)
    assert found is not None
    return found


def exported_names(tmp_path: Path) -> set[str]:
    """The metric names looptrap's collectors export, read from real registries."""
    need("prometheus-client", importlib.util.find_spec("prometheus_client") is not None)
    from prometheus_client import CollectorRegistry, generate_latest

    from looptrap.observe.metrics import PrometheusMetrics, StoreCollector
    from looptrap.stores import SQLiteStore

    reg = CollectorRegistry()
    m = PrometheusMetrics(reg)
    g = Guard(observers=[m])
    for _ in range(8):
        g.check("search", {"q": 1})
        g.end_turn()
    # every labelled family gets a sample: an alert riding on a halt, and a store error
    alert = Signal("alert", "calls_per_session", "many calls", tool="search", warn_only=True)
    m.on_verdict("s", "search", Verdict("halt", "budget", "max_tool_calls", signals=(alert,)), g.state)
    m.on_store_error("s", "down")
    with SQLiteStore(tmp_path / "s.db") as store:
        reg.register(StoreCollector(store))
        text = generate_latest(reg).decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def queries(dash: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dash["panels"] for t in p["targets"]]


def metric_names(expr: str) -> set[str]:
    return {w for w in re.findall(r"\b(looptrap_[a-z_]+)", expr)}


def test_rules_pass_promtool_check_and_unit_tests() -> None:
    tool = promtool()
    got = subprocess.run([tool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "SUCCESS: 6 rules found" in got.stdout
    tested = subprocess.run(
        [tool, "test", "rules", "looptrap-rules.test.yml"], capture_output=True, text=True, cwd=RULES.parent
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_rules_use_only_exported_metrics(tmp_path: Path) -> None:
    names = exported_names(tmp_path)
    used = metric_names(RULES.read_text())
    assert used
    assert used <= names, used - names


def test_dashboard_loads_with_the_panels_in_order(tmp_path: Path) -> None:
    dash = json.loads(DASHBOARD.read_text())
    titles = [p["title"] for p in dash["panels"]]
    assert titles[0] == "Tool calls per session (top sessions)"
    assert "looptrap_top_session_tool_calls" in dash["panels"][0]["targets"][0]["expr"]
    order = [
        next(i for i, t in enumerate(titles) if t.startswith(want))
        for want in ("Signals per kind", "Signals per tool", "Halts", "Store errors")
    ]
    assert order == sorted(order)
    ids = [p["id"] for p in dash["panels"]]
    assert len(set(ids)) == len(ids)
    cells: set[tuple[int, int]] = set()
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0
        assert g["x"] + g["w"] <= 24
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"panel {p['title']!r} overlaps another"
        cells |= mine
        assert p["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert p["targets"]
    assert dash["uid"]
    assert dash["schemaVersion"] >= 36
    names = exported_names(tmp_path)
    for expr in queries(dash):
        assert metric_names(expr) <= names, expr


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    tool = promtool()
    dash = json.loads(DASHBOARD.read_text())
    rules = {
        "groups": [
            {"name": "q", "rules": [{"record": f"looptrap:q{i}", "expr": e} for i, e in enumerate(queries(dash))]}
        ]
    }
    f = tmp_path / "queries.yml"
    f.write_text(json.dumps(rules))  # JSON is YAML
    got = subprocess.run([tool, "check", "rules", str(f)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr


@pytest.mark.parametrize("path", [RULES, RULES.with_name("looptrap-rules.test.yml")])
def test_rules_files_load_as_yaml(path: Path) -> None:
    need("PyYAML", importlib.util.find_spec("yaml") is not None)
    import yaml

    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    if path == RULES:
        rules = data["groups"][0]["rules"]
        assert all({"alert", "expr", "labels", "annotations"} <= set(r) for r in rules)
