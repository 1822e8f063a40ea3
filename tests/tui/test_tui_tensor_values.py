"""FULL_TENSOR values in the value view: NaN and inf highlighted, numbers never cut,
rows aligned."""

from __future__ import annotations

import numpy as np
import pytest

from instrument.dump.value_encoding import tensor_value_record
from instrument.dump.writer import DumpWriter
from reader import format as fmt
from tests.synthetic import FLOAT32, USER_FILE, USER_SOURCE
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.panes.tensor_value import CELL_WIDTH, TensorValueList
from tfdbg_tui.screens.tensor_value import TensorValueScreen


def nan_and_inf_value() -> np.ndarray:
    value = np.arange(200, dtype=np.float32).reshape(10, 20) / 7
    value[0, 3] = -np.inf
    value[5, 5] = np.nan
    return value


def write_full_tensor_dump(logdir, value: np.ndarray) -> None:
    """A FULL_TENSOR run of one `Log` trace whose stored value is `value`."""
    writer = DumpWriter(
        logdir, {"tensor_debug_mode": fmt.FULL_TENSOR, "eager_mode": True}, flush_interval_s=None
    )
    user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
    stack = writer.add_stack([writer.add_frame(user, 8, "train_step")])
    graph = writer.add_graph("train_step", None)
    writer.add_op(
        graph_id=graph,
        op_type="Log",
        op_name="Log",
        inputs=[],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=None,
        stack_id=stack,
        trace_points=[0],
    )
    writer.add_traces(np.array([0], dtype=np.int32), values=[tensor_value_record(value)])
    writer.add_execution(
        op_type="__inference_train_step_1",
        graph_id=graph,
        input_ids=[],
        output_ids=[],
        device_ids=[],
        output_dtypes=[],
        stack_id=stack,
    )
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
        inf_spans = [
            span
            for span in first_row.spans
            if first_row.plain[span.start : span.end].strip() == "-inf"
        ]
        assert inf_spans and inf_spans[0].style == view.component_style("tensor-value--inf")
        await pilot.press("end")
        await wait_for(pilot, lambda: "28.428572" in screen_text(app), what="the last element")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, TensorValueScreen), what="back")


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
