"""Several runs (the picker), a damaged dump (a notice), FULL_TENSOR values (the view)."""

from __future__ import annotations

import numpy as np
import msgpack
from synthetic_dumps import FLOAT32, USER_FILE, USER_SOURCE, write_nan_dump
from tui_helpers import hunted_app, make_app, screen_text, wait_for, wait_for_hunt

from instrument.value_encoding import tensor_value_record
from instrument.writer import DumpWriter
from reader import format as fmt
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.tensor_value import TensorValueList
from tfdbg_tui.screens.run_picker import RunPickerScreen
from tfdbg_tui.screens.tensor_value import TensorValueScreen

OLD_RUN = "20230101T000000-host-1-aaaaaa"
NEW_RUN = "20240101T000000-host-2-bbbbbb"


async def test_several_runs_open_the_newest_and_the_picker_switches(tmp_path):
    write_nan_dump(tmp_path, run_id=OLD_RUN, steps=2)
    write_nan_dump(tmp_path, run_id=NEW_RUN, steps=3)
    async with hunted_app(tmp_path, (120, 30)) as (app, pilot):
        assert app.screen.run_id == NEW_RUN
        assert "2 runs (r)" in screen_text(app) and "traces 18" in screen_text(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunPickerScreen), what="picker")
        await wait_for(pilot, lambda: OLD_RUN in screen_text(app), what="the old run listed")
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: getattr(app.screen, "run_id", None) == OLD_RUN
                       and "traces 12" in screen_text(app), what="the old run shown")


async def test_damaged_dump_opens_with_a_notice_and_what_is_readable(tmp_path):
    write_nan_dump(tmp_path)
    segment = next(tmp_path.glob("*/graph_traces.000000.tfdbg"))
    with open(segment, "ab") as file:
        file.write(msgpack.packb([1, 2, 3]))
        file.write(msgpack.packb({"k": "traces", "i": 999}))
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await wait_for_hunt(pilot)
        await wait_for(pilot, lambda: "Damaged dump" in screen_text(app), what="the notice")
        assert "not a map" in screen_text(app)
        assert app.screen.query_one(GraphExecutionList).row_count == 18


def write_full_tensor_dump(logdir) -> None:
    writer = DumpWriter(logdir, {"tensor_debug_mode": fmt.FULL_TENSOR, "eager_mode": True},
                        flush_interval_s=None)
    user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
    stack = writer.add_stack([writer.add_frame(user, 8, "train_step")])
    graph = writer.add_graph("train_step", None)
    writer.add_op(graph_id=graph, op_type="Log", op_name="Log", inputs=[], num_outputs=1,
                  output_dtypes=[FLOAT32], device_id=None, stack_id=stack, trace_points=[0])
    value = np.arange(200, dtype=np.float32).reshape(10, 20) / 7
    value[0, 3] = -np.inf
    value[5, 5] = np.nan
    writer.add_traces(np.array([0], dtype=np.int32), values=[tensor_value_record(value)])
    writer.add_execution(op_type="__inference_train_step_1", graph_id=graph, input_ids=[],
                         output_ids=[], device_ids=[], output_dtypes=[], stack_id=stack)
    writer.close()


async def test_full_tensor_value_view_highlights_nan_and_inf(tmp_path):
    write_full_tensor_dump(tmp_path)
    async with hunted_app(tmp_path, (100, 30)) as (app, pilot):
        await pilot.press("3", "v")
        await wait_for(pilot, lambda: isinstance(app.screen, TensorValueScreen), what="view")
        await wait_for(pilot, lambda: "NaN 1  inf 1" in screen_text(app), what="counts")
        view = app.screen.query_one(TensorValueList)
        assert view.flat.shape == (200,) and "shape [10, 20]" in screen_text(app)
        first_row = view.render_row(0, 100)
        inf_spans = [span for span in first_row.spans
                     if first_row.plain[span.start:span.end].strip() == "-inf"]
        assert inf_spans and inf_spans[0].style == view.component_style("tensor-value--inf")
        await pilot.press("end")
        await wait_for(pilot, lambda: "28.4286" in screen_text(app), what="the last element")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, TensorValueScreen),
                       what="back")


async def test_an_empty_run_opens_and_every_key_is_harmless(tmp_path):
    DumpWriter(tmp_path, {"tensor_debug_mode": fmt.NO_TENSOR, "eager_mode": True},
               flush_interval_s=None).close()
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "no NaN or inf so far" in screen_text(app),
                       what="the empty alert list")
        for key in ("3", "f", "full_stop", "comma", "a", "a", "i", "v", "n", "end", "2",
                    "right", "end", "1", "enter", "4", "enter", "6", "l", "5", "pagedown",
                    "right_square_bracket", "z", "z"):
            await pilot.press(key)
        assert app.is_running and "executions 0  traces 0" in screen_text(app)
