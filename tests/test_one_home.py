""" "One home per fact" (docs/architecture.md), held where an `ast` scan can hold it.

- The runtime names of a tf.function call (``__inference_``, ``__forward_``,
  ``__backward_``) are spelled in `reader/format.py` alone; everything else asks
  `reader.format` (`is_function_call`, `is_backward_call`, `function_base_name`).
- Exit statuses are `tfdbg_tui/exit_codes.py`'s: no other module of `tfdbg_tui` names
  an ``EXIT_*`` status or exits with a number of its own.
- What a search pattern means is `reader.index.trace_search.compile_search`'s: the
  TUI compiles or matches only regular expressions written in its own source.

Where a private TensorFlow API may appear is `tests/test_tf_internals_home.py`'s; the
record keys', `tests/reader/test_record_contract.py`'s and the diagnosis patterns',
`tests/reader/test_diagnosis_registry.py`'s.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterator

from reader import format as fmt

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("instrument", "reader", "tfdbg_tui")


def _modules(*packages: str) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            yield path.relative_to(ROOT).as_posix(), ast.parse(text, filename=str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the string constants that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def function_prefix_spellings(tree: ast.Module) -> list[int]:
    """Lines of string constants (not docstrings) that start with a function prefix."""
    docstrings = _docstrings(tree)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith(fmt.FUNCTION_PREFIXES)
        and id(node) not in docstrings
    ]


def exit_statuses(tree: ast.Module) -> list[int]:
    """Lines that name an ``EXIT_*`` status or exit with a number."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.startswith("EXIT_") for t in targets):
                found.append(node.lineno)
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if (
                name in ("sys.exit", "exit", "SystemExit", "os._exit")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, int)
            ):
                found.append(node.lineno)
    return found


REGEX_CALLS = ("compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "split")


def regexes_not_written_here(tree: ast.Module) -> list[int]:
    """Lines of ``re`` calls whose pattern is not a string written in the source."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
            and node.func.attr in REGEX_CALLS
            and not (
                node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            )
        ):
            found.append(node.lineno)
    return found


def test_function_call_prefixes_are_spelled_in_reader_format_alone() -> None:
    found = [
        f"{path}:{line}"
        for path, tree in _modules(*PACKAGES)
        if path != "reader/format.py"
        for line in function_prefix_spellings(tree)
    ]
    assert not found, f"ask reader.format (is_function_call, ...) instead: {found}"
    (format_tree,) = [tree for path, tree in _modules("reader") if path == "reader/format.py"]
    assert function_prefix_spellings(format_tree)


def test_exit_statuses_live_in_exit_codes() -> None:
    found = [
        f"{path}:{line}"
        for path, tree in _modules("tfdbg_tui")
        if path != "tfdbg_tui/exit_codes.py"
        for line in exit_statuses(tree)
    ]
    assert not found, f"use tfdbg_tui.exit_codes: {found}"


def test_the_tui_compiles_no_pattern_of_the_user() -> None:
    found = [
        f"{path}:{line}"
        for path, tree in _modules("tfdbg_tui")
        for line in regexes_not_written_here(tree)
    ]
    assert not found, f"a search pattern goes through reader's compile_search: {found}"


def test_the_checks_find_what_they_look_for() -> None:
    tree = ast.parse(
        '"""A docstring about __inference_f_1."""\n'
        "import re, sys\n"
        "EXIT_MINE = 3\n"
        "def f(op_type, pattern):\n"
        '    """Docstring: __backward_."""\n'
        '    if op_type.startswith("__backward_"):\n'
        "        sys.exit(4)\n"
        '    re.compile("[a-z]+")\n'
        "    return re.search(pattern, op_type)\n"
    )
    assert function_prefix_spellings(tree) == [6]
    assert sorted(exit_statuses(tree)) == [3, 7]
    assert regexes_not_written_here(tree) == [9]
