"""Colours that must stay readable in a plain 16-colour terminal."""

from __future__ import annotations

from tui_helpers import hunted_app, wait_for

from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList


def _foregrounds(strip) -> set:
    return {segment.style.color for segment in strip if segment.text.strip() and segment.style}


async def test_cursor_row_text_keeps_the_cursor_colour_over_alert_colours(nan_logdir):
    """On the cursor row every character takes the cursor's text colour.

    Alert rows colour their text red, and in 16 colours the cursor's background is red
    too: the root-cause row would show as a red bar with its op name invisible.
    """
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.selected_trace == 9, what="trace 9")
        cursor_colour = graph_list.component_style("line-list--cursor").color
        assert cursor_colour is not None
        for widget in (graph_list, app.screen.query_one(AlertList)):
            row_on_screen = widget.cursor - widget.scroll_offset.y + widget.header_height
            strip = widget.render_line(row_on_screen)
            assert _foregrounds(strip) == {cursor_colour}, type(widget).__name__
            # Off the cursor, alert rows keep their own colour.
            other = widget.render_line(row_on_screen + 1)
            assert _foregrounds(other) - {cursor_colour}, type(widget).__name__
