"""Which worker of a multi-worker job went non-finite first (the origin), the run a
debugger opens on (`open_landing_run`), and a live job's runs followed
(`JobWorkers`); a job of hundreds of workers ranked from their progress files, reading
in full only the runs that could be first.

In a ``tf.distribute.MultiWorkerMirroredStrategy`` job each worker process writes its
own run into the shared logdir, tagged with its task ("worker 1") and the job's
cluster id (docs/format.md, the `run` record's ``task``). A NaN made on one worker
reaches the others through the all-reduce: there the root cause is a collective op
(`reader.format.RECEIVING_OPS`) that *received* it. The worker that made it is the one
whose first alert comes first: in the earliest step, a root cause that is not a
received value before one that is, then by the wall time of the call that ran it.

The runs of a job are the runs of the logdir with its cluster id, the newest per task
(a re-run of the job replaces the older attempt's runs). The worker a debugger opens on
(`open_landing_run`) is that **origin**: the first, when its first non-finite value was
made there rather than received (`origin_worker`). `JobWorkers` follows a live job's
runs until the origin is known.

A job of hundreds of workers is ranked from their progress files, reading in full
only the runs that could be first (`reader.analysis.jobs.ranking`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from reader import storage
from reader.analysis.analysed_run import AnalysedRun
from reader.analysis.dump_reader import DumpReader
from reader.analysis.jobs.ranking import JobReaders, WorkerRun, rank_workers
from reader.model import RunInfo
from reader.run.run_dir import LISTING_KEPT_S, list_runs


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
    readers = JobReaders()
    try:
        origin = origin_worker(rank_workers(infos, readers))
        chosen = origin.run_id if origin is not None else newest.run_id
        opened = readers.pop(chosen)
        return opened if opened is not None else DumpReader(newest.path)
    finally:
        readers.close()


# Runs a followed job keeps open between its polls (each read on from where it was):
# the worker first, and those whose first value could still come before it.
FOLLOWED_RUNS_KEPT = 16


class JobWorkers:
    """The runs of one multi-worker job in a logdir, followed as the job runs: each
    `update` lists the logdir (a worker may start late), reads every run's progress
    file, reads what the runs read in full appended since, and ranks them
    (`rank_workers`: a run is opened the first time its first non-finite value could
    come first).

    Args:
        logdir: The logdir holding the job's runs.
        cluster: The job's cluster id (`RunInfo.cluster`).
    """

    def __init__(self, logdir: str, cluster: str) -> None:
        self.logdir = logdir
        self.cluster = cluster
        self._readers = JobReaders(keep=FOLLOWED_RUNS_KEPT)
        self._live: dict[str, bool] = {}  # run id -> its writer may still write

    def update(self) -> list[WorkerRun]:
        """The job's runs as they are now, ranked as `first_nonfinite_workers` ranks
        them (a run that cannot be read yet is left out until it can).

        Raises:
            DumpError: The logdir cannot be listed any more.
        """
        infos = _job_infos(list_runs(self.logdir), self.cluster)
        self._readers.update()
        ranked = rank_workers(infos, self._readers)
        # A re-run's older runs, and those no longer needed, are closed.
        self._readers.close(keep={w.run_id for w in ranked if w.indexed})
        self._live = {w.run_id: w.live for w in ranked}
        return ranked

    @property
    def ended(self) -> bool:
        """Whether every run of the job seen so far has ended (finished, stopped,
        killed): nothing more will be written."""
        return bool(self._live) and not any(self._live.values())

    def close(self) -> None:
        self._readers.close()
        self._live.clear()


def first_nonfinite_workers(run: AnalysedRun) -> list[WorkerRun]:
    """Every run of ``run``'s job (``run`` itself included), the worker that went
    non-finite first first; runs without alerts last (`rank_workers`). Empty when
    ``run`` is not part of a multi-worker job, or is its only run in the logdir."""
    meta = run.metadata
    if meta.cluster is None:
        return []
    store = storage.store_for(run.path)
    # The listing that found ``run`` a moment ago serves (a bucket's takes a request a
    # run).
    logdir = store.dirname(run.path)
    listed = list_runs(logdir, fresh_within=LISTING_KEPT_S)
    if all(info.run_id != meta.run_id for info in listed):
        listed = list_runs(logdir)  # ``run`` is newer than that listing
    infos = _job_infos(listed, meta.cluster)
    if len(infos) < 2:
        return []
    readers = JobReaders([run])
    try:
        return rank_workers(infos, readers)
    finally:
        readers.close()


def job_workers(
    runs: list[RunInfo], cluster: str, opened: Iterable[AnalysedRun] = ()
) -> list[WorkerRun]:
    """The runs of the job ``cluster`` among a logdir's ``runs`` (`reader.list_runs`,
    oldest first) ranked (`rank_workers`); ``opened``: runs the caller has open, read
    as they are. Empty when the job has fewer than two runs there."""
    infos = _job_infos(runs, cluster)
    if len(infos) < 2:
        return []
    readers = JobReaders(opened)
    try:
        return rank_workers(infos, readers)
    finally:
        readers.close()


__all__ = [
    "FOLLOWED_RUNS_KEPT",
    "JobReaders",
    "JobWorkers",
    "WorkerRun",
    "first_nonfinite_workers",
    "job_runs",
    "job_workers",
    "open_landing_run",
    "origin_worker",
    "rank_workers",
]
