"""The app started before the program (`--wait`): it says it waits, its keys work, and
it opens the run when it appears; on a multi-worker job it goes to the worker that went
non-finite first by itself, unless the user has moved (synthetic dumps, no TensorFlow).
"""

from __future__ import annotations

import threading

import pytest

import reader
from reader.analysis.jobs import first_nonfinite_workers
from reader.errors import NoRunsError
from tests.present import present
from tests.synthetic import FINITE, NAN, add_step, make_run, write_nan_dump
from tests.tui.tui_helpers import debugger_screen, screen_text, wait_for, wait_for_hunt
from tfdbg_tui import logdir_watcher
from tfdbg_tui.app import DebuggerApp
from tfdbg_tui.screens.debugger import DebuggerScreen
from tfdbg_tui.screens.help import HelpScreen

CLUSTER = "0123456789ab"
POLL_S = 0.1


def _waiting_app(logdir, run_id: str | None = None) -> DebuggerApp:
    return DebuggerApp(str(logdir), [], run_id, poll_interval_s=POLL_S, wait=True)


def _worker(logdir, index: int, stamp: str):
    return make_run(
        logdir,
        run_id=f"{stamp}-host{index}-{100 + index}-abcdef",
        task={"type": "worker", "index": index, "cluster": CLUSTER},
    )


def _step(run, nan: bool = False) -> None:
    add_step(run, [FINITE, NAN if nan else FINITE])
    run.writer.flush()


def _shown_run(app) -> str | None:
    screen = app.screen
    return screen.run_id if isinstance(screen, DebuggerScreen) and screen.reader else None


async def _worker_zero_opens(pilot, logdir):
    """Worker 0's run appears with one finite step, and the waiting app opens it."""
    zero = _worker(logdir, 0, "20260101T000000")
    _step(zero)
    await wait_for(
        pilot, lambda: _shown_run(pilot.app) == zero.writer.run_id, what="worker 0's run open"
    )
    return zero


async def test_waits_for_the_first_run_then_lands_on_its_root_cause(tmp_path):
    logdir = tmp_path / "logdir"  # not there yet: the program makes it
    app = _waiting_app(logdir)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        # At 80 columns the logdir loses its middle, never its end.
        await wait_for(
            pilot,
            lambda: (
                " waiting for the first run in /" in screen_text(app)
                and "/logdir…" in screen_text(app)
            ),
            what="the waiting line",
        )
        assert "no run yet: it opens as soon as the program writes it" in screen_text(app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DebuggerScreen), what="back")
        assert debugger_screen(app).reader is None
        await pilot.press("r")
        await wait_for(
            pilot, lambda: "no run in this logdir yet" in screen_text(app), what="no run to pick"
        )
        dump = write_nan_dump(logdir, finished=False)
        await wait_for_hunt(pilot)
        assert debugger_screen(app).run_id == dump.writer.run_id
        assert present(debugger_screen(app).root_cause).alert.op_type == "Log"
        assert "waiting" not in screen_text(app)
        dump.close()


async def test_waits_for_the_run_asked_for(tmp_path):
    write_nan_dump(tmp_path, run_id="20260101T000000-host-1-aaaaaa")
    app = _waiting_app(tmp_path, "20260102")
    async with app.run_test(size=(200, 24), notifications=True) as pilot:
        await wait_for(
            pilot,
            lambda: f"waiting for run 20260102 in {tmp_path}…" in screen_text(app),
            what="the waiting line",
        )
        write_nan_dump(tmp_path, run_id="20260102T000000-host-1-bbbbbb")
        await wait_for_hunt(pilot)
        assert debugger_screen(app).run_id == "20260102T000000-host-1-bbbbbb"


async def test_a_job_started_after_the_app_lands_on_the_first_non_finite_worker(tmp_path):
    app = _waiting_app(tmp_path)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        # Worker 0's run appears first and opens; it stays finite.
        zero = await _worker_zero_opens(pilot, tmp_path)
        one = _worker(tmp_path, 1, "20260101T000001")
        _step(one)
        _step(zero)
        _step(one, nan=True)
        await wait_for(
            pilot, lambda: _shown_run(app) == one.writer.run_id, what="worker 1's run, by itself"
        )
        await wait_for(
            pilot,
            lambda: getattr(app.screen, "root_cause", None) is not None,
            what="worker 1's root cause",
        )
        assert present(debugger_screen(app).root_cause).alert.op_type == "Log"
        await wait_for(
            pilot,
            lambda: "worker 1 went non-finite first: showing its run" in screen_text(app),
            what="the notice of the move",
        )
        for run in (zero, one):
            run.writer.close()


async def test_a_user_who_moved_is_told_not_moved(tmp_path):
    app = _waiting_app(tmp_path)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        zero = await _worker_zero_opens(pilot, tmp_path)
        await pilot.press("2")  # to the timeline, by hand
        one = _worker(tmp_path, 1, "20260101T000001")
        _step(one, nan=True)
        await wait_for(
            pilot,
            lambda: (
                "worker 1 went non-finite first (run" in screen_text(app)
                and "press r to open it" in screen_text(app)
            ),
            what="the notification",
        )
        assert _shown_run(app) == zero.writer.run_id
        assert not debugger_screen(app).root_cause
        for run in (zero, one):
            run.writer.close()


async def test_a_finished_job_opens_on_the_first_non_finite_worker(tmp_path):
    """No `--run`: the worker that went non-finite first, not the newest run."""
    one = _worker(tmp_path, 1, "20260101T000000")
    zero = _worker(tmp_path, 0, "20260101T000001")  # the newest run
    for step in range(4):
        _step(one, nan=step >= 1)
        _step(zero, nan=step >= 3)
    for run in (zero, one):
        run.writer.close()
    app = DebuggerApp(str(tmp_path), reader.list_runs(tmp_path))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for_hunt(pilot)
        assert debugger_screen(app).run_id == one.writer.run_id
        assert [w.task for w in first_nonfinite_workers(present(debugger_screen(app).reader))] == [
            "worker 1",
            "worker 0",
        ]


def test_a_failure_is_tried_again_before_it_is_believed(tmp_path, monkeypatch):
    """A bucket's listing may fail once (a dropped connection): waiting goes on; a
    failure `FAILED_TRIES` polls in a row ends it."""
    dump = write_nan_dump(tmp_path)
    real = logdir_watcher.open_for_landing
    calls: list[int] = []

    def once_refused(logdir, run_id, runs=None):
        calls.append(1)
        if len(calls) == 1:
            raise NoRunsError(f"{logdir}: cannot list (connection reset)")
        return real(logdir, run_id, runs)

    monkeypatch.setattr(logdir_watcher, "open_for_landing", once_refused)
    runs, opened = present(
        logdir_watcher.wait_for_run(str(tmp_path), None, 0.01, threading.Event())
    )
    assert len(calls) == 2 and opened.reader.run_id == dump.writer.run_id
    assert [run.run_id for run in runs] == [dump.writer.run_id]
    opened.reader.close()
    calls.clear()

    def refused(logdir, run_id, runs=None):
        calls.append(1)
        raise NoRunsError(f"{logdir}: cannot list (access denied)")

    monkeypatch.setattr(logdir_watcher, "open_for_landing", refused)
    with pytest.raises(NoRunsError, match="access denied"):
        logdir_watcher.wait_for_run(str(tmp_path), None, 0.01, threading.Event())
    assert len(calls) == logdir_watcher.FAILED_TRIES
