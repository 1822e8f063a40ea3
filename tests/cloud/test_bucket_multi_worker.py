"""A MultiWorkerMirroredStrategy job of two worker processes writing into a bucket of
the local S3 server, followed live by the app (Pilot) started before the job
(`--wait`): it waits for the empty prefix, opens the first worker's run as it appears,
and once worker 1 goes non-finite lands on worker 1's root cause by itself; the run
picker marks worker 1 as the first non-finite."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from dataclasses import replace

import pytest

import reader
from reader.analysis.jobs import job_workers
from tests.present import present
from tests.program_runs import PROGRAM_TIMEOUT_S, PROGRAMS, free_ports, line_of, program_env
from tests.reader.job_rankings import comparable, ranked_in_full
from tests.tui.tui_helpers import debugger_screen, run_picker, screen_text, wait_for
from tfdbg_tui.app import DebuggerApp

PROGRAM = PROGRAMS / "multi_worker.py"
pytestmark = pytest.mark.tf


def _runs(logdir: str) -> list:
    try:
        return reader.list_runs(logdir)
    except reader.NoRunsError:
        return []


def test_the_app_started_before_a_job_in_a_bucket_lands_on_the_first_non_finite_worker(
    s3_server, bucket, monkeypatch
):
    """(The Pilot run, in an event loop of its own.) Then, the job ended: its runs are
    listed from their progress files, and the job ranked from them is the job ranked
    with both runs read in full."""
    asyncio.run(_follow_the_job(s3_server, bucket))
    runs = reader.list_runs(f"{bucket}/job")
    assert [r.progress is not None for r in runs] == [True, True]
    cluster = present(runs[0].cluster)
    fast = job_workers(runs, cluster)
    listed = [replace(r, progress=None) for r in runs]
    full = ranked_in_full(monkeypatch, lambda: job_workers(listed, cluster))
    assert [comparable(w) for w in fast] == [comparable(w) for w in full]
    assert [w.task for w in fast] == ["worker 1", "worker 0"] and fast[0].op_type == "Log"


async def _follow_the_job(s3_server, bucket) -> None:
    from textual.widgets import OptionList

    from tfdbg_tui.dialogs.run_picker import RunPickerDialog
    from tfdbg_tui.screens.debugger import DebuggerScreen

    logdir = f"{bucket}/job"
    ports = [str(p) for p in free_ports(2)]
    # Worker 1, the one that goes non-finite, enables its dump a few seconds after
    # worker 0: the app opens worker 0's run first, and has to move by itself.
    env = dict(program_env(), **s3_server.env(), STEP_DELAY_S="1.5", BAD_WORKER_DELAY_S="6")
    # Their output goes to files: pipes nobody reads while the app runs would fill and
    # block them.
    logs = [tempfile.TemporaryFile("w+") for _ in range(2)]
    workers: list[subprocess.Popen] = []

    def output(i: int) -> str:
        logs[i].seek(0)
        return logs[i].read()[-3000:]

    def shown_task() -> str | None:
        """The task of the worker whose run is on screen (None: none open)."""
        screen = app.screen
        return (
            screen.reader.metadata.task
            if isinstance(screen, DebuggerScreen) and screen.reader
            else None
        )

    app = DebuggerApp(logdir, [], wait=True)  # `tfdbg-tui s3://.../job --wait`
    try:
        async with app.run_test(size=(120, 30), notifications=True) as pilot:
            await wait_for(
                pilot,
                lambda: f"waiting for the first run in {logdir}…" in screen_text(app),
                what="the waiting line",
            )
            assert not _runs(logdir)
            workers += [
                subprocess.Popen(
                    [sys.executable, str(PROGRAM), logdir, str(i), *ports],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                for i, log in enumerate(logs)
            ]
            await wait_for(
                pilot,
                lambda: shown_task() is not None or any(w.poll() is not None for w in workers),
                timeout=PROGRAM_TIMEOUT_S,
                what="the first run open",
            )
            assert all(w.poll() is None for w in workers), output(0) + output(1)
            assert shown_task() == "worker 0"
            assert present(debugger_screen(app).reader).metadata.finished is False  # live
            # No key pressed: the app goes to worker 1 when it goes non-finite.
            await wait_for(
                pilot,
                lambda: "worker 1 went non-finite first: showing its run" in screen_text(app),
                timeout=PROGRAM_TIMEOUT_S,
                what="the move to worker 1",
            )
            # (Live: a trace may be read before its op's definition; the hunt runs
            # again as the run grows.)
            await wait_for(
                pilot,
                lambda: (
                    shown_task() == "worker 1"
                    and getattr(getattr(app.screen, "root_cause", None), "op", None) is not None
                    and getattr(getattr(app.screen, "root_cause", None), "frame", None) is not None
                ),
                timeout=PROGRAM_TIMEOUT_S,
                what="worker 1's root cause",
            )
            cause = debugger_screen(app).root_cause
            assert cause is not None
            assert cause.op is not None
            assert cause.op.op_type == "Log"
            assert cause.frame is not None
            assert (cause.frame.path, cause.frame.line) == (
                str(PROGRAM),
                line_of(PROGRAM, "LOG_LINE"),
            )
            await wait_for(
                pilot,
                lambda: all(w.poll() is not None for w in workers),
                timeout=PROGRAM_TIMEOUT_S,
                what="the job to end",
            )
            for i, worker in enumerate(workers):
                assert worker.returncode == 0, output(i)
            # The run picker marks the same worker.
            await pilot.press("r")
            await wait_for(
                pilot, lambda: isinstance(app.screen, RunPickerDialog), what="the picker"
            )
            marked = lambda: [  # noqa: E731
                line
                for line in screen_text(app).splitlines()
                if "worker" in line and "first non-finite" in line
            ]
            await wait_for(pilot, marked, timeout=60, what="the first worker marked")
            runs = {r.task: r for r in _runs(logdir)}
            assert sorted(runs) == ["worker 0", "worker 1"]
            (line,) = marked()
            assert "worker 1" in line and runs["worker 1"].run_id in line
            assert app.screen.query_one(OptionList).highlighted == next(
                i for i, r in enumerate(run_picker(app).runs) if r.run_id == runs["worker 1"].run_id
            )
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=30)
