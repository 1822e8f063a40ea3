"""A run followed while it grows: counts, alerts and lists update; a run that stopped
writing is flagged, one whose process is gone is said to be killed."""

from __future__ import annotations

import signal

from reader.run import liveness
from tests.synthetic import NanModelDump, start_writer
from tests.tui.tui_helpers import debugger_screen, make_app, screen_text, wait_for
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.timeline import TimelineCells


async def test_live_dump_updates_counts_alerts_and_lists(tmp_path):
    dump = NanModelDump(tmp_path)
    dump.add_step(0)
    dump.flush()
    app = make_app(tmp_path, poll_interval_s=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.row_count == 6, what="first step")
        await wait_for(pilot, lambda: "alerts 0" in screen_text(app), what="no alerts yet")
        assert "LIVE" in screen_text(app)
        dump.add_step(1)
        dump.flush()
        await wait_for(
            pilot,
            lambda: "executions 4  traces 12  alerts 4" in screen_text(app),
            what="counts of step 1",
        )
        assert graph_list.row_count == 12
        assert app.screen.query_one(TimelineCells).count == 4
        assert len(app.screen.query_one(AlertList).alerts) == 4
        # The first alert arrived while the app ran: the hunt selects its root cause.
        await wait_for(pilot, lambda: graph_list.selected_trace == 9, what="root cause")
        dump.close()
        await wait_for(pilot, lambda: "finished" in screen_text(app), what="finished")
        assert "LIVE" not in screen_text(app)


async def test_a_live_run_that_stopped_writing_is_flagged_as_maybe_killed(tmp_path):
    dump = NanModelDump(tmp_path)
    dump.add_step(0)
    dump.flush()  # never closed: like a process killed with SIGKILL
    app = make_app(tmp_path, poll_interval_s=0.05)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: "● LIVE" in screen_text(app), what="live")
        debugger_screen(app).last_growth -= 60  # as if nothing had been written for a minute
        debugger_screen(app).update_status()
        await wait_for(
            pilot,
            lambda: "s (live or killed)" in screen_text(app) and "LIVE? idle 6" in screen_text(app),
            what="the idle warning",
        )
        await pilot.resize_terminal(80, 24)
        await wait_for(
            pilot,
            lambda: "LIVE? idle 6" in screen_text(app) and "s, killed?  exec 2" in screen_text(app),
            what="the idle warning at 80 columns",
        )


async def test_a_run_whose_process_is_killed_is_said_to_be_killed(tmp_path):
    """A run written on this host: once its process is gone without an `end`, the
    status line says it was killed (not "live or killed")."""
    child, path = start_writer(tmp_path)
    try:
        app = make_app(tmp_path, poll_interval_s=0.05)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: "● LIVE" in screen_text(app), what="live")
            child.send_signal(signal.SIGKILL)
            await wait_for(
                pilot,
                lambda: f"KILLED (pid {child.pid} gone" in screen_text(app),
                what="the killed run",
            )
            assert "LIVE" not in screen_text(app)
        # Opened after the kill, it says so at once.
        app = make_app(tmp_path)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(
                pilot, lambda: getattr(app.screen, "reader", None) is not None, what="opened"
            )
            # Known when the run opened: never shown as live.
            screen = debugger_screen(app)
            assert screen.run_state == liveness.KILLED and not screen.live
            await wait_for(
                pilot,
                lambda: f"KILLED (pid {child.pid} gone" in screen_text(app),
                what="the killed run",
            )
    finally:
        child.kill()
        child.wait()
