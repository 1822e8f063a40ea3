"""A multi-worker job's progress files (format 2.7, no TensorFlow): what the writer keeps
in them, and the job's ranking read from them, which must be the ranking of every run
read in full (synthetic jobs, `tests.synthetic_job`; a real TensorFlow job:
tests/instrument/test_multi_worker.py)."""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from functools import partial

import numpy as np
import pytest

import reader
from instrument.dump import job_progress
from instrument.dump.writer import DumpWriter
from reader import format as fmt
from reader.analysis.jobs import (
    first_nonfinite_workers,
    job_workers,
    open_landing_run,
    origin_worker,
    ranking,
)
from reader.contract import RunRecord
from reader.progress import read_progresses
from reader.summary_rows import alert_flags, first_alert_in_block
from tests.present import present
from tests.reader.job_rankings import comparable, ranked_in_full
from tests.synthetic import FINITE, NAN, make_run
from tests.synthetic_job import (
    CLUSTER,
    LOG_OP,
    USER_FILE,
    JobShape,
    WorkerWriter,
    run_id_of,
    small_job,
    write_job,
)
from tfdbg_tui.commands import report

TASK = {"type": "worker", "index": 0, "cluster": CLUSTER}


SHAPES = {
    "made_then_received": small_job(),
    # Every worker's first non-finite value is a mask's -inf at step 0, contained: no
    # progress bound rules a run out, and each is read in full.
    "behind_masks": small_job(mask=True),
    # The origin's calls run later than the others' (its clock behind): the step and
    # "received" decide, not the time.
    "origin_later_in_time": small_job(origin_lead_s=-5.0),
    # Still running (no `end`): liveness and last steps come from the progress files.
    "live": small_job(finished=False),
    # Nobody went non-finite.
    "healthy": small_job(nan_step=10_000),
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_the_ranking_is_the_same_with_and_without_the_progress_files(tmp_path, monkeypatch, shape):
    logdir = write_job(tmp_path / "job", shape)
    runs = reader.list_runs(logdir)
    for opened in (runs[-1], next(r for r in runs if r.task == f"worker {shape.origin}")):
        with reader.open_run(opened.path) as run:
            fast = first_nonfinite_workers(run)
            full = ranked_in_full(monkeypatch, partial(first_nonfinite_workers, run))
        assert [comparable(w) for w in fast] == [comparable(w) for w in full]
        assert all(w.indexed for w in full)
    fast = job_workers(runs, CLUSTER)
    assert [comparable(w) for w in fast] == [
        comparable(w) for w in ranked_in_full(monkeypatch, lambda: job_workers(runs, CLUSTER))
    ]
    origin = origin_worker(fast)
    if shape.nan_step < shape.steps and shape.finished:
        assert origin is not None and origin.run_id == run_id_of(shape.origin)
        assert (origin.op_name, origin.received, origin.indexed) == (LOG_OP, False, True)
    if shape == SHAPES["made_then_received"]:
        # Only the origin's run is read in full: every other worker's first value was
        # received at or after its step, or it had none.
        assert [w.task for w in fast if w.indexed] == [f"worker {shape.origin}"]


def test_a_job_whose_older_runs_keep_no_progress_file_is_ranked_the_same(tmp_path, monkeypatch):
    """Runs written before format 2.7 (no progress file) beside newer ones: those are
    read in full, the others ranked from their files, one ranking."""
    shape = small_job()
    logdir = write_job(tmp_path / "job", shape)
    for worker in (0, shape.origin):
        os.remove(os.path.join(logdir, run_id_of(worker), fmt.PROGRESS_FILENAME))
    runs = reader.list_runs(logdir)
    fast = job_workers(runs, CLUSTER)
    full = ranked_in_full(monkeypatch, lambda: job_workers(runs, CLUSTER))
    assert [comparable(w) for w in fast] == [comparable(w) for w in full]
    assert present(origin_worker(fast)).task == f"worker {shape.origin}"
    with open_landing_run(logdir, runs) as landed:
        assert landed.run_id == run_id_of(shape.origin)


def test_a_job_of_64_workers_reads_one_run_to_name_its_origin(tmp_path, monkeypatch):
    shape = small_job(workers=64, origin=37, traces=400, traces_per_step=40, nan_step=5)
    logdir = write_job(tmp_path / "job", shape)
    opened: list[str] = []
    real = ranking.DumpReader

    def counting(path, *args, **kwargs):
        opened.append(os.path.basename(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(ranking, "DumpReader", counting)
    with open_landing_run(logdir) as landed:
        assert landed.run_id == run_id_of(37)
    assert opened == [run_id_of(37)]


def test_a_job_read_in_full_is_read_one_run_at_a_time(tmp_path, monkeypatch):
    """Behind masks no bound rules a run out: every run is read in full, and no more
    than the best so far and the one being read are open at once."""
    shape = small_job(workers=12, mask=True)
    logdir = write_job(tmp_path / "job", shape)
    real = ranking.DumpReader
    open_now: list[int] = [0, 0]  # open, the most at once

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            open_now[0] += 1
            open_now[1] = max(open_now)

        def close(self) -> None:
            open_now[0] -= 1
            super().close()

    monkeypatch.setattr(ranking, "DumpReader", Counted)
    ranked = job_workers(reader.list_runs(logdir), CLUSTER)
    assert all(w.indexed for w in ranked) and len(ranked) == shape.workers
    assert present(origin_worker(ranked)).task == f"worker {shape.origin}"
    assert open_now == [0, 2]


# -- what the writer keeps ----------------------------------------------------------------


def _progress(run_path: str):
    return present(read_progresses([run_path])[0])


def _call(writer: DumpWriter, step: int, row=FINITE) -> int:
    return writer.add_execution(
        op_type="__inference_step_7",
        graph_id=0,
        input_ids=[step],
        output_ids=[step + 1000],
        device_ids=[0],
        output_dtypes=[1],
        stack_id=0,
        summaries=[row],
        time_s=100.0 + step,
        call_ordinal=step,
    )


def test_a_call_s_traces_come_before_its_output_s_alert(tmp_path):
    """The call's output is NaN, recorded before its traces (drained later): the trace
    that made the NaN is the first alert once it arrives, in that call's step."""
    run = make_run(tmp_path, task=TASK)
    w = run.writer
    for step in range(3):
        call = _call(w, step, NAN if step == 2 else FINITE)
        if step < 2:
            w.add_traces(
                np.array([0, 1], np.int32), summaries=np.array([FINITE, FINITE]), step=call
            )
    w.flush()
    alert = present(_progress(run.path).alert)
    assert (alert.kind, alert.op_type, alert.position) == ("eager", "__inference_step_7", 2)
    w.add_traces(np.array([0, 1], np.int32), summaries=np.array([FINITE, NAN]), step=2)
    w.flush()
    progress = _progress(run.path)
    alert = present(progress.alert)
    assert (alert.kind, alert.op_type, alert.op_name, alert.position) == ("graph", "Log", "Log", 2)
    assert (alert.time, alert.calls, progress.step_of(alert)) == (102.0, {"step": 2}, 2)
    assert alert.frame == ("/home/me/project/train.py", 4, "step")
    assert alert.device == "/job:localhost/replica:0/task:0/device:CPU:0"  # its call's
    w.close()
    assert _progress(run.path).ended


def test_late_traces_of_an_earlier_step_come_first(tmp_path):
    run = make_run(tmp_path, task=TASK)
    w = run.writer
    calls = [_call(w, step) for step in range(5)]
    w.add_traces(np.array([2], np.int32), summaries=np.array([NAN]), step=calls[4])
    w.add_traces(np.array([1], np.int32), summaries=np.array([NAN]), step=calls[1])
    w.add_traces(np.array([0], np.int32), summaries=np.array([NAN]), step=calls[3])
    w.close()
    progress = _progress(run.path)
    alert = present(progress.alert)
    assert (alert.op_type, progress.step_of(alert), alert.time) == ("Log", 1, 101.0)
    assert (progress.calls, progress.last_step) == ({"step": 5}, 4)


def test_an_alert_whose_step_is_forgotten_makes_its_run_read_in_full(tmp_path, monkeypatch):
    """Traces arriving after more calls than the writer remembers: the alert's step is
    not known (no ``calls``), and the ranking reads that run in full."""
    monkeypatch.setattr(job_progress, "RECENT_CALLS", 4)
    shape = small_job(workers=3, origin=1, healthy_every=0)
    logdir = str(tmp_path / "job")
    for worker in range(3):
        run = WorkerWriter(logdir, worker, shape)
        for _ in range(shape.steps):
            run.write_step()
        if worker == 0:  # a NaN of step 3's input placeholder, drained only now
            run.writer.add_traces(np.array([0], np.int32), summaries=np.array([NAN]), step=3)
        run.close()
    progress = _progress(os.path.join(logdir, run_id_of(0)))
    alert = present(progress.alert)
    assert (alert.position, alert.op_name, alert.calls, alert.time) == (3, "x", None, None)
    ranked = job_workers(reader.list_runs(logdir), CLUSTER)
    assert (ranked[0].task, ranked[0].op_name, ranked[0].first_step) == ("worker 0", "x", 3)
    assert ranked[0].indexed


def test_an_alert_before_the_first_step_has_no_step(tmp_path):
    run = make_run(tmp_path, task=TASK)
    w = run.writer
    w.add_execution(
        op_type="Log",
        graph_id=None,
        input_ids=[1],
        output_ids=[2],
        device_ids=[0],
        output_dtypes=[1],
        stack_id=run.user_stack,
        summaries=[NAN],
    )
    _call(w, 0)
    w.close()
    progress = _progress(run.path)
    alert = present(progress.alert)
    assert (alert.kind, alert.calls, progress.step_of(alert)) == ("eager", {}, None)
    assert alert.frame == ("/home/me/project/train.py", 4, "step")


@pytest.mark.parametrize(
    "mode, watched", [(fmt.NO_TENSOR, True), (fmt.CURT_HEALTH, True), (fmt.FULL_TENSOR, False)]
)
def test_what_a_mode_s_progress_says_of_alerts(tmp_path, mode, watched):
    """NO_TENSOR records no alert (it says none); FULL_TENSOR's values are not looked
    at (it says nothing: the ranking reads such a run in full)."""
    run = make_run(tmp_path, mode=mode, task=TASK)
    if mode == fmt.CURT_HEALTH:
        run.writer.add_traces(np.array([0, 1], np.int32), summaries=np.array([[0.0], [1.0]]))
    run.writer.close()
    progress = _progress(run.path)
    assert progress.watched_alerts is watched
    alert = progress.alert
    assert (alert is not None) is (mode == fmt.CURT_HEALTH)
    if alert is not None:
        assert (alert.op_type, alert.index) == ("Log", 1)


def test_a_run_outside_a_job_keeps_no_progress_file(tmp_path):
    run = make_run(tmp_path)
    run.writer.close()
    assert not os.path.exists(os.path.join(run.path, fmt.PROGRESS_FILENAME))
    assert read_progresses([run.path]) == [None]


def test_a_run_whose_recording_stopped_says_so(tmp_path):
    run = make_run(tmp_path, task=TASK)
    w = run.writer
    _call(w, 0)
    traces = w._files[fmt.STREAM_EXECUTIONS]

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    traces.flush = full_disk  # type: ignore[method-assign]
    w.flush()
    assert w.stopped is not None
    progress = _progress(run.path)
    assert progress.stopped and not progress.ended
    [info] = reader.list_runs(tmp_path)
    assert info.stopped


def test_the_progress_file_is_replaced_whole(tmp_path):
    """Each write renames a new file over the old one: no other file is left beside it."""
    shape = replace(JobShape(), workers=1, traces=2_000, traces_per_step=40, nan_step=20, origin=0)
    run = WorkerWriter(str(tmp_path), 0, shape)
    for _ in range(shape.steps):
        run.write_step(flush_every=5)
    run.close()
    names = sorted(os.listdir(run.writer.path))
    assert fmt.PROGRESS_FILENAME in names
    assert not [n for n in names if n.startswith(fmt.PROGRESS_FILENAME + ".")]
    progress = _progress(run.writer.path)
    assert progress.run[RunRecord.RUN] == run_id_of(0) and progress.ended
    assert progress.traces == shape.traces and progress.calls == {"train_step": shape.steps}
    alert = present(progress.alert)
    assert (alert.op_name, alert.frame) == (LOG_OP, (USER_FILE, 8, "replica_step"))


def test_the_report_without_run_reports_the_origin_and_counts_the_rest(tmp_path, capsys):
    """`tfdbg-tui report LOGDIR` opens what the app opens: the worker that went
    non-finite first; its human Workers section names the first eight and counts the
    others by what they did."""
    shape = small_job(workers=16)
    logdir = write_job(tmp_path / "job", shape)
    assert report.main([logdir, "--no-proof"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Run {run_id_of(shape.origin)}")
    assert (
        f"first non-finite: worker {shape.origin} at step {shape.nan_step}: Log '{LOG_OP}' "
        f"at {USER_FILE}:8 (this run)" in out
    )
    # Listed: the origin, then the 7 who received it at its step; counted: those who
    # received it a step later, and the healthy (ranked last).
    healthy = sum(shape.healthy(w) for w in range(shape.workers))
    assert f"and 8 more: {8 - healthy} received it (step 21), {healthy} without NaN" in out


@pytest.mark.parametrize("mode", fmt.HEALTH_MODES)
def test_a_block_s_first_alert_is_its_first_alert_flag(mode):
    """The writer finds a chunk's first alert by one reduction over the alert columns,
    side by side in every health mode: the same row `alert_flags` flags first."""
    rng = np.random.default_rng(0)
    width = len(fmt.ROW_COLUMNS[mode])
    for _ in range(300):
        rows = rng.integers(0, 3, size=(int(rng.integers(1, 12)), width)).astype(np.float64)
        rows[rng.random(rows.shape) < 0.8] = 0.0
        flags = alert_flags(mode, rows)
        expected = int(np.flatnonzero(flags)[0]) if flags.any() else None
        assert first_alert_in_block(mode, rows) == expected
