"""How a run in a bucket is read: parts fetched ahead of the reads that want them (on
fsspec's event loop, for s3fs) or with them (a blocking implementation, memory://),
a fetch ahead that fails, and the run's listing that `list_runs` made serving the
loader's first read."""

from __future__ import annotations

import uuid

import pytest

import reader
from reader import object_store
from tests.cloud.test_bucket_logdirs import contents, record_listings, record_reads
from tests.synthetic import FINITE, NAN, add_step, make_run


def _write(logdir: str, steps: int = 3):
    run = make_run(logdir)
    for _ in range(steps):
        add_step(run, [FINITE, NAN])
        run.writer.flush()
    run.writer.close()
    return run


def test_a_part_whose_fetch_ahead_failed_is_fetched_again_by_its_read(
    bucket, monkeypatch, tmp_path
):
    run = _write(f"{bucket}/logdir")
    local = _write(str(tmp_path / "logdir"))
    store = object_store.object_store(bucket)
    read = record_reads(store, monkeypatch)
    recording = store.fs._cat_file
    failed: list[str] = []

    async def failing_once(path, start=None, end=None, **kwargs):
        name = path.rpartition("/")[2]
        if name.startswith("graph_traces.") and name.endswith(".000001.tfdbg") and not failed:
            failed.append(name)
            await recording(path, start=start, end=end, **kwargs)
            raise ConnectionResetError("the connection dropped")
        return await recording(path, start=start, end=end, **kwargs)

    monkeypatch.setattr(store.fs, "_cat_file", failing_once)
    with reader.open_run(run.path) as dump, reader.open_run(local.path) as same:
        assert contents(dump) == contents(same)
    names = [name for name, _, _ in read]
    assert failed and names.count(failed[0]) == 2, names
    assert len(names) == len(set(names)) + 1  # every other part fetched once


def test_a_blocking_implementation_reads_the_same_run_and_follows_it(tmp_path, monkeypatch):
    """memory:// (fsspec's own, without an event loop): the parts ahead are fetched
    with the read, into the cache, and a live run's new parts are read."""
    pytest.importorskip("fsspec")
    monkeypatch.setenv("TFDBG_TUI_CACHE_DIR", str(tmp_path / "object-cache"))
    monkeypatch.setattr(object_store, "_STORES", {})
    logdir = f"memory://{uuid.uuid4().hex[:12]}/logdir"
    run = make_run(logdir)
    local = make_run(str(tmp_path / "logdir"))
    for each in (run, local):
        add_step(each, [FINITE, NAN])
        each.writer.flush()
    with reader.open_run(logdir) as dump, reader.open_run(local.path) as same:
        assert contents(dump) == contents(same)
        store = object_store.object_store(logdir)
        parts = store.list_dir(run.path)
        assert parts and all(store.cache.held(p.path, p.size) == p.size for p in parts)
        for each in (run, local):
            add_step(each, [FINITE])
            each.writer.close()
        dump.update()
        same.update()
        assert contents(dump) == contents(same) and dump.metadata.finished


def test_the_first_read_takes_list_runs_listing_and_updates_list_again(bucket, monkeypatch):
    run = make_run(f"{bucket}/logdir")
    add_step(run, [FINITE])
    run.writer.flush()
    listed = record_listings(object_store.object_store(bucket), monkeypatch)
    dump = reader.open_run(f"{bucket}/logdir")
    assert listed == ["logdir", run.writer.run_id] and dump.num_traces == 1
    add_step(run, [FINITE, NAN])
    run.writer.flush()
    report = dump.update()  # a new listing, at once: it shows the new parts
    assert listed[2:] == [run.writer.run_id]
    assert (report.new_traces, report.new_executions) == (2, 1)
    run.writer.close()
    dump.close()
