"""The TF1 route's host buffer: FULL_TENSOR values past its byte bound are written at once."""

from __future__ import annotations

import numpy as np

from instrument.tracing.host_trace_buffer import HOST_BUFFER_MAX_BYTES, HostTraceBuffer
from reader.values import decode_value
from tests.present import present


def test_full_tensor_values_past_the_bound_are_drained_by_the_handing_thread():
    received = []
    buffer = HostTraceBuffer(
        "FULL_TENSOR",
        lambda tps, rows, values, ordinals, alert: received.append((tps.tolist(), values)),
    )
    quarter = np.arange(HOST_BUFFER_MAX_BYTES // 16, dtype=np.float32)  # a quarter of the bound
    for trace_point in range(4):
        buffer._append(trace_point, quarter)  # what the graph's py_func calls
    assert received == []  # at the bound, not past it: the background drain's job
    buffer._append(4, quarter)
    [(trace_points, values)] = received
    assert trace_points == [0, 1, 2, 3, 4]
    for value in present(values):
        np.testing.assert_array_equal(present(decode_value(value)), quarter)
    assert buffer.drain() == 0  # nothing left behind
