"""The app on a dump whose circular buffer kept the first alert's window and the
latest steps: steps, the first non-finite step, alerts per step, and the gap shown
where records are missing (synthetic `write_long_run`: first -inf at step 40 of 100,
steps 41-80 not kept)."""

from __future__ import annotations

from tests.synthetic import write_long_run
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.timeline import GAP_CELL, TimelineCells

GAP_TEXT = "steps 41-80 not kept"


async def test_alerts_name_steps_and_the_first_non_finite_step(tmp_path):
    write_long_run(tmp_path)
    async with hunted_app(tmp_path, (80, 24)) as (app, pilot):
        await pilot.press("1", "z")
        alerts = app.screen.query_one(AlertList)
        await wait_for(
            pilot,
            lambda: "first non-finite value at step 40" in screen_text(app),
            what="the first step",
        )
        text = screen_text(app)
        heading = next(line for line in text.splitlines() if "first non-finite" in line)
        # Alerts per step: none kept before 40, a jump at 40, NaN everywhere after.
        assert "steps 30-99" in heading and "·" in heading and "█" in heading
        assert "-inf  graph #121 Log Log:0  step 40  -inf 1" in text
        # The gap row stands after the alerts of step 40, before those of step 81.
        rows = [alerts.render_row(row, 80).plain for row in range(alerts.row_count)]
        gap_row = next(row for row, line in enumerate(rows) if GAP_TEXT in line)
        assert "step 40" in rows[gap_row - 1] and "step 81" in rows[gap_row + 1]
        # `]` walks the alerts over the gap row, never stopping on it.
        alerts.move_cursor(gap_row - 1)
        await pilot.press("right_square_bracket")
        assert alerts.cursor == gap_row + 1


async def test_graph_execution_shows_one_row_for_the_traces_not_kept(tmp_path):
    write_long_run(tmp_path)
    async with hunted_app(tmp_path, (100, 30)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(
            pilot, lambda: f"┄┄ {GAP_TEXT} (#123-#278) ┄┄" in screen_text(app), what="the gap row"
        )
        assert graph_list.row_count == 15 + 1 + 21  # pinned window, gap, tail
        await pilot.press("3", "g", *"200", "enter")  # a trace that was not kept
        await wait_for(pilot, lambda: graph_list.selected_trace is None, what="the gap row")
        await pilot.press("down")
        assert graph_list.selected_trace == 279
        await pilot.press("up", "up")
        assert graph_list.selected_trace == 122
        # From the gap row, the next alert trace is the first one after the gap.
        await pilot.press("down", "full_stop")
        assert graph_list.selected_trace == 279
        await pilot.press("a")  # alerts only: the gap row stays between them
        await wait_for(pilot, lambda: "(alerts only)" in screen_text(app), what="filter")
        assert GAP_TEXT in screen_text(app)


async def test_the_timeline_has_one_cell_for_the_executions_not_kept(tmp_path):
    write_long_run(tmp_path)
    async with hunted_app(tmp_path, (100, 30)) as (app, pilot):
        timeline = app.screen.query_one(TimelineCells)
        assert timeline.count == 11 + 1 + 19
        await wait_for(
            pilot, lambda: "s" * 11 + GAP_CELL + "s" * 19 in screen_text(app), what="the cells"
        )
        timeline.select_execution(40)
        await pilot.press("2", "right")
        assert timeline.selected_execution is None
        await wait_for(
            pilot,
            lambda: f"{GAP_TEXT}: executions #41-#80" in screen_text(app),
            what="the gap's detail",
        )
        await pilot.press("right")
        assert timeline.selected_execution == 81
        timeline.select_execution(60)  # not kept: its gap's cell
        assert timeline.cursor == 11
