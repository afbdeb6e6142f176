"""The layering of docs/architecture.md holds: each layer imports only the layers below it, and no modules of
the package import each other in a circle (lazy and type-checking imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "looptrap"

#: What each layer may import (besides itself and the package root, whose names load lazily); the layers
#: above them (cli, integrations, analysis, ...) may import any of these.
ALLOWED = {
    "core": set(),
    "reading": {"core"},
    "stores": {"core"},
    "policies": {"core", "reading"},
    "detectors": {"core", "reading"},
    "engine": {"core", "reading", "policies", "detectors"},
    "observe": {"core", "reading", "policies", "detectors", "engine", "stores"},
    "drivers": {"core", "reading", "policies", "detectors", "engine", "observe", "stores"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every looptrap module a file imports, at the top, inside functions or under TYPE_CHECKING."""
    out = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("looptrap")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if base.startswith("looptrap"):
                out.add(base)
                out |= {f"{base}.{a.name}" for a in node.names}  # `from looptrap.reading import outcome`
    return out


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_each_layer_imports_only_the_layers_below_it() -> None:
    wrong = []
    for name, path in sorted(MODULES.items()):
        own = layer(name)
        if own not in ALLOWED:
            continue
        for target in sorted(imports(path)):
            other = layer(target)
            if target in MODULES and target != "looptrap" and other != own and other not in ALLOWED[own]:
                wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = {name: {t for t in imports(path) if t in MODULES and t != name} for name, path in MODULES.items()}
    # a package's __init__ that only hands its modules' names on is no circle with them
    for name in graph:
        if MODULES[name].name != "__init__.py":
            graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    for name in graph:
        graph[name] = {t for t in graph[name] if not (MODULES[t].name == "__init__.py" and name.startswith(t + "."))}
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    circles = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if seen.get(nxt) == 1:
                circles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[node] = 2

    for name in sorted(graph):
        if name not in seen:
            visit(name, [name])
    assert not circles, "\n".join(circles)


def test_the_layers_are_the_folders_of_the_package() -> None:
    folders = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(ALLOWED) <= folders
