"""Several runs in one logdir: the newest opens, the picker switches between them."""

from __future__ import annotations

from tests.synthetic import write_nan_dump
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
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
