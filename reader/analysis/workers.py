"""Which worker of a multi-worker job went non-finite first.

In a ``tf.distribute.MultiWorkerMirroredStrategy`` job each worker process writes its
own run into the shared logdir, tagged with its task ("worker 1") and the job's
cluster id (docs/format.md, the `run` record's ``task``). A NaN made on one worker
reaches the others through the all-reduce: there the root cause is a collective op
(`reader.analysis.diagnosis.COLLECTIVE_OPS`) that *received* it. The worker that made it is the
one whose first alert comes first: in the earliest step, a root cause that is not a
received value before one that is, then by the wall time of the call that ran it.

The runs of a job are the runs of the logdir with its cluster id, the newest per task
(a re-run of the job replaces the older attempt's runs).
"""

from __future__ import annotations

from dataclasses import dataclass

from reader import storage
from reader.analysis.diagnosis import COLLECTIVE_OPS
from reader.analysis.dump_reader import DumpReader
from reader.errors import DumpError
from reader.model import Frame
from reader.run.run_dir import list_runs


@dataclass(frozen=True, slots=True)
class WorkerRun:
    """One worker's run and its first non-finite value."""

    run_id: str
    path: str
    task: str
    first_step: int | None  # the step of its first alert; None: no alert (or no steps)
    first_time: float | None  # wall time of the execution that ran its first alert
    op_type: str | None  # its root cause's op
    op_name: str | None
    received: bool  # the root cause is a collective op: the value came from elsewhere
    frame: Frame | None  # the root cause's innermost user frame
    has_alerts: bool
    device: str | None = None  # the root cause's device: the replica, on a multi-device worker


def job_runs(logdir: str, cluster: str) -> list[tuple[str, str, str]]:
    """``(run id, path, task)`` of the job's runs in ``logdir``, newest per task."""
    newest: dict[str, tuple[str, str, str]] = {}
    for info in list_runs(logdir):  # oldest first: later runs replace earlier ones
        if info.cluster == cluster and info.task is not None:
            newest[info.task] = (info.run_id, info.path, info.task)
    return sorted(newest.values(), key=lambda run: run[2])


def first_nonfinite_workers(run: DumpReader) -> list[WorkerRun]:
    """Every run of ``run``'s job (``run`` itself included), the worker that went
    non-finite first first; runs without alerts last. Empty when ``run`` is not part
    of a multi-worker job, or is its only run in the logdir."""
    meta = run.metadata
    if meta.cluster is None:
        return []
    store = storage.store_for(run.path)
    logdir = store.dirname(run.path)
    runs = job_runs(logdir, meta.cluster)
    if len(runs) < 2:
        return []
    found = []
    for run_id, path, task in runs:
        if store.normalize(path) == run.path:
            found.append(_worker_run(run, run_id, task))
            continue
        try:
            with DumpReader(path) as other:
                found.append(_worker_run(other, run_id, task))
        except DumpError:
            continue  # a worker's run that cannot be read is left out
    return sorted(found, key=_order)


def _worker_run(run: DumpReader, run_id: str, task: str) -> WorkerRun:
    cause = run.root_cause()
    if cause is None:
        return WorkerRun(run_id, run.path, task, None, None, None, None, False, None, False)
    alert = cause.alert
    position = alert.step  # the execution that ran it (a call, or itself)
    steps = run.steps()
    try:
        time = run.execution(position).time
    except DumpError:
        time = None
    return WorkerRun(run_id, run.path, task, steps.of_execution(position), time,
                     alert.op_type, alert.op_name, alert.op_type in COLLECTIVE_OPS,
                     cause.frame, True, alert.device)


def _order(worker: WorkerRun) -> tuple:
    if not worker.has_alerts:
        return (1, 0, 0, 0.0, worker.task)
    step = worker.first_step if worker.first_step is not None else -1
    time = worker.first_time if worker.first_time is not None else float("inf")
    return (0, step, worker.received, time, worker.task)
