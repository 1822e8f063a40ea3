"""The Trends view (`t`): opened from any pane, keys alone, marks, snapshots at 80x24
and 120x40 of a synthetic Keras-shaped FULL_STATS run (fixed run id), and a
FULL_TENSOR value's histogram.

Update the pictures with `pytest tests/tui/test_tui_trends.py --snapshot-update` and
review the SVGs: each test's docstring says what they must show.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.synthetic_trends import write_trends_dump
from tests.tui.test_tui_tensor_values import write_full_tensor_dump
from tests.tui.tui_helpers import hunted_app, make_app, screen_text, wait_for, wait_for_workers
from tfdbg_tui.screens.tensor_value import TensorValueScreen
from tfdbg_tui.screens.trends import TrendsScreen
from tfdbg_tui.widgets.trend_charts import TrendHeatmap, ValueHistogram

RUN_ID = "20231114T221320-trends-4242-abcdef"


@pytest.fixture
def trends_logdir(tmp_path):
    write_trends_dump(tmp_path, layers=3, steps=16, explode=6, nan=9, run_id=RUN_ID)
    return tmp_path


async def _open_trends(pilot) -> TrendsScreen:
    await pilot.press("t")
    await wait_for(
        pilot,
        lambda: isinstance(pilot.app.screen, TrendsScreen) and pilot.app.screen.trends is not None,
        what="the Trends view",
    )
    await pilot.pause()
    return pilot.app.screen


def open_trends_then(*keys: str):
    async def run_before(pilot) -> None:
        await wait_for(
            pilot,
            lambda: getattr(pilot.app.screen, "root_cause", None) is not None,
            what="the hunt",
        )
        await wait_for_workers(pilot)
        await _open_trends(pilot)
        for key in keys:
            await pilot.press(key)
        await pilot.pause()

    return run_before


async def test_trends_from_any_pane_keys_alone(trends_logdir):
    """`t` opens the view from whichever pane has focus; it lands on the first anomaly
    (step 6 of model/dense_0), marks it and the first harmful step (9), `s` cycles
    the series, arrows move, `a` goes back to the anomaly, `t` closes."""
    async with hunted_app(trends_logdir, (80, 24)) as (app, pilot):
        await pilot.press("6")  # Stack Trace focused: the key still works
        screen = await _open_trends(pilot)
        text = screen_text(app)
        assert "Trends: gradient norm by layer and step" in text
        assert "▼ first anomaly: step 6, exploding" in text
        assert "✖ first harmful: step 9 (lead 3)" in text
        assert "model/dense_0  step 6: gradient norm 120" in text
        heatmap = screen.query_one(TrendHeatmap)
        marks = heatmap.render_line(0).text
        label = marks.index("▼")
        assert marks.index("✖") - label == 3 * 3  # three steps of three columns
        await pilot.press("s")
        await wait_for(pilot, lambda: "Trends: update norm" in screen_text(app), what="s")
        await pilot.press("down", "right")
        await wait_for(
            pilot,
            lambda: "model/dense_1  step 7: update norm 200" in screen_text(app),
            what="the moved cell",
        )
        await pilot.press("end")
        await wait_for(
            pilot,
            lambda: "step 15: update norm inf" in screen_text(app),
            what="the last step, non-finite",
        )
        await pilot.press("a")
        await wait_for(
            pilot, lambda: "model/dense_0  step 6:" in screen_text(app), what="back to the anomaly"
        )
        await pilot.press("t")
        await wait_for(pilot, lambda: not isinstance(app.screen, TrendsScreen), what="closed")


async def test_trends_of_a_run_without_layers_says_so(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        await _open_trends(pilot)
        assert "no layer or trained variable" in screen_text(app)


async def test_full_tensor_value_has_a_histogram(tmp_path):
    """The value view counts the finite elements in bins: the counts add up, and the
    range and the non-finite count are written under the bars."""
    value = (
        np.concatenate([np.zeros(150), np.full(48, 10.0), [np.nan, np.inf]])
        .astype(np.float32)
        .reshape(10, 20)
    )
    write_full_tensor_dump(tmp_path, value)
    async with hunted_app(tmp_path, (100, 30)) as (app, pilot):
        await pilot.press("3", "v")
        await wait_for(pilot, lambda: isinstance(app.screen, TensorValueScreen), what="view")
        histogram = app.screen.query_one(ValueHistogram)
        await wait_for(pilot, lambda: "2 not finite" in screen_text(app), what="histogram")
        assert histogram.finite.size == 198 and histogram.nonfinite == 2
        last = histogram.render_line(histogram.size.height - 1).text
        assert "0" in last and "10" in last
        top = histogram.render_line(0).text
        assert top.lstrip().startswith("150│")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_trends_view_snapshot(snap_compare, trends_logdir, size):
    """Trends at landing: the title "Trends: gradient norm by layer and step", the
    marks line "▼ first anomaly: step 6, exploding  ✖ first harmful: step 9 (lead 3)",
    the heatmap of model/dense_0..2 over steps 0-15 (three columns a step) with ▼ over
    step 6 and ✖ over step 9, shades rising at steps 6-8 then red × from step 9, the
    cursor on dense_0 at step 6; the cell line "model/dense_0  step 6: gradient norm
    120"; the chart of dense_0's gradient norm, low bars then a tall one at 6-8 and ×
    from 9; the rule hits, all exploding at step 6; the footer with Close, Series and
    First anomaly."""
    assert snap_compare(make_app(trends_logdir), terminal_size=size, run_before=open_trends_then())
