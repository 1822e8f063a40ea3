"""The zero-keystroke landing holds every time: opened many times, at several sizes,
and after choosing another run with `r`, the root-cause row is on screen in Graph
Execution and the marked line is on screen in Source Code.

The landing used to race the panes' first layout: a scroll asked for in the same tick
as the list grew was dropped (the scroll bar did not exist yet), so the cursor row or
the marked line stayed off screen until a key was pressed.
"""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from tests.synthetic import LOG_LINE, write_nan_dump
from tests.tui.tui_helpers import debugger_screen, make_app, screen_text, wait_for, wait_for_hunt
from tfdbg_tui.dialogs.run_picker import RunPickerDialog
from tfdbg_tui.models.source_view import SourceView
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.source_code import SourceCodeView
from tfdbg_tui.widgets.line_list import LineList

SIZES = pytest.mark.parametrize(
    "size", [(80, 24), (120, 40), (200, 60)], ids=["80x24", "120x40", "200x60"]
)
OPENINGS = 4


def row_on_screen(widget, row: int) -> bool:
    """Whether list row `row` is inside the widget's visible rows."""
    top = widget.scroll_offset.y
    visible = widget.scrollable_content_region.height - widget.header_height
    return visible > 0 and top <= row < top + visible


async def assert_landed(app, pilot, trace_index: int, line: int) -> None:
    """The root-cause trace is selected and visible, its source line marked and visible."""
    graph_list = app.screen.query_one(GraphExecutionList)
    source = app.screen.query_one(SourceCodeView)
    await wait_for(
        pilot,
        lambda: (
            graph_list.selected_trace == trace_index
            and source.view is not None
            and source.view.line == line
        ),
        what="the landing",
    )
    await pilot.pause()
    await wait_for(
        pilot,
        lambda: row_on_screen(graph_list, graph_list.cursor) and row_on_screen(source, line - 1),
        what="the landing on screen",
    )
    # What the terminal shows, not only the widgets' state.
    text = screen_text(app)
    assert f"▶{line}" in text.replace(" ", "") or f"▶ {line}" in text, text


@SIZES
async def test_example_lands_on_screen_every_time(example_logdir, size):
    for _ in range(OPENINGS):
        app = make_app(example_logdir)
        async with app.run_test(size=size) as pilot:
            await wait_for_hunt(pilot)
            root = debugger_screen(app).root_cause
            assert root is not None
            assert root.trace is not None
            assert root.frame is not None
            await assert_landed(app, pilot, root.trace.index, root.frame.line)


async def test_landing_holds_after_choosing_another_run(tmp_path):
    write_nan_dump(tmp_path, run_id="20240101T000000-host-1-aaaaaa", source_offset=200)
    write_nan_dump(tmp_path, run_id="20240102T000000-host-2-bbbbbb", source_offset=200)
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_hunt(pilot)
        await assert_landed(app, pilot, 9, LOG_LINE + 200)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunPickerDialog), what="picker")
        await pilot.press("up", "enter")
        await wait_for(
            pilot,
            lambda: getattr(app.screen, "run_id", "") == "20240101T000000-host-1-aaaaaa",
            what="the other run",
        )
        await wait_for_hunt(pilot)
        await assert_landed(app, pilot, 9, LOG_LINE + 200)


class NumberedList(LineList):
    """A plain LineList whose rows say their number."""

    def render_row(self, row: int, width: int) -> Text:
        return Text(f"row {row}")


class OneListApp(App[None]):
    def compose(self) -> ComposeResult:
        yield NumberedList(id="numbers")


@pytest.mark.parametrize("center", [True, False], ids=["centred", "kept-visible"])
async def test_a_list_that_grows_and_moves_in_one_tick_shows_its_cursor(center):
    """The race itself, made deterministic: rows appear and the cursor moves to row
    900 before any layout has run, as when the hunt finishes within the frame that
    attached the reader."""
    app = OneListApp()
    async with app.run_test(size=(80, 24)) as pilot:
        numbers = app.query_one(NumberedList)
        numbers.set_row_count(1000)
        numbers.move_cursor(900, center=center)
        await pilot.pause()
        await wait_for(pilot, lambda: "row 900" in screen_text(app), what="row 900 painted")
        assert row_on_screen(numbers, 900)
        if center:
            assert abs(numbers.scroll_offset.y + 12 - 900) <= 1


async def test_source_code_shown_in_the_tick_it_grows_marks_its_line_on_screen():
    """Source Code's first file: the rows appear and the marked line is centred at once."""
    lines = [Text(f"code line {number}") for number in range(1, 401)]

    class SourceApp(App[None]):
        def compose(self) -> ComposeResult:
            yield SourceCodeView(id="source-code")

    app = SourceApp()
    async with app.run_test(size=(80, 24)) as pilot:
        source = app.query_one(SourceCodeView)
        source.show(SourceView("/home/user/train.py", 350, lines))
        await pilot.pause()
        await wait_for(pilot, lambda: "code line 350" in screen_text(app), what="line 350")
        assert row_on_screen(source, 349)
