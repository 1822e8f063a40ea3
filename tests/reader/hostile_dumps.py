"""Hostile dumps: real-shaped runs holding valid msgpack with hostile values.

Each case appends records the writer would never write (an id of 2**62, a chunk index
past 2**63, a value that inflates to a gigabyte) to a small closed run made with
`tests.synthetic`. The reader must skip such a record as damage, or refuse the
dump with one line; never raise anything else, hang or take unbounded memory.
"""

from __future__ import annotations

import functools
import os
import zlib
from collections.abc import Callable

import msgpack
import numpy as np

from reader import DumpError, DumpReader
from reader import format as fmt
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run, segment_path

# The hostile-dump searches' seed unless HOSTILE_SEED names another (tests/conftest.py
# prints it after the session).
HOSTILE_SEED = 43


def hostile_seed() -> int:
    """The seed of the property-based hostile-dump searches this session."""
    return int(os.environ.get("HOSTILE_SEED", HOSTILE_SEED))


# The case names, as `python -m tests.reader.hostile_dumps CASE LOGDIR` takes them.
CASES: dict[str, Callable[[str], str]] = {}


def _case(function: Callable[[str], str], name: str | None = None) -> Callable[[str], str]:
    CASES[name or function.__name__.removeprefix("write_")] = function
    return function


def closed_run(logdir: str, mode: str = fmt.FULL_HEALTH) -> str:
    """A small closed run with one alert (a -inf in Log); returns its path."""
    run = make_run(logdir, mode=mode)
    if mode == fmt.FULL_HEALTH:
        add_step(run, [FINITE, FINITE, FINITE])
        add_step(run, [FINITE, NEG_INF, NAN])
    run.writer.close()
    return run.path


_case(closed_run, "honest")  # the baseline: the same run, nothing hostile


def append_records(run_path: str, stream: str, *records: dict, segment: int = 0) -> None:
    """Append ``records`` (packed as given) to a segment of ``run_path``."""
    with open(segment_path(run_path, stream, segment), "ab") as file:
        for record in records:
            file.write(msgpack.packb(record, use_bin_type=True))


def _op(ident: int, name: str, tps: list, **changes) -> dict:
    record = {
        "k": fmt.KIND_OP,
        "id": ident,
        "graph": 0,
        "type": "Exp",
        "name": name,
        "inputs": ["Neg:0"],
        "num_outputs": len(tps),
        "dtypes": [1] * len(tps),
        "device": None,
        "stack": None,
        "tps": tps,
    }
    record.update(changes)
    return record


def _device_case(device_id: int) -> Callable[[str], str]:
    def write(logdir: str) -> str:
        path = closed_run(logdir)
        append_records(
            path,
            fmt.STREAM_METADATA,
            {"k": fmt.KIND_DEVICE, "id": device_id, "name": "/device:GPU:0"},
        )
        return path

    return write


write_device_id_1e9 = _case(_device_case(10**9), "device_id_1e9")
write_device_id_2_62 = _case(_device_case(1 << 62), "device_id_2_62")
write_device_id_2_64 = _case(_device_case((1 << 64) - 1), "device_id_2_64")


def _trace_point_case(tp: int) -> Callable[[str], str]:
    def write(logdir: str) -> str:
        path = closed_run(logdir)
        append_records(path, fmt.STREAM_GRAPHS, _op(3, "Exp", [tp]))
        return path

    return write


write_trace_point_1e8 = _case(_trace_point_case(10**8), "trace_point_1e8")
write_trace_point_1e9 = _case(_trace_point_case(10**9), "trace_point_1e9")
write_trace_point_2_63 = _case(_trace_point_case(1 << 63), "trace_point_2_63")


@_case
def write_op_id_2_63(logdir: str) -> str:
    path = closed_run(logdir)
    append_records(path, fmt.STREAM_GRAPHS, _op((1 << 63) + 5, "Exp", [3]))
    return path


def _traces(first: int, n: int = 1, **changes) -> dict:
    record = {
        "k": fmt.KIND_TRACES,
        "i": first,
        "n": n,
        "x": 1,
        "tp": np.zeros(n, "<i4").tobytes(),
        "sc": 9,
        "s": np.array([FINITE] * n, "<f8").tobytes(),
    }
    record.update(changes)
    return record


@_case
def write_trace_index_2_63(logdir: str) -> str:
    path = closed_run(logdir)
    append_records(path, fmt.STREAM_GRAPH_TRACES, _traces((1 << 63) + 7))
    return path


@_case
def write_trace_step_2_63(logdir: str) -> str:
    path = closed_run(logdir)
    append_records(path, fmt.STREAM_GRAPH_TRACES, _traces(6, x=(1 << 64) - 1))
    return path


@_case
def write_metadata_id_2_32(logdir: str) -> str:
    """A device record whose id was shifted by 2**32, then a record whose kind is False."""
    path = closed_run(logdir)
    append_records(
        path,
        fmt.STREAM_METADATA,
        {"k": fmt.KIND_DEVICE, "id": (1 << 32) + 0, "name": "/device:CPU:0"},
        {"k": False, "id": 1},
    )
    return path


# 1 GiB of zeros deflates to about 4.5 MiB: the bomb's declared shape is honest.
BOMB_BYTES = 1 << 30
# Zeros are compressed in blocks of this many bytes (`zlib_of_zeros`).
_ZEROS_BLOCK = 1 << 24


@functools.lru_cache(maxsize=8)
def zlib_of_zeros(size: int) -> bytes:
    """A zlib stream of ``size`` zero bytes, made without compressing them all.

    After a full flush deflate starts afresh, so every further block of zeros compresses
    to the same bytes: the stream is the first block, the second repeated, the rest, and
    the Adler-32 of ``size`` zeros, ``(size mod 65521) << 16 | 1``. (Compressing 1 GiB
    took 1.3 s; this takes 0.07 s.)
    """
    blocks, rest = divmod(size, _ZEROS_BLOCK)
    compressor = zlib.compressobj(1)
    if blocks < 2:
        return compressor.compress(bytes(size)) + compressor.flush()
    block = bytes(_ZEROS_BLOCK)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.compress(bytes(rest)) + compressor.flush()
    checksum = ((size % 65521) << 16 | 1).to_bytes(4, "big")
    return b"".join((first, repeated * (blocks - 1), end[:-4], checksum))


def bomb_value(
    size: int = BOMB_BYTES, codec: str = fmt.CODEC_ZLIB, shape: list[int] | None = None
) -> dict:
    """A float32 value of ``size`` zero bytes, compressed with ``codec``."""
    return {
        "dtype": "<f4",
        "shape": shape if shape is not None else [size // 4],
        "codec": codec,
        "data": zlib_of_zeros(size),
    }


@_case
def write_value_bomb(logdir: str) -> str:
    """A FULL_TENSOR trace whose compressed value inflates to 1 GiB."""
    path = closed_run(logdir, mode=fmt.FULL_TENSOR)
    append_records(
        path,
        fmt.STREAM_GRAPH_TRACES,
        {
            "k": fmt.KIND_TRACES,
            "i": 0,
            "n": 1,
            "x": 0,
            "tp": np.zeros(1, "<i4").tobytes(),
            "v": [bomb_value()],
        },
    )
    return path


@_case
def write_exec_value_bomb(logdir: str) -> str:
    """An eager execution whose compressed FULL_TENSOR value inflates to 1 GiB."""
    from instrument.dump.columnar_chunks import ExecutionChunk

    path = closed_run(logdir, mode=fmt.FULL_TENSOR)
    chunk = ExecutionChunk(0, 0)
    chunk.add(
        op_type="Exp",
        graph_id=None,
        input_ids=[1],
        output_ids=[2],
        device_ids=[0],
        output_dtypes=[1],
        stack_id=None,
        summaries=None,
        values=[bomb_value()],
        time_s=1.0,
        call_ordinal=None,
        thread=None,
    )
    record: dict = {}
    chunk.pack_into(record)
    append_records(path, fmt.STREAM_EXECUTIONS, record)
    return path


def run_every_query(reader: DumpReader) -> None:
    """Ask ``reader`` everything a user can; each query may fail only as a `DumpError`."""
    for query in (
        lambda: reader.alerts(),
        lambda: reader.root_cause(),
        lambda: reader.traces(0, reader.num_traces),
        lambda: reader.executions(0, reader.num_executions),
        lambda: [reader.op(o) for o in range(4)],
        lambda: reader.graphs(),
        lambda: [reader.stack(s) for s in range(3)],
        lambda: reader.find_trace("Log", 0),
        lambda: reader.metadata,
        lambda: reader.steps(),
        lambda: reader.harm(),
        lambda: reader.trends(),
        lambda: [reader.place(a) for a in reader.alerts().alerts],
    ):
        try:
            query()
        except DumpError:
            pass  # an error of ours is the expected way to fail


if __name__ == "__main__":
    import sys

    print(CASES[sys.argv[1]](os.path.abspath(sys.argv[2])))
