"""The execution index against decoding every record.

Dumps before format 2.0 hold one ``exec`` record per execution: `RunLoader` indexes
them from their raw bytes, in blocks (`reader.index.exec_scan`), and decodes whole only the
records that do not fit a block's template. Whatever the mix, the index must be
exactly the one `ExecutionIndex.add` builds from each decoded record. Since 2.0 the
writer packs executions into ``execs`` chunks (`reader.index.exec_chunks`): the same
executions must give the same index and the same records either way.
"""

from __future__ import annotations

import dataclasses
import os

import msgpack
import numpy as np
import pytest

from reader import DumpReader
from reader import format as fmt
from reader.errors import MalformedRecordError
from reader.index import exec_scan, segment_reader
from reader.index.execution_index import ExecutionIndex
from reader.index.segment_reader import SegmentReader, list_segments
from reader.loading.run_loader import RunLoader
from tests.present import present
from tests.synthetic import FINITE, NAN, NEG_INF, add_legacy_execution, make_run, segment_path

_COLUMNS = (
    "offset",
    "length",
    "segment",
    "is_function",
    "is_alert",
    "out_start",
    "out_ids",
    "alert_index",
    "alert_slot",
    "alert_counts",
)


def _reference(path: str, mode: str) -> ExecutionIndex:
    """The index `ExecutionIndex.add` builds from every decoded record."""
    index = ExecutionIndex(mode)
    for number in present(list_segments(path))[fmt.STREAM_EXECUTIONS]:
        segment = SegmentReader(
            os.path.join(path, fmt.segment_filename(fmt.STREAM_EXECUTIONS, number)),
            fmt.STREAM_EXECUTIONS,
            number,
        )
        for start, end, record in segment.read_new():
            if record["k"] != fmt.KIND_EXECUTION:
                continue
            try:
                index.add(record, number, start, end)
            except MalformedRecordError:
                break
        segment.close()
    return index


def _loaded(path: str) -> RunLoader:
    """The run as `DumpReader` indexes it: its loader, after the first update."""
    loader = RunLoader(path)
    loader.update()
    return loader


def _assert_same(loader: RunLoader, expected: ExecutionIndex) -> None:
    got = loader.execs
    assert (got.first, got.end, got.out_sorted) == (
        expected.first,
        expected.end,
        expected.out_sorted,
    )
    for name in _COLUMNS:
        assert np.array_equal(getattr(got, name).view, getattr(expected, name).view), name
    assert [got.op_types[c] for c in got.op_code.view.tolist()] == [
        expected.op_types[c] for c in expected.op_code.view.tolist()
    ]


def _eager(run, op_type, outputs, rows, graph=None, inputs=(1, 2)):
    fields = dict(
        op_type=op_type,
        graph_id=graph,
        input_ids=list(inputs),
        output_ids=list(outputs),
        device_ids=[run.device] * len(outputs),
        output_dtypes=[1] * len(outputs),
        stack_id=run.user_stack,
        summaries=rows,
    )
    if run.chunked:
        return run.writer.add_execution(**fields)
    return add_legacy_execution(run.writer, **fields)


def _mixed_run(logdir, mode=fmt.FULL_HEALTH, chunked=False):
    run = make_run(logdir, mode=mode, legacy=not chunked)
    width = len(fmt.SUMMARY_COLUMNS[mode])
    rows: dict[str, list[float]] = {
        "finite": FINITE[:width],
        "nan": NAN[:width],
        "inf": NEG_INF[:width],
    }
    if mode == fmt.CURT_HEALTH:
        rows = {"finite": [0.0], "nan": [1.0], "inf": [1.0]}
    tensor = 0
    for k in range(300):
        outputs = [tensor + j for j in range(k % 4)]
        tensor += len(outputs) + (1 << 33 if k == 150 else 0)  # wide ids too
        kind = "nan" if k % 37 == 5 else "inf" if k % 53 == 7 else "finite"
        summaries = [rows[kind] if j % 2 == 0 else None for j in range(len(outputs))]
        op_type = (
            "__inference_step_7"
            if k % 10 == 0
            else "x" * (20 + k % 50)
            if k % 7 == 0
            else ["MatMul", "AddV2", "Ünïcödé", ""][k % 4]
        )
        _eager(
            run,
            op_type,
            outputs,
            summaries if mode != fmt.NO_TENSOR else None,
            graph=run.graph if k % 10 == 0 else None,
            inputs=range(k % 5),
        )
    return run, rows


@pytest.mark.parametrize(
    "mode", [fmt.FULL_HEALTH, fmt.CONCISE_HEALTH, fmt.CURT_HEALTH, fmt.SHAPE, fmt.NO_TENSOR]
)
def test_scanned_index_equals_decoding_every_record(logdir, mode):
    run, rows = _mixed_run(logdir, mode)
    i = run.writer.num_executions
    run.writer.close()
    path = segment_path(run.path, fmt.STREAM_EXECUTIONS)
    base = {
        "k": "exec",
        "i": i,
        "op": "Odd",
        "graph": None,
        "in": [],
        "out": [7],
        "dev": [],
        "dtypes": [],
        "stack": None,
        "t": 1.0,
        "s": [rows["nan"]],
    }
    odd = [
        dict(reversed(list(base.items()))),  # another key order: another template
        {**base, "s": [[int(x) for x in rows["nan"]]]},  # ints in a summary row
        {**base, "note": "a newer minor version's key"},
        {**base, "graph": -1, "out": [-5, 1 << 63, 3]},  # ids the reader maps to -1
        {"k": "hologram", "x": 1},  # an unknown kind
        {**base, "op": "é" * 200},  # a str16 op type
    ]
    with open(path, "ab") as f:
        for record in odd:
            if record["k"] == "exec":
                record["i"] = i
                i += 1
            f.write(msgpack.packb(record))
    loader = _loaded(run.path)
    assert loader.damage == [] and loader.execs.end == i
    _assert_same(loader, _reference(run.path, loader.mode))


def test_blocks_smaller_than_records_and_a_growing_file(logdir, monkeypatch):
    run, _ = _mixed_run(logdir)
    monkeypatch.setattr(segment_reader, "READ_BLOCK_BYTES", 97)  # records span blocks
    run.writer.flush()
    loader = _loaded(run.path)
    _eager(run, "Log", [10_000], [NAN])
    run.writer.close()
    assert loader.update().new_executions == 1
    _assert_same(loader, _reference(run.path, loader.mode))


def test_op_type_hash_collisions_cost_time_not_correctness(logdir, monkeypatch):
    monkeypatch.setattr(exec_scan, "HASH_MULTIPLIERS", (0, 0))  # every op type collides
    run, _ = _mixed_run(logdir)
    run.writer.close()
    _assert_same(_loaded(run.path), _reference(run.path, fmt.FULL_HEALTH))
    assert set(DumpReader(run.path).execution_op_types(0, 300)) >= {
        "MatMul",
        "AddV2",
        "Ünïcödé",
        "",
    }


@pytest.mark.parametrize("damage", ["utf8", "repeat", "missing_out", "garbage"])
def test_damaged_records_stop_the_segment_with_the_same_notice(logdir, damage):
    run, _ = _mixed_run(logdir)
    i = run.writer.num_executions
    run.writer.close()
    path = segment_path(run.path, fmt.STREAM_EXECUTIONS)
    size = os.path.getsize(path)
    record = {"k": "exec", "i": i, "op": "Odd", "graph": None, "in": [], "out": [7]}
    if damage == "repeat":
        record["i"] = i - 1
    elif damage == "missing_out":
        del record["out"]
    data = msgpack.packb(record)
    if damage == "utf8":
        data = data.replace(b"Odd", b"\xff\xfe\xfd")
    elif damage == "garbage":
        data = b"\xc1"
    with open(path, "ab") as f:
        f.write(data)
        f.write(msgpack.packb({**record, "i": i + 1, "out": [8]}))  # not trusted
    loader = _loaded(run.path)
    assert loader.execs.end == i
    [notice] = loader.damage
    assert notice.startswith("executions.000000.tfdbg: ") and f"at byte {size}" in notice
    _assert_same(loader, _reference(run.path, loader.mode))


@pytest.mark.parametrize("mode", [fmt.FULL_HEALTH, fmt.CURT_HEALTH, fmt.SHAPE, fmt.NO_TENSOR])
def test_chunks_index_and_read_as_the_records_they_replace(tmp_path, monkeypatch, mode):
    from instrument.dump import columnar_chunks

    monkeypatch.setattr(columnar_chunks, "EXECUTION_ROWS", 64)  # several chunks, one partial
    runs: dict[bool, DumpReader] = {}
    for as_chunks in (False, True):
        run, _ = _mixed_run(str(tmp_path / str(as_chunks)), mode, chunked=as_chunks)
        run.writer.close()
        runs[as_chunks] = DumpReader(run.path)
    legacy, chunked = runs[False], runs[True]
    assert chunked.num_executions == legacy.num_executions == 300
    for name in (
        "is_function",
        "is_alert",
        "out_start",
        "out_ids",
        "alert_index",
        "alert_slot",
        "alert_counts",
    ):
        assert np.array_equal(
            getattr(chunked._execs, name).view, getattr(legacy._execs, name).view
        ), name
    assert chunked.execution_op_types(0, 300) == legacy.execution_op_types(0, 300)
    for i in range(300):
        want = legacy.execution_record(i)
        got = chunked.execution_record(i)
        assert got == {**want, "t": got["t"]}, i
        assert chunked.execution(i) == dataclasses.replace(legacy.execution(i), time=got["t"]), i
    assert chunked.alerts() == legacy.alerts()


@pytest.mark.parametrize(
    "names, expected",
    [
        ([[1, ["dense/kernel"]]], ["dense/kernel"]),
        ([[0, ["other"]]], None),  # another row's
        ("dense/kernel", None),
        ([[1, "dense/kernel"]], None),
        ([[1, [7]]], None),
        ([[1]], None),
    ],
)
def test_an_executions_names_are_read_only_when_well_formed(names, expected):
    """`nm` (format 2.8) holds [row, [str, ...]] entries; anything else is no names,
    never an error."""
    from instrument.dump.columnar_chunks import ExecutionChunk
    from reader.contract import ExecRecord, ExecsChunk
    from reader.index.exec_chunks import execution_record

    chunk = ExecutionChunk(0, 0)
    for op_type in ("Mul", "VarHandleOp"):
        chunk.add(
            op_type=op_type,
            graph_id=None,
            input_ids=[],
            output_ids=[1],
            device_ids=[0],
            output_dtypes=[20],
            stack_id=None,
            summaries=None,
            values=None,
            time_s=1.0,
            call_ordinal=None,
            thread=None,
            names=["written"] if op_type == "VarHandleOp" else None,
        )
    record: dict = {}
    chunk.pack_into(record)
    assert record[ExecsChunk.NAMES] == [[1, ["written"]]]
    record[ExecsChunk.NAMES] = names
    assert execution_record(record, 1).get(ExecRecord.NAMES) == expected
    assert ExecRecord.NAMES not in execution_record(record, 0) or names == [[0, ["other"]]]
