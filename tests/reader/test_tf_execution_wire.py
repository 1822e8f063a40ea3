"""The block path of TensorFlow's eager executions without TensorFlow: the wire format
read by numpy (`reader.loading.tf_events.wire`), a block's columns against protobuf's
decoding of each record, and synthetic file sets (written with our `DebugEvent`
schema and TFRecord framing, as TensorFlow's dumper lays them out) opened by both
execution paths (`tests/reader/execution_paths.py`).
"""

from __future__ import annotations

import os
import random
import struct

import numpy as np
import pytest

import reader
from reader import format as fmt
from reader.loading.tf_events import execution_block, wire
from reader.loading.tf_events.repeating_spans import RepeatingSpans
from reader.loading.tf_events.schema import DebugEvent
from tests.present import present
from tests.reader.execution_paths import assert_same_answers, framed, varint

_OPS = ("MatMul", "AddV2", "Relu", "ReadVariableOp", "AssignSubVariableOp", "Mean", "Log")
_FUNCTION = "__inference_train_step_42"
_GRAPH = "5d3f0a4e-0000-4000-8000-000000000001"


def test_varints_of_every_length():
    values = [0, 1, 127, 128, 300, 16383, 16384, 2**32, 2**63, 2**64 - 1]
    data = b"".join(map(varint, values)) + b"\x00"
    raw = np.frombuffer(data, dtype=np.uint8)
    at = np.cumsum([0] + [len(varint(v)) for v in values[:-1]])
    end = np.full(at.size, len(data) - 1)
    found, after, whole = wire.varints(raw, at, end)
    assert found.tolist() == values and whole.all()
    assert after.tolist() == [*at[1:].tolist(), len(data) - 1]
    # Cut short by its message's end: not whole.
    _, _, whole = wire.varints(raw, at[-2:], at[-2:] + 3)
    assert whole.tolist() == [False, False]


def test_packed_varints_by_span():
    spans = [[1, 2, 300], [], [2**40], [5]]
    data = b"".join(varint(v) for span in spans for v in span)
    lengths = [sum(len(varint(v)) for v in span) for span in spans]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    values, starts, whole = wire.packed_varints(np.frombuffer(data, np.uint8), offsets)
    assert values.tolist() == [1, 2, 300, 2**40, 5] and whole.all()
    assert starts.tolist() == [0, 3, 3, 4, 5]
    torn = np.frombuffer(data[:-1] + b"\x85", np.uint8)  # the last span's varint goes on
    values, starts, whole = wire.packed_varints(torn, offsets)
    assert whole.tolist() == [True, True, True, False] and values.tolist() == [1, 2, 300, 2**40]


def _event(
    index: int, rng: random.Random, mode: str = fmt.FULL_HEALTH, *, step_every: int = 7
) -> DebugEvent:
    """Execution ``index`` of a loop of ``step_every`` ops, the last a function call;
    its outputs' summaries as TensorFlow writes them (an empty proto for an output it
    does not summarise)."""
    event = DebugEvent(wall_time=1_700_000_000.0 + index / 1000)
    execution = event.execution
    position = index % step_every
    call = position == step_every - 1
    execution.op_type = _FUNCTION if call else _OPS[position % len(_OPS)]
    outputs = 0 if execution.op_type == "AssignSubVariableOp" else 1 + (position == 2)
    if outputs:
        execution.num_outputs = outputs
    if call:
        execution.graph_id = _GRAPH
    execution.input_tensor_ids.extend(range(max(0, 3 * index - 2), 3 * index))
    execution.output_tensor_ids.extend(range(3 * index, 3 * index + outputs))
    execution.tensor_debug_mode = fmt.TF_TENSOR_DEBUG_MODE_ENUM[mode]
    kept = fmt.TF_SUMMARY_KEPT_COLUMNS.get(mode)
    for slot in range(outputs if kept is not None else 0):
        proto = execution.tensor_protos.add()
        if slot == 1:
            continue  # an int32 output: no summary
        assert kept is not None
        vector = np.zeros(kept.stop)
        vector[kept.start :] = [rng.randrange(4) for _ in range(kept.stop - kept.start)]
        proto.dtype = 2
        proto.tensor_shape.dim.add(size=kept.stop)
        proto.tensor_content = vector.astype("<f8").tobytes()
    execution.code_location.host_name = "worker-0"
    execution.code_location.stack_frame_ids.extend(
        f"frame-{position}-{depth}" for depth in range(3 + position % 3)
    )
    execution.output_tensor_device_ids.extend([0] * outputs)
    return event


@pytest.mark.parametrize("mode", ["FULL_HEALTH", "CURT_HEALTH", "SHAPE", "NO_TENSOR"])
def test_a_block_comes_out_as_protobuf_reads_it(mode):
    rng = random.Random(0)
    records = [_event(i, rng, mode).SerializeToString() for i in range(300)]
    data = b"".join(map(framed, records))
    lengths = np.array([len(r) for r in records])
    starts = np.cumsum(np.concatenate([[12], lengths[:-1] + 16]))
    kept = fmt.TF_SUMMARY_KEPT_COLUMNS.get(mode)
    columns = execution_block.scan(data, starts, lengths, kept)
    assert columns.readable.all()
    for r, record in enumerate(records):
        event = DebugEvent.FromString(record)
        execution = event.execution
        assert columns.times[r] == event.wall_time
        assert data[columns.op_start[r] : columns.op_stop[r]].decode() == execution.op_type
        assert data[columns.graph_start[r] : columns.graph_stop[r]].decode() == execution.graph_id
        assert (
            data[columns.code_start[r] : columns.code_stop[r]]
            == execution.code_location.SerializeToString()
        )
        outputs = columns.out_ids[columns.out_start[r] : columns.out_start[r + 1]]
        assert outputs.tolist() == list(execution.output_tensor_ids)
        for slot, proto in enumerate(execution.tensor_protos):
            at = columns.out_start[r] + slot
            assert columns.has_summary[at] == bool(proto.tensor_content)
            if proto.tensor_content:
                assert (
                    present(columns.summaries)[at].tolist()
                    == np.frombuffer(proto.tensor_content, "<f8")[kept].tolist()
                )
    spans = RepeatingSpans(data, starts, lengths)
    assert spans.period == 7
    codes, distinct = spans.intern(columns.code_start, columns.code_stop)
    assert len(distinct) == 7
    assert all(
        distinct[codes[r]] == data[columns.code_start[r] : columns.code_stop[r]]
        for r in range(len(records))
    )


def _file_set(root: str, records: list[bytes], mode: str = fmt.FULL_HEALTH) -> str:
    """A TensorFlow file set under ``root`` holding ``records`` as its executions,
    with the frames their code locations name."""
    os.makedirs(root)
    prefix = os.path.join(root, "tfdbg_events.1700000000.worker-0")
    metadata = DebugEvent(wall_time=1_700_000_000.0)
    metadata.debug_metadata.tensorflow_version = "2.21.0"
    source = DebugEvent()
    source.source_file.file_path = "/home/me/train.py"
    source.source_file.lines.extend(["import tensorflow as tf"] * 10)
    frames = []
    for position in range(7):
        for depth in range(5):
            frame = DebugEvent()
            frame.stack_frame_with_id.id = f"frame-{position}-{depth}"
            frame.stack_frame_with_id.file_line_col.line = 1 + depth
            frame.stack_frame_with_id.file_line_col.func = f"f{position}"
            frames.append(frame.SerializeToString())
    files = {
        "metadata": [metadata.SerializeToString()],
        "source_files": [source.SerializeToString()],
        "stack_frames": frames,
        "graphs": [],
        "execution": records,
        "graph_execution_traces": [],
    }
    for suffix, content in files.items():
        with open(f"{prefix}.{suffix}", "wb") as f:
            f.write(b"".join(map(framed, content)))
    return root


@pytest.mark.parametrize("mode", ["FULL_HEALTH", "CURT_HEALTH", "NO_TENSOR"])
def test_a_file_set_opens_as_record_by_record(tmp_path, monkeypatch, mode):
    rng = random.Random(1)
    records = [_event(i, rng, mode).SerializeToString() for i in range(700)]
    # An op of another step length in the middle: the steps after it are out of step
    # with the block's start, and found again.
    records.insert(300, _event(3, rng, mode, step_every=5).SerializeToString())
    logdir = _file_set(str(tmp_path / "dump"), records, mode)
    assert assert_same_answers(logdir, monkeypatch) == len(records)
    with reader.open_run(logdir) as dump:
        assert dump.damage == () and dump.num_executions == len(records)
        assert dump.execution(6).op_type == _FUNCTION
        assert dump.steps().function == "train_step"


def test_records_laid_out_otherwise_go_one_at_a_time(tmp_path, monkeypatch):
    """A step field, a repeated field, fields out of order, ids not packed: protobuf
    reads each, the block path leaves them (no notice); broken ids and a cut record
    are skipped with a notice, as protobuf skips them."""
    rng = random.Random(2)
    records = [_event(i, rng).SerializeToString() for i in range(200)]
    with_step = _event(10, rng)
    with_step.step = 3
    records[10] = with_step.SerializeToString()
    # The wall time written again after the execution (protobuf keeps the last).
    records[20] = records[20] + bytes([1 << 3 | 1]) + struct.pack("<d", 5.0)
    event = _event(30, rng)
    execution = event.execution.SerializeToString()
    records[30] = (
        bytes([9 << 3 | 2])
        + varint(len(execution))
        + execution
        + bytes([1 << 3 | 1])
        + struct.pack("<d", event.wall_time)
    )
    unpacked = _event(40, rng)
    body = bytearray()
    for tensor in unpacked.execution.output_tensor_ids:
        body += bytes([5 << 3 | 0]) + varint(tensor)
    fields = unpacked.execution
    rebuilt = (
        bytes([1 << 3 | 2])
        + varint(len(fields.op_type))
        + fields.op_type.encode()
        + bytes(body)
        + bytes([6 << 3 | 0])
        + varint(fields.tensor_debug_mode)
    )
    records[40] = (
        bytes([1 << 3 | 1])
        + struct.pack("<d", unpacked.wall_time)
        + bytes([9 << 3 | 2])
        + varint(len(rebuilt))
        + rebuilt
    )
    ids = b"".join(map(varint, DebugEvent.FromString(records[50]).execution.output_tensor_ids))
    field = bytes([5 << 3 | 2]) + varint(len(ids)) + ids
    broken = bytearray(records[50])
    last = broken.index(field) + len(field) - 1
    broken[last] |= 0x80  # the output ids' last varint goes on past its field
    records[50] = bytes(broken)
    records[60] = records[60][:-12]
    logdir = _file_set(str(tmp_path / "dump"), records)
    assert assert_same_answers(logdir, monkeypatch) == len(records) - 6
    with reader.open_run(logdir) as dump:
        assert dump.kept_executions() == [(0, 50), (51, 60), (61, 200)]
        assert len(dump.damage) == 2
        assert dump.execution(20).time == 5.0
        assert dump.execution(40).output_ids == tuple(unpacked.execution.output_tensor_ids)
