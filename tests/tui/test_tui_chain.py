"""The chain in the app, on a real TensorFlow run (tests/programs/chains.py): the whole
diagnosis (`e`) lists it from the origin to the root cause, and `u` steps along it,
the panes following each op (Graph Execution's cursor, Source Code's marked line)."""

from __future__ import annotations

import os

from tests.present import present
from tests.reader.test_chain_tf import marked_line
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.dialogs.text_dialog import TextDialog
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.widgets.diagnosis_line import DiagnosisLine


async def test_u_steps_the_panes_along_the_chain(chain_dumps):
    async with hunted_app(os.path.join(chain_dumps, "sigmoid_saturation"), (120, 36)) as (
        app,
        pilot,
    ):
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the diagnosis")
        chain = line.diagnosis.chain
        assert [link.op_type for link in chain] == ["Sigmoid", "Sub", "Log"]
        traces = app.screen.query_one(GraphExecutionList)
        source = app.screen.query_one("#source-code")
        for link in (*chain, chain[0]):  # round again after the root cause
            await pilot.press("u")
            await wait_for(
                pilot,
                lambda link=link: (
                    traces.selected_trace == link.trace
                    and source.view is not None
                    and source.view.line == link.line
                ),
                what=f"the panes on {link.op_type}",
            )


async def test_e_lists_the_chain(chain_dumps):
    async with hunted_app(os.path.join(chain_dumps, "sigmoid_saturation"), (120, 40)) as (
        app,
        pilot,
    ):
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the diagnosis")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="the dialog")
        await wait_for(pilot, lambda: "Chain" in screen_text(app), what="the chain")
        text = " ".join(screen_text(app).split())
        origin = present(marked_line("# ORIGIN sigmoid_saturation"))
        assert (
            f"1. `tf.sigmoid(logits)` (line {origin}) [Sigmoid]: saturated to exactly 1.0" in text
        )
        assert f"2. `1.0 - p` (line {origin + 1}) [Sub]" in text
        assert f"3. `tf.math.log(q)` (line {marked_line('# BUG sigmoid_saturation')}) [Log]" in text
