"""Comparing a multi-worker job's rankings: what a ranking says of each worker
(`comparable`), and the ranking of every run read in full (`ranked_in_full`), which the
ranking read from the runs' progress files must equal."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reader.analysis.jobs import WorkerRun, ranking


def comparable(worker: WorkerRun) -> tuple:
    """What a ranking says of a worker, but how it knew it (`WorkerRun.indexed`) and the
    ids of its frame (a run's own numbering)."""
    frame = worker.frame
    return (
        worker.run_id,
        worker.task,
        worker.first_step,
        worker.first_time,
        worker.op_type,
        worker.op_name,
        worker.received,
        worker.device,
        worker.has_alerts,
        None if frame is None else (frame.path, frame.line, frame.function),
        worker.live,
        worker.last_step,
    )


def ranked_in_full(
    monkeypatch: pytest.MonkeyPatch, rank: Callable[[], list[WorkerRun]]
) -> list[WorkerRun]:
    """``rank()`` with every progress file ignored: each run read in full."""
    with monkeypatch.context() as patched:
        patched.setattr(ranking, "read_progresses", lambda paths, store=None: [None] * len(paths))
        return rank()
