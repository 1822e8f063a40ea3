"""FULL_TENSOR batches drained many a dequeue, cut back exactly, written only if kept."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from instrument.dump.writer import DumpWriter  # noqa: E402
from instrument.tracing import trace_queue, value_batches, value_drain  # noqa: E402
from reader import format as fmt  # noqa: E402
from reader.values import decode_value  # noqa: E402


def stored(record: dict) -> dict:
    """A value record as the reader gets it (its data bytes, not a view)."""
    return msgpack.unpackb(msgpack.packb(record, use_bin_type=True), raw=False)


def drained_queue() -> tuple[trace_queue.TraceQueue, list[tuple]]:
    received: list[tuple] = []

    def sink(trace_points, rows, values, ordinals, alert):
        received.append(
            (
                trace_points.tolist(),
                [decode_value(stored(v)) for v in values],
                ordinals.tolist(),
                alert,
            )
        )

    return trace_queue.TraceQueue(fmt.FULL_TENSOR, sink), received


def two_batches(queue: trace_queue.TraceQueue, strings: bool = False):
    """A function whose call enqueues two batches of values of several dtypes and sizes
    (the first's fourth, with ``strings``, the values as text, which travel as a
    serialized proto; the second's first ``log(x)``, and its dtypes all 4 bytes or a
    multiple)."""

    @tf.function(autograph=False)
    def f(x):
        text = tf.strings.as_string(x) if strings else tf.reverse(x, [0])
        first = [
            (x * 2.0, 0),
            (tf.cast(x, tf.int32), 1),
            (x > 0.0, 2),
            (text, 3),
            (tf.zeros([0, 3]), 4),
            (tf.cast(x, tf.bfloat16), 5),
        ]
        after = queue.enqueue_batch([queue.batch_row(t, tp) for t, tp in first], None)
        # Words only (dtypes of 4 bytes or a multiple): concatenated as float32.
        second = [
            (tf.math.log(x), 6),
            (tf.reshape(tf.tile(x, [100]), [10, 30]), 7),
            (tf.cast(x, tf.int64), 8),
            (tf.cast(x, tf.complex64), 9),
            (tf.reduce_sum(tf.cast(x, tf.float64)), 10),
            (tf.zeros([0]), 11),
        ]
        queue.enqueue_batch([queue.batch_row(t, tp) for t, tp in second], after)
        return x

    return f


def expected(x: np.ndarray, strings: bool = False) -> list[np.ndarray]:
    log = tf.math.log(x).numpy()  # TensorFlow's, which numpy's may differ from by an ulp
    text = np.array([f"{v:f}" for v in x], object) if strings else x[::-1]
    return [
        x * 2,
        x.astype(np.int32),
        x > 0,
        text,
        np.zeros((0, 3), np.float32),
        x,
        log,
        np.tile(x, 100).reshape(10, 30),
        x.astype(np.int64),
        x.astype(np.complex64),
        np.float64(x.sum(dtype=np.float64)),
        np.zeros(0, np.float32),
    ]


def assert_values(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for value, ref in zip(got, want):
        assert value.shape == ref.shape
        if ref.dtype != object:
            assert value.dtype == ref.dtype
        np.testing.assert_array_equal(value, ref)


def test_batches_of_two_calls_are_one_dequeue_cut_back_exactly():
    """Four batches of two calls (the queue's capacity) of different lengths and byte
    sizes wait; one dequeue takes them all, padded to the longest, and each is cut back
    by its count: every value is exact, in order, with its call's ordinal. The second
    call's ``log`` of a negative is NaN: batches of two calls hold it, so the sink is
    left to find which (alert None); the first call alone holds none (False)."""
    queue, received = drained_queue()
    f = two_batches(queue)
    inputs = [np.array([1.0, 2.0, 3.5], np.float32), np.array([4.0, -1.0, 0.5], np.float32)]
    for x in inputs:
        f(tf.constant(x))
        queue.call_finished()
    assert queue.drain() == 24
    [(trace_points, values, ordinals, alert)] = received
    assert trace_points == list(range(12)) * 2
    assert ordinals == [0] * 12 + [1] * 12
    assert_values(values, expected(inputs[0]) + expected(inputs[1]))
    assert alert is None
    received.clear()
    f(tf.constant(inputs[0]))
    queue.call_finished()
    assert queue.drain() == 12 and received[0][3] is False
    f(tf.constant(inputs[1]))
    assert queue.drain() == 12 and received[1][3] is True  # one call: its own alert


def test_large_batches_and_dynamic_shapes_are_dequeued_one_at_a_time(monkeypatch):
    """Batches larger than the drain's byte budget, or of a size known only when they
    run (a shape known then, strings), are taken one a dequeue (no padded copy); their
    values are as exact."""
    monkeypatch.setattr(value_drain, "DRAIN_BYTES", 100)
    queue, received = drained_queue()
    f = two_batches(queue)
    x = np.array([1.0, 2.0, 3.5], np.float32)
    f(tf.constant(x))
    queue.call_finished()
    assert queue.drain() == 12 and len(received) == 2
    assert_values([v for _, values, _, _ in received for v in values], expected(x))

    monkeypatch.setattr(value_drain, "DRAIN_BYTES", 1 << 22)
    dynamic, dynamic_received = drained_queue()
    g = tf.function(
        two_batches(dynamic).python_function,
        input_signature=[tf.TensorSpec([None], tf.float32)],
        autograph=False,
    )
    g(tf.constant(x))
    assert dynamic.drain() == 12 and len(dynamic_received) == 2

    text, text_received = drained_queue()
    two_batches(text, strings=True)(tf.constant(x))
    assert text.drain() == 12 and len(text_received) == 2
    assert_values(
        [v for _, values, _, _ in text_received for v in values], expected(x, strings=True)
    )


def hand_batch(values: list[np.ndarray], first_tp: int, pad: int = 0) -> value_batches.PackedBatch:
    """The components of a batch of float32 values as a dequeue of several pads them."""
    data = b"".join(v.tobytes() for v in values)
    return value_batches.PackedBatch(
        [
            np.int32(len(values)),
            np.arange(first_tp, first_tp + len(values) + pad, dtype=np.int32),
            np.full(len(values) + pad, 1, np.int32),  # DT_FLOAT
            np.array([v.ndim for v in values] + [0] * pad, np.int32),
            np.array([d for v in values for d in v.shape] + [0] * pad, np.int64),
            np.array([v.nbytes for v in values] + [0] * pad, np.int64),
            np.frombuffer(data + b"\0" * (4 * pad), np.uint8),
            np.array([b""] * (len(values) + pad), object),
        ]
    )


def test_packed_values_cut_anywhere_are_the_records_of_those_values():
    """Slices of the values of several batches (padded as a dequeue pads them), across
    the batches' boundaries, make the records of exactly the values sliced, in order."""
    arrays = [np.full((i % 3 + 1, 2), i, np.float32) for i in range(9)]
    batches = [
        hand_batch(arrays[:4], 0, pad=3),
        hand_batch(arrays[4:5], 4, pad=1),
        hand_batch(arrays[5:], 5),
    ]
    values = value_batches.PackedValues.of(batches)
    assert len(values) == 9 and values.nbytes == sum(a.nbytes for a in arrays)
    for start in range(10):
        for stop in range(start, 10):
            got = [decode_value(stored(v)) for v in values[start:stop]]
            assert len(got) == len(arrays[start:stop])
            for value, ref in zip(got, arrays[start:stop]):
                np.testing.assert_array_equal(value, ref)
    assert not values.holds_nonfinite()


def test_values_a_circular_buffer_drops_are_never_cut(tmp_path, monkeypatch):
    """Under a circular buffer of 10, 100 traces of drained batches arrive between two
    flushes: only the batches of the segments the flush writes are cut into records,
    and what is written is exact."""
    cut: list[int] = []
    records = value_batches.PackedBatch.records

    def counted(self, start=0, end=None):
        made = records(self, start, end)
        cut.append(len(made))
        return made

    monkeypatch.setattr(value_batches.PackedBatch, "records", counted)
    writer = DumpWriter(
        str(tmp_path),
        {"tensor_debug_mode": fmt.FULL_TENSOR},
        circular_buffer_size=10,
        flush_interval_s=None,
    )
    arrays = [np.full(3, i, np.float32) for i in range(100)]
    for first in range(0, 100, 5):
        batch = hand_batch(arrays[first : first + 5], first)
        # What the drain hands the writer, as `value_drain` does (typed there as Any).
        packed: Any = value_batches.PackedValues.of([batch])
        writer.add_traces(batch.trace_points, values=packed, step=first // 5, alert=False)
    writer.flush()
    writer.close()
    assert 0 < sum(cut) <= 30  # the last two segments (and the one filling), not 100
    import reader

    with reader.open_run(tmp_path) as dump:
        traces = dump.traces(0, dump.num_traces)
        assert len(traces) >= 10
        for trace in traces:  # the trace points are the values' indices
            np.testing.assert_array_equal(dump.trace_value(trace.index), arrays[trace.trace_point])
