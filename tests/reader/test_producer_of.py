"""`DumpReader.producer_of`: which eager execution output a tensor id, from the index."""

from __future__ import annotations

import pytest

from reader import DumpReader
from tests.synthetic import FINITE, NEG_INF, make_run


def _eager(run, op_type, inputs=(), outputs=(), row=FINITE):
    return run.writer.add_execution(
        op_type=op_type,
        graph_id=None,
        input_ids=list(inputs),
        output_ids=list(outputs),
        device_ids=[run.device] * len(outputs),
        output_dtypes=[1] * len(outputs),
        stack_id=run.user_stack,
        summaries=[row] * len(outputs),
    )


def test_producer_and_slot_of_each_output(run):
    _eager(run, "Const", outputs=[10])  # 0
    _eager(run, "Unpack", inputs=[10], outputs=[11, 12, 13])  # 1
    _eager(run, "NoOp")  # 2: no outputs
    _eager(run, "AddN", inputs=[11, 13], outputs=[14])  # 3
    run.writer.flush()
    reader = DumpReader(run.path)
    assert reader.producer_of(10) == (0, 0)
    assert [reader.producer_of(t) for t in (11, 12, 13)] == [(1, 0), (1, 1), (1, 2)]
    assert reader.producer_of(14) == (3, 0)
    assert reader.producer_of(9) is None and reader.producer_of(15) is None
    assert reader.producer_of(-1) is None
    # `before` counts only earlier executions: a consumer never finds itself or later ones.
    assert reader.producer_of(14, before=3) is None
    assert reader.producer_of(12, before=2) == (1, 1)
    assert reader.producer_of(10, before=0) is None


def test_unordered_and_repeated_tensor_ids_find_the_latest_producer(run):
    _eager(run, "Const", outputs=[50])  # 0
    _eager(run, "Const", outputs=[7, 3])  # 1: ids not in increasing order
    _eager(run, "Identity", inputs=[50], outputs=[50])  # 2: an id output again
    run.writer.flush()
    reader = DumpReader(run.path)
    assert reader.producer_of(3) == (1, 1) and reader.producer_of(7) == (1, 0)
    assert reader.producer_of(50) == (2, 0)
    assert reader.producer_of(50, before=2) == (0, 0)


def test_input_produced_long_before_is_found_and_is_the_root_cause(run):
    _eager(run, "Const", outputs=[1])  # 0
    _eager(run, "Log", inputs=[1], outputs=[2], row=NEG_INF)  # 1: the root cause
    for i in range(1000):  # far more executions than any screenful apart
        _eager(run, "Add", inputs=[3 + i], outputs=[10_000 + i])
    consumer = _eager(run, "Mul", inputs=[10_500, 2], outputs=[99_999], row=NEG_INF)
    run.writer.flush()
    reader = DumpReader(run.path)
    assert reader.producer_of(2, before=consumer) == (1, 0)
    assert reader.producer_of(10_500, before=consumer) == (502, 0)
    cause = reader.root_cause()
    assert cause is not None
    assert cause.execution is not None
    assert cause.execution.index == 1 and cause.alert.op_type == "Log"
    assert [(ref.name, ref.execution_index) for ref, _ in cause.inputs] == [("Const:0", 0)]


def test_rotation_forgets_producers_that_left_the_disk(logdir):
    run = make_run(logdir, circular_buffer_size=4)
    reader = DumpReader(run.path)
    for i in range(6):
        _eager(run, "Const", outputs=[100 + 2 * i, 101 + 2 * i])
    run.writer.flush()
    reader.update()
    assert reader.first_execution == 0 and reader.producer_of(111) == (5, 1)
    for i in range(6, 11):
        _eager(run, "Const", outputs=[100 + 2 * i, 101 + 2 * i])
    run.writer.flush()
    reader.update()
    # 11 executions in segments of 4: 0..3 left the disk, 4..10 remain.
    assert reader.first_execution == 4
    assert reader.producer_of(100) is None and reader.producer_of(107) is None
    assert reader.producer_of(108) == (4, 0) and reader.producer_of(121) == (10, 1)
    assert reader.producer_of(121, before=10) is None
    # A fresh reader of the same window agrees.
    assert DumpReader(run.path).producer_of(109) == (4, 1)
    run.writer.close()


@pytest.mark.parametrize("follow", [True, False], ids=["followed", "missed-segments"])
def test_producers_after_the_reader_restarts_at_the_oldest_segment(logdir, follow):
    run = make_run(logdir, circular_buffer_size=2)
    _eager(run, "Const", outputs=[1])
    run.writer.flush()
    reader = DumpReader(run.path)
    for i in range(9):
        _eager(run, "Const", outputs=[10 + i])
        if follow:
            run.writer.flush()
            reader.update()
    run.writer.flush()
    reader.update()
    assert (reader.first_execution, reader.num_executions) == (8, 10)
    assert reader.producer_of(1) is None and reader.producer_of(16) is None
    assert reader.producer_of(17) == (8, 0) and reader.producer_of(18) == (9, 0)
    run.writer.close()
