"""Collectives under the dumper: a MirroredStrategy job over two logical CPUs must never
hang, in any mode, and must still name the op and line that made its first NaN.

One device's part of a collective waits for its peers on the other devices; an order
the dumper adds between the devices' ops (a captured queue that makes TensorFlow run
every op using it in creation order, or one chain of enqueues around the nested ops)
made an Embedding's gradient gather inside Adam's ``cond`` wait forever.
"""

from __future__ import annotations

import pytest

from reader import format as fmt
from tests.instrument.conftest import ALL_MODES, opened_runs, run_program
from tests.prefetch import made, prefetchable
from tests.program_runs import PROGRAMS, line_of

COLLECTIVES = PROGRAMS / "collectives.py"


@pytest.fixture(scope="module")
def collectives(request):
    """collectives.py run once in every mode: {mode: DumpReader, "stdout": ...}.

    A hang fails here, at the program's timeout, with its output so far."""
    logdir, stdout = made(request, "collectives")
    with opened_runs(logdir, ALL_MODES, stdout) as dumps:
        yield dumps


@prefetchable("collectives")
def _run_collectives(root):
    return root, run_program([str(COLLECTIVES), str(root), *ALL_MODES])


def graph_ops(dump):
    return [op for graph in dump.graphs() for op in dump.graph_ops(graph.id)]


def test_every_part_finishes_in_every_mode(collectives):
    lines = [
        line
        for line in collectives["stdout"].splitlines()
        if line.startswith(("EMBEDDING_LOOP", "REDUCE_AND_GATHER"))
    ]
    assert lines == ["EMBEDDING_LOOP True", "REDUCE_AND_GATHER [-inf, -inf]"] * len(ALL_MODES)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_the_collectives_ran_instrumented_on_both_replicas(collectives, mode):
    dump = collectives[mode]
    types = {op.op_type for op in graph_ops(dump)}
    # The Embedding's sparse gradient is gathered, the dense ones all-reduced.
    assert {"CollectiveGatherV2", "CollectiveReduceV2"} <= types
    traced = {dump.op(trace.op_id).name for trace in dump.traces(0, dump.num_traces)}
    assert {"Log", "replica_1/Log"} <= traced


@pytest.mark.parametrize("mode", [m for m in ALL_MODES if m in fmt.ALERT_MODES])
def test_the_root_cause_is_the_log_on_replica_0(collectives, mode):
    cause = collectives[mode].root_cause()
    assert cause is not None
    assert (cause.alert.kind, cause.alert.op_type, cause.alert.op_name) == ("graph", "Log", "Log")
    assert (cause.frame.path, cause.frame.line) == (
        str(COLLECTIVES),
        line_of(COLLECTIVES, "# LOG_LINE"),
    )
