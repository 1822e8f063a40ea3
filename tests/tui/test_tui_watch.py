"""The watch tier's pair in the TUI: a logdir holding a watched run and the replay of
its hit step opens on the replay's root cause; `w` goes from one run of the pair to
the other; the run picker shows the replay right below its watched run; `e` shows the
root cause's values, kept by the replay, and the fix proven on them."""

from __future__ import annotations

from tests.program_runs import PROGRAMS, line_of
from tests.tui.tui_helpers import hunted_app, make_app, screen_text, wait_for
from tfdbg_tui.dialogs.run_picker import RunPickerDialog
from tfdbg_tui.dialogs.text_dialog import TextDialog
from tfdbg_tui.screens.debugger import DebuggerScreen
from tfdbg_tui.widgets.diagnosis_line import DiagnosisLine

WATCHED = PROGRAMS / "watched.py"
BAD_STEP = 5


def _runs(logdir):
    import reader

    runs = reader.list_runs(logdir)
    watched = next(run for run in runs if run.watched)
    replay = next(run for run in runs if run.replay_of is not None)
    return watched, replay


async def test_w_goes_between_the_replay_and_its_watched_run(watched_logdir):
    watched, replay = _runs(watched_logdir)
    assert replay.replay_of.run_id == watched.run_id and replay.replay_of.step == BAD_STEP
    async with hunted_app(watched_logdir, (140, 36)) as (app, pilot):
        # The newest run, the replay, opens on its root cause: the Log of LOG_LINE.
        assert app.screen.run_id == replay.run_id
        await wait_for(
            pilot,
            lambda: f"replay of step {BAD_STEP} (w)" in screen_text(app),
            what="the replay named on the status line",
        )
        cause = app.screen.root_cause
        assert cause is not None and cause.op.op_type == "Log"
        assert cause.frame.line == line_of(WATCHED, "# LOG_LINE")
        await pilot.press("w")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, DebuggerScreen)
                and app.screen.run_id == watched.run_id
                and "w: open the replay." in screen_text(app)
            ),
            what="the watched run, its hit said",
        )
        text = screen_text(app)
        assert "watched (w)" in text
        assert f"step {BAD_STEP}'s loss check failed" in text
        await pilot.press("w")
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, DebuggerScreen) and app.screen.run_id == replay.run_id,
            what="back on the replay",
        )


async def test_e_on_the_replay_shows_the_values_of_its_root_cause(watched_logdir):
    """The replay records summaries; its values replay kept the Log's input and output,
    which the whole diagnosis shows, with the fix proven on them."""
    async with hunted_app(watched_logdir, (140, 40)) as (app, pilot):
        line = app.screen.query_one(DiagnosisLine)
        await wait_for(pilot, lambda: line.diagnosis is not None, what="the diagnosis")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, TextDialog), what="the box")
        await wait_for(
            pilot,
            lambda: "Values: kept by the replay's values run" in app.screen.text.plain,
            timeout=180,
            what="the values and the proof",
        )
        text = app.screen.text.plain
        assert "Proof: `tf.math.log(x0)`: -inf in" in text and "all 48 finite" in text
        assert "\n  input sequential_1/dense_1_2/Softmax:0 (float32): [16x3] [[" in text
        output = text.split("\n  output compile_loss/cross_entropy/Log:0 (float32): [16x3] ")[1]
        assert "-inf" in output.split("\n")[0]


async def test_the_run_picker_shows_the_replay_below_its_watched_run(watched_logdir):
    watched, replay = _runs(watched_logdir)
    async with hunted_app(watched_logdir, (140, 36)) as (app, pilot):
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunPickerDialog), what="picker")
        await wait_for(
            pilot, lambda: f"hit at step {BAD_STEP}" in screen_text(app), what="the hit counted"
        )
        # The options in order: the replay right below the run it replays.
        order = [run.run_id for run in app.screen.runs]
        assert order.index(replay.run_id) == order.index(watched.run_id) + 1
        text = screen_text(app)
        assert f"└ replay of step {BAD_STEP}  {replay.run_id}" in text
        assert f"hit at step {BAD_STEP}  watched" in text


async def test_the_trends_of_a_watched_run_come_from_its_step_rows(watched_logdir):
    watched, _ = _runs(watched_logdir)
    app = make_app(watched_logdir, run_id=watched.run_id)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(
            pilot, lambda: "w: open the replay." in screen_text(app), what="the watched run"
        )
        await pilot.press("t")
        await wait_for(
            pilot,
            lambda: "gradient norm" in screen_text(app) and "sequential/dense" in screen_text(app),
            what="the watched run's gradient norms per layer",
        )
        assert "no norm or magnitude" not in screen_text(app)
