"""Several runs in one logdir: the newest opens, the picker switches between them; a
job of many workers lands on the one that went non-finite first, which the picker
marks."""

from __future__ import annotations

from textual.widgets import OptionList

from tests.present import present
from tests.synthetic import write_nan_dump
from tests.synthetic_job import run_id_of, small_job, write_job
from tests.tui.tui_helpers import debugger_screen, hunted_app, run_picker, screen_text, wait_for
from tfdbg_tui.dialogs.run_picker import RunPickerDialog

OLD_RUN = "20230101T000000-host-1-aaaaaa"
NEW_RUN = "20240101T000000-host-2-bbbbbb"


async def test_several_runs_open_the_newest_and_the_picker_switches(tmp_path):
    write_nan_dump(tmp_path, run_id=OLD_RUN, steps=2)
    write_nan_dump(tmp_path, run_id=NEW_RUN, steps=3)
    async with hunted_app(tmp_path, (120, 30)) as (app, pilot):
        assert app.screen.run_id == NEW_RUN
        assert "2 runs (r)" in screen_text(app) and "traces 18" in screen_text(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunPickerDialog), what="picker")
        await wait_for(pilot, lambda: OLD_RUN in screen_text(app), what="the old run listed")
        # Each run's alert count, counted in the background, to compare runs by.
        rows = lambda: {  # noqa: E731
            run: line
            for line in screen_text(app).splitlines()
            for run in (OLD_RUN, NEW_RUN)
            if run in line and " pid " in line
        }
        await wait_for(
            pilot, lambda: "alerts counting" not in screen_text(app), what="the alert counts"
        )
        assert "alerts 8" in rows()[NEW_RUN] and "alerts 4" in rows()[OLD_RUN]
        await pilot.press("down", "enter")
        await wait_for(
            pilot,
            lambda: (
                getattr(app.screen, "run_id", None) == OLD_RUN and "traces 12" in screen_text(app)
            ),
            what="the old run shown",
        )


async def test_a_job_of_64_workers_lands_on_its_origin_and_the_picker_marks_it(tmp_path):
    """A job of 64 workers (`tests.synthetic_job`): the app lands on worker 37, whose Log
    went -inf first while the others received the NaN through the all-reduce; `r`
    lists the 64 runs with worker 37's row marked "first non-finite" and highlighted."""
    shape = small_job(workers=64, origin=37, traces=400, traces_per_step=40, nan_step=5)
    write_job(tmp_path, shape)
    async with hunted_app(tmp_path, (120, 30)) as (app, pilot):
        screen = debugger_screen(app)
        assert present(screen.reader).metadata.task == "worker 37"
        assert "64 runs (r)" in screen_text(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RunPickerDialog), what="picker")
        marked = lambda: [  # noqa: E731
            line for line in screen_text(app).splitlines() if "first non-finite" in line
        ]
        await wait_for(pilot, marked, what="the origin marked")
        (line,) = marked()
        assert run_id_of(37) in line and "worker 37" in line
        picker = run_picker(app)
        assert len(picker.runs) == 64
        highlighted = picker.query_one(OptionList).highlighted
        assert highlighted is not None and picker.runs[highlighted].run_id == run_id_of(37)
