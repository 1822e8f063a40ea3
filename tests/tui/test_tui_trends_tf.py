"""The Trends view on real TensorFlow dumps at 80x24: a mixed-precision Keras fit (the
loss scale, the series inside the scaler's branch), the diverging custom loop in
FULL_HEALTH (magnitudes), a FULL_HEALTH layer without magnitudes."""

from __future__ import annotations

import os

from tests.tui.tui_helpers import make_app, screen_text, wait_for
from tfdbg_tui.screens.trends import TrendsScreen
from tfdbg_tui.widgets.trend_charts import TrendHeatmap


async def _trends(pilot) -> TrendsScreen:
    await wait_for(
        pilot, lambda: getattr(pilot.app.screen, "reader", None) is not None, what="the run open"
    )
    await pilot.press("t")
    await wait_for(
        pilot,
        lambda: isinstance(pilot.app.screen, TrendsScreen) and pilot.app.screen.trends is not None,
        what="the Trends view",
    )
    await pilot.pause()
    return pilot.app.screen


async def _series(pilot, title: str) -> None:
    """Press `s` until the view shows the series ``title``."""
    for _ in range(12):
        if f"Trends: {title}" in screen_text(pilot.app):
            return
        await pilot.press("s")
        await pilot.pause()
    raise AssertionError(f"no series {title!r}: {screen_text(pilot.app)}")


async def test_mixed_precision_fit_shows_the_loss_scale_and_the_layers(trend_dumps):
    """A mixed_float16 fit: the gradient norms of its three layers (inside the
    scaler's branch), then the loss scale as a row of its own, 2**22 at step 0, halved
    at the skipped step 1, with the scaler's hits for that row."""
    async with make_app(os.path.join(trend_dumps, "mixed_fit")).run_test(size=(80, 24)) as pilot:
        screen = await _trends(pilot)
        text = screen_text(pilot.app)
        assert "Trends: gradient norm by layer and step" in text
        shown = screen.query_one(TrendHeatmap).rows
        assert len(shown) == 3 and "loss scale" not in shown
        await pilot.press("home")
        await wait_for(
            pilot,
            lambda: "step 0: gradient norm none: the loss scaler skipped" in screen_text(pilot.app),
            what="a skipped step's blank cell",
        )
        await _series(pilot, "loss scale")
        await pilot.press("home")
        await wait_for(
            pilot,
            lambda: "loss scale  step 0: loss scale 4.19e+06" in screen_text(pilot.app),
            what="the scale at step 0",
        )
        await pilot.press("right")
        await wait_for(
            pilot, lambda: "step 1: loss scale 2.10e+06" in screen_text(pilot.app), what="halved"
        )
        assert (
            "step 0: loss_scale: scale 4.194e+06 overflowed: step skipped, scale halved "
            in screen_text(pilot.app)
        )
        assert "for this row" in screen_text(pilot.app)
        assert screen.trends is not None and screen.trends.rows[screen.row] == "loss scale"


async def test_diverging_loop_in_full_health_shows_its_growth(harm_dumps):
    """FULL_HEALTH has no norms: the view opens on the gradient max |x| of the loop's
    one variable, at the first anomaly (step 3), 20 steps before the first harmful
    value; the weight max |x| is there too."""
    async with make_app(os.path.join(harm_dumps, "diverging")).run_test(size=(80, 24)) as pilot:
        await _trends(pilot)
        text = screen_text(pilot.app)
        assert "Trends: gradient max |x| by layer and step" in text
        assert "▼ first anomaly: step 3, exploding  ✖ first harmful: step 23 (lead 20)" in text
        assert "MatMul  step 3: gradient max |x| 99.11" in text
        await _series(pilot, "weight max |x|")
        await pilot.press("end")
        await wait_for(
            pilot,
            lambda: "step 59: weight max |x| inf" in screen_text(pilot.app),
            what="the last step, overflowed",
        )


async def test_layer_without_magnitudes_is_blank_and_said(trend_dumps):
    """The FULL_HEALTH layer whose kernel was summarised without a magnitude: the title
    counts the blank cells and the cell line says the value is unknown."""
    async with make_app(os.path.join(trend_dumps, "big_layer_health")).run_test(
        size=(80, 24)
    ) as pilot:
        await _trends(pilot)
        await _series(pilot, "weight max |x|")
        text = screen_text(pilot.app)
        assert "(4 cells blank: a tensor without max |x|)" in text
        await pilot.press("home", "up", "up", "down")
        await wait_for(
            pilot,
            lambda: "/big  step 0: weight max |x| unknown (a tensor with" in screen_text(pilot.app),
            what="the blank cell",
        )
