"""Size does not matter: a million traces open, scroll and jump; an eager input made
long before its consumer is still found."""

from __future__ import annotations

import numpy as np

import reader
from instrument.dump.writer import DumpWriter
from reader import format as fmt
from tests.synthetic import FLOAT32, health_row
from tests.tui.tui_helpers import make_app, screen_text, wait_for
from tfdbg_tui.models.context_loader import load_execution_context
from tfdbg_tui.panes.graph_execution import GraphExecutionList


async def test_million_traces_open_scroll_and_jump(big_logdir):
    app = make_app(big_logdir)
    async with app.run_test(size=(100, 30)) as pilot:
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.row_count == 1_000_000, what="1M rows")
        # One NaN every 100,000 traces: the first is trace 99,999.
        await wait_for(pilot, lambda: graph_list.selected_trace == 99_999, what="first NaN")
        await pilot.press("3", "end")
        assert graph_list.selected_trace == 999_999
        await wait_for(pilot, lambda: "999999 layer_99/op:0" in screen_text(app), what="last")
        await pilot.press("g", *"500000", "enter")
        await wait_for(pilot, lambda: graph_list.selected_trace == 500_000, what="#500000")
        await pilot.press("comma")
        assert graph_list.selected_trace == 499_999
        await pilot.press("a")
        assert graph_list.row_count == 10
        await pilot.press("pageup", "pagedown")
        await wait_for(pilot, lambda: "499999 layer_99/op:0" in screen_text(app), what="row")


INJECTED = "[red]Log[/red]\x1b[31m\x07"


def test_execution_detail_finds_an_input_produced_long_before(tmp_path):
    """The timeline's detail names an input's producer however far back it ran."""
    writer = DumpWriter(tmp_path, {"tensor_debug_mode": fmt.FULL_HEALTH}, flush_interval_s=None)
    row = health_row(np.array([1.0, 2.0]))

    def execute(op_type, inputs, outputs):
        return writer.add_execution(
            op_type=op_type,
            graph_id=None,
            input_ids=inputs,
            output_ids=outputs,
            device_ids=[],
            output_dtypes=[FLOAT32] * len(outputs),
            stack_id=None,
            summaries=[row] * len(outputs),
        )

    execute("ReadVariableOp", [], [7])
    for i in range(2000):
        execute("AddV2", [], [100 + i])
    consumer = execute("MatMul", [7, 2099, 5], [9999])
    writer.close()
    context = load_execution_context(reader.open_run(tmp_path), consumer)
    assert [(i.tensor_id, i.producer_index, i.producer_op_type) for i in context.inputs] == [
        (7, 0, "ReadVariableOp"),
        (2099, 2000, "AddV2"),
        (5, None, None),
    ]
