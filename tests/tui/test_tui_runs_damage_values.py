"""Several runs (the picker), a damaged dump (a notice), FULL_TENSOR values (the view)."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from synthetic_dumps import FLOAT32, USER_FILE, USER_SOURCE, write_nan_dump
from tui_helpers import hunted_app, make_app, screen_text, wait_for, wait_for_hunt

from instrument.value_encoding import tensor_value_record
from instrument.writer import DumpWriter
from reader import format as fmt
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.tensor_value import CELL_WIDTH, TensorValueList
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
        # Each run's alert count, counted in the background, to compare runs by.
        rows = lambda: {run: line for line in screen_text(app).splitlines()  # noqa: E731
                        for run in (OLD_RUN, NEW_RUN) if run in line and " pid " in line}
        await wait_for(pilot, lambda: "alerts counting" not in screen_text(app),
                       what="the alert counts")
        assert "alerts 8" in rows()[NEW_RUN] and "alerts 4" in rows()[OLD_RUN]
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


def nan_and_inf_value() -> np.ndarray:
    value = np.arange(200, dtype=np.float32).reshape(10, 20) / 7
    value[0, 3] = -np.inf
    value[5, 5] = np.nan
    return value


def write_full_tensor_dump(logdir, value: np.ndarray) -> None:
    """A FULL_TENSOR run of one `Log` trace whose stored value is `value`."""
    writer = DumpWriter(logdir, {"tensor_debug_mode": fmt.FULL_TENSOR, "eager_mode": True},
                        flush_interval_s=None)
    user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
    stack = writer.add_stack([writer.add_frame(user, 8, "train_step")])
    graph = writer.add_graph("train_step", None)
    writer.add_op(graph_id=graph, op_type="Log", op_name="Log", inputs=[], num_outputs=1,
                  output_dtypes=[FLOAT32], device_id=None, stack_id=stack, trace_points=[0])
    writer.add_traces(np.array([0], dtype=np.int32), values=[tensor_value_record(value)])
    writer.add_execution(op_type="__inference_train_step_1", graph_id=graph, input_ids=[],
                         output_ids=[], device_ids=[], output_dtypes=[], stack_id=stack)
    writer.close()


async def test_full_tensor_value_view_highlights_nan_and_inf(tmp_path):
    write_full_tensor_dump(tmp_path, nan_and_inf_value())
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
        await wait_for(pilot, lambda: "28.428572" in screen_text(app), what="the last element")
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
        assert app.is_running and "exec 0 trace 0" in screen_text(app)


def tiny_and_huge_value() -> np.ndarray:
    """1000 float32 values of every magnitude: tiny, huge, negative, inf and NaN."""
    rng = np.random.default_rng(7)
    value = (rng.standard_normal(1000) * 10.0 ** rng.integers(-38, 38, 1000)).astype(np.float32)
    value[:4] = [-4.8400143e-05, -1.4305125e-06, 3.4028235e38, -1e-45]
    value[500:503] = [np.inf, -np.inf, np.nan]
    return value


@pytest.mark.parametrize("width", [80, 160])
async def test_value_view_never_cuts_a_number_and_keeps_rows_aligned(tmp_path, width):
    """Every cell reads back as its element (to the digits shown); every row's
    "[index]" label ends in the same column, past [102] and [999] too."""
    value = tiny_and_huge_value()
    write_full_tensor_dump(tmp_path, value)
    async with hunted_app(tmp_path, (width, 30)) as (app, pilot):
        await pilot.press("3", "v")
        await wait_for(pilot, lambda: isinstance(app.screen, TensorValueScreen), what="view")
        view = app.screen.query_one(TensorValueList)
        await wait_for(pilot, lambda: view.row_count > 1, what="the rows")
        content_width = view.scrollable_content_region.width
        label_ends = set()
        shown = []
        for row in range(view.row_count):
            text = view.render_row(row, content_width).plain
            label, _, cells = text.partition("] ")
            label_ends.add(len(label))
            shown += cells.split()
        assert len(label_ends) == 1, label_ends
        assert len(shown) == value.size
        for element, cell in zip(value, shown):
            assert len(cell) <= CELL_WIDTH - 1
            read_back = np.float64(cell)
            if np.isfinite(element):
                assert read_back == pytest.approx(float(element), rel=1e-4, abs=1e-45), cell
            else:
                assert str(read_back) == str(np.float64(element)), cell
        assert "-4.84001e-5" in shown[0] or shown[0] == "-4.8400143e-5"
