"""Damaged, foreign and newer-version files: the reader's own errors, never a crash."""

from __future__ import annotations

import os
import random

import msgpack
import numpy as np
import pytest

from instrument.dump.columnar_chunks import ExecutionChunk
from reader import DamagedDumpError, DumpError, DumpReader, FormatVersionError
from reader import format as fmt
from tests.present import present
from tests.reader.hostile_dumps import run_every_query
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run, segment_path


def _header(stream: str, version=(1, 0), segment: int = 0) -> dict:
    return {
        "k": "header",
        "format": fmt.FORMAT_NAME,
        "version": list(version),
        "stream": stream,
        "run": "r",
        "segment": segment,
    }


def _closed_run(logdir):
    run = make_run(logdir)
    add_step(run, [FINITE, FINITE, FINITE])
    add_step(run, [FINITE, NEG_INF, NAN])
    run.writer.close()
    return run


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xc1",
        b"\xc1\x00\x01\x02",
        msgpack.packb(7),
        msgpack.packb({"no_kind": 1}),
        msgpack.packb([1, 2]),
    ],
)
def test_garbage_after_valid_records_keeps_everything_before(logdir, garbage):
    run = _closed_run(logdir)
    path = segment_path(run.path, fmt.STREAM_GRAPH_TRACES)
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(garbage)
        f.write(
            msgpack.packb(
                {
                    "k": "traces",
                    "i": 6,
                    "n": 1,
                    "x": 2,
                    "tp": np.array([0], "<i4").tobytes(),
                    "sc": 9,
                    "s": np.array(FINITE, "<f8").tobytes(),
                }
            )
        )
    reader = DumpReader(run.path)
    assert reader.num_traces == 6  # the chunk after the garbage is not trusted
    [notice] = reader.damage
    assert notice.startswith(fmt.segment_filename(fmt.STREAM_GRAPH_TRACES, 0))
    assert f"at byte {size}" in notice and "\n" not in notice
    assert present(present(reader.root_cause()).op).name == "Log"
    assert not reader.update().damage  # reported once


def test_foreign_file_with_a_segment_name(logdir):
    run = _closed_run(logdir)
    with open(segment_path(run.path, fmt.STREAM_GRAPH_TRACES, 1), "wb") as f:
        f.write(b"PK\x03\x04 this is a zip file")
    reader = DumpReader(run.path)
    assert reader.num_traces == 6
    assert any("graph_traces.000001.tfdbg" in d for d in reader.damage)


def test_definition_with_wrong_types_is_skipped_and_reported(logdir):
    run = make_run(logdir)
    run.writer._append(fmt.STREAM_GRAPHS, {"k": "op", "id": 3, "graph": "zero", "type": 1})
    run.writer.add_op(
        graph_id=run.graph,
        op_type="Exp",
        op_name="Exp",
        inputs=["Neg:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=None,
        trace_points=[3],
    )
    run.writer.close()
    reader = DumpReader(run.path)
    assert present(reader.op_by_name(run.graph, "Exp")).op_type == "Exp"
    assert len(reader.damage) == 1 and "op 3" in reader.damage[0]


def _execs_chunk(**changes) -> dict:
    """A well-formed ``execs`` chunk of one execution (index 2), then ``changes``."""
    chunk = ExecutionChunk(2, len(fmt.SUMMARY_COLUMNS[fmt.FULL_HEALTH]))
    chunk.add(
        op_type="Add",
        graph_id=None,
        input_ids=[1],
        output_ids=[9],
        device_ids=[0],
        output_dtypes=[1],
        stack_id=None,
        summaries=[FINITE],
        values=None,
        time_s=1.0,
        call_ordinal=None,
        thread=None,
    )
    record: dict = {}
    chunk.pack_into(record)
    record.update(changes)
    return record


@pytest.mark.parametrize(
    "bad",
    [
        {"ops": [5]},  # an op type that is not a string
        {"i": "2"},
        {"s": b"\x00" * 16},  # a summary row of two columns
        {"no": b"\x02\x00\x00\x00"},  # two outputs, one output id
        {"op": b"\x07\x00\x00\x00"},  # an op code past the chunk's table
    ],
    ids=["op_type", "index", "summary_width", "outputs", "op_code"],
)
def test_execution_chunk_with_wrong_types_stops_its_segment(logdir, bad):
    run = _closed_run(logdir)
    with open(segment_path(run.path, fmt.STREAM_EXECUTIONS), "ab") as f:
        f.write(msgpack.packb(_execs_chunk(**bad)))
        f.write(msgpack.packb(_execs_chunk(i=3)))  # after the damage: not trusted
    reader = DumpReader(run.path)
    assert reader.num_executions == 2 and len(reader.damage) == 1
    assert reader.execution(1).op_type == "__inference_step_7"


def test_a_well_formed_chunk_after_the_run_reads(logdir):
    run = _closed_run(logdir)
    with open(segment_path(run.path, fmt.STREAM_EXECUTIONS), "ab") as f:
        f.write(msgpack.packb(_execs_chunk()))
    reader = DumpReader(run.path)
    assert reader.num_executions == 3 and reader.damage == ()
    assert reader.execution(2).op_type == "Add" and reader.execution(2).output_ids == (9,)


@pytest.mark.parametrize(
    "bad",
    [
        {"k": "traces", "i": 6, "n": 2, "x": 2, "tp": b"\x00" * 4},
        {"k": "traces", "i": 6, "n": 1, "x": 2, "tp": b"\x00" * 4, "sc": 4, "s": b"\x00" * 32},
        {"k": "traces", "i": 3, "n": 1, "x": 2, "tp": b"\x00" * 4, "sc": 9, "s": b"\x00" * 72},
    ],
)
def test_trace_chunk_with_wrong_sizes_or_repeated_indices(logdir, bad):
    run = _closed_run(logdir)
    with open(segment_path(run.path, fmt.STREAM_GRAPH_TRACES), "ab") as f:
        f.write(msgpack.packb(bad))
    reader = DumpReader(run.path)
    assert reader.num_traces == 6 and len(reader.damage) == 1


def test_newer_major_version_is_refused_with_both_versions(logdir):
    run = _closed_run(logdir)
    path = segment_path(run.path, fmt.STREAM_GRAPH_TRACES, 1)
    with open(path, "wb") as f:
        f.write(msgpack.packb(_header(fmt.STREAM_GRAPH_TRACES, (fmt.FORMAT_VERSION[0] + 1, 3), 1)))
    with pytest.raises(FormatVersionError) as caught:
        DumpReader(run.path)
    message = str(caught.value)
    assert f"{fmt.FORMAT_VERSION[0] + 1}.3" in message
    assert "{}.{}".format(*fmt.FORMAT_VERSION) in message
    assert "\n" not in message


def test_newer_minor_version_with_unknown_kinds_and_keys_reads(logdir):
    run = make_run(logdir)
    run.writer.close()
    path = segment_path(run.path, fmt.STREAM_GRAPH_TRACES, 0)
    with open(path, "wb") as f:
        f.write(msgpack.packb(_header(fmt.STREAM_GRAPH_TRACES, (1, 9))))
        f.write(msgpack.packb({"k": "hologram", "x": 1}))
        f.write(
            msgpack.packb(
                {
                    "k": "traces",
                    "i": 0,
                    "n": 1,
                    "x": 0,
                    "new_key": [1],
                    "tp": np.array([1], "<i4").tobytes(),
                    "sc": 9,
                    "s": np.array(NAN, "<f8").tobytes(),
                }
            )
        )
    reader = DumpReader(run.path)
    assert reader.num_traces == 1 and reader.damage == ()
    assert present(reader.trace(0).summary).nan == 2


def test_unreadable_metadata_is_a_damaged_dump(logdir):
    run = _closed_run(logdir)
    with open(segment_path(run.path, fmt.STREAM_METADATA), "wb") as f:
        f.write(b"\xc1garbage")
    with pytest.raises(DamagedDumpError) as caught:
        DumpReader(run.path)
    assert "metadata" in str(caught.value)


@pytest.mark.parametrize("seed", range(40))
def test_random_byte_damage_raises_only_dump_errors(logdir, seed):
    """Flip, cut or insert random bytes anywhere; every query fails only as a DumpError."""
    rng = random.Random(seed)
    run = _closed_run(logdir)
    stream = rng.choice(fmt.STREAMS)
    path = segment_path(run.path, stream)
    data = bytearray(open(path, "rb").read())
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(data))
        action = rng.choice(("flip", "insert", "cut"))
        if action == "flip":
            data[where] = rng.randrange(256)
        elif action == "insert":
            data[where:where] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            del data[where : where + rng.randint(1, 8)]
    open(path, "wb").write(bytes(data))
    try:
        reader = DumpReader(run.path)
    except DumpError:
        return
    run_every_query(reader)
