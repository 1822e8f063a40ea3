"""The diagnosis line, the whole diagnosis (`e`), the exact expression in Stack Trace
(on the synthetic NaN model, whose frames record their expressions' spans), and the
culprit's history in Graph Structure (on a real TensorFlow run)."""

from __future__ import annotations

import os

from tests.present import present
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.dialogs.text_dialog import TextDialog
from tfdbg_tui.panes.graph_structure import GraphStructureList
from tfdbg_tui.panes.stack_trace import StackTraceList
from tfdbg_tui.widgets.diagnosis_line import DiagnosisLine


def _diagnosis_row(app) -> str:
    return screen_text(app).splitlines()[1]


async def test_diagnosis_shows_on_opening_then_follows_the_selected_alert(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        # No keystroke: the root cause's diagnosis, under the status line, cut with a hint.
        await wait_for(
            pilot,
            lambda: "`tf.math.log(probs)` got 1 exact zero" in _diagnosis_row(app),
            what="the root cause's diagnosis",
        )
        row = _diagnosis_row(app)
        assert row.startswith(" log of ≤0  `tf.math.log(probs)` got 1 exact zero among 1,000")
        assert row.rstrip().endswith("… e: more")
        assert app.screen.query_one(DiagnosisLine).diagnosis.alert.index == 9
        # The next alert (Mul, downstream): its own diagnosis names where it began.
        await pilot.press("]")
        await wait_for(
            pilot,
            lambda: "`labels * log_probs` got 1 -inf" in _diagnosis_row(app),
            what="the Mul alert's diagnosis",
        )
        assert (
            "they began upstream: `tf.math.log(probs)` got"
            in app.screen.query_one(DiagnosisLine).diagnosis.explanation
        )
        await pilot.press("[")
        await wait_for(
            pilot,
            lambda: "`tf.math.log(probs)` got" in _diagnosis_row(app),
            what="back to the Log alert's diagnosis",
        )


async def test_e_shows_the_whole_diagnosis_and_closes(nan_logdir):
    # Tall enough for the whole dialog: the explanation, fix, chain and evidence.
    async with hunted_app(nan_logdir, (80, 60)) as (app, pilot):
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the diagnosis")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="modal")
        await wait_for(pilot, lambda: "Evidence:" in screen_text(app), what="evidence")
        text = " ".join(screen_text(app).split())
        assert "log(0) = -inf." in text and "Fix: compute the loss from the logits" in text
        assert "1 zero, 999 positive" in text and "pattern: log_of_nonpositive" in text
        assert "Log Log:0, graph #9, step 3" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, TextDialog), what="closed")
        # A click on the line opens it too.
        await pilot.click(DiagnosisLine)
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="modal on click")
        await pilot.press("e")
        await wait_for(pilot, lambda: not isinstance(app.screen, TextDialog), what="closed by e")


async def test_diagnosis_line_fits_a_wide_screen_without_a_hint(nan_logdir):
    async with hunted_app(nan_logdir, (700, 30)) as (app, pilot):
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the diagnosis")
        assert not line.is_cut
        row = _diagnosis_row(app)
        assert "Fix: compute the loss from the logits" in row and "e: more" not in row


async def test_stack_trace_shows_each_user_frames_expression(nan_logdir):
    async with hunted_app(nan_logdir, (160, 40)) as (app, pilot):
        stack = app.screen.query_one(StackTraceList)
        await wait_for(pilot, lambda: stack.selected_frame is not None, what="the stack")
        text = screen_text(app)
        assert "train_model.py:8  tf.math.log(probs)  train_step  /home/user/" in text
        assert "train_model.py:14  train_step(x, labels)  <module>  /home/user/" in text
        assert "math_ops.py:120  log  /usr/lib/" in text  # a library frame: no expression


async def test_graph_structure_shows_the_culprits_history(pattern_dumps):
    """A real TensorFlow run whose log(0) begins at step 250 of 300."""
    async with hunted_app(os.path.join(pattern_dumps, "late_log"), (80, 24)) as (app, pilot):
        structure = app.screen.query_one(GraphStructureList)
        await wait_for(
            pilot,
            lambda: structure.context is not None and structure.context.history is not None,
            what="the history",
        )
        # On opening, at 80x24: the output's sparkline, finite then broken for good.
        await wait_for(
            pilot,
            lambda: "▏  ··········██ Log:0 finite for s" in screen_text(app),
            what="the history row",
        )
        await pilot.press("4", "z")  # zoomed: the phrase up to where it broke
        await wait_for(
            pilot,
            lambda: (
                "  ··········██ Log:0 finite for steps 0-249, first "
                "non-finite at step 250 (#1" in screen_text(app)
            ),
            what="zoomed",
        )
        # Its input, on the same axis: finite all along.
        assert "  ············ mul:0 finite in all 300 traces (steps 0-299)" in screen_text(app)
        # History rows are not cursor stops.
        await pilot.press("down")
        assert structure.selected_neighbour is None  # the selected op's row
        await pilot.press("down")
        assert present(structure.selected_neighbour).role == "consumer"


async def test_e_proves_the_fix_on_the_stored_values(proof_dumps):
    """On a FULL_TENSOR run, `e` reruns the Log on its stored input in a process of
    its own and shows both results, then the values it ran on; the line waits while
    it runs."""
    async with hunted_app(os.path.join(proof_dumps, "log_zero"), (100, 30)) as (app, pilot):
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the diagnosis")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="modal")
        assert "Proof: rerunning the op on its stored values…" in screen_text(app)
        await wait_for(
            pilot,
            lambda: "all 1000 finite" in " ".join(screen_text(app).split()),
            timeout=180,
            what="the proof",
        )
        text = app.screen.text.plain
        assert (
            "\n\nProof: `tf.math.log(x0)`: -inf in 100 of 1000 -> "
            "`tf.math.log(tf.maximum(x0, 1e-07))`: all 1000 finite\n\nValues: kept by "
            "FULL_TENSOR\n  input "
        ) in text
        assert "\n  output Log:0 (float32): [1000] [" in text and "\n\nEvidence:" in text
        # Shown again at once: the proof is kept.
        await pilot.press("escape")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="modal again")
        assert "-inf in 100 of 1000" in " ".join(screen_text(app).split())


async def test_e_says_which_mode_would_prove_the_fix(nan_logdir):
    async with hunted_app(nan_logdir, (100, 30)) as (app, pilot):
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the diagnosis")
        await pilot.press("e")
        await wait_for(
            pilot,
            lambda: "not proven: no values" in " ".join(screen_text(app).split()),
            what="the proof's one line",
        )
        assert "FULL_TENSOR" in " ".join(screen_text(app).split())
