"""The run, named: `Run` and `AnalysedRun` hold what the classes answer, the
definitions are a member of the run, and nothing above `reader.run` reads a run's
private attributes.

mypy checks that `IndexedRun` meets `Run` and `DumpReader` meets `AnalysedRun`
(`reader/run/indexed_run.py`, `reader/analysis/dump_reader.py`); these tests check the
other direction: that a query the classes answer is named in the protocol, so that a
new one cannot be used behind its back.
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np

import reader
from reader.analysis.analysed_run import AnalysedRun
from reader.analysis.dump_reader import DumpReader
from reader.run.definition_queries import DefinitionQueries
from reader.run.indexed_run import IndexedRun
from reader.run.run_protocol import Run
from tests.present import present
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Public members of `IndexedRun` that are not queries: the lifecycle, and what only
# `DumpReader`'s caches use (reader/run/run_protocol.py says why).
NOT_QUERIES = {"close", "query_lock", "state_key"}


def _public_members(cls: type) -> set[str]:
    return {
        name
        for klass in cls.__mro__
        if klass is not object
        for name in vars(klass)
        if not name.startswith("_")
    }


def _instance_attributes(path: pathlib.Path, class_name: str) -> set[str]:
    """The public attributes a class's ``__init__`` sets on ``self``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                    and not sub.attr.startswith("_")
                ):
                    found.add(sub.attr)
    return found


def _protocol_members(protocol: type) -> set[str]:
    return {
        name
        for klass in protocol.__mro__
        if klass.__name__ in ("Run", "AnalysedRun")
        for name in vars(klass)
        if not name.startswith("_")
    }


def test_run_names_every_query_of_indexed_run():
    answered = _public_members(IndexedRun) | _instance_attributes(
        ROOT / "reader/run/indexed_run.py", "IndexedRun"
    )
    assert {"path", "run_id", "op", "trace", "execution"} <= answered
    assert answered - NOT_QUERIES == _protocol_members(Run)


def test_analysed_run_names_every_analysis_of_dump_reader():
    added = _public_members(DumpReader) - _public_members(IndexedRun)
    assert {"alerts", "harm", "root_cause", "steps", "trends", "watch"} <= added
    assert _protocol_members(AnalysedRun) == _protocol_members(Run) | added


def test_the_protocols_are_the_reader_s_public_names():
    assert reader.Run is Run and reader.AnalysedRun is AnalysedRun
    assert {"Run", "AnalysedRun"} <= set(reader.__all__)


def test_definition_queries_are_a_member_of_the_run(logdir):
    """The definitions are asked through a member, not inherited."""
    assert DefinitionQueries not in DumpReader.__mro__
    run = make_run(logdir)
    add_step(run, [FINITE, NAN])
    run.writer.close()
    with reader.open_run(logdir) as dump:
        definitions = [v for v in vars(dump).values() if isinstance(v, DefinitionQueries)]
        assert len(definitions) == 1
        trace = dump.trace(dump.trace_alert_indices()[0])
        assert dump.op(present(trace.op_id)) == definitions[0].op(present(trace.op_id))
        assert (
            dump.graph(dump.op(present(trace.op_id)).graph_id).id
            == dump.op(present(trace.op_id)).graph_id
        )


def test_alert_rows_are_public_queries(logdir):
    """What `DumpReader`'s analyses read of the indexes, they read through the run."""
    run = make_run(logdir)
    add_step(run, [FINITE, NEG_INF, NAN])
    add_step(run, [NAN, FINITE, FINITE])
    run.writer.close()
    with reader.open_run(logdir) as dump:
        index, step, counts = dump.trace_alert_rows()
        assert index.tolist() == dump.trace_alert_indices().tolist() == [1, 2, 3]
        assert step.tolist() == dump.alert_positions()[1].tolist()
        assert counts.shape == (3, 3) and counts[0, 1] > 0 and counts[1, 0] > 0
        points = dump.trace_alert_points()
        assert [dump.trace_point(int(tp)) for tp in points] == [
            (dump.trace(int(i)).op_id, dump.trace(int(i)).slot) for i in index
        ]
        eager_index, eager_slot, eager_counts = dump.execution_alert_rows()
        assert eager_index.size == eager_slot.size == eager_counts.shape[0]
        assert dump.alerts().total == index.size + eager_index.size
        key = dump.state_key()
        assert dump.state_key() == key
        with dump.query_lock:  # re-entrant: the queries inside take it again
            assert np.array_equal(dump.trace_alert_indices(), index)


# -- no one above `reader.run` reads a run's private attributes ---------------------------

RUN_CLASSES = {
    "reader/run/indexed_run.py": "IndexedRun",
    "reader/run/definition_queries.py": "DefinitionQueries",
}
# Where the run is read: the analyses (`DumpReader` included, though it is a subclass)
# and the TUI.
READERS_OF_RUNS = ("reader/analysis", "tfdbg_tui")


def run_privates() -> set[str]:
    """The private names of the run's classes: their attributes and methods."""
    names = set()
    for path, class_name in RUN_CLASSES.items():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == class_name:
                for sub in ast.walk(node):
                    if isinstance(sub, ast.FunctionDef):
                        names.add(sub.name)
                    elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                        names.add(sub.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_reads(source: str, privates: set[str]) -> list[str]:
    """Each read of one of ``privates`` in ``source``, as ``line: expression``, but a
    class's reads of its own attributes (``self._x`` where the class sets ``self._x``
    or defines ``_x``): another object's, or a base class's, are reported."""
    tree = ast.parse(source)
    own: dict[ast.AST, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            defined = set()
            for sub in ast.walk(node):
                if isinstance(sub, ast.FunctionDef):
                    defined.add(sub.name)
                elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                    defined.add(sub.attr)
            for sub in ast.walk(node):
                own.setdefault(sub, set()).update(defined)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in privates:
            continue
        is_self = isinstance(node.value, ast.Name) and node.value.id == "self"
        if is_self and node.attr in own.get(node, set()):
            continue
        found.append((node.lineno, f"{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def test_private_reads_finds_a_base_class_private_and_another_object_s():
    source = (
        "class DumpReader(IndexedRun):\n"
        "    def __init__(self):\n"
        "        self._cache = None\n"
        "    def harm(self):\n"
        "        return self._traces.alert_rows(), self._cache\n"
        "def alerts(run):\n"
        "    return run._execs\n"
    )
    assert private_reads(source, {"_traces", "_execs", "_cache"}) == [
        "5: self._traces",
        "7: run._execs",
    ]


def test_nothing_above_the_run_reads_its_privates():
    privates = run_privates()
    assert {"_traces", "_execs", "_defs", "_lock", "_loader", "_exec_row"} <= privates
    offenders = []
    for folder in READERS_OF_RUNS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for read in private_reads(path.read_text(encoding="utf-8"), privates):
                offenders.append(f"{path.relative_to(ROOT)}:{read}")
    assert not offenders, "reads of a run's private attributes:\n" + "\n".join(offenders)
