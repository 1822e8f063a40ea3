"""docs/architecture.md's module tables and size list are the code's (tests/architecture_map.py).

The file's generated parts must be what the generator makes of the tree now: every
module listed with the first paragraph of its docstring, no module listed that does not
exist, the modules over 500 lines named. When this fails, run
``python -m tests.architecture_map --write`` and commit the file.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from tests import architecture_map
from tests.architecture_map import DOC, ROOT, WRITE_COMMAND, MapError, regenerate


def test_the_map_is_generated_from_the_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert regenerate(text) == text, f"docs/architecture.md is stale: run `{WRITE_COMMAND}`"


def test_every_module_has_a_row() -> None:
    text = DOC.read_text(encoding="utf-8")
    for package in architecture_map.PACKAGES:
        for path in architecture_map.python_files(package):
            assert f"| `{path.relative_to(ROOT).as_posix()}` |" in text


def _tree(tmp_path: pathlib.Path, modules: dict[str, str]) -> pathlib.Path:
    for name, source in modules.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return tmp_path


DOC_TEMPLATE = "\n".join(
    ["# Map", "", "prose kept", ""]
    + [
        f"<!-- generated: modules {p} -->\nold row\n<!-- end generated -->"
        for p in ("reader", "instrument", "tfdbg_tui")
    ]
    + ["", "<!-- generated: over 500 lines -->", "<!-- end generated -->", "", "more prose", ""]
)


def test_a_new_module_a_changed_docstring_and_a_long_module_change_the_map(
    tmp_path: pathlib.Path,
) -> None:
    root = _tree(
        tmp_path,
        {
            "reader/__init__.py": '"""The reader.\n\nMore text."""\n',
            "reader/index/columns.py": '"""Growable ``columns`` | pipes.\n    On two lines."""\n',
            "instrument/__init__.py": '"""The writer."""\n',
            "tfdbg_tui/__init__.py": '"""The app."""\n',
        },
    )
    first = regenerate(DOC_TEMPLATE, root)
    assert "prose kept" in first and "more prose" in first and "old row" not in first
    assert "| `reader/__init__.py` | The reader. |" in first
    assert "| `reader/index/columns.py` | Growable `columns` \\| pipes. On two lines. |" in first
    assert "None: every module is at most 500 lines." in first
    assert regenerate(first, root) == first

    (root / "reader" / "index" / "columns.py").write_text(
        '"""Columns, renamed."""\n' + "x = 1\n" * 500
    )
    (root / "tfdbg_tui" / "app.py").write_text('"""A new module."""\n')
    second = regenerate(first, root)
    assert "| `reader/index/columns.py` | Columns, renamed. |" in second
    assert "| `tfdbg_tui/app.py` | A new module. |" in second
    assert "- `reader/index/columns.py`" in second

    (root / "tfdbg_tui" / "app.py").unlink()
    assert "tfdbg_tui/app.py" not in regenerate(second, root)


def test_a_module_without_a_docstring_is_refused(tmp_path: pathlib.Path) -> None:
    root = _tree(
        tmp_path,
        {
            "reader/x.py": "x = 1\n",
            "instrument/__init__.py": '"""W."""\n',
            "tfdbg_tui/a.py": '"""A."""\n',
        },
    )
    with pytest.raises(MapError, match="reader/x.py has no docstring"):
        regenerate(DOC_TEMPLATE, root)


def test_a_doc_without_its_markers_is_refused(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path, {"reader/x.py": '"""X."""\n'})
    with pytest.raises(MapError, match="no generated part for modules instrument"):
        regenerate("<!-- generated: modules reader -->\n<!-- end generated -->\n", root)
    with pytest.raises(MapError, match="has no <!-- end generated -->"):
        regenerate("<!-- generated: modules reader -->\nrow\n", root)
    with pytest.raises(MapError, match="unknown generated part 'modules tests'"):
        regenerate("<!-- generated: modules tests -->\n<!-- end generated -->\n", root)


def test_the_command_checks_the_file() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.architecture_map"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_a_stale_file_is_named_and_rewritten(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = DOC.read_text(encoding="utf-8").replace(
        "\n| `reader/format.py` |", "\n| `reader/gone.py` |"
    )
    doc = tmp_path / "architecture.md"
    doc.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(architecture_map, "DOC", doc)
    assert architecture_map.main([]) == 1
    assert WRITE_COMMAND in capsys.readouterr().err
    assert architecture_map.main(["--write"]) == 0
    assert doc.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    assert architecture_map.main([]) == 0
