"""A healthy run opens on its verdict; contained alerts are listed dimmed with their
reason (real TensorFlow runs of tests/programs/harm.py)."""

from __future__ import annotations

import os

from tests.tui.tui_helpers import debugger_screen, make_app, screen_text, wait_for
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.widgets.diagnosis_line import DiagnosisLine


async def test_healthy_mixed_precision_run_opens_on_its_verdict(harm_dumps):
    app = make_app(os.path.join(harm_dumps, "mixed_precision"))
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the verdict")
        assert line.diagnosis is not None
        assert line.diagnosis.pattern == "expected_loss_scaling"
        assert line.has_class("-clear")  # the calm background, not the error one
        row = screen_text(app).splitlines()[1]
        assert row.startswith(" healthy: loss scaling  No harmful non-finite values;")
        assert debugger_screen(app).root_cause is None


async def test_contained_alerts_are_dimmed_with_their_reason(harm_dumps):
    app = make_app(os.path.join(harm_dumps, "where_trap"))
    async with app.run_test(size=(160, 40)) as pilot:
        alerts = app.screen.query_one(AlertList)
        await wait_for(
            pilot, lambda: alerts.summary is not None and alerts.places, what="the alerts"
        )
        row = alerts.render_row(0, 160)
        assert "Log Log:0" in row.plain and "contained: discarded" in row.plain
        assert row.style == alerts.component_style("alerts--contained")
        harmful = alerts.render_row(1, 160)
        assert "contained" not in harmful.plain and "gradient" in harmful.plain
        assert "(1 contained)" in alerts.render_header(0, 160).plain
        # The landing is the first harmful value, not the discarded one.
        await wait_for(pilot, lambda: alerts.cursor == 1, what="the landing")
