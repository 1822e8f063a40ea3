"""How a run's parts are put and read (format 3.0 on object stores): a part worth it
is put compressed and read inflated, in a bucket or copied down to a disk; parts of an older writer
(never compressed) still read; a compressed part that does not inflate to what its
name says is damage, with everything before it kept; small parts of the executions
and graph traces are held back for a later flush, definitions never."""

from __future__ import annotations

import os
import uuid

import numpy as np
import pytest
import zstandard

import reader
from instrument.dump import segment_sinks
from instrument.dump.writer import DumpWriter
from reader import format as fmt
from reader import object_store
from tests.cloud.test_bucket_logdirs import contents
from tests.present import present
from tests.synthetic import FINITE, NAN, add_step, make_run

TRACES_PER_FLUSH = 500  # some 38 KB of traces a flush: worth compressing
# The least bytes a flush's traces make (76 a trace).
FLUSH_BYTES = TRACES_PER_FLUSH * 70


def _write(logdir: str, flushes: int = 3):
    """A run whose graph traces make one part of `TRACES_PER_FLUSH` traces a flush,
    the last flush's last trace a NaN."""
    run = make_run(logdir)
    rng = np.random.default_rng(3)
    for flush in range(flushes):
        rows = np.tile(np.array(FINITE, dtype=np.float64), (TRACES_PER_FLUSH, 1))
        rows[:, 6] = rng.integers(0, 3, TRACES_PER_FLUSH)
        if flush == flushes - 1:
            rows[-1] = NAN
        run.writer.add_traces(np.arange(TRACES_PER_FLUSH, dtype=np.int32) % 3, summaries=rows)
        run.writer.add_execution(
            op_type="__inference_step_7",
            graph_id=run.graph,
            input_ids=[],
            output_ids=[],
            device_ids=[run.device],
            output_dtypes=[],
            stack_id=run.user_stack,
        )
        run.writer.flush()
    run.writer.close()
    return run


def _names(s3fs_client, run_path: str) -> list[str]:
    return sorted(p.rpartition("/")[2] for p in s3fs_client.ls(run_path.removeprefix("s3://")))


def _download(s3fs_client, run_path: str, directory) -> str:
    """The run's objects copied into ``directory/<run id>`` (a bucket copied down)."""
    run_id = run_path.rstrip("/").rpartition("/")[2]
    os.makedirs(directory / run_id)
    for path in s3fs_client.ls(run_path.removeprefix("s3://")):
        s3fs_client.get(path, str(directory / run_id / path.rpartition("/")[2]))
    return str(directory / run_id)


def test_parts_worth_it_are_compressed_and_read_as_the_run_on_disk(bucket, s3fs_client, tmp_path):
    run = _write(f"{bucket}/logdir")
    local = _write(str(tmp_path / "logdir"))
    names = _names(s3fs_client, run.path)
    parsed = [fmt.parse_part_filename(name) for name in names]
    squeezed = [p for p in parsed if p is not None and p.raw_size is not None]
    # The trace parts are compressed, the header parts and small ones are not.
    assert {p.stream for p in squeezed} == {fmt.STREAM_GRAPH_TRACES}, names
    assert len(squeezed) == 3 and all(present(p.raw_size) > FLUSH_BYTES for p in squeezed), names
    sizes = {
        info["name"].rpartition("/")[2]: info["size"]
        for info in s3fs_client.ls(run.path.removeprefix("s3://"), detail=True)
    }
    assert all(
        sizes[fmt.part_filename(p.stream, p.segment, p.part, p.raw_size)] < present(p.raw_size) / 4
        for p in squeezed
    )
    with reader.open_run(run.path) as dump, reader.open_run(local.path) as same:
        assert dump.num_traces == 3 * TRACES_PER_FLUSH
        assert contents(dump) == contents(same)
    # Opened again from the cache, and from a copy on a local disk.
    copied = _download(s3fs_client, run.path, tmp_path / "copied")
    with (
        reader.open_run(run.path) as dump,
        reader.open_run(local.path) as same,
        reader.open_run(copied) as copy,
    ):
        assert contents(dump) == contents(same) == contents(copy)


def test_parts_of_a_writer_that_compressed_none_still_read(
    bucket, s3fs_client, tmp_path, monkeypatch
):
    """A 2.3 or 2.4 writer's parts (never compressed) are read as before."""
    monkeypatch.setattr(segment_sinks, "worth_compressing", lambda data: False)
    run = _write(f"{bucket}/logdir")
    local = _write(str(tmp_path / "logdir"))
    assert all(
        present(fmt.parse_part_filename(n)).raw_size is None for n in _names(s3fs_client, run.path)
    )
    copied = _download(s3fs_client, run.path, tmp_path / "copied")
    with (
        reader.open_run(run.path) as dump,
        reader.open_run(local.path) as same,
        reader.open_run(copied) as copy,
    ):
        assert contents(dump) == contents(same) == contents(copy)


def _damage(data: bytes, raw_size: int, how: str) -> tuple[bytes, int]:
    """A compressed part's bytes and the size its name claims, damaged ``how``."""
    if how == "flipped":
        return data[:20] + bytes(b ^ 0xFF for b in data[20:60]) + data[60:], raw_size
    if how == "claims more than it holds":
        return data, raw_size + 1
    if how == "claims more than Zstandard allows":
        return data[:1], raw_size
    if how == "larger than its bytes compress to":
        return data, 100  # never fetched: it could be any size
    if how == "its frame says another size":  # (one a frame of that size would fill)
        raw = zstandard.ZstdDecompressor().decompress(data, max_output_size=raw_size)
        return zstandard.ZstdCompressor(write_checksum=True).compress(raw + b"\0"), raw_size
    assert how == "garbage after the stream"
    return data + b"\0" * 16, raw_size


DAMAGES = (
    "flipped",
    "claims more than it holds",
    "claims more than Zstandard allows",
    "larger than its bytes compress to",
    "its frame says another size",
    "garbage after the stream",
)


@pytest.mark.parametrize("where", ["bucket", "copied down"])
@pytest.mark.parametrize("how", DAMAGES)
def test_a_compressed_part_that_does_not_inflate_is_damage_after_what_came_before(
    bucket, s3fs_client, tmp_path, how, where
):
    run = _write(f"{bucket}/logdir")
    second = next(
        name
        for name in _names(s3fs_client, run.path)
        if name.startswith("graph_traces.000000.000002.")
    )
    parsed = fmt.parse_part_filename(second)
    assert parsed is not None
    key = f"{run.path.removeprefix('s3://')}/{second}"
    data, claimed = _damage(s3fs_client.cat_file(key), present(parsed.raw_size), how)
    s3fs_client.rm_file(key)
    renamed = fmt.part_filename(parsed.stream, parsed.segment, parsed.part, claimed)
    s3fs_client.pipe_file(f"{run.path.removeprefix('s3://')}/{renamed}", data)
    path = run.path if where == "bucket" else _download(s3fs_client, run.path, tmp_path)
    with reader.open_run(path) as dump:
        # The first part's traces read, the rest of the segment is damage (and the
        # part after the damaged one is not read either).
        assert dump.num_traces == TRACES_PER_FLUSH, dump.damage
        assert len(dump.damage) == 1 and renamed in dump.damage[0], dump.damage
        assert dump.num_executions == 3
        dump.update()  # read again: the same damage, said once
        assert len(dump.damage) == 1


def _memory_run(monkeypatch, tmp_path, **kwargs):
    pytest.importorskip("fsspec")
    monkeypatch.setenv("TFDBG_TUI_CACHE_DIR", str(tmp_path / "object-cache"))
    monkeypatch.setattr(object_store, "_STORES", {})
    logdir = f"memory://{uuid.uuid4().hex[:12]}/logdir"
    return make_run(logdir, **kwargs), object_store.object_store(logdir)


def _parts(store, run, stream: str) -> list[str]:
    return sorted(e.name for e in store.list_dir(run.path) if e.name.startswith(stream + "."))


def test_small_parts_of_executions_and_traces_wait_for_more_definitions_never(
    tmp_path, monkeypatch
):
    run, store = _memory_run(monkeypatch, tmp_path)
    held = {s: _parts(store, run, s) for s in fmt.STREAMS}
    # The headers, put at the start.
    assert all(len(held[stream]) == 1 for stream in fmt.ROTATING_STREAMS), held
    run.writer.add_graph("another", None)
    add_step(run, [FINITE, NAN])
    run.writer._flush(hold=True)  # the periodic flush
    assert len(_parts(store, run, fmt.STREAM_GRAPHS)) == len(held[fmt.STREAM_GRAPHS]) + 1
    for stream in fmt.ROTATING_STREAMS:
        assert _parts(store, run, stream) == held[stream]
    add_step(run, [FINITE])
    run.writer._flush(hold=True)
    assert _parts(store, run, fmt.STREAM_EXECUTIONS) == held[fmt.STREAM_EXECUTIONS]
    # Once the first held records waited `HOLD_S`, they are put, with those after them.
    monkeypatch.setattr(segment_sinks, "HOLD_S", 0.0)
    run.writer._flush(hold=True)
    for stream in fmt.ROTATING_STREAMS:
        assert len(_parts(store, run, stream)) == 2
    with reader.open_run(run.path) as dump:
        assert (dump.num_executions, dump.num_traces) == (2, 3)
    # A flush asked for (and a close) puts everything at once.
    monkeypatch.setattr(segment_sinks, "HOLD_S", 60.0)
    add_step(run, [FINITE])
    run.writer.flush()
    assert len(_parts(store, run, fmt.STREAM_EXECUTIONS)) == 3
    # So does a part that makes `HOLD_BYTES` as put, or holds `PART_BYTES`.
    traces = len(_parts(store, run, fmt.STREAM_GRAPH_TRACES))
    for limit in ("HOLD_BYTES", "PART_BYTES"):
        kept = getattr(segment_sinks, limit)
        monkeypatch.setattr(segment_sinks, limit, 50_000)
        run.writer.add_traces(
            np.zeros(2000, dtype=np.int32), summaries=np.random.default_rng(0).random((2000, 9))
        )
        run.writer._flush(hold=True)
        traces += 1
        assert len(_parts(store, run, fmt.STREAM_GRAPH_TRACES)) == traces, limit
        monkeypatch.setattr(segment_sinks, limit, kept)
    run.writer.close()


def test_a_part_of_executions_is_put_after_the_traces_of_its_calls(tmp_path, monkeypatch):
    """A run killed between two puts never holds a call without its traces: when the
    executions' part is due and the graph traces' is not, the traces' is put first."""
    monkeypatch.setattr(segment_sinks, "HOLD_S", 60.0)
    monkeypatch.setattr(segment_sinks, "HOLD_BYTES", 20_000)
    run, store = _memory_run(monkeypatch, tmp_path)
    puts: list[str] = []
    put = store.put

    def recorded_put(path, data):
        puts.append(path)
        return put(path, data)

    monkeypatch.setattr(store, "put", recorded_put)
    add_step(run, [FINITE, NAN])
    run.writer._flush(hold=True)
    assert puts == []  # both held
    rng = np.random.default_rng(3)
    for output in range(2000):  # eager ops: no traces, enough to make the part due
        run.writer.add_execution(
            op_type="Log",
            graph_id=None,
            input_ids=[1],
            output_ids=[2 + output],
            device_ids=[run.device],
            output_dtypes=[1],
            stack_id=None,
            summaries=rng.random((1, 9)).tolist(),
        )
    run.writer._flush(hold=True)
    streams = [present(fmt.parse_part_filename(path.rpartition("/")[2])).stream for path in puts]
    assert streams == [fmt.STREAM_GRAPH_TRACES, fmt.STREAM_EXECUTIONS], puts
    # A flush that puts everything puts the traces first too.
    add_step(run, [FINITE])
    puts.clear()
    run.writer.flush()
    streams = [present(fmt.parse_part_filename(path.rpartition("/")[2])).stream for path in puts]
    assert streams == [fmt.STREAM_GRAPH_TRACES, fmt.STREAM_EXECUTIONS], puts
    # An eager program's executions put no part of a graph traces' header alone.
    run.writer.add_execution(
        op_type="Log",
        graph_id=None,
        input_ids=[1],
        output_ids=[9],
        device_ids=[run.device],
        output_dtypes=[1],
        stack_id=None,
        summaries=[FINITE],
    )
    puts.clear()
    run.writer.flush()
    assert [path.rpartition("/")[2].split(".")[0] for path in puts] == [fmt.STREAM_EXECUTIONS]
    run.writer.close()
    with reader.open_run(run.path) as dump:
        assert (dump.num_executions, dump.num_traces) == (2003, 3)


def test_flushes_held_in_one_compressed_part_read_as_on_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(segment_sinks, "HOLD_S", 60.0)
    run, store = _memory_run(monkeypatch, tmp_path)
    local = make_run(str(tmp_path / "logdir"))
    rng = np.random.default_rng(5)
    for flush in range(3):
        rows = np.tile(np.array(FINITE, dtype=np.float64), (TRACES_PER_FLUSH, 1))
        rows[:, 6] = rng.integers(0, 3, TRACES_PER_FLUSH)
        rows[-1] = NAN if flush == 2 else rows[-1]
        for each in (run, local):
            each.writer.add_traces(np.arange(TRACES_PER_FLUSH, dtype=np.int32) % 3, summaries=rows)
            each.writer._flush(hold=True)
    assert len(_parts(store, run, fmt.STREAM_GRAPH_TRACES)) == 1  # the header
    run.writer.close()
    local.writer.close()
    names = _parts(store, run, fmt.STREAM_GRAPH_TRACES)
    assert (
        len(names) == 2
        and present(present(fmt.parse_part_filename(names[1])).raw_size) > 3 * FLUSH_BYTES
    )
    with reader.open_run(run.path) as dump, reader.open_run(local.path) as same:
        assert contents(dump) == contents(same) and dump.num_traces == 3 * TRACES_PER_FLUSH


def test_in_a_bucket_a_header_alone_waits_for_its_streams_first_records(tmp_path, monkeypatch):
    pytest.importorskip("fsspec")
    monkeypatch.setenv("TFDBG_TUI_CACHE_DIR", str(tmp_path / "object-cache"))
    monkeypatch.setattr(object_store, "_STORES", {})
    monkeypatch.setattr(segment_sinks, "HOLD_S", 0.0)
    logdir = f"memory://{uuid.uuid4().hex[:12]}/logdir"
    writer = DumpWriter(logdir, {"tensor_debug_mode": fmt.FULL_HEALTH}, flush_interval_s=None)
    store = object_store.object_store(logdir)

    def names() -> list[str]:
        return sorted(e.name for e in store.list_dir(writer.path))

    assert names() == [fmt.part_filename(fmt.STREAM_METADATA, 0, 0)]
    writer._flush(hold=True)  # the periodic flush: nothing new
    assert names() == [fmt.part_filename(fmt.STREAM_METADATA, 0, 0)]
    writer.add_execution(
        op_type="Log",
        graph_id=None,
        input_ids=[1],
        output_ids=[2],
        device_ids=[],
        output_dtypes=[1],
        stack_id=None,
        summaries=[FINITE],
    )
    writer._flush(hold=True)
    assert names() == sorted(
        [
            fmt.part_filename(fmt.STREAM_METADATA, 0, 0),
            fmt.part_filename(fmt.STREAM_EXECUTIONS, 0, 0),
        ]
    )
    writer.close()  # the other headers, and the end
    assert len(names()) == len(fmt.STREAMS) + 1
    with reader.open_run(writer.path) as dump:
        assert dump.num_executions == 1 and dump.metadata.finished and dump.damage == ()


def test_a_circular_buffer_holds_nothing_back(tmp_path, monkeypatch):
    """Its rotation deletes old segments once newer ones are written: what it keeps
    on the store stays as in section 7."""
    monkeypatch.setattr(segment_sinks, "HOLD_S", 60.0)
    run, store = _memory_run(monkeypatch, tmp_path, circular_buffer_size=100)
    add_step(run, [FINITE, FINITE])
    run.writer._flush(hold=True)
    for stream in fmt.ROTATING_STREAMS:
        assert len(_parts(store, run, stream)) == 2
    run.writer.close()


def test_incompressible_parts_are_put_as_they_are():
    noise = np.random.default_rng(0).bytes(200_000)
    assert not segment_sinks.worth_compressing(noise)
    assert not segment_sinks.worth_compressing(b"\0" * 1000)  # too small to be worth it
    rows = np.tile(np.array(FINITE, np.float64), (5000, 1)).tobytes()
    assert segment_sinks.worth_compressing(rows)


def test_a_run_in_a_bucket_says_3_x_so_that_a_2_x_reader_refuses_it(bucket, tmp_path, monkeypatch):
    """A 2.x reader would read a bucket segment only up to its first compressed part,
    and say nothing: the bucket's run says 3.2 and such a reader refuses it, naming
    both versions. A local run says 2.7: 2.x readers read it whole."""
    run = _write(f"{bucket}/logdir", flushes=1)
    local = _write(str(tmp_path / "logdir"), flushes=1)
    assert [r.format_version for r in reader.list_runs(f"{bucket}/logdir")] == [(3, 2)]
    assert (
        [r.format_version for r in reader.list_runs(str(tmp_path / "logdir"))]
        == [fmt.LOCAL_FORMAT_VERSION]
        == [(2, 7)]
    )
    monkeypatch.setattr(fmt, "FORMAT_VERSION", (2, 6))  # a 2.6 reader
    with pytest.raises(reader.FormatVersionError, match=r"3\.2.*2\.6"):
        reader.open_run(run.path)
    with reader.open_run(local.path) as dump:
        assert dump.num_traces == TRACES_PER_FLUSH
