"""A MultiWorkerMirroredStrategy job of two worker processes writing into a bucket of
the local S3 server, followed live by the app (Pilot): both workers show in the run
picker as they run, and picking the one marked first lands on its root cause."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import reader
from tests.instrument.conftest import PROGRAM_TIMEOUT_S, PROGRAMS, line_of, program_env
from tests.instrument.test_multi_worker import _free_ports
from tests.tui.tui_helpers import screen_text, wait_for, wait_for_hunt
from tfdbg_tui.app import DebuggerApp

PROGRAM = PROGRAMS / "multi_worker.py"
pytestmark = pytest.mark.tf


def _runs(logdir: str) -> list:
    try:
        return reader.list_runs(logdir)
    except reader.NoRunsError:
        return []


def test_the_app_follows_a_job_in_a_bucket_to_the_first_non_finite_worker(s3_server, bucket):
    """(The Pilot run, in an event loop of its own.)"""
    asyncio.run(_follow_the_job(s3_server, bucket))


async def _follow_the_job(s3_server, bucket) -> None:
    from tfdbg_tui.screens.run_picker import RunPickerScreen

    logdir = f"{bucket}/job"
    ports = [str(p) for p in _free_ports(2)]
    env = dict(program_env(), **s3_server.env(), STEP_DELAY_S="1.5")
    workers = [subprocess.Popen([sys.executable, str(PROGRAM), logdir, str(i), *ports],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for i in range(2)]
    try:
        # The app opens as soon as the first worker's run is in the bucket.
        deadline = time.monotonic() + PROGRAM_TIMEOUT_S
        while not _runs(logdir):
            assert time.monotonic() < deadline, "no run appeared in the bucket"
            assert all(w.poll() is None for w in workers), workers[0].stderr.read()[-3000:]
            time.sleep(0.2)
        app = DebuggerApp(logdir, _runs(logdir), _runs(logdir)[0].run_id)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: getattr(app.screen, "reader", None) is not None,
                           timeout=PROGRAM_TIMEOUT_S, what="the first run open")
            opened = app.screen.run_id
            live_at_open = app.screen.reader.metadata.finished is False
            # The job goes on; the app follows it until both workers finished.
            await wait_for(pilot, lambda: all(w.poll() is not None for w in workers),
                           timeout=PROGRAM_TIMEOUT_S, what="the job to end")
            for worker in workers:
                assert worker.returncode == 0, worker.stderr.read()[-3000:]
            await wait_for(pilot, lambda: app.screen.reader.metadata.finished,
                           what="the open run followed to its end")
            assert live_at_open
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, RunPickerScreen),
                           what="the picker")
            marked = lambda: [line for line in screen_text(app).splitlines()  # noqa: E731
                              if "worker" in line and "first non-finite" in line]
            await wait_for(pilot, marked, timeout=60, what="the first worker marked")
            runs = {r.task: r for r in _runs(logdir)}
            assert sorted(runs) == ["worker 0", "worker 1"]
            (line,) = marked()
            assert "worker 1" in line and runs["worker 1"].run_id in line
            picker = app.screen
            position = next(i for i, r in enumerate(picker.runs)
                            if r.run_id == runs["worker 1"].run_id)
            from textual.widgets import OptionList

            picker.query_one(OptionList).highlighted = position
            await pilot.press("enter")
            await wait_for(pilot, lambda: getattr(app.screen, "run_id", None)
                           == runs["worker 1"].run_id, what="worker 1's run")
            await wait_for_hunt(pilot)
            cause = app.screen.root_cause
            assert cause.op.op_type == "Log"
            assert (cause.frame.path, cause.frame.line) == \
                (str(PROGRAM), line_of(PROGRAM, "LOG_LINE"))
            assert opened in {r.run_id for r in runs.values()}
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=30)
