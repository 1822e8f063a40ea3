"""The trace queue's blocks: batches and single traces drained in order, padding dropped."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from instrument.tracing import trace_queue, value_drain  # noqa: E402
from reader import format as fmt  # noqa: E402
from tests.present import present  # noqa: E402


@pytest.mark.parametrize("mode", [fmt.NO_TENSOR, fmt.CURT_HEALTH])
@pytest.mark.parametrize("budget", [1 << 16, 10, 1])
def test_blocks_of_every_size_drain_in_order(monkeypatch, mode, budget):
    """A graph enqueues a one-row block, a five-row batch and another one-row block; three
    calls, drained at once. However few blocks a dequeue may take (the row budget over
    the largest block: all, two or one), every trace arrives once, in enqueue order,
    with its call's ordinal, and padding rows never reach the sink."""
    monkeypatch.setattr(trace_queue, "DRAIN_ROW_BUDGET", budget)
    received: list[tuple[list[int], list[list[float]] | None, list[int]]] = []

    def sink(trace_points, rows, values, ordinals, alert):
        received.append(
            (trace_points.tolist(), None if rows is None else rows.tolist(), ordinals.tolist())
        )

    queue = trace_queue.TraceQueue(mode, sink)

    @tf.function(autograph=False)  # the queue's own code is not the user's
    def f(x):
        y = x * 2.0
        queue.add_trace(y, 10)
        queue.enqueue_batch(
            [
                queue.batch_row(t, tp)
                for t, tp in ((x, 0), (y, 1), (y + 1.0, 2), (y * y, 3), (tf.math.log(x), 4))
            ],
            None,
        )
        queue.add_trace(x, 11)
        return y

    for value in (1.0, 2.0, -1.0):  # the third call's Log is NaN
        f(tf.constant([value, 3.0]))
        queue.call_finished()
    assert queue.drain() == 21
    blocks_per_dequeue = max(1, budget // 5)
    assert len(received) == -(-9 // blocks_per_dequeue)
    trace_points = [tp for tps, _, _ in received for tp in tps]
    ordinals = [o for _, _, ords in received for o in ords]
    assert trace_points == [10, 0, 1, 2, 3, 4, 11] * 3
    assert ordinals == [0] * 7 + [1] * 7 + [2] * 7
    if mode == fmt.CURT_HEALTH:
        rows = [row[0] for _, block, _ in received for row in present(block)]
        assert rows == [0.0] * 14 + [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert queue.drain() == 0


def test_full_tensor_values_are_compressed_only_while_the_drain_keeps_up(monkeypatch):
    """A core is spare throughout; still a batch is compressed only when the drain found
    the queue empty at its previous poll and a single batch now. A drain that is
    behind (its first poll, or two batches waiting) stores raw: compressing would make
    the graph wait for it longer still."""
    monkeypatch.setattr(value_drain.COMPRESSION, "core_is_spare", lambda: True)
    drained: list[list[str | None]] = []

    def sink(trace_points, rows, values, ordinals, alert):
        drained.append([value.get("codec") for value in values])

    queue = trace_queue.TraceQueue(fmt.FULL_TENSOR, sink)

    @tf.function(autograph=False)
    def f(x):
        y = x * 2.0  # zeros: every byte plane compresses
        queue.enqueue_batch([queue.batch_row(y, 0)], None)
        return y

    def run(calls: int) -> list[list[str | None]]:
        for _ in range(calls):
            f(tf.zeros([4096]))
            queue.call_finished()
        queue.drain()
        got, drained[:] = list(drained), []
        return got

    assert run(1) == [[None]]  # the first poll: not known to keep up
    assert run(0) == []  # finds the queue empty
    assert run(1) == [[fmt.CODEC_SHUFFLE_ZLIB]]
    assert run(2) == [[None, None]]  # the previous poll found a batch; one dequeue
    assert run(1) == [[None]]
    assert run(0) == []
    assert run(1) == [[fmt.CODEC_SHUFFLE_ZLIB]]


@pytest.mark.parametrize("mode", [fmt.NO_TENSOR, fmt.CURT_HEALTH, fmt.FULL_HEALTH])
def test_single_traces_of_a_graph_share_one_ordinal_read(mode):
    """Enqueues of single traces (a loop body's, each iteration) read the call ordinal
    once per run of their graph, and a kernel's row goes into the queue as it is: per
    traced tensor, one enqueue (and in a health mode its kernel; in FULL_HEALTH the
    kernel's counts joined to the magnitude), no stack of rows."""
    received: list[tuple[list[int], list[int]]] = []

    def sink(trace_points, rows, values, ordinals, alert):
        received.append((trace_points.tolist(), ordinals.tolist()))

    queue = trace_queue.TraceQueue(mode, sink)

    @tf.function(autograph=False)
    def f(x):
        y = x * 2.0
        z = tf.math.log(y)
        for tp, t in enumerate((x, y, z)):
            queue.add_trace(t, tp)
        return z

    graph = f.get_concrete_function(tf.TensorSpec([3], tf.float32)).graph
    types = [op.type for op in graph.get_operations()]
    assert types.count("QueueEnqueueV2") == 3
    assert types.count("ReadVariableOp") == 1 and types.count("Fill") == 1
    assert "Pack" not in types
    if mode == fmt.FULL_HEALTH:
        # The kernel's counts, then the magnitude (an absolute value and a maximum,
        # made a column).
        assert types.count("DebugNumericSummaryV2") == types.count("ConcatV2") == 3, types
        assert types.count("Abs") == types.count("Max") == types.count("Reshape") == 3
    else:
        assert "Reshape" not in types
    for _ in range(2):
        f(tf.constant([1.0, 0.0, -1.0]))
        queue.call_finished()
    assert queue.drain() == 6
    assert [tp for tps, _ in received for tp in tps] == [0, 1, 2] * 2
    assert [o for _, ords in received for o in ords] == [0] * 3 + [1] * 3


@pytest.mark.parametrize("mode", [fmt.NO_TENSOR, fmt.CURT_HEALTH, fmt.FULL_TENSOR])
def test_values_nothing_uses_are_not_traced(tmp_path, mode):
    """programs/dead_values.py: the ops whose results nothing uses (an unused `Sin` and
    the `AddV2` after it, the MatMul's gradient with respect to its input) are
    recorded with their trace points but never traced, so the traced step does not
    compute them; the other traced tensors are traced at each of the three steps."""
    import reader
    from tests.instrument.conftest import run_program
    from tests.program_runs import PROGRAMS

    run_program([str(PROGRAMS / "dead_values.py"), str(tmp_path), mode])
    with reader.open_run(tmp_path / mode) as dump:
        traced: dict[str, int] = {}
        for trace in dump.traces(0, dump.num_traces):
            name = dump.op(present(trace.op_id)).name
            traced[name] = traced.get(name, 0) + 1
        (graph,) = [g for g in dump.graphs() if g.name == "step"]
        ops = dump.graph_ops(graph.id)
    by_name = {op.name: op for op in ops}
    unused_add = [
        op.name for op in ops if op.op_type == "AddV2" and op.inputs[0].name == "unused_sin:0"
    ]
    matmul_grads = [
        op.name for op in ops if op.op_type == "MatMul" and op.name.startswith("gradient_tape")
    ]
    assert len(unused_add) == 1 and len(matmul_grads) == 2  # with respect to x and w
    for name in ["unused_sin"] + unused_add:
        assert any(tp is not None for tp in by_name[name].trace_points)
        assert name not in traced
    assert sorted(traced.get(name, 0) for name in matmul_grads) == [0, 3]
    for name in ("MatMul", "mul", "Sum"):  # the forward MatMul, the loss
        assert traced[name] == 3, (name, traced)
