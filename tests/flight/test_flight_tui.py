"""The app on the real late-NaN run (FULL_HEALTH, default circular buffer): it lands
on the Log op at the user's line, says at which step the first non-finite value
appeared, and shows the graph traces the buffer did not keep as a gap."""

from __future__ import annotations

import asyncio
import re

from tests.flight.conftest import LOG_LINE, NAN_STEP
from tests.present import present
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.panes.graph_execution import GraphExecutionList

GAP = re.compile(r"┄┄ graph traces of steps (\d+)-(\d+) not kept \(#(\d+)-#(\d+)\) ┄┄")


def test_the_app_names_the_step_and_shows_the_gap(late_nan_logdir):
    async def drive() -> None:
        async with hunted_app(late_nan_logdir, (160, 48)) as (app, pilot):
            screen = app.screen
            assert screen.root_cause.alert.op_type == "Log"
            await wait_for(
                pilot,
                lambda: screen.query_one("#source-code").view.line == LOG_LINE,
                what="the Log line",
            )
            await wait_for(
                pilot,
                lambda: f"first non-finite value at step {NAN_STEP}" in screen_text(app),
                what="the first step",
            )
            assert f"Log Log:0  step {NAN_STEP}  -inf" in screen_text(app)
            graph_list = screen.query_one(GraphExecutionList)
            _, (tail, _) = screen.reader.kept_traces()
            gap_row = graph_list.rows.row_of(tail - 1)
            assert graph_list.rows.trace_index(gap_row) is None
            graph_list.move_cursor(gap_row, center=True)
            await wait_for(
                pilot, lambda: GAP.search(screen_text(app)) is not None, what="the gap row"
            )
            first, last, begin, end = map(int, present(GAP.search(screen_text(app))).groups())
            assert NAN_STEP < first <= last and end == tail - 1

    asyncio.run(drive())
