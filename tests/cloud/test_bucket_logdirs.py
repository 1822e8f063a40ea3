"""Logdirs in a bucket (s3:// on moto's server, through s3fs): written as closed part
objects, read in place, followed live; several workers at once, a worker killed,
credentials refused, the bucket deleted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reader
from reader import format as fmt
from reader import object_store
from reader.analysis.jobs import first_nonfinite_workers
from reader.progress import MAX_PROGRESS_BYTES
from reader.run import liveness
from tests.cloud.conftest import credentials_refused
from tests.present import present
from tests.synthetic import FINITE, NAN, add_step, make_run
from tests.tui.tui_helpers import debugger_screen

WORKER = Path(__file__).with_name("bucket_worker.py")
DEADLINE_S = 60.0


def _wait(condition, what: str, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_run_in_a_bucket_reads_as_the_same_run_on_disk(
    bucket, s3fs_client, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    remote = make_run(f"{bucket}/logdir")
    local = make_run(str(tmp_path / "logdir"))
    for run in (remote, local):
        add_step(run, [FINITE, FINITE])
        add_step(run, [FINITE, NAN])
        run.writer.close()
    # Nothing local was made for the URL (it once made a directory named "s3:").
    assert not [name for name in os.listdir(tmp_path) if name.startswith("s3")]
    names = [n.rpartition("/")[2] for n in s3fs_client.ls(remote.path.removeprefix("s3://"))]
    assert names and all(fmt.parse_part_filename(n) for n in names), names
    with reader.open_run(f"{bucket}/logdir") as a, reader.open_run(local.path) as b:
        assert a.path == remote.path and a.run_id == remote.writer.run_id
        assert (a.num_executions, a.num_traces) == (b.num_executions, b.num_traces) == (2, 4)
        cause_a, cause_b = a.root_cause(), b.root_cause()
        assert cause_a is not None
        assert cause_a.trace is not None
        assert cause_a.frame is not None
        assert cause_a.op is not None
        assert cause_b is not None
        assert cause_b.op is not None
        assert cause_b is not None
        assert cause_b.trace is not None
        assert cause_b.frame is not None
        assert (cause_a.op.name, cause_a.trace.index, cause_a.frame.line) == (
            cause_b.op.name,
            cause_b.trace.index,
            cause_b.frame.line,
        )
        assert a.damage == () and a.metadata.finished


def test_the_reader_follows_a_live_run_reading_only_new_parts(bucket, monkeypatch):
    run = make_run(f"{bucket}/logdir")
    add_step(run, [FINITE])
    run.writer.flush()
    dump = reader.open_run(f"{bucket}/logdir")
    assert dump.num_traces == 1
    read = record_reads(object_store.object_store(bucket), monkeypatch)
    add_step(run, [FINITE, NAN])
    run.writer.flush()
    report = dump.update()
    assert (report.new_traces, report.new_executions) == (2, 1) and report.new_alerts
    # Only the parts the flush added were fetched, each whole from its start.
    assert sorted(name for name, _, _ in read) == [
        "executions.000000.000002.tfdbg",
        "graph_traces.000000.000002.tfdbg",
    ], read
    assert all(start == 0 for _, start, _ in read)
    # A record fetched later comes from the local cache, not the bucket.
    read.clear()
    cause = dump.root_cause()
    assert cause is not None and cause.trace is not None and cause.trace.summary is not None
    assert cause.trace.summary.nan == 2
    summaries = dump.executions(0, 2)[1].summaries
    assert summaries is not None and summaries[0] is not None
    assert summaries[0].nan == 2
    assert read == []
    run.writer.close()
    assert dump.update().finished
    dump.close()


def record_reads(store: object_store.ObjectStore, monkeypatch) -> list[tuple[str, int, int]]:
    """Each object read from ``store`` from now on: (name, start, end), in the order
    the requests were made (every read of an asynchronous implementation, in a batch
    or ahead, is one `_cat_file`)."""
    read: list[tuple[str, int, int]] = []
    real = store.fs._cat_file

    async def recording(path, start=None, end=None, **kwargs):
        read.append((path.rpartition("/")[2], start, end))
        return await real(path, start=start, end=end, **kwargs)

    monkeypatch.setattr(store.fs, "_cat_file", recording)
    return read


def record_asks(store: object_store.ObjectStore, monkeypatch) -> list[str]:
    """The name of each part ``store`` asks for from now on, in the order the reads ask
    (in the reading thread): a read's batch (`_cat_ranges`) and each part fetched ahead
    (`ObjectStore._into_cache`). The order their requests start on the event loop is
    not that: a batch's requests start as tasks of its own, after a fetch ahead asked
    for later may have started (under load, one run in many)."""
    asked: list[str] = []
    real_ranges, real_into_cache = store.fs._cat_ranges, store._into_cache

    def ranges(paths, starts, ends, **kwargs):
        asked.extend(path.rpartition("/")[2] for path in paths)
        return real_ranges(paths, starts, ends, **kwargs)

    def into_cache(part):
        asked.append(part.path.rpartition("/")[2])
        return real_into_cache(part)

    monkeypatch.setattr(store.fs, "_cat_ranges", ranges)
    monkeypatch.setattr(store, "_into_cache", into_cache)
    return asked


def record_listings(store: object_store.ObjectStore, monkeypatch) -> list[str]:
    """The last name of each prefix ``store`` lists from now on, in order."""
    listed: list[str] = []
    real = store.fs.ls

    def ls(path, *args, **kwargs):
        listed.append(path.rpartition("/")[2])
        return real(path, *args, **kwargs)

    monkeypatch.setattr(store.fs, "ls", ls)
    return listed


def test_an_open_lists_the_run_once_and_fetches_each_part_once_ahead_of_its_read(
    bucket, monkeypatch, tmp_path
):
    run = make_run(f"{bucket}/logdir")
    for _ in range(3):
        add_step(run, [FINITE, NAN])
        run.writer.flush()
    run.writer.close()
    local = make_run(str(tmp_path / "logdir"))
    for _ in range(3):
        add_step(local, [FINITE, NAN])
    local.writer.close()
    store = object_store.object_store(bucket)
    real_ls = store.fs.ls
    listed = record_listings(store, monkeypatch)
    read = record_reads(store, monkeypatch)
    asked = record_asks(store, monkeypatch)
    with reader.open_run(f"{bucket}/logdir") as dump, reader.open_run(local.path) as same:
        assert dump.num_traces == 6 and dump.root_cause() is not None
        assert contents(dump) == contents(same)
    # The logdir and the run (`list_runs`), whose listing the loader reads.
    assert listed == ["logdir", run.writer.run_id], listed
    # The run's progress file, looked for first (`list_runs` lists a job's run from
    # it; this run is not a job's: it has none), the run's metadata, then every part
    # once, whole, in the order the streams are read: each started ahead of its read,
    # none waited for in a batch.
    assert read[0] == (fmt.PROGRESS_FILENAME, 0, MAX_PROGRESS_BYTES + 1), read
    read = read[1:]
    sizes = {
        name.rpartition("/")[2]: size
        for name, size in (
            (info["name"], info["size"])
            for info in real_ls(run.path.removeprefix("s3://"), detail=True)
        )
    }
    names = [name for name, _, _ in read]
    assert sorted(names) == sorted(sizes), read
    assert all((start, end) == (0, sizes[name]) for name, start, end in read), read
    asked = [name for name in asked if name != fmt.PROGRESS_FILENAME]
    assert sorted(asked) == sorted(names) and asked[0].startswith("metadata."), asked
    order = [fmt.STREAMS.index(present(fmt.parse_part_filename(name))[0]) for name in asked[1:]]
    assert order == sorted(order), asked


def contents(dump: reader.DumpReader) -> tuple:
    """What an open shows of a run, for comparing two copies of it."""
    cause = dump.root_cause()
    return (
        dump.num_executions,
        dump.num_traces,
        [(a.kind, a.index) for a in dump.alerts().alerts],
        (present(cause.op).name, present(cause.trace).index, present(cause.frame).line)
        if cause
        else None,
        [t.summary for t in dump.traces(0, dump.num_traces)],
        dump.damage,
    )


def test_two_workers_writing_at_once_and_the_first_non_finite(bucket):
    logdir = f"{bucket}/job"
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), logdir, str(index), "6", nan_step, "0.3"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index, nan_step in ((0, "4"), (1, "2"))
    ]
    outputs = [worker.communicate(timeout=DEADLINE_S) for worker in workers]
    for worker, (out, err) in zip(workers, outputs):
        assert worker.returncode == 0 and "DONE" in out, err[-2000:]
    runs = reader.list_runs(logdir)
    assert sorted(str(r.task) for r in runs) == ["worker 0", "worker 1"]
    assert all(r.finished for r in runs)
    worker0 = next(r for r in runs if r.task == "worker 0")
    with reader.open_run(logdir, worker0.run_id) as dump:
        assert dump.num_executions == 6 and dump.damage == ()
        order = first_nonfinite_workers(dump)
    assert [(w.task, w.first_step) for w in order] == [("worker 1", 2), ("worker 0", 4)]
    # The report, from the bucket.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfdbg_tui.cli",
            "report",
            logdir,
            "--run",
            worker0.run_id,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)["workers"]
    assert [(w["task"], w["this_run"]) for w in listed] == [("worker 1", False), ("worker 0", True)]


def test_a_prefix_nothing_was_written_under_is_waited_for_a_missing_bucket_is_not(
    bucket, s3_server
):
    with pytest.raises(reader.NoRunsYetError, match="nothing under this prefix"):
        reader.list_runs(f"{bucket}/later")
    with pytest.raises(reader.NoRunsError) as caught:
        reader.list_runs("s3://no-such-bucket-here/job")
    assert not isinstance(caught.value, reader.NoRunsYetError)
    assert (
        str(caught.value) == "s3://no-such-bucket-here/job: no such bucket "
        "(s3://no-such-bucket-here)"
    )
    # `tfdbg-tui --wait` fails at once on the missing bucket, in one line.
    done = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "s3://no-such-bucket-here/job", "--wait"],
        env=s3_server.env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"tfdbg-tui: {caught.value}"]
    # Without --wait, a prefix where a run may still appear says that --wait waits.
    done = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", f"{bucket}/later"],
        env=s3_server.env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        f"tfdbg-tui: {bucket}/later: nothing under this prefix (yet); add --wait to wait "
        "for the first run"
    ]


def test_the_app_waits_on_an_empty_prefix_and_opens_the_run_written_there(bucket):
    """(The Pilot run, in an event loop of its own.)"""
    asyncio.run(_wait_then_open(f"{bucket}/later"))


async def _wait_then_open(logdir: str) -> None:
    from tests.tui.tui_helpers import screen_text, wait_for
    from tfdbg_tui.app import DebuggerApp

    app = DebuggerApp(logdir, [], poll_interval_s=0.2, wait=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(
            pilot,
            lambda: f"waiting for the first run in {logdir}…" in screen_text(app),
            what="the waiting line",
        )
        run = make_run(logdir)
        add_step(run, [FINITE, NAN])
        run.writer.flush()
        await wait_for(
            pilot,
            lambda: getattr(app.screen, "root_cause", None) is not None,
            what="the run's root cause",
        )
        assert debugger_screen(app).run_id == run.writer.run_id
        assert present(debugger_screen(app).root_cause).alert.op_type == "Log"
        run.writer.close()


def test_a_worker_killed_mid_run_leaves_a_readable_run(bucket):
    logdir = f"{bucket}/killed"
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), logdir, "0", "10000", "-1", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().startswith("RUN")
        _wait(
            lambda: reader.list_runs(logdir) and reader.open_run(logdir).num_executions >= 20,
            "20 steps in the bucket",
        )
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=DEADLINE_S)
    with reader.open_run(logdir) as dump:
        assert dump.num_executions >= 20 and dump.damage == ()
        # Two traces a step, put before the step's call: every call read has its
        # traces (a kill between the two puts leaves traces of calls never put).
        assert dump.num_traces >= 2 * dump.num_executions and dump.num_traces % 2 == 0
        assert not dump.metadata.finished
        gone = liveness.process_gone(
            dump.metadata.host, dump.metadata.pid, dump.metadata.start_time
        )
        assert liveness.state_of(False, gone) == liveness.KILLED


def test_credentials_refused_say_so_in_one_line(s3_server, tmp_path):
    # The server checks credentials, and knows none: every request is refused.
    with credentials_refused(s3_server):
        env = s3_server.env(TFDBG_TUI_CACHE_DIR=str(tmp_path / "cache"))
        report = subprocess.run(
            [sys.executable, "-m", "tfdbg_tui.cli", "report", "s3://somewhere/logdir"],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert report.returncode == 3, report.stderr
        (line,) = report.stderr.strip().splitlines()
        assert line.startswith("tfdbg-tui report: s3://somewhere/logdir: cannot list (")
        assert "Traceback" not in report.stderr
        # The writer: a dump that cannot be written at all fails the enable, in one line.
        write = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; sys.path.insert(0, '.');"
                "from tests.synthetic import make_run\n"
                "try:\n    make_run('s3://somewhere/logdir')\n"
                "except OSError as error:\n    print('OSError', error)",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            cwd=Path(__file__).parents[2],
        )
        assert write.stdout.startswith("OSError"), write.stderr[-2000:]
        assert "s3://somewhere/logdir/" in write.stdout


def test_a_deleted_bucket_stops_the_recording_and_the_reader_says_so(bucket, s3fs_client, caplog):
    run = make_run(f"{bucket}/logdir")
    add_step(run, [FINITE])
    run.writer.flush()
    dump = reader.open_run(f"{bucket}/logdir")
    s3fs_client.rm(bucket.removeprefix("s3://"), recursive=True)
    _wait(lambda: not s3fs_client.exists(bucket.removeprefix("s3://")), "the bucket gone")
    add_step(run, [FINITE, NAN])
    with caplog.at_level("WARNING", logger="instrument.writer"):
        run.writer.flush()
        add_step(run, [FINITE])
        run.writer.close()
    stop = run.writer.stopped
    assert stop is not None and stop.file.startswith("graph_traces.000000.")  # put first
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "the dump could not say so" in warnings[0].getMessage()
    report = dump.update()
    assert dump.num_executions == 1  # what was read stays
    assert any("vanished" in line for line in report.damage), report.damage
    dump.close()


@pytest.mark.parametrize("mode", ["read"])
def test_a_missing_fsspec_implementation_is_one_line(mode, tmp_path):
    """A scheme nobody installed: the reader's one line, exit status 3."""
    done = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", "nosuchscheme://bucket/logdir"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 3
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("tfdbg-tui report: nosuchscheme://bucket/logdir: ")
