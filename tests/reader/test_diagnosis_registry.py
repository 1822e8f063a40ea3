"""The registry of diagnosis patterns: complete, ordered, one entry per pattern, and
the one source of the TUI's labels and of the docs' list.

Each pattern's behaviour is tested on real TensorFlow programs
(tests/reader/test_diagnosis_tf.py, test_harm_tf.py: `test_every_pattern_has_a_case`
holds the registry's `PATTERNS` against their cases); these tests hold the registry's
shape.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

from reader.analysis.diagnosis import diagnosis, op_patterns, registry, training_patterns
from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.analysis.diagnosis.rule import Rule
from tfdbg_tui.widgets.diagnosis_line import CLEAR_PATTERNS, diagnosis_text

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The families of rules, in the order the registry tries them.
FAMILIES = (training_patterns, op_patterns)


def test_the_registry_tries_every_family_s_rules_in_order():
    assert registry.RULES == tuple(rule for family in FAMILIES for rule in family.RULES)
    assert all(isinstance(rule, Rule) and rule.check is not None for rule in registry.RULES)
    assert all(rule.check is None for rule in registry.OUTCOMES)
    assert diagnosis.PATTERNS is registry.PATTERNS


def test_one_entry_per_pattern_with_a_label_and_a_fix():
    everything = (*registry.RULES, *registry.OUTCOMES)
    patterns = [rule.pattern for rule in everything]
    labels = [rule.label for rule in everything]
    assert len(set(patterns)) == len(patterns), "a pattern registered twice"
    assert len(set(labels)) == len(labels), "two patterns share a label"
    for rule in everything:
        assert re.fullmatch(r"[a-z0-9_]+", rule.pattern), rule.pattern
        assert rule.label.strip() == rule.label and rule.label, rule.pattern
        assert rule.fix.strip() and not rule.fix.endswith("."), rule.pattern
        assert registry.rule_of(rule.pattern) is rule
    assert registry.PATTERNS == (*patterns[: len(registry.RULES)], "unknown", "contained")
    with pytest.raises(KeyError):
        registry.rule_of("no_such_pattern")


def _rule_entries(path: pathlib.Path) -> list[int]:
    """Lines of the ``Rule(...)`` entries a module writes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Rule"
    ]


def test_rules_are_written_only_in_their_families_and_the_registry():
    """A rule written anywhere else would never be tried."""
    homes = {"op_patterns.py", "training_patterns.py", "registry.py"}
    elsewhere = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "reader").rglob("*.py"))
        if path.name not in homes
        for line in _rule_entries(path)
    ]
    assert not elsewhere, elsewhere
    for family in FAMILIES:
        assert family.__file__ is not None
        assert len(_rule_entries(pathlib.Path(family.__file__))) == len(family.RULES)


def test_every_label_of_the_tui_is_a_registered_rule_s():
    """The diagnosis line labels each pattern with its rule's label, and calls the
    contained ones and the verdicts clear."""
    for rule in (*registry.RULES, *registry.OUTCOMES):
        text = diagnosis_text(Diagnosis(rule.pattern, "Why.", rule.fix, ("evidence",)))
        assert text.plain.startswith(f" {rule.label}  Why.  Fix: "), rule.pattern
    assert set(CLEAR_PATTERNS) == {"contained", "healthy", "expected_loss_scaling"}


def pattern_tables(source: str, patterns: set[str]) -> list[int]:
    """Lines of the dict, tuple, list or set literals in ``source`` that hold two of
    ``patterns`` or more (as keys, for a dict)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        items: list[ast.expr | None] = []
        if isinstance(node, ast.Dict):
            items = list(node.keys)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = list(node.elts)
        named = {k.value for k in items if isinstance(k, ast.Constant) and k.value in patterns}
        if len(named) >= 2 and isinstance(node, ast.expr):
            found.append(node.lineno)
    return found


def test_pattern_tables_finds_a_label_table():
    source = 'LABELS = {"overflow": "overflow",\n "spike": "a spike"}\nX = ("spike", "y")\n'
    assert pattern_tables(source, {"overflow", "spike"}) == [1]


def test_no_table_of_patterns_outside_the_registry():
    """Labels, fixes and orders of patterns have one home, their rules: a table of
    them anywhere else in the packages would be a second one, kept in step by hand."""
    patterns = {rule.pattern for rule in (*registry.RULES, *registry.OUTCOMES)}
    tables = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in ("reader", "tfdbg_tui", "instrument")
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in pattern_tables(path.read_text(encoding="utf-8"), patterns)
    ]
    assert not tables, tables


def documented_patterns() -> list[tuple[str, str]]:
    """(pattern, label) of each row of docs/reader.md's table of patterns (the one
    marked ``<!-- patterns: ... -->``), in order."""
    text = (ROOT / "docs/reader.md").read_text(encoding="utf-8")
    marker = re.search(r"^<!-- patterns: .* -->$", text, flags=re.MULTILINE)
    assert marker is not None, "docs/reader.md has no table of patterns"
    table = text[marker.end() :].split("\n\n", 1)[0].split("\n| --- |", 1)[1]
    return re.findall(r"^\| `([a-z0-9_]+)` \| ([^|]+?) \|", table, flags=re.MULTILINE)


def test_the_docs_table_is_the_registry_in_order_with_its_labels():
    """docs/reader.md's table is the one list of patterns a reader of the docs sees
    (docs/keys.md points to it for the diagnosis line's labels)."""
    assert documented_patterns() == [
        (rule.pattern, rule.label) for rule in (*registry.RULES, *registry.OUTCOMES)
    ]
