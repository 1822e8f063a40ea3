"""The logdir's threads: waiting for a run to appear (`--wait`), and following a
multi-worker job until the worker that went non-finite first is known (posts
`OriginFound`; the app lands there unless the user has moved).

Like `tfdbg_tui.dump_watcher` they run in thread workers and never touch a widget:
`wait_for_run` returns what its worker posts, `follow_job` posts `OriginFound` to the
app. Both poll (a listing of a bucket is a request: never on the event loop) and wake
at once when their worker is cancelled.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from textual.message import Message
from textual.message_pump import MessagePump

from reader.analysis.jobs import JobWorkers, WorkerRun, origin_worker
from reader.errors import DamagedDumpError, DumpError, NoRunsError, NoRunsYetError
from reader.model import RunInfo
from reader.run.run_dir import list_runs
from reader.storage import is_url
from tfdbg_tui.models.hunt import Opened, open_for_landing

# How often a local job's ranking is polled (at most): from its runs' progress files it
# costs a few milliseconds (docs/performance.md, "A job of 256 workers"), and the
# writers flush every 0.5 s, so the worker that went non-finite first is named about a
# second after its NaN. A bucket's job is polled at the app's interval: each poll is a
# listing and a request per run.
JOB_POLL_INTERVAL_S = 0.5
# A failure is believed after this many polls in a row: a run that has just appeared
# may show its metadata segment before the writer's first records are all in it, and
# a bucket's listing may fail once (a dropped connection) and answer at the next poll.
FAILED_TRIES = 3


@dataclass
class OriginFound(Message):
    """A multi-worker job's worker that went non-finite first is known
    (`reader.analysis.jobs.origin_worker`)."""

    worker: WorkerRun


def wait_for_run(
    logdir: str, run_id: str | None, interval_s: float, cancelled: threading.Event
) -> tuple[list[RunInfo], Opened] | None:
    """Poll ``logdir`` every ``interval_s`` until it holds a run (``run_id``, or any),
    then open it for landing (`open_for_landing`).

    Returns:
        The logdir's runs and the opened run; None when ``cancelled`` was set first.

    Raises:
        DumpError: No run can appear there any more (the logdir became a file, the
            bucket refused the listing), or the run that appeared cannot be opened.
    """
    failures = 0
    while True:
        try:
            runs = list_runs(logdir)
            opened = open_for_landing(logdir, run_id, runs)
        except NoRunsYetError:
            failures = 0
        except (DamagedDumpError, NoRunsError):
            failures += 1
            if failures >= FAILED_TRIES:
                raise
        else:
            return runs, opened
        if cancelled.wait(interval_s):
            return None


def follow_job(
    logdir: str, cluster: str, target: MessagePump, interval_s: float, cancelled: threading.Event
) -> None:
    """Rank the runs of the job ``cluster`` in ``logdir`` every ``interval_s`` (a
    local logdir's at least every `JOB_POLL_INTERVAL_S`;
    `reader.analysis.jobs.JobWorkers`) until the worker that went non-finite first
    is known, then post `OriginFound` to ``target``. Ends without a word when every
    run of the job ended with no origin, when the logdir cannot be listed `FAILED_TRIES`
    polls in a row (the open run's own watcher reports its failures), or when
    ``cancelled`` is set."""
    job = JobWorkers(logdir, cluster)
    failures = 0
    if not is_url(logdir):
        interval_s = min(interval_s, JOB_POLL_INTERVAL_S)
    try:
        while not cancelled.wait(interval_s):
            try:
                origin = origin_worker(job.update())
                ended = job.ended
            except DumpError:
                failures += 1
                if failures >= FAILED_TRIES:
                    return
                continue
            failures = 0
            if origin is not None:
                target.post_message(OriginFound(origin))
                return
            if ended:
                return
    finally:
        job.close()
