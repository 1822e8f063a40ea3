"""docs/architecture.md lists every module of the three packages, and nothing else.

A module is listed by its path in backticks in the first column of a table row. An
`__init__.py` that holds only a docstring is the package's label, not a module to list.
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("instrument", "reader", "tfdbg_tui")


def _holds_code(path: pathlib.Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return any(
        not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body
    )


def modules_in_tree() -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name != "__init__.py" or _holds_code(path)
    }


def modules_in_doc() -> set[str]:
    listed = set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            listed.update(re.findall(r"`([\w/]+\.py)`", first_cell))
    return {path for path in listed if path.split("/")[0] in PACKAGES}


def test_the_doc_lists_every_module() -> None:
    missing = sorted(modules_in_tree() - modules_in_doc())
    assert not missing, f"modules docs/architecture.md does not list: {missing}"


def test_the_doc_lists_no_module_that_does_not_exist() -> None:
    gone = sorted(modules_in_doc() - modules_in_tree())
    assert not gone, f"docs/architecture.md lists modules that do not exist: {gone}"
