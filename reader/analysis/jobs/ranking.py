"""A multi-worker job's runs ranked, the worker that went non-finite first first,
without reading every run (`rank_workers`): `WorkerRun`, what the ranking says of a
worker, and `JobReaders`, the runs it reads in full.

A worker's place comes from its root cause, which needs its run indexed; a job's
writers keep a progress file instead (`reader.progress`: each run's first non-finite
value as its writer saw it, and how far it has run). The first non-finite value comes
at or before the root cause, so its step, whether it was received and its call's time
(`_bound`) are a bound no root cause of that run can come before. The runs are read in
full in the order of their bounds, until the next bound is no earlier than the best
root cause found: that one is the origin, the very worker a ranking of every run in
full names. A run without a progress file (written before format 2.7, by TensorFlow's
dumper, or in FULL_TENSOR) has no bound and is read in full; one whose writer saw no
NaN or infinity is ranked from its file alone, and so is every run past the bound, by
its first non-finite value (`WorkerRun.indexed` False: its root cause, had it been
read, may come later, when that first value was contained). One assumption: a run's
first non-finite value was received and did no harm while the same step later made a
harmful one of its own (a loss scale skipping an all-reduced infinity, then a NaN of
the worker's own in that step); its bound then says "received" where its root cause
is not.
"""

from __future__ import annotations

import math
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

    @classmethod
    def without_alert(
        cls,
        run_id: str,
        path: str,
        task: str,
        *,
        live: bool,
        last_step: int | None,
        indexed: bool = True,
    ) -> WorkerRun:
        """A worker whose run has no non-finite value (yet)."""
        return cls(
            run_id,
            path,
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
            indexed=indexed,
        )


class JobReaders:
    """The runs of a job read in full while it is ranked, by run id: each opened when
    the ranking first needs it (`reader_of`), kept until `close` (or `pop`), or, once
    the ranking is `done` with it, while no more than ``keep`` are open.

    Args:
        opened: Runs open already (the caller's), read as they are and never closed.
        keep: How many runs opened here stay open once the ranking is done with them:
            none for a ranking made once (it keeps its best run, which the app lands
            on), a few for a followed job's (read again at each poll, by `update`). A
            job whose bounds rule out no run (every first value contained) is then
            read one run at a time, in bounded memory.
    """

    def __init__(self, opened: Iterable[AnalysedRun] = (), keep: int = 0) -> None:
        self._given = {run.metadata.run_id: run for run in opened}
        self._readers: dict[str, DumpReader] = {}
        self._keep = keep

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

    def done(self, run_id: str) -> None:
        """The ranking needs ``run_id``'s run no more: close it, unless fewer than
        ``keep`` runs opened here stay open."""
        if run_id in self._readers and len(self._readers) > self._keep:
            self._readers.pop(run_id).close()

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
    best_run = ""
    for bound, info, found in pending:
        if best is not None and found is not None and bound >= best:
            ranked.append(_from_progress(info, found))
            continue
        worker = _read_worker(readers.reader_of, info)
        if worker is None:
            readers.done(info.run_id)
            if found is not None:
                ranked.append(_from_progress(info, found))
            continue  # a worker's run that cannot be read is left out
        ranked.append(worker)
        if best is None or _order(worker) < best:
            readers.done(best_run)
            best, best_run = _order(worker), info.run_id
        else:
            readers.done(info.run_id)
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
        return WorkerRun.without_alert(run_id, run.path, task, live=live, last_step=last_step)
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
        return WorkerRun.without_alert(
            info.run_id, info.path, task, live=live, last_step=progress.last_step, indexed=False
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
