"""Pilot tests of the NaN hunt: what the app shows on open, and the keys from there."""

from __future__ import annotations

import numpy as np
import pytest

from instrument.dump.writer import DumpWriter
from reader import format as fmt
from tests.synthetic import FLOAT32, LOG_LINE, USER_FILE, USER_SOURCE, health_row
from tests.tui.tui_helpers import hunted_app, make_app, screen_text, wait_for, wait_for_hunt
from tfdbg_tui.app import DebuggerApp
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.graph_structure import GraphStructureList
from tfdbg_tui.panes.source_code import SourceCodeView
from tfdbg_tui.panes.stack_trace import StackTraceList
from tfdbg_tui.panes.timeline import TimelineCells
from tfdbg_tui.screens.help import HelpScreen, help_text


def _source_shows(app, path_end: str, line: int) -> bool:
    view = app.screen.query_one(SourceCodeView).view
    return view is not None and view.path.endswith(path_end) and view.line == line


async def test_open_selects_root_cause_its_stack_and_source_line(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        # The first -inf is trace 9 (step 1's Log:0); the graph list holds it, focused.
        await wait_for(pilot, lambda: graph_list.selected_trace == 9, what="trace 9")
        assert app.focused is graph_list
        structure = app.screen.query_one(GraphStructureList)
        await wait_for(
            pilot,
            lambda: structure.context is not None and structure.context.trace.index == 9,
            what="structure of trace 9",
        )
        assert structure.context.op.op_type == "Log"
        assert [n.tensor_name for n in structure.context.inputs] == ["Softmax:0"]
        stack = app.screen.query_one(StackTraceList)
        assert stack.selected_frame.is_user and stack.selected_frame.line == LOG_LINE
        await wait_for(
            pilot, lambda: _source_shows(app, USER_FILE, LOG_LINE), what="source line of Log"
        )
        text = screen_text(app)
        # The line's start, then the whole expression; the lines around it from their start.
        assert "▶ 8     log_pr…tf.math.log(probs)" in text
        assert "  5 def train_step(x, labels):" in text
        assert "Log:0" in text and "Source Code train_model.py:8" in text


async def test_inputs_are_one_keystroke_away_and_enter_jumps_to_their_trace(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        structure = app.screen.query_one(GraphStructureList)
        await wait_for(pilot, lambda: structure.context is not None, what="structure")
        # The input rows are highlighted in the list already...
        graph_list = app.screen.query_one(GraphExecutionList)
        assert graph_list.input_traces == frozenset({8})
        # ...and one key puts the cursor on the first input.
        await pilot.press("4")
        assert app.focused is structure
        assert structure.selected_neighbour.tensor_name == "Softmax:0"
        await pilot.press("enter")
        await wait_for(pilot, lambda: graph_list.selected_trace == 8, what="Softmax trace")
        assert app.focused is graph_list
        await wait_for(pilot, lambda: structure.context.trace.index == 8, what="new context")
        assert structure.context.op.op_type == "Softmax"
        await wait_for(pilot, lambda: _source_shows(app, USER_FILE, 7), what="softmax line")


async def test_i_key_goes_to_the_input_trace(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        structure = app.screen.query_one(GraphStructureList)
        await wait_for(pilot, lambda: structure.context is not None, what="structure")
        await pilot.press("i")
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.selected_trace == 8, what="input trace")


async def test_next_and_previous_alert_keys_move_every_pane(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        alerts = app.screen.query_one(AlertList)
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.selected_trace == 9, what="root cause")
        assert alerts.cursor == 0
        await pilot.press("right_square_bracket")
        assert alerts.cursor == 1
        await wait_for(pilot, lambda: graph_list.selected_trace == 10, what="second alert")
        structure = app.screen.query_one(GraphStructureList)
        await wait_for(pilot, lambda: structure.context.trace.index == 10, what="mul")
        assert structure.context.op.op_type == "Mul"
        # The fourth alert is eager: the timeline moves to that execution.
        await pilot.press("right_square_bracket", "right_square_bracket")
        timeline = app.screen.query_one(TimelineCells)
        await wait_for(pilot, lambda: timeline.selected_execution == 3, what="eager alert")
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: graph_list.selected_trace == 11, what="back to Neg")


async def test_graph_execution_alert_jumps_filter_and_go_to_index(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        await pilot.press("3", "home")
        assert graph_list.selected_trace == 0
        await pilot.press("f")
        assert graph_list.selected_trace == 9
        await pilot.press("full_stop", "full_stop", "full_stop")
        assert graph_list.selected_trace == 15  # alerts: 9, 10, 11, 15, 16, 17
        await pilot.press("comma")
        assert graph_list.selected_trace == 11
        await pilot.press("a")
        assert graph_list.row_count == 6 and graph_list.selected_trace == 11
        await pilot.press("home")
        assert graph_list.selected_trace == 9
        await pilot.press("a", "g")
        await pilot.press(*"13", "enter")
        await wait_for(pilot, lambda: graph_list.selected_trace == 13, what="trace 13")
        assert graph_list.row_count == 18


async def test_search_by_op_type_regex(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        await pilot.press("3", "home", "slash")
        await pilot.press(*"Soft", "enter")
        await wait_for(pilot, lambda: graph_list.selected_trace == 2, what="first Softmax")
        await pilot.press("n")
        await wait_for(pilot, lambda: graph_list.selected_trace == 8, what="next Softmax")
        await pilot.press("N")
        await wait_for(pilot, lambda: graph_list.selected_trace == 2, what="previous")


async def test_a_search_that_is_not_a_regex_says_so_and_searches_the_text(nan_logdir):
    app = make_app(nan_logdir)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for_hunt(pilot)
        graph_list = app.screen.query_one(GraphExecutionList)
        await pilot.press("3", "home", "slash")
        await pilot.press(*"Soft(", "enter")
        await wait_for(
            pilot,
            lambda: (
                "not a regular expression" in screen_text(app)
                and "no later match" in screen_text(app)
            ),
            what="the notices",
        )
        assert graph_list.selected_trace == 0


async def test_stack_frames_choose_source_and_library_frames_hide(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        stack = app.screen.query_one(StackTraceList)
        await wait_for(pilot, lambda: len(stack.frames) == 3, what="stack")
        await pilot.press("6")
        assert app.focused is stack
        await pilot.press("down")
        assert not stack.selected_frame.is_user
        await wait_for(
            pilot,
            lambda: app.screen.query_one(SourceCodeView).view.lines is None,
            what="missing snapshot note",
        )
        await wait_for(
            pilot,
            lambda: "library file: its text is not stored in" in screen_text(app),
            what="the note on screen",
        )
        await pilot.press("up", "up")
        await wait_for(pilot, lambda: _source_shows(app, USER_FILE, 14), what="outer frame")
        await pilot.press("l")
        assert stack.row_count == 2 and "(user frames)" in screen_text(app)


@pytest.mark.parametrize(
    "key,widget_id",
    [
        ("1", "alerts"),
        ("2", "timeline"),
        ("3", "graph-execution"),
        ("4", "graph-structure"),
        ("5", "source-code"),
        ("6", "stack-trace"),
    ],
)
async def test_number_keys_focus_panes_and_z_zooms(nan_logdir, key, widget_id):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        await pilot.press(key)
        assert app.focused.id == widget_id
        await pilot.press("z")
        assert app.screen.maximized is not None
        assert app.screen.maximized.query_one(f"#{widget_id}") is app.focused
        await pilot.press("z")
        assert app.screen.maximized is None


async def test_a_pane_key_and_z_typed_in_one_burst_zoom_that_pane(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        app.simulate_key("4")  # both keys queued before either is handled,
        app.simulate_key("z")  # as when they arrive in one read over SSH
        await wait_for(pilot, lambda: app.screen.maximized is not None, what="a zoom")
        assert app.focused.id == "graph-structure"
        assert app.screen.maximized.query_one("#graph-structure") is app.focused


async def test_timeline_moves_and_shows_the_execution(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        timeline = app.screen.query_one(TimelineCells)
        await pilot.press("2", "home")
        assert timeline.selected_execution == 0
        await pilot.press("right")
        assert timeline.selected_execution == 1
        await wait_for(
            pilot,
            lambda: "__inference_train_step_42  function call" in screen_text(app),
            what="detail of the function call",
        )
        await pilot.press("z")
        await wait_for(
            pilot,
            lambda: "in 0: from #0 RandomUniform:0" in screen_text(app),
            what="the input and its producer",
        )
        await pilot.press("z")
        await pilot.press("end")
        assert timeline.selected_execution == 5
        stack = app.screen.query_one(StackTraceList)
        await wait_for(pilot, lambda: len(stack.frames) == 1, what="call stack")


async def test_question_mark_lists_every_key(nan_logdir):
    async with hunted_app(nan_logdir, (100, 50)) as (app, pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: "Anywhere" in screen_text(app), what="help")
        assert isinstance(app.screen, HelpScreen)
        listed = help_text(DebuggerApp.BINDINGS).plain
        for expected in (
            "Zoom",
            "Next alert",
            "Alerts only",
            "Search",
            "Go to a trace by its index",
            "Go to op's trace",
            "Library frames",
            "Quit",
            "Runs",
        ):
            assert expected in listed
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, what="exit")
    assert app.return_code == 0


async def test_command_palette_runs_debugger_actions(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        await pilot.press("ctrl+p")
        await pilot.press(*"Focus Stack")
        await wait_for(pilot, lambda: "Focus Stack Trace" in screen_text(app), what="command")
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: app.focused is not None and app.focused.id == "stack-trace",
            what="stack focused",
        )


async def test_eager_root_cause_selects_the_timeline_cell(tmp_path):
    writer = DumpWriter(
        tmp_path, {"tensor_debug_mode": fmt.FULL_HEALTH, "eager_mode": True}, flush_interval_s=None
    )
    user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
    stack = writer.add_stack([writer.add_frame(user, LOG_LINE, "<module>")])
    values = np.array([0.0, 1.0, 2.0])
    writer.add_execution(
        op_type="Const",
        graph_id=None,
        input_ids=[],
        output_ids=[1],
        device_ids=[],
        output_dtypes=[FLOAT32],
        stack_id=stack,
        summaries=[health_row(values)],
    )
    writer.add_execution(
        op_type="Log",
        graph_id=None,
        input_ids=[1],
        output_ids=[2],
        device_ids=[],
        output_dtypes=[FLOAT32],
        stack_id=stack,
        summaries=[health_row(np.log(values[1:]).tolist() + [-np.inf])],
    )
    writer.close()
    async with hunted_app(tmp_path, (80, 24)) as (app, pilot):
        timeline = app.screen.query_one(TimelineCells)
        await wait_for(pilot, lambda: timeline.selected_execution == 1, what="the Log cell")
        assert app.focused is timeline
        await wait_for(pilot, lambda: "#1 Log" in screen_text(app), what="its detail")
        await wait_for(pilot, lambda: _source_shows(app, USER_FILE, LOG_LINE), what="line")


async def test_selecting_a_hidden_trace_turns_the_alert_filter_off(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        graph_list = app.screen.query_one(GraphExecutionList)
        await pilot.press("3", "a")
        assert graph_list.row_count == 6 and "(alerts only)" in screen_text(app)
        await pilot.press("i")  # Log's input, Softmax:0, is not an alert
        await wait_for(pilot, lambda: graph_list.selected_trace == 8, what="the input")
        assert graph_list.row_count == 18 and "(alerts only)" not in screen_text(app)
        assert not graph_list.select_trace(10_000)


async def test_source_code_scrolls_sideways(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        await wait_for(pilot, lambda: _source_shows(app, USER_FILE, LOG_LINE), what="line")
        # The narrow pane cuts the marked line between its start and `tf.math.log(probs)`.
        await wait_for(
            pilot,
            lambda: "▶ 8     log_pr…tf.math.log(probs)" in screen_text(app),
            what="the expression in view",
        )
        await pilot.press("5", "right")
        await wait_for(
            pilot,
            lambda: "▶ 8 …robs = tf.math.log(probs)  #" in screen_text(app),
            what="the lines scrolled by 8 columns, marked",
        )
        assert "  5 …_step(x, labels):" in screen_text(app)
        await pilot.press("left")
        await wait_for(pilot, lambda: "▶ 8     log_pr…" in screen_text(app), what="back")
        await pilot.press("right", "z")
        await wait_for(
            pilot,
            lambda: "▶ 8     log_probs = tf.math.log(probs)" in screen_text(app),
            what="zoom showing the line from its first column",
        )
        assert app.screen.maximized is not None
        await pilot.press("right", "z")
        await wait_for(
            pilot,
            lambda: "▶ 8     log_pr…tf.math.log(probs)" in screen_text(app),
            what="unzoomed: the expression in view again",
        )


async def test_graph_structure_scrolls_sideways(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        structure = app.screen.query_one(GraphStructureList)
        await wait_for(pilot, lambda: structure.context is not None, what="structure")
        # (cut where the pane ends: one column earlier while its scrollbar shows)
        assert "▏  ← Softmax Softmax:0  #8 -:0 0:1" in screen_text(app)
        await pilot.press("4", "right")
        await wait_for(
            pilot,
            lambda: "▏max Softmax:0  #8 -:0 0:1 +:999 s" in screen_text(app),
            what="the rows scrolled by 8 columns",
        )
        await pilot.press("left")
        await wait_for(
            pilot, lambda: "▏  ← Softmax Softmax:0  #8 -:0 0:1" in screen_text(app), what="back"
        )
        await pilot.press("right", "z")
        await wait_for(
            pilot,
            lambda: "← Softmax Softmax:0  #8 -:0 0:1 +:999" in screen_text(app),
            what="zoom showing the rows from their first column",
        )


async def test_marked_source_line_ends_without_an_ellipsis_when_it_fits(nan_logdir):
    async with hunted_app(nan_logdir, (200, 48)) as (app, pilot):
        await wait_for(pilot, lambda: _source_shows(app, USER_FILE, LOG_LINE), what="line")
        marked = next(line for line in screen_text(app).splitlines() if "▶ 8 " in line)
        code = marked[marked.index("▶ 8 ") :]
        assert "exactly 0" in code and "…" not in code


async def test_a_record_gone_while_hunting_is_a_notice_not_a_traceback(nan_logdir, monkeypatch):
    """A circular buffer can rotate a record away while the hunt reads it: the app
    says so in one line and keeps running (the next update hunts again)."""
    from reader.analysis.dump_reader import DumpReader
    from reader.errors import UnknownIdError

    def gone(self, alert=None):
        raise UnknownIdError("execution 3 is not on disk (have 5..9)")

    monkeypatch.setattr(DumpReader, "root_cause", gone)
    app = make_app(nan_logdir)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for(
            pilot, lambda: "execution 3 is not on disk" in screen_text(app), what="the notice"
        )
        assert app.is_running and app.return_code is None
