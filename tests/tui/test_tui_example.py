"""The whole hunt on a real dump of the example program (TensorFlow, FULL_HEALTH)."""

from __future__ import annotations

from tui_helpers import hunted_app, screen_text, wait_for

from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.graph_structure import GraphStructureList
from tfdbg_tui.panes.source_code import SourceCodeView
from tfdbg_tui.panes.stack_trace import StackTraceList


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
        await wait_for(pilot, lambda: graph_list.selected_trace == root.trace.index,
                       what="the root-cause trace")
        await wait_for(pilot, lambda: structure.context is not None
                       and structure.context.trace.index == root.trace.index,
                       what="the Log op's structure")
        assert structure.context.op.op_type == "Log"
        frame = stack.selected_frame
        assert frame.is_user and frame.path.endswith("debug_mnist.py")
        await wait_for(pilot, lambda: source.view is not None and source.view.line == frame.line
                       and source.view.path == frame.path, what="the source line")
        assert "tf.math.log(probs)" in source.view.lines[frame.line - 1].plain
        number = str(frame.line).rjust(len(str(len(source.view.lines))))
        await wait_for(pilot, lambda: f"▶{number} " in screen_text(app)
                       and "log_probs = tf.math." in screen_text(app),
                       what="the line centred on screen")
        # One keystroke: the inputs, with the producer's summary (an exact 0 in it).
        await pilot.press("4")
        softmax = structure.selected_neighbour
        assert softmax.op.op_type == "Softmax" and softmax.summary.zero > 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: graph_list.selected_trace == softmax.trace_index,
                       what="the Softmax trace")
        await wait_for(pilot, lambda: structure.context.op.op_type == "Softmax",
                       what="the Softmax op")
        await wait_for(pilot, lambda: stack.selected_frame is not None
                       and stack.selected_frame.is_user
                       and stack.selected_frame.line != frame.line, what="softmax's stack")
        assert "tf.nn.softmax" in source.view.lines[stack.selected_frame.line - 1].plain or \
            "softmax" in (app.screen.reader.source_line(stack.selected_frame) or "")
