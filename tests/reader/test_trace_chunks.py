"""Traces of several steps in one ``traces`` chunk (format 2.0, ``xr``): each trace keeps
its own step, and a FULL_TENSOR value is found by its place in the chunk."""

from __future__ import annotations

import numpy as np
import pytest

from instrument.dump.value_encoding import tensor_value_record
from reader import DumpReader
from reader import format as fmt
from tests.instrument.dump_loader import decode_file
from tests.synthetic import FINITE, NAN, add_step, make_run, segment_path


def _chunks(path):
    records, _ = decode_file(segment_path(path, fmt.STREAM_GRAPH_TRACES))
    return [r for r in records if r["k"] == fmt.KIND_TRACES]


def test_steps_of_a_chunk_spanning_calls(logdir):
    run = make_run(logdir)
    calls = [add_step(run, [FINITE] * k) for k in (2, 3, 1)]  # no flush in between
    run.writer.flush()
    add_step(run, [FINITE, NAN])  # a chunk of its own: one step, `x`
    run.writer.close()
    first, second = _chunks(run.path)
    assert "x" not in first and np.frombuffer(first["xr"], "<i8").reshape(-1, 2).tolist() == [
        [calls[0], 2],
        [calls[1], 3],
        [calls[2], 1],
    ]
    assert second["x"] == calls[2] + 1 and "xr" not in second
    reader = DumpReader(run.path)
    assert (
        reader.trace_steps(0, 8).tolist()
        == [calls[0]] * 2 + [calls[1]] * 3 + [calls[2]] + [calls[2] + 1] * 2
    )
    assert [reader.trace(i).step for i in range(8)] == reader.trace_steps(0, 8).tolist()
    alert = reader.alerts().alerts[0]  # then the call's own output
    assert (alert.kind, alert.index, alert.step) == ("graph", 7, calls[2] + 1)


@pytest.mark.parametrize("flush_between", [False, True])
def test_full_tensor_values_by_position_in_a_multi_step_chunk(logdir, flush_between):
    run = make_run(logdir, mode=fmt.FULL_TENSOR)
    w = run.writer
    arrays = [np.arange(k + 1, dtype=np.float32) * (k + 1) for k in range(5)]
    for step, (a, b) in enumerate([(0, 2), (2, 5)]):
        w.add_traces(
            np.arange(b - a, dtype=np.int32),
            values=[tensor_value_record(x) for x in arrays[a:b]],
            step=step,
        )
        if flush_between:
            w.flush()
    w.close()
    assert len(_chunks(run.path)) == (2 if flush_between else 1)
    reader = DumpReader(run.path)
    for i, expected in enumerate(arrays):
        np.testing.assert_array_equal(reader.trace_value(i), expected)
    assert reader.trace_steps(0, 5).tolist() == [0, 0, 1, 1, 1]
