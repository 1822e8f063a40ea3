"""The import boundaries of the architecture (docs/architecture.md).

- `reader` imports neither tensorflow nor textual/rich: it runs where TF is absent.
- `instrument` imports neither textual nor rich: it lives inside training jobs.
- `tfdbg_tui` never imports tensorflow: starting the TUI must not pay TF's import time.

Two checks per package: a scan of every import statement in its source (which also
sees imports inside functions), and a fresh interpreter that imports every module of
the package while the forbidden packages are made unimportable.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "reader": {"tensorflow", "keras", "textual", "rich"},
    "instrument": {"textual", "rich"},
    "tfdbg_tui": {"tensorflow", "keras"},
}
# Blocked at run time. TensorFlow itself imports Keras, which imports Rich, so the
# run-time check for `instrument` can only block Textual; the source scan covers Rich.
BLOCKED_AT_RUNTIME = {
    "reader": {"tensorflow", "keras", "textual", "rich"},
    "instrument": {"textual"},
    "tfdbg_tui": {"tensorflow", "keras"},
}


def _imported_top_level_names(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_source_has_no_forbidden_imports(package: str) -> None:
    offenders = []
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no sources found for {package}"
    for path in files:
        bad = _imported_top_level_names(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not offenders, "\n".join(offenders)


def _modules_of(package: str) -> list[str]:
    modules = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        if "examples" in parts:
            continue  # example programs are scripts that use TensorFlow directly
        modules.append(".".join(parts))
    return modules


@pytest.mark.parametrize("package", [
    # most modules of `instrument` import TensorFlow
    pytest.param(name, marks=pytest.mark.tf) if name == "instrument" else name
    for name in sorted(BLOCKED_AT_RUNTIME)])
def test_modules_import_with_forbidden_packages_blocked(package: str) -> None:
    blocked = sorted(BLOCKED_AT_RUNTIME[package])
    modules = _modules_of(package)
    program = textwrap.dedent(f"""
        import importlib, sys
        for name in {blocked!r}:
            sys.modules[name] = None  # makes `import name` raise ImportError
        for module in {modules!r}:
            importlib.import_module(module)
        print("imported", len({modules!r}))
    """)
    result = subprocess.run([sys.executable, "-c", program], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"imported {len(modules)}" in result.stdout


PACKAGES = ("instrument", "reader", "tfdbg_tui")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the three packages it imports.

    Every import statement counts, wherever it is: at module level, inside a function
    (which only delays a circle), and under ``if TYPE_CHECKING:`` (a circle for the type
    checker and for the reader of the code). ``from package import name`` names the
    submodule when ``name`` is one, else the package itself.
    """
    paths = {_module_name(p): p for package in PACKAGES
             for p in sorted((ROOT / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = module.split(".")
                    anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.add(submodule if submodule in paths else base)
        graph[module] = {t for t in targets if t in paths and t != module}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_find_cycles_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]


def test_import_graph_has_no_circles() -> None:
    graph = import_graph()
    assert {"reader.analysis.dump_reader", "tfdbg_tui.app", "instrument.api"} <= set(graph)
    cycles = find_cycles(graph)
    assert not cycles, "import circles:\n" + "\n".join(
        " <-> ".join(cycle) for cycle in cycles)
