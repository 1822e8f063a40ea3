"""At 80 columns nothing that matters is dropped: the status line shortens the run id
(never drops it) and the footer shows each pane's main keys and the keys that work
anywhere, `?` always among them."""

from __future__ import annotations

import pytest

from tests.synthetic import write_nan_dump
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.app import DebuggerApp
from tfdbg_tui.screens.help import HelpScreen, help_text
from tfdbg_tui.widgets.key_footer import KeyFooter

LONG_RUN_ID = "20231114T221320-a-rather-long-hostname.cluster.example.org-4242-abcdef"


def status_line(app) -> str:
    return screen_text(app).splitlines()[0]


def footer(app) -> str:
    return screen_text(app).splitlines()[-1]


@pytest.fixture(scope="module")
def long_id_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("long_id")
    write_nan_dump(logdir, run_id=LONG_RUN_ID)
    return logdir


async def test_status_line_at_80_columns_shortens_the_run_id_in_the_middle(long_id_logdir):
    async with hunted_app(long_id_logdir, (80, 24)) as (app, pilot):
        await wait_for(pilot, lambda: "alerts 8" in status_line(app), what="status")
        line = status_line(app).rstrip()
        assert "exec 6 trace 18 alerts 8 FULL_HEALTH" in line
        # The start (when the run began) and the end (what makes it unique) both stay.
        assert line.endswith("-4242-abcdef") and "20231114T2213" in line and "…" in line
        assert len(line) <= 80


async def test_status_line_when_wide_spells_out_labels_and_the_whole_run_id(long_id_logdir):
    async with hunted_app(long_id_logdir, (200, 40)) as (app, pilot):
        await wait_for(pilot, lambda: "alerts 8" in status_line(app), what="status")
        assert f"executions 6  traces 18  alerts 8  FULL_HEALTH  run {LONG_RUN_ID}" in status_line(
            app
        )


async def test_status_line_at_80_columns_keeps_a_short_run_id_whole(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        run_id = app.screen.reader.metadata.run_id
        await wait_for(pilot, lambda: run_id in status_line(app), what="the whole run id")


GRAPH_EXECUTION_KEYS = ["i Input", "v Value", "/ Find", "nN Match", "g Go to #"]
ANYWHERE_KEYS = ["z Zoom", "[] Alert", "? Keys", "q Quit", "t Trends"]


@pytest.mark.parametrize(
    "pane_key, own_keys",
    [
        ("1", []),
        ("3", GRAPH_EXECUTION_KEYS),
        ("4", ["⏎ Go to op's trace"]),
        ("6", ["l Library frames"]),
    ],
)
async def test_footer_at_80_columns_shows_the_pane_keys_and_the_keys_for_anywhere(
    nan_logdir, pane_key, own_keys
):
    # The app lands in Graph Execution: the footer is the new pane's once those keys
    # are gone (the footer is rebuilt after the key is handled, not with it).
    gone = [key for key in GRAPH_EXECUTION_KEYS if key not in own_keys]
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        await pilot.press(pane_key)
        await wait_for(
            pilot,
            lambda: (
                all(key in footer(app) for key in own_keys + ANYWHERE_KEYS)
                and not any(key in footer(app) for key in gone)
            ),
            what=f"the keys of pane {pane_key}",
        )
        # The command palette's key makes room at 80 columns; `?` lists it.
        assert "Commands" not in footer(app)


async def test_footer_when_wide_shows_the_command_palette_key(nan_logdir):
    async with hunted_app(nan_logdir, (120, 30)) as (app, pilot):
        await wait_for(pilot, lambda: "^p Commands" in footer(app), what="^p in the footer")


async def test_keys_hidden_from_the_footer_are_listed_by_question_mark(nan_logdir):
    async with hunted_app(nan_logdir, (80, 40)) as (app, pilot):
        await pilot.press("?")
        await wait_for(pilot, lambda: "List every key" in screen_text(app), what="help")
        text = help_text(DebuggerApp.BINDINGS).plain
        for line in (
            "Go to the selected op's first input",
            "Alerts only",
            "First alert trace",
            "Ctrl+P",
        ):
            assert line in text


async def test_a_footer_key_clicked_is_pressed_and_hovered_shows_its_tooltip(nan_logdir):
    """The footer is one line of text: a click on a key's label (its description
    too) runs that key; hovering it shows the binding's tooltip."""
    async with hunted_app(nan_logdir, (120, 30)) as (app, pilot):
        await wait_for(pilot, lambda: "? Keys" in footer(app), what="? in the footer")
        column = footer(app).index("? Keys") + len("? K")
        await pilot.hover(KeyFooter, offset=(column, 0))
        await wait_for(
            pilot,
            lambda: app.screen.query_one(KeyFooter).tooltip == "List every key",
            what="the tooltip of ?",
        )
        await pilot.click(KeyFooter, offset=(column, 0))
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the keys")
        # Between two keys nothing is pressed.
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="close")
        gap = footer(app).index(" ? Keys")
        screen = app.screen
        await pilot.click(KeyFooter, offset=(gap, 0))
        await pilot.pause()
        assert app.screen is screen
