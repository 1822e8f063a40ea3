"""FULL_STATS in the TUI: Graph Execution shows the finite elements' max and min where
they fit, Graph Structure the statistics of an input, and the diagnosis uses them (an
Exp input above ln(float32 max))."""

from __future__ import annotations

import pytest

from tests.synthetic import write_exp_overflow_run
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.dialogs.text_dialog import TextDialog
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.widgets.diagnosis_line import DiagnosisLine


@pytest.fixture()
def stats_logdir(tmp_path):
    write_exp_overflow_run(tmp_path, 95.5)
    return str(tmp_path)


def _graph_execution_rows(app) -> list[str]:
    lines = screen_text(app).splitlines()
    start = next(i for i, line in enumerate(lines) if "Graph Execution" in line)
    return lines[start + 1 : start + 4]


async def test_zoomed_graph_execution_shows_max_then_min(stats_logdir):
    async with hunted_app(stats_logdir, (130, 30)) as (app, pilot):
        # Beside five other panes the counts come first: no room for the statistics.
        assert "max" not in _graph_execution_rows(app)[0].split()
        app.screen.set_focus(app.screen.query_one(GraphExecutionList))
        await pilot.press("z")
        await wait_for(
            pilot,
            lambda: "min" in _graph_execution_rows(app)[0].split(),
            what="the max and min columns in the zoomed pane",
        )
        header, x_row, exp_row = _graph_execution_rows(app)
        assert header.split()[-2:] == ["max", "min"]
        assert x_row.split()[-2:] == ["95.5", "-3.0"]
        assert "+inf" in header and exp_row.split()[1] == "Exp:0"


async def test_inputs_show_their_statistics_and_the_diagnosis_uses_them(stats_logdir):
    async with hunted_app(stats_logdir, (120, 30)) as (app, pilot):
        await wait_for(
            pilot,
            lambda: "min:-3.0 max:95." in screen_text(app),
            what="x's statistics in Graph Structure",
        )
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="modal")
        await wait_for(
            pilot,
            lambda: "reached 95.5" in " ".join(screen_text(app).split()),
            what="the whole diagnosis",
        )
        diagnosis = app.screen_stack[-2].query_one(DiagnosisLine).diagnosis
        assert "exp overflows float32 above ln(3.40e38) = 88.72" in diagnosis.explanation
        assert (
            "input `x:0` (float32, 8 values): 4 negative, 4 positive; min -3, max 95.5, "
            "mean 10, std 30" in diagnosis.evidence
        )
