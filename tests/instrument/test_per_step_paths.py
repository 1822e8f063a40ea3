"""The per-step paths made cheap keep their results: zero-copy packing is msgpack's
bytes, the raw counter op counts, in-place views read the values, the chunked
finiteness check finds the one NaN."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from instrument.dump.flight_recorder import values_alert
from instrument.dump.record_file import LARGE_BINARY_BYTES, pack_pieces
from instrument.dump.value_encoding import tensor_value_record


def test_packed_pieces_are_msgpacks_bytes():
    packer = msgpack.Packer(use_bin_type=True)
    big = np.arange(LARGE_BINARY_BYTES, dtype=np.float32)  # four times the threshold
    record = {
        "k": "traces",
        "i": 7,
        "tp": b"\x01\x00\x00\x00",
        "v": [
            tensor_value_record(big, copy=False),
            tensor_value_record(big[:3]),
            {
                "dtype": "<u1",
                "shape": [LARGE_BINARY_BYTES],
                "data": bytes(LARGE_BINARY_BYTES),
            },  # exactly the threshold: bin 32
            {
                "dtype": "<u1",
                "shape": [LARGE_BINARY_BYTES - 1],
                "data": bytes(LARGE_BINARY_BYTES - 1),
            },
        ]  # one less: bin 16
        + [{"n": i} for i in range(17)],
        **{f"column{i}": i for i in range(16)},  # a map of more than 15 keys
    }
    pieces = pack_pieces(packer, record)
    assert b"".join(bytes(p) for p in pieces) == packer.pack(record)
    # The large values are written from their own memory, between joined small runs.
    views = [p for p in pieces if isinstance(p, memoryview)]
    assert len(views) == 2 and np.shares_memory(np.frombuffer(views[0], np.float32), big)
    assert msgpack.unpackb(b"".join(bytes(p) for p in pieces))["i"] == 7
    small = {"k": "x", "data": b"abc"}
    assert pack_pieces(packer, small) == [packer.pack(small)]


def test_values_alert_finds_nan_and_infinity_anywhere():
    values = np.ones(3 * (1 << 15) + 5, dtype=np.float32)
    assert not values_alert([tensor_value_record(values)])
    values[-1] = np.nan
    assert values_alert([tensor_value_record(values[:4]), tensor_value_record(values)])
    values[-1] = -np.inf
    assert values_alert([tensor_value_record(values.astype(np.float16))])
    values[-1] = 1.0
    for position, bad in ((0, np.nan), (17, np.inf), (-2, -np.inf)):
        for dtype in (np.float16, np.float32, np.float64):
            tainted = values.astype(dtype)
            tainted[position] = bad
            assert values_alert([tensor_value_record(tainted)]), (position, bad, dtype)
    assert not values_alert([tensor_value_record(values.astype(np.complex64))])
    complex_values = values.astype(np.complex128)
    complex_values[5] = complex(1.0, np.nan)
    assert values_alert([tensor_value_record(complex_values)])
    complex_values[5] = complex(-np.inf, 0.0)
    assert values_alert([tensor_value_record(complex_values)])
    # Integers are never alerts; empty values are finite.
    assert not values_alert(
        [tensor_value_record(np.arange(5)), tensor_value_record(np.zeros(0, np.float32))]
    )


def test_raw_counter_op_and_host_view(monkeypatch):
    tf = pytest.importorskip("tensorflow")
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.ops import gen_resource_variable_ops

    from instrument.tf_internals import eager_runtime

    counter = tf.Variable(tf.constant(0, dtype=tf.int64))
    one = tf.constant(1, dtype=tf.int64)
    attrs = ("dtype", tf.int64.as_datatype_enum)
    fallback = gen_resource_variable_ops.assign_add_variable_op
    raw = eager_runtime.raw_eager_op("AssignAddVariableOp", attrs, fallback)
    assert raw is not fallback
    for _ in range(3):
        raw(counter.handle, one)
    assert int(counter.numpy()) == 3
    # Without the internal: the op wrapper, which counts the same.
    monkeypatch.delattr(pywrap_tfe, "TFE_Py_Execute")
    slow = eager_runtime.raw_eager_op("AssignAddVariableOp", attrs, fallback)
    monkeypatch.undo()
    assert slow is fallback
    slow(counter.handle, one)
    assert int(counter.numpy()) == 4

    value = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    view = eager_runtime.host_view(value)
    np.testing.assert_array_equal(view, np.arange(12).reshape(3, 4))
    assert not view.flags.writeable
    del value  # the view keeps the tensor's memory alive
    np.testing.assert_array_equal(view.sum(), 66)

    class NoView:
        def numpy(self):
            return np.zeros(2)

    np.testing.assert_array_equal(eager_runtime.host_view(NoView()), [0, 0])


def test_a_record_file_writes_large_values_whole(tmp_path):
    """Values of megabytes go out in writes of at most WRITE_BYTES, and read back."""
    from instrument.dump.record_file import WRITE_BYTES, RecordFile

    values = [np.arange(n, dtype=np.float64) for n in (3 * WRITE_BYTES // 8 + 5, 7, 1 << 16)]
    file = RecordFile(str(tmp_path / "segment"), {"k": "header"})
    record = {"k": "traces", "v": [tensor_value_record(v, copy=False) for v in values]}
    file.append({}, encode=lambda r: r.update(record), size_hint=1)
    file.append({"k": "after"})
    file.close()
    unpacker = msgpack.Unpacker(open(tmp_path / "segment", "rb"), raw=False)
    header, traces, after = list(unpacker)
    assert header == {"k": "header"} and after == {"k": "after"}
    for stored, value in zip(traces["v"], values):
        np.testing.assert_array_equal(np.frombuffer(stored["data"], "<f8"), value)


def test_a_batchs_finiteness_off_its_bytes_is_the_values():
    """`PackedBatch.holds_nonfinite` reads a drained FULL_TENSOR batch's bytes run by run
    of one dtype, and finds what `values_alert` finds in its values, in every float dtype
    the batch carries (bfloat16 by its bits, complex by both parts), wherever the NaN
    or infinity is, next to integers, bools and strings (serialized protos)."""
    tf = pytest.importorskip("tensorflow")
    from instrument.tracing import value_batches

    def batch(specs):
        @tf.function(autograph=False)
        def components():
            tensors = [tf.constant(value, dtype=dtype) for value, dtype in specs]
            return value_batches.pack(tensors, list(range(len(tensors))))

        packed = value_batches.PackedBatch([c.numpy() for c in components()])
        return packed.holds_nonfinite(), values_alert(packed.records())

    finite = np.linspace(-3.0, 3.0, 37)
    dtypes = (tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.complex64)
    others = [([1, 2, 3], tf.int32), ([True, False], tf.bool), (["a", "b"], tf.string)]
    # Two of a dtype side by side make one run; a different dtype starts the next.
    clean = [(finite, d) for d in dtypes for _ in range(2)] + others
    assert batch(clean) == (False, False)
    for at in range(len(dtypes) * 2):
        for bad in (np.nan, np.inf, -np.inf):
            for position in (0, 17, -1):
                tainted = finite.copy()
                tainted[position] = bad
                specs = list(clean)
                specs[at] = (tainted, clean[at][1])
                assert batch(specs) == (True, True), (at, bad, position)
    imaginary = finite + 1j * np.where(finite > 2.9, np.nan, 0.0)
    assert batch(others + [(imaginary, tf.complex64)]) == (True, True)
    assert batch(others) == (False, False)


@pytest.mark.parametrize("chunk", [8, 1 << 18], ids=["chunks", "whole"])
def test_a_batch_of_words_and_bools_is_checked_and_cut_exactly(monkeypatch, chunk):
    """A batch of 4- and 8-byte dtypes and bools travels as float32 words (a bool as
    0.0 or 1.0): its records are those the bytes route makes of the same tensors, and
    its finiteness is `values_alert`'s when it is read as float32 words (the values of
    the words that read as NaN or infinity then decide), whole or in chunks of 8 words,
    next to integers that read as NaN (-1) and float64 values whose low word reads as
    NaN."""
    tf = pytest.importorskip("tensorflow")
    from instrument.dump import flight_recorder
    from instrument.tracing import value_batches

    monkeypatch.setattr(flight_recorder, "FINITE_CHUNK", chunk)

    def packed(specs):
        @tf.function(autograph=False)
        def components():
            tensors = [tf.constant(value, dtype=dtype) for value, dtype in specs]
            return value_batches.pack(tensors, list(range(len(tensors))))

        return value_batches.PackedBatch([c.numpy() for c in components()])

    def batch(specs):
        got = packed(specs)
        return got.holds_nonfinite(), values_alert(got.records())

    finite = np.linspace(-3.0, 3.0, 37)
    low_word_nan = (np.full(5, 0x3FF00000_7FC00000, np.uint64)).view(np.float64)
    floats = [
        (finite, tf.float32),
        (finite, tf.float64),
        (finite, tf.complex64),
        (finite, tf.complex128),
        (low_word_nan, tf.float64),
    ]
    others = [
        ([-1, 1, -7], tf.int32),
        ([True, False, True], tf.bool),
        ([-1, 2**62], tf.int64),
        ([2**64 - 1], tf.uint64),
        (True, tf.bool),
    ]
    clean = [spec for pair in zip(floats, others) for spec in pair]
    assert batch(clean) == (False, False)
    # A batch of words is decided by its words, another run by run.
    assert packed(clean)._words_hold_nonfinite() is False
    assert packed(clean + [([1.0], tf.float16)])._words_hold_nonfinite() is None
    for at, (_, dtype) in enumerate(clean):
        if not dtype.is_floating and not dtype.is_complex:
            continue
        for bad in (np.nan, np.inf, -np.inf):
            for position in (0, 17, -1):
                tainted = np.array(clean[at][0], dtype=np.float64)
                tainted[position % len(tainted)] = bad
                specs = list(clean)
                specs[at] = (tainted, dtype)
                assert batch(specs) == (True, True), (at, bad, position)

    words = packed(clean)
    assert value_batches._BOOL_WORDS in words._enums.tolist()
    as_bytes = packed(clean + [([1.0, 2.0, 3.0], tf.float16)])  # not words: bytes
    assert value_batches._BOOL not in words._enums.tolist()
    assert value_batches._BOOL in as_bytes._enums.tolist()
    packer = msgpack.Packer(use_bin_type=True)
    assert [packer.pack(r) for r in words.records()] == [
        packer.pack(r) for r in as_bytes.records()[: len(clean)]
    ]
