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
import functools
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
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
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


@pytest.mark.parametrize(
    "package",
    [
        # most modules of `instrument` import TensorFlow
        pytest.param(name, marks=pytest.mark.tf) if name == "instrument" else name
        for name in sorted(BLOCKED_AT_RUNTIME)
    ],
)
def test_modules_import_with_forbidden_packages_blocked(package: str) -> None:
    import_with_blocked(_modules_of(package), sorted(BLOCKED_AT_RUNTIME[package]))


def import_with_blocked(modules: list[str], blocked: list[str]) -> None:
    """Import ``modules`` in a fresh interpreter in which ``blocked`` cannot be imported."""
    program = textwrap.dedent(f"""
        import importlib, sys
        for name in {blocked!r}:
            sys.modules[name] = None  # makes `import name` raise ImportError
        for module in {modules!r}:
            importlib.import_module(module)
        print("imported", len({modules!r}))
    """)
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"imported {len(modules)}" in result.stdout


PACKAGES = ("instrument", "reader", "tfdbg_tui")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the three packages it imports (parsed once per test
    process: the tree does not change under the tests).

    Every import statement counts, wherever it is: at module level, inside a function
    (which only delays a circle), and under ``if TYPE_CHECKING:`` (a circle for the type
    checker and for the reader of the code). ``from package import name`` names the
    submodule when ``name`` is one, else the package itself.
    """
    paths = {
        _module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
    }
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
                    anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
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
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


# -- layer contracts (docs/architecture.md) ----------------------------------------------

# `reader`'s sub-packages, bottom to top, over its shared base (its top-level modules:
# format, errors, model, values, records, summary_rows, notices). `reader/__init__.py`
# is the facade above them all.
READER_LAYERS = ("reader.index", "reader.loading", "reader.run", "reader.analysis")


def _reader_rank(module: str) -> int:
    if module == "reader":
        return len(READER_LAYERS) + 1
    for rank, layer in enumerate(READER_LAYERS, 1):
        if module == layer or module.startswith(layer + "."):
            return rank
    return 0  # the shared base


def _imports_from(prefix: str, graph: dict[str, set[str]], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module == prefix or module.startswith(prefix + ".")
        for target in targets
        if any(target == f or target.startswith(f + ".") for f in forbidden)
    )


def test_reader_layers_import_only_downward() -> None:
    graph = import_graph()
    assert set(READER_LAYERS) <= set(graph)
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("reader")
        for target in targets
        if target.startswith("reader") and _reader_rank(target) > _reader_rank(module)
    )
    assert not upward, "\n".join(upward)


# `reader.analysis` by question, bottom to top: the hunt, the trends over it, `DumpReader`
# (the run with its cached analyses, which calls both) beside `AnalysedRun` (the
# protocol it meets), then what asks an `AnalysedRun`:
# the diagnosis and the comparison of two runs side by side, and the jobs of several
# workers. Units on one floor may import each other (no circle: tested above).
ANALYSIS_FLOORS = (
    ("reader.analysis.hunt",),
    ("reader.analysis.trends",),
    ("reader.analysis.analysed_run", "reader.analysis.dump_reader"),
    ("reader.analysis.diagnosis", "reader.analysis.compare"),
    ("reader.analysis.jobs",),
)


def _floor_of(module: str, floors: tuple[tuple[str, ...], ...]) -> int | None:
    for rank, units in enumerate(floors):
        if any(module == unit or module.startswith(unit + ".") for unit in units):
            return rank
    return None


def upward_imports(graph: dict[str, set[str]], floors: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import of a module on one of ``floors`` from a module on a lower one."""
    found = []
    for module, targets in graph.items():
        rank = _floor_of(module, floors)
        if rank is None:
            continue
        for target in sorted(targets):
            target_rank = _floor_of(target, floors)
            if target_rank is not None and target_rank > rank:
                found.append(f"{module} imports {target}")
    return sorted(found)


def _unplaced(package: str, floors: tuple[tuple[str, ...], ...]) -> list[str]:
    """The modules under ``package`` (itself excluded) on none of ``floors``."""
    return sorted(
        module
        for module in import_graph()
        if module.startswith(package + ".") and _floor_of(module, floors) is None
    )


def test_upward_imports_finds_an_import_from_below() -> None:
    graph = {
        "p.low.a": {"p.high.b"},
        "p.high.b": {"p.low.c"},
        "p.low.c": set(),
        "p.side.d": {"p.low.a"},
        "p.low.e": {"p.side.d"},
    }
    floors = (("p.low",), ("p.high", "p.side"))
    assert upward_imports(graph, floors) == ["p.low.a imports p.high.b", "p.low.e imports p.side.d"]


def test_reader_analysis_floors_import_only_downward() -> None:
    assert not _unplaced("reader.analysis", ANALYSIS_FLOORS), (
        "place these modules on a floor of ANALYSIS_FLOORS"
    )
    upward = upward_imports(import_graph(), ANALYSIS_FLOORS)
    assert not upward, "\n".join(upward)


def test_reader_analysis_never_imports_loading() -> None:
    """The analyses read a run through `reader.run`, never the loaders behind it."""
    assert not _imports_from("reader.analysis", import_graph(), ("reader.loading",))


# `tfdbg_tui`'s floors, bottom to top. The modules at the package's top that hold no
# widget stand on the models' floor: the base message of a failed read, the exit
# statuses and the two watcher threads; `cli` dispatches to the commands.
TUI_FLOORS = (
    ("tfdbg_tui.text",),
    (
        "tfdbg_tui.models",
        "tfdbg_tui.messages",
        "tfdbg_tui.exit_codes",
        "tfdbg_tui.dump_watcher",
        "tfdbg_tui.logdir_watcher",
    ),
    ("tfdbg_tui.widgets",),
    ("tfdbg_tui.dialogs",),
    ("tfdbg_tui.panes",),
    ("tfdbg_tui.screens",),
    ("tfdbg_tui.app",),
    ("tfdbg_tui.commands", "tfdbg_tui.cli"),
)


def test_tui_floors_import_only_downward() -> None:
    """text < models < widgets < dialogs < panes < screens < app < commands: a pane
    opens a dialog, never a screen; `models` never imports a widget."""
    assert not _unplaced("tfdbg_tui", TUI_FLOORS), "place these modules on a floor of TUI_FLOORS"
    upward = upward_imports(import_graph(), TUI_FLOORS)
    assert not upward, "\n".join(upward)


def test_the_record_contract_imports_nothing_else_of_the_project() -> None:
    """`reader.contract` is what the writer and every reader stand on (docs/format.md's
    keys): it imports nothing of the project outside itself, and nothing but the
    standard library."""
    graph = import_graph()
    contract = sorted(
        m for m in graph if m == "reader.contract" or m.startswith("reader.contract.")
    )
    assert len(contract) >= 4
    outside = sorted(
        f"{module} imports {target}"
        for module in contract
        for target in graph[module]
        if not (target == "reader.contract" or target.startswith("reader.contract."))
    )
    assert not outside, "\n".join(outside)
    third_party = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "reader" / "contract").rglob("*.py"))
        for name in _imported_top_level_names(path)
        if name not in sys.stdlib_module_names and name not in ("__future__", "reader")
    )
    assert not third_party, "\n".join(third_party)
    import_with_blocked(contract, ["numpy", "msgpack", "instrument", "tfdbg_tui"])


def test_instrument_dump_never_imports_tensorflow() -> None:
    """The writer core runs (and is tested) without TensorFlow: no import of it, nor of
    the parts of `instrument` that import it."""
    sources = sorted((ROOT / "instrument" / "dump").rglob("*.py"))
    assert len(sources) > 5
    offenders = [
        f"{path.relative_to(ROOT)} imports {sorted(bad)}"
        for path in sources
        if (bad := _imported_top_level_names(path) & {"tensorflow", "keras"})
    ]
    offenders += _imports_from(
        "instrument.dump",
        import_graph(),
        ("instrument.tracing", "instrument.summaries", "instrument.tf_internals", "instrument.api"),
    )
    assert not offenders, "\n".join(offenders)
    import_with_blocked(
        [m for m in _modules_of("instrument") if m.startswith("instrument.dump")],
        ["tensorflow", "keras"],
    )


def test_report_json_never_imports_rich(tmp_path: pathlib.Path) -> None:
    """`tfdbg-tui report --json` prints JSON for scripts: it never pays for Rich."""
    program = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from tests.synthetic import write_nan_dump
        write_nan_dump({str(tmp_path / "logdir")!r})
        assert "rich" not in sys.modules
        from tfdbg_tui.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(["report", "--json", {str(tmp_path / "logdir")!r}])
        assert json.loads(out.getvalue())["first_alert"]["source"], out.getvalue()[:500]
        print(status, sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "textual")))
    """)
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["0", "[]"], result.stdout


def test_a_command_line_the_app_refuses_never_imports_numpy(tmp_path: pathlib.Path) -> None:
    """`tfdbg-tui --version`, a bad option and a logdir that does not exist answer in
    one line without loading numpy, the indexes or Textual (the errors alone)."""
    program = textwrap.dedent(f"""
        import contextlib, io, sys
        from tfdbg_tui.cli import main
        statuses = []
        for argv in (["--version"], ["--no-such-option"], [{str(tmp_path / "nope")!r}]):
            with contextlib.redirect_stdout(io.StringIO()), \\
                    contextlib.redirect_stderr(io.StringIO()):
                try:
                    statuses.append(main(argv))
                except SystemExit as exit:
                    statuses.append(exit.code)
        print(*statuses, sorted({{m.split(".")[0] for m in sys.modules}}
                                & {{"numpy", "textual", "rich", "msgpack"}}))
    """)
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["0", "2", "3", "['msgpack']"], result.stdout
