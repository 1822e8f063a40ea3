"""Following a live run: growth, references before their targets, rotating segments."""

from __future__ import annotations

import os

import numpy as np
import pytest

from reader import DumpReader, UnknownIdError
from reader import format as fmt
from reader.byte_sources import Part
from reader.loading import run_loader as run_loader_module
from tests.present import present
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run, segment_path


def test_growth_between_updates_reports_only_what_is_new(run):
    reader = DumpReader(run.path)
    assert (reader.num_executions, reader.num_traces) == (0, 0)
    add_step(run, [FINITE, FINITE, FINITE])
    run.writer.flush()
    report = reader.update()
    assert (report.new_executions, report.new_traces, report.new_alerts) == (1, 3, 0)
    add_step(run, [FINITE, NEG_INF, NAN])
    run.writer.flush()
    report = reader.update()
    assert (report.new_executions, report.new_traces) == (1, 3)
    assert report.new_alerts == 3  # two traces and the call's output
    assert not report.finished and report.changed
    assert not reader.update().changed
    run.writer.close()
    assert reader.update().finished and reader.finished
    assert reader.execution_op_types(0, 2) == ["__inference_step_7"] * 2
    assert reader.execution_function_flags(0, 2).tolist() == [True, True]
    assert reader.execution_alert_flags(0, 2).tolist() == [False, True]


def test_traces_and_execution_before_their_definitions(logdir):
    run = make_run(logdir)
    w = run.writer
    # Definitions written but held back in the writer's buffers; only the event
    # streams reach the disk, as a reader may see them from another process.
    file_id = w.add_source_file("/home/me/late.py", ["a = 1", "b = tf.math.log(a)"], library=False)
    frame = w.add_frame(file_id, 2, "late")
    stack = w.add_stack([frame])
    graph = w.add_graph("late_fn", None)
    producer = w.add_op(
        graph_id=graph,
        op_type="Const",
        op_name="c",
        inputs=[],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=stack,
        trace_points=[3],
    )
    consumer = w.add_op(
        graph_id=graph,
        op_type="Log",
        op_name="log",
        inputs=["c:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=stack,
        trace_points=[4],
    )
    w.add_traces(np.array([3, 4], np.int32), summaries=np.array([FINITE, NEG_INF], float))
    w.add_execution(
        op_type="__inference_late_fn_1",
        graph_id=graph,
        input_ids=[],
        output_ids=[9],
        device_ids=[run.device],
        output_dtypes=[1],
        stack_id=stack,
        summaries=[NEG_INF],
    )
    w._files[fmt.STREAM_GRAPH_TRACES].flush()
    w._files[fmt.STREAM_EXECUTIONS].flush()

    reader = DumpReader(run.path)
    assert reader.num_traces == 2 and reader.num_executions == 1
    assert reader.trace(1).op_id is None and reader.trace_point(4) == (None, -1)
    with pytest.raises(UnknownIdError):
        reader.stack(stack)
    with pytest.raises(UnknownIdError):
        reader.graph(graph)
    alerts = reader.alerts()
    assert alerts.total == 2 and alerts.alerts[0].op_name is None
    cause = reader.root_cause()
    assert cause is not None
    assert cause.op is None and cause.frame is None

    w.flush()
    report = reader.update()
    assert report.new_ops == 2 and report.new_graphs == 1
    assert reader.trace(1).op_id == consumer and reader.trace_point(3) == (producer, 0)
    assert reader.op(consumer).inputs[0].op_id == producer
    assert [op.id for op, _ in reader.consumers(producer)] == [consumer]
    alerts = reader.alerts()
    assert alerts.alerts[0].op_name == "log" and alerts.alerts[0].graph_name == "late_fn"
    cause = reader.root_cause()
    assert cause is not None
    assert cause.op is not None
    assert cause.op.name == "log" and present(cause.frame).path == "/home/me/late.py"
    assert cause.line_text == "b = tf.math.log(a)"
    assert cause.inputs[0][1] is not None
    assert cause.inputs[0][1].nan == 0
    w.close()


def test_stack_with_frame_defined_later_shows_placeholder_then_frame(logdir):
    run = make_run(logdir)
    w = run.writer
    frame = w.add_frame(run.user_file, 3, "step")
    stack = w.add_stack([frame])
    # Hand-written order: the stack record reaches disk before its frame does.
    stacks_file = w._files[fmt.STREAM_STACKS]
    pending = b"".join(stacks_file._buf)
    stacks_file._buf.clear()
    stacks_file._buf_bytes = 0
    import msgpack

    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(pending)
    frame_record, stack_record = list(unpacker)
    with open(stacks_file.path, "ab") as f:
        f.write(msgpack.packb(stack_record))
    reader = DumpReader(run.path)
    [placeholder] = reader.stack(stack)
    assert placeholder.file_id == -1 and not placeholder.is_user
    with open(stacks_file.path, "ab") as f:
        f.write(msgpack.packb(frame_record))
    reader.update()
    [resolved] = reader.stack(stack)
    assert (resolved.path, resolved.line, resolved.is_user) == (
        "/home/me/project/train.py",
        3,
        True,
    )
    w.close()


def test_circular_buffer_rotation_drops_old_segments(logdir):
    run = make_run(logdir, circular_buffer_size=4)
    reader = DumpReader(run.path)
    for _ in range(3):
        add_step(run, [FINITE, FINITE])
    run.writer.flush()
    reader.update()
    assert (reader.first_execution, reader.num_executions) == (0, 3)
    for _ in range(7):
        add_step(run, [FINITE, FINITE])
    run.writer.flush()
    report = reader.update()
    # 10 executions in segments of 4: segment 0 deleted, 1 (4..7) and 2 (8, 9) remain.
    assert sorted(os.listdir(run.path)).count(fmt.segment_filename(fmt.STREAM_EXECUTIONS, 0)) == 0
    assert (reader.first_execution, reader.num_executions) == (4, 10)
    # Dropped: 0..2, read before and gone now. New: those now readable that were not
    # (4..9); execution 3 was written and deleted between the two updates.
    assert report.dropped_executions == 3 and report.new_executions == 6
    assert reader.execution(4).index == 4
    with pytest.raises(UnknownIdError):
        reader.execution(3)
    assert reader.first_trace > 0 and reader.num_traces == 20
    assert reader.trace(reader.first_trace).index == reader.first_trace
    assert reader.traces(0, 100)[0].index == reader.first_trace
    # A fresh reader sees the same window.
    fresh = DumpReader(run.path)
    assert (fresh.first_execution, fresh.num_executions) == (4, 10)
    assert (fresh.first_trace, fresh.num_traces) == (reader.first_trace, 20)
    run.writer.close()


def test_reader_that_missed_whole_segments_restarts_at_the_oldest_on_disk(logdir):
    run = make_run(logdir, circular_buffer_size=2)
    add_step(run, [FINITE])
    run.writer.flush()
    reader = DumpReader(run.path)
    assert reader.num_executions == 1
    for _ in range(9):
        add_step(run, [FINITE])
    run.writer.flush()
    reader.update()
    assert reader.num_executions == 10 and reader.first_execution == 8
    assert [e.index for e in reader.executions(0, 10)] == [8, 9]
    assert reader.damage == ()
    run.writer.close()


def test_segment_vanishing_between_listing_and_reading(run, monkeypatch):
    add_step(run, [FINITE])
    run.writer.flush()
    real = run_loader_module.list_segments

    def listing_with_a_ghost(path, store=None, fresh_within=0.0):
        found = real(path, store, fresh_within)
        assert found is not None
        found[fmt.STREAM_EXECUTIONS][7] = [Part(os.path.join(path, "executions.000007.tfdbg"), 0)]
        return found

    monkeypatch.setattr(run_loader_module, "list_segments", listing_with_a_ghost)
    reader = DumpReader(run.path)
    assert reader.num_executions == 1 and reader.damage == ()
    add_step(run, [FINITE])
    run.writer.flush()
    reader.update()
    assert reader.num_executions == 2


def test_deleted_segment_of_a_definition_stream_keeps_what_was_read(run):
    add_step(run, [FINITE])
    run.writer.close()
    reader = DumpReader(run.path)
    os.remove(segment_path(run.path, fmt.STREAM_GRAPHS))
    reader.update()
    assert reader.op(run.ops["Log"]).name == "Log"


def test_following_a_writer_thread_sees_monotonic_consistent_growth(logdir):
    """A writer flushing from another thread while the reader updates in a loop."""
    import threading

    run = make_run(logdir, circular_buffer_size=0)
    done = threading.Event()
    # The writer starts after the reader's first look: on a busy machine it could
    # otherwise write everything before the loop below looks at all.
    looked = threading.Event()

    def write():
        assert looked.wait(timeout=60)
        for k in range(400):
            add_step(run, [FINITE, NEG_INF if k == 300 else FINITE, FINITE])
            if k % 7 == 0:
                run.writer.flush()
        run.writer.close()
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    reader = DumpReader(run.path)
    seen = []
    while not done.is_set():
        reader.update()
        seen.append((reader.num_executions, reader.num_traces))
        looked.set()
        assert reader.damage == ()  # a tail cut mid-flush is waited for, not damage
    writer.join(timeout=60)
    reader.update()
    executions, traces = zip(*seen)
    assert list(executions) == sorted(executions) and list(traces) == sorted(traces)
    assert (reader.num_executions, reader.num_traces) == (400, 1200)
    assert reader.finished and reader.damage == ()
    assert present(present(reader.root_cause()).trace).index == 901
