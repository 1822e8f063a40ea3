"""The whole hunt on a real dump of the example program (TensorFlow, FULL_HEALTH)."""

from __future__ import annotations

from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.graph_structure import GraphStructureList
from tfdbg_tui.panes.source_code import SourceCodeView
from tfdbg_tui.panes.stack_trace import StackTraceList
from tfdbg_tui.panes.timeline import TimelineCells


async def test_hunt_on_the_example_alert_log_op_input_stack_and_source(example_logdir):
    async with hunted_app(example_logdir, (80, 24)) as (app, pilot):
        root = app.screen.root_cause
        assert root.op is not None and root.op.op_type == "Log"
        graph_list = app.screen.query_one(GraphExecutionList)
        structure = app.screen.query_one(GraphStructureList)
        stack = app.screen.query_one(StackTraceList)
        source = app.screen.query_one(SourceCodeView)
        # Without a keystroke: the alert, the Log tensor, its creation stack, its line.
        alerts = app.screen.query_one(AlertList)
        assert alerts.alerts[alerts.cursor].op_type == "Log"
        await wait_for(
            pilot,
            lambda: graph_list.selected_trace == root.trace.index,
            what="the root-cause trace",
        )
        await wait_for(
            pilot,
            lambda: (
                structure.context is not None and structure.context.trace.index == root.trace.index
            ),
            what="the Log op's structure",
        )
        assert structure.context.op.op_type == "Log"
        frame = stack.selected_frame
        assert frame.is_user and frame.path.endswith("debug_mnist.py")
        await wait_for(
            pilot,
            lambda: (
                source.view is not None
                and source.view.line == frame.line
                and source.view.path == frame.path
            ),
            what="the source line",
        )
        assert "tf.math.log(probs)" in source.view.lines[frame.line - 1].plain
        number = str(frame.line).rjust(len(str(len(source.view.lines))))
        # The marked line, scrolled sideways so the culprit expression is whole at 80x24.
        assert source.view.span is not None
        await wait_for(
            pilot,
            lambda: any(
                row.startswith(f"▶{number} ") and "tf.math.log(probs)" in row
                for row in (line.split("▏")[-1] for line in screen_text(app).splitlines())
            ),
            what="the line centred on screen, its expression in view",
        )
        # The diagnosis line names the pattern and the expression without a keystroke.
        assert "`tf.math.log(probs)` got" in screen_text(app).splitlines()[1]
        # Graph Structure: Log:0's history, finite in the first training step only.
        history = structure.context.history
        assert history.nonfinite[0] == False and history.nonfinite[1:].all()  # noqa: E712
        assert f"Log:0 {history.describe()[:10]}" in screen_text(app)
        # One keystroke: the inputs, with the producer's summary (an exact 0 in it).
        await pilot.press("4")
        softmax = structure.selected_neighbour
        assert softmax.op.op_type == "Softmax" and softmax.summary.zero > 0
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: graph_list.selected_trace == softmax.trace_index,
            what="the Softmax trace",
        )
        await wait_for(
            pilot, lambda: structure.context.op.op_type == "Softmax", what="the Softmax op"
        )
        await wait_for(
            pilot,
            lambda: (
                stack.selected_frame is not None
                and stack.selected_frame.is_user
                and stack.selected_frame.line != frame.line
            ),
            what="softmax's stack",
        )
        assert "tf.nn.softmax" in source.view.lines[
            stack.selected_frame.line - 1
        ].plain or "softmax" in (app.screen.reader.source_line(stack.selected_frame) or "")


async def test_timeline_detail_names_where_each_input_of_a_function_call_came_from(example_logdir):
    async with hunted_app(example_logdir, (80, 24)) as (app, pilot):
        reader = app.screen.reader
        call = next(
            i
            for i in range(reader.first_execution, reader.num_executions)
            if reader.execution(i).is_function
        )
        timeline = app.screen.query_one(TimelineCells)
        await pilot.press("2")
        timeline.move_to(call)
        await pilot.press("z")
        # x and labels come from numpy: no recorded op made them. The variables' handles
        # come from earlier executions, named with their index.
        await wait_for(
            pilot,
            lambda: "in 0: input data or a constant (no recorded op made" in screen_text(app),
            what="the data input named",
        )
        assert "in 2: from #" in screen_text(app) and "VarHandleOp:0" in screen_text(app)
        assert "tensor " not in screen_text(app)
