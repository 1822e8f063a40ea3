"""FULL_TENSOR value codecs (docs/format.md section 6): round trips and damage."""

from __future__ import annotations

import time
import zlib

import numpy as np
import pytest

from instrument.dump.value_encoding import MIN_COMPRESSED_BYTES, encode_value, tensor_value_record
from reader import DumpError, DumpReader
from reader import format as fmt
from reader.values import decode_value, summary_row
from tests.present import present
from tests.synthetic import make_run

RNG = np.random.default_rng(7)
RELU = np.maximum(RNG.normal(size=(64, 32)), 0).astype(np.float32)  # about half zeros


@pytest.mark.parametrize(
    "array,codec",
    [
        (RELU, fmt.CODEC_SHUFFLE_ZLIB),
        (RNG.normal(size=(20, 30)).astype(np.float64) * 0 + 1.5, fmt.CODEC_SHUFFLE_ZLIB),
        (np.arange(600, dtype=np.int64).reshape(3, 200) % 7, fmt.CODEC_SHUFFLE_ZLIB),
        (np.zeros(1000, np.bool_), fmt.CODEC_ZLIB),
        (np.zeros(500, np.uint8), fmt.CODEC_ZLIB),
        ((np.arange(100) * (1 + 1j)).astype(np.complex64), fmt.CODEC_SHUFFLE_ZLIB),
        (np.float16(np.arange(300)).reshape(10, 30), fmt.CODEC_SHUFFLE_ZLIB),
        # Stored raw: too small, or random bytes that do not shrink.
        (np.array([1.0, -2.0, np.inf], np.float32), None),
        (RNG.integers(0, 256, size=4096, dtype=np.uint8), None),
        (np.zeros((0, 7), np.float32), None),
    ],
)
def test_round_trip(array, codec):
    stored = tensor_value_record(array, compress=True)
    assert stored.get("codec") == codec
    if codec is not None:
        assert len(stored["data"]) < array.nbytes
    decoded = decode_value(stored)
    assert decoded is not None
    assert array is not None
    assert decoded.dtype == array.dtype and decoded.shape == array.shape
    np.testing.assert_array_equal(decoded, array)
    # Raw storage decodes to the same array, and encoding is idempotent.
    np.testing.assert_array_equal(decode_value(tensor_value_record(array)), array)
    assert encode_value(stored) is stored


def test_shuffle_layout_is_the_documented_one():
    """shuffle-zlib: byte j of element i at j * count + i, then one zlib stream."""
    array = np.arange(200, dtype="<u2") * 257 + 1
    planes = b"".join(array.tobytes()[j::2] for j in range(2))
    stored = {
        "dtype": "<u2",
        "shape": [200],
        "codec": fmt.CODEC_SHUFFLE_ZLIB,
        "data": zlib.compress(planes, 9),
    }
    np.testing.assert_array_equal(decode_value(stored), array)
    plain = {
        "dtype": "<u2",
        "shape": [200],
        "codec": fmt.CODEC_ZLIB,
        "data": zlib.compress(array.tobytes()),
    }
    np.testing.assert_array_equal(decode_value(plain), array)


def _compressed(array=RELU):
    stored = tensor_value_record(array, compress=True)
    assert stored.get("codec") == fmt.CODEC_SHUFFLE_ZLIB
    return stored


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: {**v, "data": v["data"][: len(v["data"]) // 2]},  # cut short
        lambda v: {**v, "data": v["data"][:10] + bytes(20) + v["data"][30:]},  # garbled
        lambda v: {**v, "data": b"not zlib at all"},
        lambda v: {**v, "data": v["data"] + b"trailing"},
        lambda v: {**v, "shape": [64, 31]},  # decompresses to more than the shape holds
        lambda v: {**v, "shape": [64, 33]},  # to less
        lambda v: {**v, "codec": "zstd"},  # a codec this reader does not know
        lambda v: {**v, "data": None},
    ],
)
def test_corrupt_compressed_value_raises_dump_error(damage):
    stored = damage(_compressed())
    with pytest.raises(DumpError) as raised:
        decode_value(stored)
    assert not isinstance(raised.value, zlib.error)
    # Summaries (computed while indexing) never raise: an undecodable value counts
    # zeros, and its magnitude is unknown.
    row = summary_row(stored)
    assert not row[:9].any() and np.isnan(row[9])


def test_decompression_is_bounded_by_the_shape():
    bomb = {
        "dtype": "<f4",
        "shape": [4],
        "codec": fmt.CODEC_ZLIB,
        "data": zlib.compress(bytes(100 << 20)),
    }
    with pytest.raises(DumpError):
        decode_value(bomb)


def test_dump_round_trip_and_corrupt_value(tmp_path, monkeypatch):
    """Through the writer (which compresses execution values at flush while a core is
    spare) and the reader."""
    from instrument.dump.value_encoding import COMPRESSION

    monkeypatch.setattr(COMPRESSION, "core_is_spare", lambda: True)
    run = make_run(str(tmp_path / "logdir"), mode=fmt.FULL_TENSOR)
    w = run.writer
    small = np.array([1.0, 0.0, -3.0], np.float32)
    broken = dict(_compressed(), data=b"\x78\x01garbage")
    w.add_traces(
        np.array([0, 1, 2], np.int32),
        values=[encode_value(tensor_value_record(RELU)), tensor_value_record(small), broken],
    )
    w.add_execution(
        op_type="Relu",
        graph_id=None,
        input_ids=[],
        output_ids=[3, 4],
        device_ids=[run.device] * 2,
        output_dtypes=[1, 1],
        stack_id=None,
        values=[tensor_value_record(RELU), tensor_value_record(small)],
    )
    w.close()
    reader = DumpReader(run.path)
    np.testing.assert_array_equal(reader.trace_value(0), RELU)
    np.testing.assert_array_equal(reader.trace_value(1), small)
    np.testing.assert_array_equal(reader.execution_value(0, 0), RELU)
    np.testing.assert_array_equal(reader.execution_value(0, 1), small)
    assert reader.execution_record(0)["v"][0]["codec"] == fmt.CODEC_SHUFFLE_ZLIB
    assert "codec" not in reader.execution_record(0)["v"][1]
    summary = reader.trace(0).summary
    assert summary is not None
    assert RELU is not None
    assert summary.size == RELU.size and summary.zero == np.count_nonzero(RELU == 0)
    assert present(present(reader.execution(0).summaries)[1]).neg == 1
    with pytest.raises(DumpError):
        reader.trace_value(2)
    assert present(reader.trace(2).summary).size == 0  # indexed, with an all-zero summary
    assert MIN_COMPRESSED_BYTES > small.nbytes


def test_dense_floats_code_only_the_planes_that_compress():
    """Mantissa planes of dense floats go as stored blocks; the stream is plain zlib."""
    array = RNG.normal(size=20_000).astype(np.float32)
    stored = encode_value(tensor_value_record(array))
    assert stored["codec"] == fmt.CODEC_SHUFFLE_ZLIB
    planes = b"".join(array.tobytes()[j::4] for j in range(4))
    assert zlib.decompress(stored["data"]) == planes  # any zlib reader decodes it
    # Three stored planes (their bytes plus 5-byte block headers) and the exponent
    # plane Huffman-coded to well under its size.
    assert 3 * array.size < len(stored["data"]) < 3.5 * array.size
    np.testing.assert_array_equal(decode_value(stored), array)


def test_a_view_of_the_elements_is_compressed_like_bytes():
    view = tensor_value_record(RELU, copy=False)
    assert isinstance(view["data"], memoryview)
    assert encode_value(view)["data"] == encode_value(tensor_value_record(RELU))["data"]


def test_values_are_compressed_only_while_a_core_is_spare():
    from instrument.dump.value_encoding import SpareCoreCompression

    raw = [tensor_value_record(RELU)]
    assert SpareCoreCompression(cores=1).encode_all(raw) == raw  # not measured yet
    many = SpareCoreCompression(interval_s=0.0, cores=64)
    assert many.encode_all(raw) == raw  # the first call starts the measurement
    assert many.encode_all(raw)[0]["codec"] == fmt.CODEC_SHUFFLE_ZLIB
    one = SpareCoreCompression(interval_s=0.1, cores=1)
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # this thread keeps the only core busy
        pass
    assert not one.core_is_spare()
    assert one.encode_all(raw) == raw


def test_every_thread_s_cpu_counts_the_compressing_too():
    """The process's whole CPU use decides, measured from the first time it is asked.
    (Measuring it without the compressing once kept values compressed on a 2-core box:
    a training that the compressing made wait looked like a spare core.)"""
    from instrument.dump.value_encoding import SpareCoreCompression

    used = [0.0]  # the process's CPU seconds, as the clock reports them
    policy = SpareCoreCompression(interval_s=0.05, cores=2, cpu_time=lambda: used[0])
    assert not policy.core_is_spare()  # not measured yet: the measurement starts now
    time.sleep(0.1)
    used[0] += 0.09  # under one core: one is spare
    assert policy.core_is_spare()
    start = time.monotonic()
    time.sleep(0.1)
    used[0] += 1.5 * (time.monotonic() - start)  # a core and a half, whatever it did
    assert not policy.core_is_spare()
