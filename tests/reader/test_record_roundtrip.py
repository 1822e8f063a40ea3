"""Every record kind of the contract, written by the real writer and read back by the
reader, without TensorFlow (`instrument.dump` imports none).

Three runs hold every key the writer writes: a FULL_HEALTH run (summaries and their
magnitudes, a thread, call ordinals, chunks of one step and of several, notices, a
multi-worker task), a FULL_TENSOR run (values: raw, compressed, strings) and a watched
run with the replay of its hit. The test reads them with `reader.open_run` and checks
each value it wrote, then decodes the files with msgpack and checks that together they
hold every key of every kind the contract says is written, and no other.
"""

from __future__ import annotations

import glob
import os
from typing import Any

import msgpack
import numpy as np
import pytest

import reader
from instrument.dump.value_encoding import encode_value, tensor_value_record
from instrument.dump.writer import DumpWriter
from reader import format as fmt
from reader.contract import (
    KIND_KEY,
    NESTED_MAPS,
    RECORD_KINDS,
    ExecRecord,
    ReplayOfMap,
    RunRecord,
    TaskMap,
    ValueMap,
    WatchHitRecord,
    WatchMap,
    WatchSiteRecord,
    WatchStepsRecord,
)
from reader.progress import read_progresses
from reader.run.watch_pair import replay_values_path
from tests.present import present

TASK = {TaskMap.TYPE: "worker", TaskMap.INDEX: 1, TaskMap.CLUSTER: "0123456789ab"}


def _definitions(writer: DumpWriter) -> dict[str, int]:
    """One of each definition: a device, a file, frames with and without a span, a
    stack, a graph named later, and an op with every optional key."""
    device = writer.add_device("/job:localhost/replica:0/task:0/device:CPU:0")
    file_id = writer.add_source_file("/home/u/train.py", ["x = f(y)", "z = 1"], library=False)
    writer.add_source_file("/usr/lib/python3/os.py", None, library=True, omitted="library")
    outer = writer.add_frame(file_id, 1, "main", (4, 1, 8))
    inner = writer.add_frame(file_id, 2, "step")
    stack = writer.add_stack([outer, inner])
    graph = writer.add_graph("train_step", None)
    writer.set_graph_function_name(graph, "__inference_train_step_7")
    inner_graph = writer.add_graph("while_body", graph)
    op = writer.add_op(
        graph_id=graph,
        op_type="Log",
        op_name="Log",
        inputs=["probs:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=device,
        stack_id=stack,
        trace_points=[0],
        layer="sequential/dense",
        variable="dense/kernel",
        constant_nan=True,
    )
    return {
        "device": device,
        "file": file_id,
        "outer": outer,
        "inner": inner,
        "stack": stack,
        "graph": graph,
        "inner_graph": inner_graph,
        "op": op,
    }


def _write_health_run(logdir: str) -> dict[str, int]:
    writer = DumpWriter(
        logdir,
        {
            RunRecord.RUN: "health",
            RunRecord.TENSOR_DEBUG_MODE: fmt.FULL_HEALTH,
            RunRecord.TF_VERSION: "2.21.0",
            RunRecord.PYTHON_VERSION: "3.12.1",
            RunRecord.ARGV: ["train.py", "--epochs", "1"],
            RunRecord.OP_REGEX: "Log.*",
            RunRecord.TENSOR_DTYPES: ["float32"],
            RunRecord.EAGER_MODE: True,
            RunRecord.THREAD: "MainThread",
            RunRecord.TASK: TASK,
        },
        flush_interval_s=None,
    )
    ids = _definitions(writer)
    writer.add_notice(
        fmt.NOTICE_FILTERS, "op_regex  in effect", level=fmt.NOTICE_INFO, details={"n": 1}
    )
    row = [1.0, 1.0, 4.0, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.5]  # FULL_HEALTH and max_abs
    writer.add_execution(
        op_type="Add",
        graph_id=None,
        input_ids=[1, 2],
        output_ids=[3],
        device_ids=[ids["device"]],
        output_dtypes=[1],
        stack_id=ids["stack"],
        summaries=[row],
        time_s=100.5,
        names=["dense/kernel"],
    )
    writer.add_execution(
        op_type="__inference_train_step_7",
        graph_id=ids["graph"],
        input_ids=[3],
        output_ids=[4, 5],
        device_ids=[ids["device"], ids["device"]],
        output_dtypes=[1, 1],
        stack_id=ids["stack"],
        summaries=[row, None],
        time_s=101.0,
        call_ordinal=0,
        thread="loader",
    )
    trace_rows = np.array([row, row], dtype=np.float64)
    writer.add_traces(np.array([0, 0], np.int32), summaries=trace_rows, step=1)
    writer.flush()  # the chunk above holds one step (`x`); the next, two (`xr`)
    writer.add_traces(np.array([0], np.int32), summaries=trace_rows[:1], step=1)
    writer.add_traces(np.array([0], np.int32), summaries=trace_rows[:1], step=2)
    # The first NaN (an eager op's): the progress file's alert (a job's run keeps one).
    writer.add_execution(
        op_type="Log",
        graph_id=None,
        input_ids=[4],
        output_ids=[6],
        device_ids=[ids["device"]],
        output_dtypes=[1],
        stack_id=ids["stack"],
        summaries=[[1.0, 1.0, 4.0, 0.0, 0.0, 2.0, 1.0, 0.0, 1.0, float("nan")]],
        time_s=102.0,
    )
    writer.close()
    return ids


def _write_tensor_run(logdir: str) -> None:
    writer = DumpWriter(
        logdir,
        {RunRecord.RUN: "tensor", RunRecord.TENSOR_DEBUG_MODE: fmt.FULL_TENSOR},
        flush_interval_s=None,
    )
    ids = _definitions(writer)
    compressed = encode_value(tensor_value_record(np.zeros(256, np.float32)))
    assert compressed[ValueMap.CODEC] == fmt.CODEC_SHUFFLE_ZLIB
    writer.add_execution(
        op_type="Const",
        graph_id=None,
        input_ids=[],
        output_ids=[7, 8],
        device_ids=[ids["device"]] * 2,
        output_dtypes=[1, 7],
        stack_id=None,
        values=[tensor_value_record(np.array([1.5, -2.0], np.float32)), None],
    )
    values = [compressed, tensor_value_record(np.array([b"a", b"bc"]))]
    writer.add_traces(np.array([0, 0], np.int32), values=values, step=0)
    writer.close()


def _write_watched_runs(logdir: str) -> None:
    watched = DumpWriter(
        logdir,
        {
            RunRecord.RUN: "watched",
            RunRecord.TENSOR_DEBUG_MODE: fmt.NO_TENSOR,
            RunRecord.WATCH: {
                WatchMap.ON_HIT: "stop",
                WatchMap.MAX_REPLAYS: 1,
                WatchMap.HOLD_UPDATE: True,
            },
        },
        flush_interval_s=None,
    )
    columns = ["loss", "gradient_norm:w", "weight_norm:w"]
    watched.add_watch_record(
        WatchSiteRecord,
        {
            WatchSiteRecord.ID: 0,
            WatchSiteRecord.OPTIMIZER: "adam",
            WatchSiteRecord.COLUMNS: columns,
            WatchSiteRecord.RING: 64,
        },
    )
    rows = np.array([[1.0, 2.0, 3.0], [0.5, np.inf, 3.0]], np.float32)
    watched.add_watch_record(
        WatchStepsRecord,
        {
            WatchStepsRecord.SITE: 0,
            WatchStepsRecord.FIRST: 4,
            WatchStepsRecord.LOST: 2,
            WatchStepsRecord.ROWS: rows.tobytes(),
            WatchStepsRecord.COLUMNS: 3,
        },
    )
    watched.add_watch_record(
        WatchHitRecord,
        {
            WatchHitRecord.SITE: 0,
            WatchHitRecord.STEP: 5,
            WatchHitRecord.CHECK: "gradient",
            WatchHitRecord.TENSOR: "the gradient of w",
            WatchHitRecord.REPLICA: 1,
            WatchHitRecord.REPLAY_RUN: "replay",
            WatchHitRecord.XLA_REPLAY_RUN: "replay",
            WatchHitRecord.VERDICT: "reproduced",
            WatchHitRecord.SAVED_STATE: "state.npz",
            WatchHitRecord.SAVED_BATCH: "batch.npz",
            WatchHitRecord.REPLAY_ERROR: None,
        },
    )
    watched.close()
    replay_of = {
        ReplayOfMap.RUN: "watched",
        ReplayOfMap.STEP: 5,
        ReplayOfMap.SITE: 0,
        ReplayOfMap.CHECK: "gradient",
        ReplayOfMap.TENSOR: "the gradient of w",
        ReplayOfMap.XLA: True,
    }
    replay = DumpWriter(
        logdir,
        {
            RunRecord.RUN: "replay",
            RunRecord.TENSOR_DEBUG_MODE: fmt.FULL_HEALTH,
            RunRecord.REPLAY_OF: replay_of,
        },
        flush_interval_s=None,
    )
    replay.close()
    # Its values replay, inside its directory.
    values = DumpWriter(
        os.path.join(replay.path, fmt.REPLAY_VALUES_DIR),
        {
            RunRecord.RUN: "values",
            RunRecord.TENSOR_DEBUG_MODE: fmt.FULL_TENSOR,
            RunRecord.REPLAY_OF: {**replay_of, ReplayOfMap.VALUES: ["Log", "x"]},
        },
        flush_interval_s=None,
    )
    values.close()


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("contract"))
    _write_health_run(path)
    _write_tensor_run(path)
    _write_watched_runs(path)
    return path


def test_the_health_run_reads_back(logdir: str) -> None:
    run = reader.open_run(logdir, "health")
    meta = run.metadata
    assert (meta.run_id, meta.tensor_debug_mode, meta.format_version) == (
        "health",
        fmt.FULL_HEALTH,
        fmt.LOCAL_FORMAT_VERSION,
    )
    assert (meta.tf_version, meta.python_version, meta.argv) == (
        "2.21.0",
        "3.12.1",
        ("train.py", "--epochs", "1"),
    )
    assert (meta.op_regex, meta.tensor_dtypes, meta.eager_mode, meta.thread) == (
        "Log.*",
        ("float32",),
        True,
        "MainThread",
    )
    assert (meta.task, meta.cluster) == ("worker 1", "0123456789ab")
    assert meta.finished and meta.pid == os.getpid() and meta.end_time is not None
    assert meta.devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)
    [notice] = run.notices()
    assert (notice.kind, notice.level, notice.message, notice.details) == (
        fmt.NOTICE_FILTERS,
        fmt.NOTICE_INFO,
        "op_regex in effect",
        {"n": 1},
    )
    assert notice.time is not None

    source = run.source_file(0)
    assert (source.path, source.lines, source.is_library) == (
        "/home/u/train.py",
        ("x = f(y)", "z = 1"),
        False,
    )
    library = run.source_file(1)
    assert (library.lines, library.omitted, library.is_library) == (None, "library", True)
    outer, inner = run.stack(0)
    assert (outer.line, outer.function, outer.column, outer.end_line, outer.end_column) == (
        1,
        "main",
        4,
        1,
        8,
    )
    assert (inner.function, inner.column) == ("step", None)
    graph, inner_graph = run.graphs()
    assert (graph.name, graph.outer_id, graph.function_name) == (
        "train_step",
        None,
        "__inference_train_step_7",
    )
    assert inner_graph.outer_id == graph.id
    op = run.op(0)
    assert (op.op_type, op.name, [i.name for i in op.inputs], op.num_outputs) == (
        "Log",
        "Log",
        ["probs:0"],
        1,
    )
    assert (op.output_dtypes, op.device, op.stack_id, op.trace_points) == (
        ("float32",),
        meta.devices[0],
        0,
        (0,),
    )
    assert (op.layer, op.variable, op.constant_nan) == ("sequential/dense", "dense/kernel", True)

    first, call = run.executions(0, 2)
    assert (first.op_type, first.input_ids, first.output_ids, first.time) == (
        "Add",
        (1, 2),
        (3,),
        100.5,
    )
    assert first.summaries is not None and first.summaries[0] is not None
    assert (first.summaries[0].size, first.summaries[0].max_abs, first.thread) == (4, 3.5, None)
    assert (first.names, call.names) == (("dense/kernel",), None)
    assert (call.graph_id, call.stack_id, call.thread, call.output_dtypes) == (
        graph.id,
        0,
        "loader",
        ("float32", "float32"),
    )
    assert call.summaries is not None and call.summaries[1] is None
    assert run.execution_record(1)[ExecRecord.CALL] == 0
    traces = run.traces(0, 4)
    assert [(t.trace_point, t.op_id, t.slot, t.step) for t in traces] == [
        (0, 0, 0, 1),
        (0, 0, 0, 1),
        (0, 0, 0, 1),
        (0, 0, 0, 2),
    ]
    assert all(t.summary is not None and t.summary.max_abs == 3.5 for t in traces)


def test_the_progress_file_reads_back(logdir: str) -> None:
    """The health run is a job's (its task): its progress file says how far it ran,
    and its first NaN, the eager Log after the call of step 0."""
    [progress] = read_progresses([os.path.join(logdir, "health")])
    assert progress is not None
    assert progress.run[RunRecord.TASK] == TASK and progress.run[RunRecord.RUN] == "health"
    assert (progress.calls, progress.executions, progress.traces) == ({"train_step": 1}, 3, 4)
    assert progress.ended and not progress.stopped and progress.watched_alerts
    alert = progress.alert
    assert alert is not None
    assert (alert.position, alert.kind, alert.index, alert.slot, alert.op_type) == (
        2,
        "eager",
        2,
        0,
        "Log",
    )
    assert (alert.op_name, alert.received, alert.time, alert.calls) == (
        None,
        False,
        102.0,
        {"train_step": 0},
    )
    assert alert.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert alert.frame == ("/home/u/train.py", 2, "step")
    assert (progress.step_of(alert), progress.last_step) == (0, 0)


def test_the_tensor_run_reads_back(logdir: str) -> None:
    run = reader.open_run(logdir, "tensor")
    value = run.execution_value(0, 0)
    assert value is not None and value.tolist() == [1.5, -2.0]
    assert run.execution_value(0, 1) is None
    compressed = run.trace_value(0)
    assert compressed is not None and compressed.shape == (256,) and not compressed.any()
    strings = run.trace_value(1)
    assert strings is not None and list(strings.reshape(-1)) == ["a", "bc"]


def test_the_watched_run_and_its_replay_read_back(logdir: str) -> None:
    watched = reader.open_run(logdir, "watched")
    assert watched.metadata.watched
    log = watched.watch_log()
    assert log is not None
    assert (log.sites[0].optimizer, log.sites[0].columns) == (
        "adam",
        ("loss", "gradient_norm:w", "weight_norm:w"),
    )
    steps, losses = log.column(0, "loss")
    assert (steps.tolist(), losses.tolist(), log.lost_rows) == ([4, 5], [1.0, 0.5], 2)
    hit = log.hit
    assert hit is not None
    assert (hit.site_id, hit.step, hit.check, hit.tensor, hit.replay_run, hit.verdict) == (
        0,
        5,
        "gradient",
        "the gradient of w",
        "replay",
        "reproduced",
    )
    assert (hit.saved_state, hit.saved_batch, hit.replay_error) == ("state.npz", "batch.npz", None)
    assert (hit.replica, hit.what) == (1, "the gradient of w on replica 1")
    assert hit.xla_replay_run == "replay"
    replay = reader.open_run(logdir, "replay").metadata.replay_of
    assert replay is not None
    assert (replay.run_id, replay.step, replay.check, replay.tensor, replay.xla) == (
        "watched",
        5,
        "gradient",
        "the gradient of w",
        True,
    )
    assert replay.values is None
    with reader.open_run(logdir, "replay") as run:
        values_path = replay_values_path(run)
    assert values_path is not None
    with reader.open_run(values_path) as values:
        assert present(values.metadata.replay_of).values == ("Log", "x")


def _records_on_disk(logdir: str) -> list[dict[str, Any]]:
    records = []
    for path in sorted(
        glob.glob(os.path.join(logdir, "**", "*" + fmt.FILE_SUFFIX), recursive=True)
    ):
        with open(path, "rb") as f:
            records.extend(msgpack.Unpacker(f, raw=False))
    return records


def test_the_runs_hold_every_key_the_contract_says_is_written(logdir: str) -> None:
    """Together the three runs write every key of every kind, and no key the contract
    does not declare; ``exec`` records (format 1.x) are the reader's, made of chunks."""
    seen: dict[str, set[str]] = {}
    nested: dict[str, set[str]] = {}
    records = _records_on_disk(logdir)
    run = reader.open_run(logdir, "health")
    tensor_run = reader.open_run(logdir, "tensor")
    records += [run.execution_record(i) for i in range(2)] + [tensor_run.execution_record(0)]
    for record in records:
        kind = record[KIND_KEY]
        seen.setdefault(kind, set()).update(k for k in record if k != KIND_KEY)
        for (holder, key), table in NESTED_MAPS.items():
            held = record.get(key) if holder.KIND == kind else None
            for item in held if isinstance(held, list) else [held]:
                if isinstance(item, dict):
                    nested.setdefault(table.__name__, set()).update(item)
    for kind in RECORD_KINDS:
        written = {f.key for f in kind.FIELDS if f.written}
        assert seen.get(kind.KIND) == written, kind.__name__
    for table in set(NESTED_MAPS.values()):
        assert nested.get(table.__name__) == set(table.keys()), table.__name__


def test_the_written_values_have_the_contract_s_types(logdir: str) -> None:
    for record in _records_on_disk(logdir):
        kind = next(k for k in RECORD_KINDS if k.KIND == record[KIND_KEY])
        for key, value in record.items():
            if key == KIND_KEY:
                continue
            field = kind.field_of(key)
            if value is None:
                assert field.nullable, f"{kind.__name__}.{key} is nil"
            else:
                assert isinstance(value, field.type), f"{kind.__name__}.{key}: {value!r}"
