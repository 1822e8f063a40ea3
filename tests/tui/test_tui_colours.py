"""Colours that must stay readable in a plain 16-colour terminal."""

from __future__ import annotations

import io

from rich.color import ColorSystem
from rich.console import Console
from rich.segment import Segment, Segments
from rich.style import Style
from syrupy.extensions.image import SVGImageSnapshotExtension

from tests.synthetic import write_nan_dump
from tests.tui.tui_helpers import hunted_app, screen_strips, wait_for, wait_for_workers
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.graph_structure import GraphStructureList
from tfdbg_tui.panes.source_code import SourceCodeView
from tfdbg_tui.panes.stack_trace import StackTraceList


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


def _in_16_colours(style):
    """`style` as a 16-colour terminal shows it (TERM=xterm): colours downgraded."""
    return Style(
        color=style.color.downgrade(ColorSystem.STANDARD) if style.color else None,
        bgcolor=style.bgcolor.downgrade(ColorSystem.STANDARD) if style.bgcolor else None,
        bold=style.bold,
        underline=style.underline,
        italic=style.italic,
    )


def _colour_number(color) -> int | None:
    return None if color is None else color.downgrade(ColorSystem.STANDARD).number


def screen_svg_in_16_colours(app) -> str:
    """The whole screen as an SVG picture of a 16-colour terminal."""
    width, height = app.size
    console = Console(
        record=True,
        width=width,
        height=height,
        file=io.StringIO(),
        color_system="standard",
        force_terminal=True,
        legacy_windows=False,
    )
    for strip in screen_strips(app):
        line = [
            Segment(segment.text, _in_16_colours(segment.style))
            for segment in strip
            if segment.style
        ]
        console.print(Segments([*line, Segment.line()]), end="")
    return console.export_svg(
        title="tfdbg-tui, TERM=xterm (16 colours)", unique_id="tfdbg-tui-16-colours"
    )


async def test_in_16_colours_cursor_alerts_and_bad_counts_stay_distinct(nan_logdir):
    """The focused cursor is not red, so an alert row under it keeps its red count
    cell; the other panes' cursors (blurred) are not red either."""
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.selected_trace == 9, what="trace 9")
        red = {1, 9}  # red, bright red
        row = graph_list.cursor - graph_list.scroll_offset.y + graph_list.header_height
        cells = [segment for segment in graph_list.render_line(row) if segment.text.strip()]
        backgrounds = [_colour_number(segment.style.bgcolor) for segment in cells]
        cursor_background = backgrounds[0]
        assert cursor_background not in red
        bad_cells = [
            number for segment, number in zip(cells, backgrounds) if segment.text.strip() == "1"
        ]
        assert bad_cells and all(number in red for number in bad_cells), backgrounds
        for widget in (
            app.screen.query_one(AlertList),
            app.screen.query_one(StackTraceList),
            app.screen.query_one(GraphStructureList),
        ):
            assert not widget.has_focus
            row = widget.cursor - widget.scroll_offset.y + widget.header_height
            blurred = {
                _colour_number(segment.style.bgcolor)
                for segment in widget.render_line(row)
                if segment.text.strip()
            }
            assert not blurred & red, (type(widget).__name__, blurred)
        # The alerts' own red stays off the cursor rows, on the rows below.
        alerts = app.screen.query_one(AlertList)
        row = alerts.cursor - alerts.scroll_offset.y + alerts.header_height + 1
        assert red & {
            _colour_number(segment.style.color)
            for segment in alerts.render_line(row)
            if segment.text.strip()
        }


async def test_snapshot_of_the_landing_in_16_colours(tmp_path, snapshot):
    """The landing at 80x24 as TERM=xterm shows it. In the picture: the Log:0 row of
    Graph Execution under a cyan cursor with its -inf count "1" in a red cell; alert rows
    below it in red text; the cursors of Alerts, Graph Structure and Stack Trace grey,
    not red; Source Code's line 8 marked in yellow, its start, a grey "…" and the
    expression; the timeline's function cells cyan and its alert cell red."""
    write_nan_dump(tmp_path, run_id="20231114T221320-snapshot-4242-abcdef")
    async with hunted_app(tmp_path, (80, 24)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(
            pilot,
            lambda: (
                graph_list.selected_trace == 9
                and app.screen.query_one(SourceCodeView).view.line == 8
            ),
            what="the landing",
        )
        await wait_for_workers(pilot)
        assert screen_svg_in_16_colours(app) == snapshot(extension_class=SVGImageSnapshotExtension)
