"""docs/architecture.md's generated parts, made from the code: the module tables and the
list of modules over 500 lines.

Each generated part sits between two markers in the file::

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

where NAME is ``modules PACKAGE`` (a table of every module of that package, each with
the first paragraph of its docstring) or ``over 500 lines`` (the modules longer than
that). Everything outside the markers is hand-written and kept as it is.

    python -m tests.architecture_map            # exit 1 if the file is stale
    python -m tests.architecture_map --write    # rewrite the generated parts

`tests/test_architecture_map.py` fails when the file is stale, naming the command.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
import sys
from collections.abc import Callable, Iterable

from tests.test_import_boundaries import ANALYSIS_FLOORS, READER_LAYERS, TUI_FLOORS

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("reader", "instrument", "tfdbg_tui")
WRITE_COMMAND = "python -m tests.architecture_map --write"
# Modules are kept near this many lines (docs/architecture.md): longer ones are listed.
SIZE_LIMIT = 500

BEGIN = re.compile(r"^<!-- generated: (?P<name>[\w ]+) -->$")
END = "<!-- end generated -->"


class MapError(Exception):
    """The doc or a module cannot be mapped (a marker missing, a docstring absent)."""


def python_files(package: str, root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    return sorted((root / package).rglob("*.py"))


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def summary_of(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """The first paragraph of a module's docstring, on one line, as Markdown."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring or not docstring.strip():
        raise MapError(f"{path.relative_to(root).as_posix()} has no docstring to map")
    first = " ".join(docstring.strip().split("\n\n")[0].split())
    return first.replace("``", "`").replace("|", "\\|")


# Where a module stands in its package's table: its floor, bottom to top (the layer
# contracts of tests/test_import_boundaries.py), then its folder.
def _floor(module: str, floors: Iterable[Iterable[str]]) -> int:
    for rank, units in enumerate(floors, 1):
        if any(module == unit or module.startswith(unit + ".") for unit in units):
            return rank
    return 0


FLOORS: dict[str, Callable[[str], tuple[int, ...]]] = {
    "reader": lambda m: (
        len(READER_LAYERS) + 1
        if m == "reader"
        else _floor(m, ((layer,) for layer in READER_LAYERS)),
        _floor(m, ANALYSIS_FLOORS),
    ),
    "tfdbg_tui": lambda m: (0 if m == "tfdbg_tui" else _floor(m, TUI_FLOORS),),
    "instrument": lambda m: (),
}


def _place(package: str, path: pathlib.Path, root: pathlib.Path) -> tuple[object, ...]:
    module = module_name(path, root)
    folder = path.parent.relative_to(root).as_posix()
    is_package_top = module == package
    return (
        not is_package_top,
        FLOORS[package](module),
        folder,
        path.name != "__init__.py",
        path.name,
    )


def module_table(package: str, root: pathlib.Path = ROOT) -> list[str]:
    paths = sorted(python_files(package, root), key=lambda p: _place(package, p, root))
    rows = ["| module | what it is |", "| --- | --- |"]
    for path in paths:
        rows.append(f"| `{path.relative_to(root).as_posix()}` | {summary_of(path, root)} |")
    return rows


def long_modules(root: pathlib.Path = ROOT) -> list[str]:
    found = []
    for package in PACKAGES:
        for path in python_files(package, root):
            with path.open(encoding="utf-8") as lines:
                if sum(1 for _ in lines) > SIZE_LIMIT:
                    found.append(path.relative_to(root).as_posix())
    if not found:
        return [f"None: every module is at most {SIZE_LIMIT} lines."]
    return [f"- `{path}`" for path in sorted(found)]


def generated(name: str, root: pathlib.Path = ROOT) -> list[str]:
    """The lines of the generated part called ``name``."""
    if name.startswith("modules ") and name.split(" ", 1)[1] in PACKAGES:
        return module_table(name.split(" ", 1)[1], root)
    if name == f"over {SIZE_LIMIT} lines":
        return long_modules(root)
    raise MapError(f"docs/architecture.md: unknown generated part {name!r}")


def regenerate(text: str, root: pathlib.Path = ROOT) -> str:
    """``text`` with every generated part made anew from the code under ``root``."""
    out: list[str] = []
    lines = text.split("\n")
    at = 0
    names = []
    while at < len(lines):
        line = lines[at]
        out.append(line)
        at += 1
        begin = BEGIN.match(line)
        if not begin:
            continue
        name = begin["name"]
        names.append(name)
        try:
            at = lines.index(END, at)
        except ValueError:
            raise MapError(f"docs/architecture.md: {line} has no {END}") from None
        out += ["", *generated(name, root), ""]
    missing = [f"modules {p}" for p in PACKAGES if f"modules {p}" not in names]
    if missing:
        raise MapError(f"docs/architecture.md: no generated part for {', '.join(missing)}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.architecture_map", description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the generated parts")
    args = parser.parse_args(argv)
    try:
        text = DOC.read_text(encoding="utf-8")
        fresh = regenerate(text)
    except (MapError, OSError, SyntaxError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if fresh == text:
        return 0
    if args.write:
        DOC.write_text(fresh, encoding="utf-8")
        print("docs/architecture.md: generated parts rewritten")
        return 0
    print(f"docs/architecture.md is stale: run `{WRITE_COMMAND}`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
