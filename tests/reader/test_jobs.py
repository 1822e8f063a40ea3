"""A multi-worker job's runs in a local logdir (synthetic, no TensorFlow): which run a
debugger opens on, and a live job followed until its origin worker is known."""

from __future__ import annotations

import numpy as np

import reader
from reader.analysis.jobs import (
    JobWorkers,
    WorkerRun,
    first_nonfinite_workers,
    open_landing_run,
    origin_worker,
)
from tests.present import present
from tests.synthetic import FINITE, NAN, add_step, make_run

CLUSTER = "0123456789ab"


def _worker(logdir, index: int, stamp: str, cluster: str = CLUSTER):
    return make_run(
        logdir,
        run_id=f"{stamp}-host{index}-{100 + index}-abcdef",
        task={"type": "worker", "index": index, "cluster": cluster},
    )


def _steps(run, count: int, nan_step: int) -> None:
    for step in range(count):
        add_step(run, [FINITE, NAN if step >= nan_step >= 0 else FINITE])
    run.writer.flush()


def test_the_landing_is_the_worker_that_went_non_finite_first_not_the_newest(tmp_path):
    # Worker 1 started first (the older run) and went non-finite at step 1; worker 0,
    # the newest run, only at step 3.
    one = _worker(tmp_path, 1, "20260101T000000")
    zero = _worker(tmp_path, 0, "20260101T000001")
    _steps(one, 5, 1)
    _steps(zero, 5, 3)
    for run in (one, zero):
        run.writer.close()
    assert reader.list_runs(tmp_path)[-1].run_id == zero.writer.run_id
    with open_landing_run(tmp_path) as landed:
        assert landed.run_id == one.writer.run_id
        assert present(landed.root_cause()).alert.op_type == "Log"
    with reader.open_run(tmp_path) as newest:
        ranked = first_nonfinite_workers(newest)
    assert [(w.task, w.first_step) for w in ranked] == [("worker 1", 1), ("worker 0", 3)]
    assert origin_worker(ranked) == ranked[0]


def test_without_an_origin_or_outside_a_job_the_landing_is_the_newest_run(tmp_path):
    job = tmp_path / "healthy_job"
    _steps(_worker(job, 1, "20260101T000000"), 3, -1)
    newest = _worker(job, 0, "20260101T000001")
    _steps(newest, 3, -1)
    with open_landing_run(job) as landed:
        assert landed.run_id == newest.writer.run_id
    # A job's runs, then a run of its own (no task): the newest is not the job's.
    mixed = tmp_path / "mixed"
    _steps(_worker(mixed, 1, "20260101T000000"), 3, 0)
    _steps(_worker(mixed, 0, "20260101T000001"), 3, 2)
    alone = make_run(mixed, run_id="20260101T000002-host9-109-abcdef")
    _steps(alone, 2, -1)
    with open_landing_run(mixed) as landed:
        assert landed.run_id == alone.writer.run_id


def test_a_received_value_first_is_no_origin():
    def worker(task: str, step: int | None, received: bool, alerts: bool = True) -> WorkerRun:
        return WorkerRun(
            f"run-{task}",
            f"/logdir/run-{task}",
            task,
            step,
            1.0,
            "CollectiveReduceV2" if received else "Log",
            "op",
            received,
            None,
            alerts,
        )

    assert origin_worker([worker("worker 0", 2, True), worker("worker 1", 3, False)]) is None
    assert origin_worker([worker("worker 0", None, False, alerts=False)]) is None
    assert origin_worker([]) is None
    made = worker("worker 1", 2, False)
    assert origin_worker([made, worker("worker 0", 2, True)]) is made
    # A live run whose first alert's op is not read yet: not judged until it is.
    unread = WorkerRun(
        "run-worker 0", "/logdir/run-worker 0", "worker 0", 2, 1.0, None, None, False, None, True
    )
    assert origin_worker([unread, made]) is None


def test_a_live_job_is_followed_until_its_origin_is_known(tmp_path):
    zero = _worker(tmp_path, 0, "20260101T000000")
    _steps(zero, 2, -1)
    job = JobWorkers(str(tmp_path), CLUSTER)
    try:
        assert origin_worker(job.update()) is None and not job.ended
        # Worker 1 starts late; then it goes non-finite, worker 0 not yet.
        one = _worker(tmp_path, 1, "20260101T000001")
        _steps(one, 2, -1)
        ranked = job.update()
        assert sorted(w.task for w in ranked) == ["worker 0", "worker 1"]
        assert origin_worker(ranked) is None
        _steps(one, 1, 0)
        # Worker 0's records of that step are not read yet (a bucket gets them seconds
        # late): it may have gone non-finite there too, or before, so no worker is
        # named until its step 2 is read, finite.
        assert origin_worker(job.update()) is None
        _steps(zero, 1, -1)
        origin = origin_worker(job.update())
        assert origin is not None and origin.run_id == one.writer.run_id
        assert origin.first_step == 2 and not job.ended
        for run in (zero, one):
            run.writer.close()
        job.update()
        assert job.ended
    finally:
        job.close()


def test_a_first_alert_whose_op_is_not_read_yet_is_not_judged(tmp_path):
    """A live run's trace read before its op's definition: which op made the value
    (and so whether it was received) is not known, so no worker is named yet."""
    zero = _worker(tmp_path, 0, "20260101T000000")
    _steps(zero, 3, -1)
    one = _worker(tmp_path, 1, "20260101T000001")
    w = one.writer
    w.add_traces(np.array([3], dtype=np.int32), summaries=np.array([NAN], np.float64))
    w.add_execution(
        op_type="__inference_step_7",
        graph_id=one.graph,
        input_ids=[1],
        output_ids=[2],
        device_ids=[one.device],
        output_dtypes=[1],
        stack_id=one.user_stack,
        summaries=[NAN],
    )
    w.flush()
    job = JobWorkers(str(tmp_path), CLUSTER)
    try:
        ranked = job.update()
        assert ranked[0].task == "worker 1" and ranked[0].op_type is None
        assert origin_worker(ranked) is None
        w.add_op(
            graph_id=one.graph,
            op_type="Sqrt",
            op_name="Sqrt",
            inputs=["x:0"],
            num_outputs=1,
            output_dtypes=[1],
            device_id=None,
            stack_id=one.user_stack,
            trace_points=[3],
        )
        w.flush()
        origin = origin_worker(job.update())
        assert origin is not None and (origin.task, origin.op_type) == ("worker 1", "Sqrt")
    finally:
        job.close()
        for run in (zero, one):
            run.writer.close()


def test_a_function_calls_alert_before_its_traces_is_not_judged_until_the_run_ends(tmp_path):
    """A live run whose call came out non-finite before the traces of its graph are
    read: which op made the value is not known (it may be a collective that received
    it), so that worker is not named the origin; once its run has ended, the call is
    all there is."""
    one = _worker(tmp_path, 1, "20260101T000000")
    _steps(one, 3, -1)
    zero = _worker(tmp_path, 0, "20260101T000001")
    _steps(zero, 2, -1)
    add_step(one, [FINITE, FINITE])
    one.writer.flush()
    # Worker 0's call of step 2 alone, with a NaN output, as a reader of a bucket may
    # see it before the traces of the call.
    zero.writer.add_execution(
        op_type="__inference_step_7",
        graph_id=zero.graph,
        input_ids=[1],
        output_ids=[2],
        device_ids=[zero.device],
        output_dtypes=[1],
        stack_id=zero.user_stack,
        summaries=[NAN],
    )
    zero.writer.flush()
    job = JobWorkers(str(tmp_path), CLUSTER)
    try:
        ranked = job.update()
        assert ranked[0].task == "worker 0" and ranked[0].op_type is None
        assert origin_worker(ranked) is None
        for run in (zero, one):
            run.writer.close()
        origin = origin_worker(job.update())
        assert origin is not None and origin.task == "worker 0"
        assert origin.op_type == "__inference_step_7" and not origin.live
    finally:
        job.close()
