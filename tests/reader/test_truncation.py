"""A file cut at any byte shows every record before the cut, and the rest once appended."""

from __future__ import annotations

import os
import shutil

import msgpack
import numpy as np
import pytest

from reader import DamagedDumpError, DumpReader
from reader import format as fmt
from tests.present import present
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run, segment_path


def _record_ends(data: bytes) -> list[tuple[int, dict]]:
    """(end offset, record) of each record of a complete file."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(data)
    ends = []
    for record in unpacker:
        ends.append((unpacker.tell(), record))
    return ends


def _observed(reader: DumpReader) -> dict[str, int]:
    defs = reader._defs
    return {
        "executions": reader.num_executions,
        "traces": reader.num_traces,
        "graphs": len(reader.graphs()),
        "ops": defs.num_ops,
        "frames": len(defs.frames),
        "stacks": len(defs.stacks),
        "files": len(defs.files),
        "devices": len(defs.devices),
    }


_COUNTED = {
    fmt.KIND_EXECUTION: "executions",
    fmt.KIND_GRAPH: "graphs",
    fmt.KIND_OP: "ops",
    fmt.KIND_FRAME: "frames",
    fmt.KIND_STACK: "stacks",
    fmt.KIND_FILE: "files",
    fmt.KIND_DEVICE: "devices",
}


def _expected_before(
    records: list[tuple[int, dict]], cut: int, full: dict[str, int], stream: str
) -> dict[str, int]:
    expected = dict(full)
    owned = {
        "executions": 0,
        "traces": 0,
        "graphs": 0,
        "ops": 0,
        "frames": 0,
        "stacks": 0,
        "files": 0,
        "devices": 0,
    }
    kinds_in_stream = set()
    for end, record in records:
        chunk = record["k"] in (fmt.KIND_TRACES, fmt.KIND_EXECUTION_CHUNK)
        key = {fmt.KIND_TRACES: "traces", fmt.KIND_EXECUTION_CHUNK: "executions"}.get(
            record["k"], _COUNTED.get(record["k"])
        )
        if key is None:
            continue
        kinds_in_stream.add(key)
        if end <= cut:
            owned[key] += record["n"] if chunk else 1
    for key in kinds_in_stream:
        expected[key] = owned[key]
    return expected


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("complete"))
    run = make_run(logdir)
    add_step(run, [FINITE, FINITE, FINITE])
    add_step(run, [FINITE, NEG_INF, NAN])
    run.writer.add_execution(
        op_type="AddV2",
        graph_id=None,
        input_ids=[1, 2],
        output_ids=[3],
        device_ids=[run.device],
        output_dtypes=[1],
        stack_id=run.user_stack,
        summaries=[NAN],
    )
    run.writer.close()
    return run.path


@pytest.mark.parametrize(
    "stream",
    [
        fmt.STREAM_SOURCE_FILES,
        fmt.STREAM_STACKS,
        fmt.STREAM_GRAPHS,
        fmt.STREAM_EXECUTIONS,
        fmt.STREAM_GRAPH_TRACES,
    ],
)
def test_cut_at_every_byte_then_completed(complete_run, tmp_path, stream):
    full = _observed(DumpReader(complete_run))
    assert full["executions"] == 3 and full["traces"] == 6 and full["ops"] == 3
    original = open(segment_path(complete_run, stream), "rb").read()
    records = _record_ends(original)
    copy = str(tmp_path / os.path.basename(complete_run))
    shutil.copytree(complete_run, copy)
    target = segment_path(copy, stream)
    for cut in range(len(original) + 1):
        with open(target, "wb") as f:
            f.write(original[:cut])
        reader = DumpReader(copy)
        assert _observed(reader) == _expected_before(records, cut, full, stream), cut
        assert reader.damage == (), (cut, reader.damage)
        with open(target, "ab") as f:
            f.write(original[cut:])
        reader.update()
        assert _observed(reader) == full, cut
        assert reader.damage == ()
        assert reader.alerts().total == 4
        assert present(present(reader.root_cause()).op).name == "Log"
        reader.close()


def test_cut_in_two_places_completed_in_three_updates(complete_run, tmp_path):
    original = open(segment_path(complete_run, fmt.STREAM_GRAPH_TRACES), "rb").read()
    copy = str(tmp_path / "run")
    shutil.copytree(complete_run, copy)
    target = segment_path(copy, fmt.STREAM_GRAPH_TRACES)
    a, b = len(original) // 3, 2 * len(original) // 3
    open(target, "wb").write(original[:a])
    reader = DumpReader(copy)
    seen = [reader.num_traces]
    for start, end in ((a, b), (b, len(original))):
        with open(target, "ab") as f:
            f.write(original[start:end])
        reader.update()
        seen.append(reader.num_traces)
    assert seen[-1] == 6 and seen == sorted(seen)
    assert np.array_equal(reader.trace_alert_indices(), [4, 5])


def test_metadata_cut_before_run_record_is_damaged_then_readable(complete_run, tmp_path):
    original = open(segment_path(complete_run, fmt.STREAM_METADATA), "rb").read()
    run_end = _record_ends(original)[1][0]
    copy = str(tmp_path / "run")
    shutil.copytree(complete_run, copy)
    target = segment_path(copy, fmt.STREAM_METADATA)
    for cut in (0, 5, run_end - 1):
        open(target, "wb").write(original[:cut])
        with pytest.raises(DamagedDumpError, match="metadata"):
            DumpReader(copy)
    open(target, "wb").write(original[:run_end])
    reader = DumpReader(copy)
    assert reader.metadata.tensor_debug_mode == fmt.FULL_HEALTH
    assert not reader.finished
    open(target, "wb").write(original)
    report = reader.update()
    assert reader.finished and report.finished
