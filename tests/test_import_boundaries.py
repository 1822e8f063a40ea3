"""The import boundaries of the architecture (DESIGN.md section 3).

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


@pytest.mark.parametrize("package", sorted(BLOCKED_AT_RUNTIME))
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
