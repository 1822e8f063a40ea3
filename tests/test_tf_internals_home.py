"""`instrument/tf_internals/` is the one home of TensorFlow's private APIs (its docstring
holds their table), checked by `ast` over `instrument/`, `reader/` and `tfdbg_tui/`:

- A private attribute (``x._name``, not a dunder; also ``getattr(x, "_name")``) is read
  or written only in `instrument/tf_internals/`, unless the project defines that name
  itself (its own classes' and modules' private names), it is ``sys._getframe``, or it
  is one of the few other libraries' private names listed below with their reason.
- A ``tensorflow.python`` module is imported outside `instrument/tf_internals/` only
  when it is one of `instrument.tf_internals.STOCK_MODULES` or a generated op wrapper
  (``gen_*_ops``): the modules behind TensorFlow's public API.

Not checked: TensorFlow's private function names read from stack frames (compared as
strings); they are constants of `tf_internals.graph_frames` by design.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterator

from instrument.tf_internals import STOCK_GENERATED_PREFIX, STOCK_MODULES

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("instrument", "reader", "tfdbg_tui")
HOME = ROOT / "instrument" / "tf_internals"

# Private names of other libraries than TensorFlow, where they are used and why.
OTHER_LIBRARIES = {
    ("reader/object_store.py", "_cat_file"): "fsspec's async file systems name their coroutines so",
    (
        "reader/object_store.py",
        "_cat_ranges",
    ): "fsspec's async file systems name their coroutines so",
    ("reader/object_store.py", "_strip_protocol"): "fsspec's path normaliser, a classmethod",
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _sources(skip_home: bool = True) -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if skip_home and HOME in path.parents:
                continue
            source = path.read_text(encoding="utf-8")
            yield path.relative_to(ROOT).as_posix(), ast.parse(source, filename=str(path))


def own_private_names(trees: list[ast.Module]) -> set[str]:
    """The private names the project defines: functions, classes, assigned names and
    attributes (``self._x = ...``)."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Name):
                            names.add(part.id)
                        elif isinstance(part, ast.Attribute):
                            names.add(part.attr)
    return {name for name in names if _is_private(name)}


def private_uses(tree: ast.Module) -> Iterator[tuple[int, str, str]]:
    """(line, name, code) of each private attribute ``tree`` reaches, by attribute or by
    ``getattr``/``hasattr``/``setattr``/``delattr`` with a constant name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            yield node.lineno, node.attr, ast.unparse(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_private(node.args[1].value)
        ):
            yield node.lineno, node.args[1].value, ast.unparse(node)


def foreign_private_uses(
    sources: list[tuple[str, ast.Module]], own: set[str]
) -> Iterator[tuple[str, int, str, str]]:
    for path, tree in sources:
        for line, name, code in private_uses(tree):
            if name in own or code == "sys._getframe":
                continue
            yield path, line, name, code


def tensorflow_python_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) of each ``tensorflow.python`` module ``tree`` imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tensorflow.python"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "tensorflow.python" or node.module.startswith("tensorflow.python."):
                for alias in node.names:
                    yield node.lineno, f"{node.module}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and node.args[0].value.startswith("tensorflow.python")
        ):
            yield node.lineno, node.args[0].value


def _is_stock(module: str) -> bool:
    return module in STOCK_MODULES or module.startswith(STOCK_GENERATED_PREFIX)


def test_private_attributes_only_in_tf_internals() -> None:
    sources = list(_sources())
    own = own_private_names([tree for _, tree in sources])
    found = [
        f"{path}:{line}: {code}"
        for path, line, name, code in foreign_private_uses(sources, own)
        if (path, name) not in OTHER_LIBRARIES
    ]
    assert not found, (
        "private attributes outside instrument/tf_internals/ (route a TensorFlow one "
        "through it and add it to its table; list another library's in OTHER_LIBRARIES):\n"
        + "\n".join(found)
    )


def test_every_listed_private_name_of_another_library_is_used() -> None:
    sources = list(_sources())
    own = own_private_names([tree for _, tree in sources])
    used = {(path, name) for path, _, name, _ in foreign_private_uses(sources, own)}
    assert set(OTHER_LIBRARIES) <= used, sorted(set(OTHER_LIBRARIES) - used)


def test_tensorflow_python_modules_only_in_tf_internals_or_stock() -> None:
    found = [
        f"{path}:{line}: {module}"
        for path, tree in _sources()
        for line, module in tensorflow_python_imports(tree)
        if not _is_stock(module)
    ]
    assert not found, (
        "tensorflow.python modules outside instrument/tf_internals/ that are not "
        "STOCK_MODULES (route them through it):\n" + "\n".join(found)
    )


def test_tf_internals_uses_what_it_is_the_home_of() -> None:
    """The home holds private TensorFlow names and non-stock modules (else the rules
    above would have nothing to protect)."""
    home = [tree for path, tree in _sources(skip_home=False) if path.startswith("instrument/tf_")]
    assert any(name == "_add_control_input" for tree in home for _, name, _ in private_uses(tree))
    assert any(
        not _is_stock(module) for tree in home for _, module in tensorflow_python_imports(tree)
    )


def test_the_checks_find_a_leak() -> None:
    tree = ast.parse(
        "import sys\n"
        "from tensorflow.python.framework import op_callbacks, ops\n"
        "from tensorflow.python.ops import gen_array_ops\n"
        "import tensorflow.python.eager.context\n"
        "def f(op, graph):\n"
        "    self._mine = 1\n"
        "    sys._getframe(1)\n"
        "    op._add_control_input(graph._nodes_by_id[1])\n"
        "    return getattr(op, '_is_stateful'), op.__class__, op._mine\n"
    )
    own = own_private_names([tree])
    assert own == {"_mine"}
    leaks = sorted(code for _, _, _, code in foreign_private_uses([("m.py", tree)], own))
    assert leaks == ["getattr(op, '_is_stateful')", "graph._nodes_by_id", "op._add_control_input"]
    modules = [m for _, m in tensorflow_python_imports(tree) if not _is_stock(m)]
    assert modules == [
        "tensorflow.python.framework.op_callbacks",
        "tensorflow.python.eager.context",
    ]
