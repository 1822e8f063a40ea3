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

**Ranking without reading every run.** A worker's place comes from its root cause,
which needs its run indexed; a job's writers keep a progress file instead
(`reader.progress`: each run's first non-finite value as its writer saw it, and how far
it has run). The first non-finite value comes at or before the root cause, so its
step, whether it was received and its call's time (`_bound`) are a bound no root cause
of that run can come before. The runs are read in full in the order of their bounds,
until the next bound is no earlier than the best root cause found: that one is the
origin, the very worker a ranking of every run in full names. A run without a
progress file (written before format 2.7, by TensorFlow's dumper, or in FULL_TENSOR)
has no bound and is read in full; one whose writer saw no NaN or infinity is ranked
from its file alone, and so is every run past the bound, by its first non-finite value
(`WorkerRun.indexed` False: its root cause, had it been read, may come later, when
that first value was contained). One assumption: a run's first non-finite value was
received and did no harm while the same step later made a harmful one of its own (a
loss scale skipping an all-reduced infinity, then a NaN of the worker's own in that
step); its bound then says "received" where its root cause is not.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from reader import format as fmt
from reader import storage
from reader.analysis.analysed_run import AnalysedRun
from reader.analysis.dump_reader import DumpReader
from reader.errors import DumpError
from reader.model import DUMPER_TENSORFLOW, Frame, RunInfo
from reader.progress import RunProgress, read_progresses
from reader.run import liveness
from reader.run.run_dir import LISTING_KEPT_S, list_runs


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
    # Its run was read in full (the root cause above); False: ranked from its progress
    # file alone (`reader.progress`), by its first non-finite value as its writer saw it.
    indexed: bool = True


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


class JobReaders:
    """The runs of a job read in full while it is ranked, by run id: each opened when
    the ranking first needs it (`reader_of`), kept until `close` (or `pop`).

    Args:
        opened: Runs open already (the caller's), read as they are and never closed.
    """

    def __init__(self, opened: Iterable[AnalysedRun] = ()) -> None:
        self._given = {run.metadata.run_id: run for run in opened}
        self._readers: dict[str, DumpReader] = {}

    def reader_of(self, info: RunInfo) -> AnalysedRun | None:
        """The run of ``info``, indexed; None when it cannot be read (left out)."""
        given = self._given.get(info.run_id)
        if given is not None:
            return given
        known = self._readers.get(info.run_id)
        if known is not None:
            return known
        try:
            opened = self._readers[info.run_id] = DumpReader(info.path)
        except DumpError:
            return None
        return opened

    def is_open(self, run_id: str) -> bool:
        """Whether ``run_id``'s run is read already (the caller's, or opened here)."""
        return run_id in self._given or run_id in self._readers

    def pop(self, run_id: str) -> DumpReader | None:
        """The reader of ``run_id`` if one was opened here, now the caller's to close."""
        return self._readers.pop(run_id, None)

    def close(self, keep: Iterable[str] = ()) -> None:
        """Close every reader opened here but those of ``keep`` (run ids)."""
        kept = set(keep)
        for run_id in [r for r in self._readers if r not in kept]:
            self._readers.pop(run_id).close()

    def update(self) -> None:
        """Read what the runs opened here appended since (`DumpReader.update`); one
        that cannot be read any more is closed, and opened again when it is needed."""
        for run_id, reader in list(self._readers.items()):
            try:
                reader.update()
            except DumpError:
                self._readers.pop(run_id).close()


def rank_workers(
    infos: Sequence[RunInfo],
    readers: JobReaders,
    progress: Sequence[RunProgress | None] | None = None,
) -> list[WorkerRun]:
    """The job's runs ``infos`` ranked, the worker that went non-finite first first
    (runs without alerts last), each run read in full only when its first non-finite
    value could come before the best root cause found (the module's docstring).

    Args:
        infos: The job's runs (`_job_infos`).
        readers: Where the runs read in full come from, and stay.
        progress: Each run's progress file (`reader.progress.read_progresses`),
            read here when not given.
    """
    if progress is None:
        progress = _progress_of(infos)
    ranked: list[WorkerRun] = []
    pending: list[tuple[tuple, RunInfo, RunProgress | None]] = []
    for info, found in zip(infos, progress):
        if found is not None and found.watched_alerts and found.alert is None:
            ranked.append(_from_progress(info, found))  # its writer saw no NaN nor inf
        else:
            pending.append((_bound(info, found), info, found))
    # By bound; a run open already first (reading it costs nothing, and its root cause
    # may rule out the others).
    pending.sort(key=lambda item: (not readers.is_open(item[1].run_id), item[0]))
    best: tuple | None = None
    for bound, info, found in pending:
        if best is not None and found is not None and bound >= best:
            ranked.append(_from_progress(info, found))
            continue
        worker = _read_worker(readers.reader_of, info)
        if worker is None:
            if found is not None:
                ranked.append(_from_progress(info, found))
            continue  # a worker's run that cannot be read is left out
        ranked.append(worker)
        best = _order(worker) if best is None else min(best, _order(worker))
    return sorted(ranked, key=_order)


def _progress_of(infos: Sequence[RunInfo]) -> list[RunProgress | None]:
    """Each run's progress file: as listed (a bucket's job runs are listed from them),
    or read now, at once (a bucket's fetched concurrently)."""
    found: list[RunProgress | None] = [info.progress for info in infos]
    ours = [
        i
        for i, info in enumerate(infos)
        if info.progress is None and info.dumper != DUMPER_TENSORFLOW
    ]
    if ours:
        paths = [infos[i].path for i in ours]
        for i, progress in zip(ours, read_progresses(paths, storage.store_for(paths[0]))):
            found[i] = progress
    return found


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
        self._readers = JobReaders()
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


def _read_worker(
    reader_of: Callable[[RunInfo], AnalysedRun | None], info: RunInfo
) -> WorkerRun | None:
    """``info``'s run read in full as a `WorkerRun`; None when it cannot be read."""
    reader = reader_of(info)
    if reader is None:
        return None
    try:
        return _worker_run(reader, info.run_id, info.task or "")
    except DumpError:
        return None


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
        op_type in fmt.RECEIVING_OPS,
        cause.frame,
        True,
        alert.device,
        live=live,
        last_step=last_step,
    )


def _from_progress(info: RunInfo, progress: RunProgress) -> WorkerRun:
    """A worker as its progress file says: its first non-finite value, or none."""
    live = (
        liveness.state_of(
            info.finished or progress.ended,
            liveness.process_gone(info.host, info.pid, info.start_time),
            info.stopped or progress.stopped,
        )
        not in liveness.ENDED
    )
    alert, task = progress.alert, info.task or ""
    if alert is None:
        return WorkerRun(
            info.run_id,
            info.path,
            task,
            None,
            None,
            None,
            None,
            False,
            None,
            False,
            live=live,
            last_step=progress.last_step,
            indexed=False,
        )
    # As a run read in full says of a live run's call whose traces may come later.
    op_known = not (live and alert.kind == "eager" and fmt.is_function_call(alert.op_type))
    op_type = alert.op_type if op_known else None
    frame = (
        None
        if alert.frame is None
        else Frame(
            id=-1,
            file_id=-1,
            path=alert.frame[0],
            line=alert.frame[1],
            function=alert.frame[2],
            is_user=True,
        )
    )
    return WorkerRun(
        info.run_id,
        info.path,
        task,
        progress.step_of(alert),
        alert.time,
        op_type,
        alert.op_name,
        op_type in fmt.RECEIVING_OPS,
        frame,
        True,
        alert.device,
        live=live,
        last_step=progress.last_step,
        indexed=False,
    )


# The bound of a run whose progress says nothing of its first alert's place: it is
# read in full before any other is ranked past it.
_NO_BOUND = (0, -2, False, -math.inf, "")


def _bound(info: RunInfo, progress: RunProgress | None) -> tuple:
    """The earliest `_order` key ``info``'s root cause can have: its first non-finite
    value's (its step, whether it was received, its call's time), or `_NO_BOUND`."""
    alert = None if progress is None else progress.alert
    if progress is None or alert is None or alert.calls is None:
        return _NO_BOUND
    step = progress.step_of(alert)
    time = alert.time if alert.time is not None else -math.inf
    return (0, step if step is not None else -1, alert.received, time, info.task or "")


def _order(worker: WorkerRun) -> tuple:
    if not worker.has_alerts:
        return (1, 0, 0, 0.0, worker.task)
    step = worker.first_step if worker.first_step is not None else -1
    time = worker.first_time if worker.first_time is not None else math.inf
    return (0, step, worker.received, time, worker.task)
