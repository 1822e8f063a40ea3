"""Which worker of a multi-worker job went non-finite first (the origin), the run a
debugger opens on (`open_landing_run`), and a live job's runs followed
(`JobWorkers`).

In a ``tf.distribute.MultiWorkerMirroredStrategy`` job each worker process writes its
own run into the shared logdir, tagged with its task ("worker 1") and the job's
cluster id (docs/format.md, the `run` record's ``task``). A NaN made on one worker
reaches the others through the all-reduce: there the root cause is a collective op
(`reader.analysis.diagnosis.op_patterns.COLLECTIVE_OPS`) that *received* it. The worker that made it
is the one whose first alert comes first: in the earliest step, a root cause that is not a
received value before one that is, then by the wall time of the call that ran it.

The runs of a job are the runs of the logdir with its cluster id, the newest per task
(a re-run of the job replaces the older attempt's runs). The worker a debugger opens on
(`open_landing_run`) is that **origin**: the first, when its first non-finite value was
made there rather than received (`origin_worker`). `JobWorkers` follows a live job's
runs until the origin is known.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from reader import storage
from reader.analysis.analysed_run import AnalysedRun
from reader.analysis.diagnosis.op_patterns import COLLECTIVE_OPS
from reader.analysis.dump_reader import DumpReader
from reader.errors import DumpError
from reader.model import Frame, RunInfo
from reader.run import liveness
from reader.run.run_dir import list_runs


@dataclass(frozen=True, slots=True)
class WorkerRun:
    """One worker's run and its first non-finite value."""

    run_id: str
    path: str
    task: str
    first_step: int | None  # the step of its first alert; None: no alert (or no steps)
    first_time: float | None  # wall time of the execution that ran its first alert
    op_type: str | None  # its root cause's op; None: no alert, or its op is not read yet
    op_name: str | None
    received: bool  # the root cause is a collective op: the value came from elsewhere
    frame: Frame | None  # the root cause's innermost user frame
    has_alerts: bool
    device: str | None = None  # the root cause's device: the replica, on a multi-device worker
    live: bool = False  # its writer may still write (`reader.run.liveness`)
    last_step: int | None = None  # the last step whose call is read; None: none (or no steps)


def job_runs(logdir: str, cluster: str) -> list[tuple[str, str, str]]:
    """``(run id, path, task)`` of the job's runs in ``logdir``, newest per task."""
    return [
        (info.run_id, info.path, info.task or "") for info in _job_infos(list_runs(logdir), cluster)
    ]


def _job_infos(runs: list[RunInfo], cluster: str) -> list[RunInfo]:
    """The job's runs among ``runs`` (oldest first), newest per task, by task."""
    newest: dict[str, RunInfo] = {}
    for info in runs:  # oldest first: later runs replace earlier ones
        if info.cluster == cluster and info.task is not None:
            newest[info.task] = info
    return sorted(newest.values(), key=lambda info: info.task or "")


def origin_worker(workers: list[WorkerRun]) -> WorkerRun | None:
    """The worker where the job's first non-finite value was made: the first of
    ``workers`` (as `first_nonfinite_workers` orders them) when it has alerts, its
    root cause's op is known (a live run's may not be read yet) and did not receive
    the value from elsewhere, and every other live worker's run is read up to that
    step's call (a worker's records reach a bucket in batches, seconds late: one whose
    step is not read yet may have gone non-finite in it, or before); None when not
    known (yet)."""
    first = workers[0] if workers else None
    if first is None or not first.has_alerts or first.op_type is None or first.received:
        return None
    step = first.first_step
    if step is not None and any(
        other.live and (other.last_step is None or other.last_step < step) for other in workers[1:]
    ):
        return None
    return first


def open_landing_run(
    logdir: str | os.PathLike[str], runs: list[RunInfo] | None = None
) -> DumpReader:
    """Open the run a debugger shows first when no run was asked for: in a logdir whose
    newest run belongs to a multi-worker job, the job's origin worker
    (`origin_worker`); otherwise (no job, or no origin yet) the newest run. ``runs``:
    the logdir's runs when the caller listed them already (`reader.list_runs`).

    Raises:
        NoRunsError: No run in ``logdir`` (`reader.list_runs`).
        FormatVersionError, DamagedDumpError: The run cannot be opened.
    """
    runs = runs or list_runs(logdir)
    newest = runs[-1]
    infos = _job_infos(runs, newest.cluster) if newest.cluster is not None else []
    if len(infos) < 2:
        return DumpReader(newest.path)
    readers: dict[str, DumpReader] = {}
    try:
        for info in infos:
            try:
                readers[info.run_id] = DumpReader(info.path)
            except DumpError:
                if info.run_id == newest.run_id:
                    raise
        origin = origin_worker(
            _ranked(
                (readers[i.run_id], i.run_id, i.task or "") for i in infos if i.run_id in readers
            )
        )
        chosen = origin.run_id if origin is not None else newest.run_id
        return readers.pop(chosen)
    finally:
        for other in readers.values():
            other.close()


class JobWorkers:
    """The runs of one multi-worker job in a logdir, followed as the job runs: each
    `update` lists the logdir (a worker may start late), opens the runs it has not
    seen and reads what the others appended, then ranks them.

    Args:
        logdir: The logdir holding the job's runs.
        cluster: The job's cluster id (`RunInfo.cluster`).
    """

    def __init__(self, logdir: str, cluster: str) -> None:
        self.logdir = logdir
        self.cluster = cluster
        self._readers: dict[str, tuple[DumpReader, str]] = {}  # run id -> (reader, task)

    def update(self) -> list[WorkerRun]:
        """The job's runs as they are now, ranked as `first_nonfinite_workers` ranks
        them (a run that cannot be read yet is left out until it can).

        Raises:
            DumpError: The logdir cannot be listed any more.
        """
        infos = _job_infos(list_runs(self.logdir), self.cluster)
        for info in infos:
            known = self._readers.get(info.run_id)
            try:
                if known is None:
                    self._readers[info.run_id] = (DumpReader(info.path), info.task or "")
                else:
                    known[0].update()
            except DumpError:
                continue
        current = {info.run_id for info in infos}
        for run_id in [r for r in self._readers if r not in current]:  # a re-run's older run
            self._readers.pop(run_id)[0].close()
        return _ranked((reader, run_id, task) for run_id, (reader, task) in self._readers.items())

    @property
    def ended(self) -> bool:
        """Whether every run of the job seen so far has ended (finished, stopped,
        killed): nothing more will be written."""
        return bool(self._readers) and all(
            reader.writer_state() in liveness.ENDED for reader, _ in self._readers.values()
        )

    def close(self) -> None:
        for reader, _ in self._readers.values():
            reader.close()
        self._readers.clear()


def first_nonfinite_workers(run: AnalysedRun) -> list[WorkerRun]:
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
            found.extend(_ranked([(run, run_id, task)]))
            continue
        try:
            with DumpReader(path) as other:
                found.extend(_ranked([(other, run_id, task)]))
        except DumpError:
            continue  # a worker's run that cannot be read is left out
    return sorted(found, key=_order)


def _ranked(runs: Iterable[tuple[AnalysedRun, str, str]]) -> list[WorkerRun]:
    """``(reader, run id, task)`` of a job's runs as `WorkerRun`, the worker that went
    non-finite first first; a run whose root cause cannot be read (yet) is left out."""
    found = []
    for reader, run_id, task in runs:
        try:
            found.append(_worker_run(reader, run_id, task))
        except DumpError:
            continue
    return sorted(found, key=_order)


def _worker_run(run: AnalysedRun, run_id: str, task: str) -> WorkerRun:
    live = run.writer_state() not in liveness.ENDED
    steps = run.steps()
    last_step = max((last for _, last in steps.kept_steps()), default=None)
    cause = run.root_cause()
    if cause is None:
        return WorkerRun(
            run_id,
            run.path,
            task,
            None,
            None,
            None,
            None,
            False,
            None,
            False,
            live=live,
            last_step=last_step,
        )
    alert = cause.alert
    position = alert.step  # the execution that ran it (a call, or itself)
    try:
        time = run.execution(position).time
    except DumpError:
        time = None
    # Which op made the value, and so whether it was received, is not known yet when a
    # live run's trace is read before its op's definition, or when its first alert is
    # a function call's output: the op of its graph that made it is in traces the
    # writer may not have written yet (a bucket gets them in batches).
    if alert.kind == "graph":
        op_known = cause.op is not None
    else:
        op_known = not (live and cause.execution is not None and cause.execution.is_function)
    op_type = alert.op_type if op_known else None
    return WorkerRun(
        run_id,
        run.path,
        task,
        steps.of_execution(position),
        time,
        op_type,
        alert.op_name,
        op_type in COLLECTIVE_OPS,
        cause.frame,
        True,
        alert.device,
        live=live,
        last_step=last_step,
    )


def _order(worker: WorkerRun) -> tuple:
    if not worker.has_alerts:
        return (1, 0, 0, 0.0, worker.task)
    step = worker.first_step if worker.first_step is not None else -1
    time = worker.first_time if worker.first_time is not None else float("inf")
    return (0, step, worker.received, time, worker.task)
